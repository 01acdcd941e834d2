package diff

import (
	"github.com/helm-drift/helm-drift/internal/diff/difftest"

	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/manifest"
)

const (
	cmApp = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: apps
data:
  mode: fast
  level: info`
	cmOther = `apiVersion: v1
kind: ConfigMap
metadata:
  name: other
  namespace: apps
data:
  a: "1"`
	secret = `apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: apps
stringData:
  password: chart-password`
	liveSecret = `apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: apps
type: Opaque
data:
  password: bGl2ZS1wYXNzd29yZA==`
	widget = `apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
  namespace: apps
spec:
  size: 1`
)

// row is one row as the table shows it: "OBJECT CLASS PATH".
func rowsOf(rep *Report) []string {
	var out []string
	for _, o := range rep.Objects {
		if o.Missing {
			out = append(out, o.Object+" missing")
		}
		if o.Error != "" {
			out = append(out, o.Object+" error")
		}
		for _, r := range o.Rows {
			s := o.Object + " " + string(r.Class) + " " + r.Path
			if r.PendingDeletion {
				s += " pending-deletion"
			}
			out = append(out, s)
		}
	}
	for _, p := range rep.Prune {
		out = append(out, fmt.Sprintf("prune %s live=%v", p.Object, p.Live))
	}
	return out
}

// TestRun measures against a fake cluster: each case a desired (and stored) manifest, the live
// objects, and the rows the report must hold.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name              string
		desired, previous string
		live              string
		forbidden         string
		notServed         string
		want              []string
		divergences       int
		unmeasured        int
		drift             bool
	}{{
		name: "in sync", desired: cmApp, live: cmApp,
	}, {
		name: "a value changed in the cluster", desired: cmApp,
		live: strings.Replace(cmApp, "mode: fast", "mode: slow", 1),
		want: []string{"ConfigMap apps/app DIFFERS data.mode"}, divergences: 1, drift: true,
	}, {
		name: "a key only the cluster has", desired: cmApp,
		live: cmApp + "\n  extra: x",
		want: []string{"ConfigMap apps/app CLUSTER-ONLY data.extra"}, divergences: 1, drift: true,
	}, {
		name: "an object deleted from the cluster", desired: cmApp + "\n---\n" + cmOther, live: cmApp,
		want: []string{"ConfigMap apps/other missing", "ConfigMap apps/other CHART-ONLY (whole object)"}, divergences: 1, drift: true,
	}, {
		name: "a key the new render drops", desired: strings.Replace(cmApp, "\n  level: info", "", 1), previous: cmApp, live: cmApp,
		want: []string{"ConfigMap apps/app CLUSTER-ONLY data.level pending-deletion"}, divergences: 1, drift: true,
	}, {
		name: "an object the new render drops", desired: cmApp, previous: cmApp + "\n---\n" + cmOther, live: cmApp + "\n---\n" + cmOther,
		want: []string{"prune ConfigMap apps/other live=true"}, drift: true,
	}, {
		name: "a forbidden kind fails its objects, not the run", desired: cmApp + "\n---\n" + secret, live: cmApp, forbidden: "Secret",
		want: []string{"Secret apps/creds error"}, unmeasured: 1,
	}, {
		name: "a kind not served yet: the whole object is chart-only", desired: widget, notServed: "Widget",
		want: []string{"Widget.example.com apps/w missing", "Widget.example.com apps/w CHART-ONLY (whole object)"}, divergences: 1, drift: true,
	}, {
		name: "a Secret's value differs: said, never shown", desired: secret, live: liveSecret,
		want: []string{"Secret apps/creds DIFFERS data.password"}, divergences: 1, drift: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cl := &difftest.Cluster{Forbidden: map[string]bool{tc.forbidden: tc.forbidden != ""}, NotServed: map[string]bool{tc.notServed: tc.notServed != ""}}
			if tc.live != "" {
				cl.Objects = difftest.Objects(t, tc.live)
			}
			previous := tc.previous
			if previous == "" {
				previous = tc.desired
			}
			rep, err := Run(context.Background(), cl, Input{Release: "web", Namespace: "apps", Revision: 1, Desired: tc.desired, Previous: previous, Options: Options{Normalize: Offline, Workers: 2}})
			if err != nil {
				t.Fatal(err)
			}
			if got := rowsOf(rep); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if rep.Divergences != tc.divergences || rep.Unmeasured != tc.unmeasured || divergesOn(rep, ExitOnChange) != tc.drift {
				t.Errorf("divergences %d, unmeasured %d, drift %v; want %d, %d, %v", rep.Divergences, rep.Unmeasured, divergesOn(rep, ExitOnChange), tc.divergences, tc.unmeasured, tc.drift)
			}
			for k, n := range cl.Lists {
				if n != 1 {
					t.Errorf("%d LISTs of %s: want one per kind and namespace", n, k)
				}
			}
		})
	}
}

// TestRunNotServedCRD: an object of a kind the cluster does not serve is created when the
// release's crds/ creates its CRD first (helm install, or helm-controller's Create and
// CreateReplace), and refused otherwise.
func TestRunNotServedCRD(t *testing.T) {
	const crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\n" +
		"spec: {group: example.com, scope: Namespaced, names: {kind: Widget, plural: widgets}, versions: [{name: v1, served: true, storage: true}]}"
	for _, tc := range []struct {
		policy   CRDPolicy
		crds     string
		resolved bool
		why      string
	}{
		{CRDsCreate, crd, true, "created, after the CRD the chart's crds/ creates"},
		{CRDsHelmInstall, crd, true, "created, after the CRD the chart's crds/ creates"},
		{CRDsSkip, crd, false, "fails: the cluster does not serve Widget example.com/v1 (install its CRD first)"},
		{CRDsCreate, strings.Replace(crd, "name: v1,", "name: v2,", 1), false, "fails: the cluster does not serve Widget example.com/v1 (install its CRD first)"},
	} {
		cl := &difftest.Cluster{NotServed: map[string]bool{"Widget": true, "CustomResourceDefinition": false}}
		rep, err := Run(context.Background(), cl, Input{Release: "web", Namespace: "apps", Desired: widget, Previous: widget, CRDs: tc.crds, CRDPolicy: tc.policy,
			Options: Options{Normalize: Offline}})
		if err != nil {
			t.Fatal(err)
		}
		seen := false
		for _, o := range rep.Objects {
			if strings.HasPrefix(o.Object, "Widget") {
				seen = true
				if len(o.Rows) != 1 || o.Rows[0].Resolved != tc.resolved || o.Rows[0].Why != tc.why {
					t.Errorf("%s: %s rows %+v, want resolved %v, %q", tc.policy, o.Object, o.Rows, tc.resolved, tc.why)
				}
			}
		}
		if !seen {
			t.Errorf("%s: no Widget in %v", tc.policy, rowsOf(rep))
		}
	}
}

// TestRunClasses counts by class what the rows say.
func TestRunClasses(t *testing.T) {
	cl := &difftest.Cluster{Objects: difftest.Objects(t, strings.Replace(cmApp, "mode: fast", "mode: slow", 1)+"\n  extra: x")}
	rep, err := Run(context.Background(), cl, Input{Release: "web", Namespace: "apps", Desired: cmApp, Previous: cmApp, Options: Options{Normalize: Offline}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts[compare.Differs] != 1 || rep.Counts[compare.ClusterOnly] != 1 {
		t.Errorf("counts %v: want one DIFFERS and one CLUSTER-ONLY", rep.Counts)
	}
}

// TestRunWhoMoved: each row says who moved away from what the stored release applied, from
// the three sides (the render, the stored release, the live object).
func TestRunWhoMoved(t *testing.T) {
	withMode := func(mode string) string { return strings.Replace(cmApp, "mode: fast", "mode: "+mode, 1) }
	for _, tc := range []struct {
		name                    string
		desired, previous, live string
		sameInputs              bool
		want                    string // moved, and "render-dependent"
		drift, changes          int
	}{
		{name: "the cluster moved: drift", desired: cmApp, previous: cmApp, live: withMode("slow"), want: string(MovedCluster), drift: 1},
		{name: "the chart moved: the upgrade brings it", desired: withMode("slow"), previous: cmApp, live: cmApp, want: string(MovedChart), changes: 1},
		{name: "the chart moved with the same inputs: render-dependent", desired: withMode("slow"), previous: cmApp, live: cmApp, sameInputs: true, want: string(MovedChart) + " render-dependent", changes: 1},
		{name: "both moved", desired: withMode("slow"), previous: cmApp, live: withMode("by-hand"), want: string(MovedBoth), drift: 1},
		{name: "a new object: the chart's", desired: cmApp + "\n---\n" + cmOther, previous: cmApp, live: cmApp, want: string(MovedChart), changes: 1},
		{name: "a deleted object: the cluster's", desired: cmApp + "\n---\n" + cmOther, previous: cmApp + "\n---\n" + cmOther, live: cmApp, want: string(MovedCluster), drift: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := &difftest.Cluster{Objects: difftest.Objects(t, tc.live)}
			rep, err := Run(context.Background(), cl, Input{Release: "web", Namespace: "apps", Revision: 1, Desired: tc.desired, Previous: tc.previous, Rendered: true, SameInputs: tc.sameInputs, Options: Options{Normalize: Offline}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range rep.Objects {
				for _, r := range o.Rows {
					s := string(r.Moved)
					if r.RenderDependent {
						s += " render-dependent"
					}
					got = append(got, s)
				}
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("moved %q, want [%s]", got, tc.want)
			}
			if rep.DriftRows != tc.drift || rep.Changes != tc.changes || divergesOn(rep, ExitOnDrift) != (tc.drift > 0) {
				t.Errorf("drift %d, changes %d; want %d, %d", rep.DriftRows, rep.Changes, tc.drift, tc.changes)
			}
		})
	}
}

// TestRunCRDs: the chart's crds/ CRDs are measured beside the release, with what each way of
// upgrading does to them.
func TestRunCRDs(t *testing.T) {
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets, shortNames: [gdg]}
  scope: Namespaced`
	edited := strings.Replace(crd, "[gdg]", "[gdg, edited]", 1)
	for _, tc := range []struct {
		policy     CRDPolicy
		live, want string
		revision   int
	}{
		{CRDsHelmInstall, "", "yes: created (helm install, from crds/, before the templates)", 0},
		{CRDsHelmUpgrade, edited, "no: helm upgrade leaves this CRD as it is (Helm never upgrades crds/)|cluster", 1},
		{CRDsHelmUpgrade, "", "no: helm upgrade does not create it: crds/ are installed by helm install only|cluster", 1},
		{CRDsCreate, edited, "no: left as it is (crds policy Create)|cluster", 1},
		{CRDsCreateReplace, edited, "yes: replaced with the chart's (crds policy CreateReplace)|cluster", 1},
		{CRDsSkip, "", "no: not created (crds policy Skip)|cluster", 1},
		{CRDsUntouched, edited, "no: left as it is: the next reconcile neither installs nor upgrades (crds/ are applied only then)|cluster", 1},
	} {
		cl := &difftest.Cluster{Objects: difftest.Objects(t, cmApp)}
		if tc.live != "" {
			cl.Objects = append(cl.Objects, difftest.Objects(t, tc.live)...)
		}
		rep, err := Run(context.Background(), cl, Input{Release: "web", Namespace: "apps", Revision: tc.revision, Desired: cmApp, Previous: cmApp, CRDs: crd, CRDPolicy: tc.policy, Rendered: true, Options: Options{Normalize: Offline}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		shortNames := false
		for _, o := range rep.Objects {
			if !strings.HasPrefix(o.Object, "CustomResourceDefinition") {
				continue
			}
			for _, r := range o.Rows {
				s := map[bool]string{true: "yes: ", false: "no: "}[r.Resolved] + r.Why
				if tc.revision > 0 {
					s += "|" + string(r.Moved)
				}
				got = append(got, s)
				shortNames = shortNames || strings.HasPrefix(r.Path, "spec.names.shortNames")
			}
		}
		if len(got) == 0 || tc.live != "" && !shortNames {
			t.Errorf("%s, live %v: CRD rows %q: want the CRD measured (its edited shortNames a row)", tc.policy, tc.live != "", got)
		}
		for _, g := range got {
			if g != tc.want && !strings.HasPrefix(g, "yes: removed: the CRD is replaced") {
				t.Errorf("%s, live %v: row %q, want %q", tc.policy, tc.live != "", g, tc.want)
			}
		}
	}
}

// TestKeepChangedOnly: of the stored manifest a run keeps only what differs from the new
// render: an unchanged object's stored side is the desired object itself, a changed or pruned
// one has bytes of its own (the stored manifest's buffer can go), and what is measured is the
// same as with the stored manifest held whole.
func TestKeepChangedOnly(t *testing.T) {
	stored := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: same, namespace: apps}\ndata: {a: b}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: changed, namespace: apps}\ndata: {a: old}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gone, namespace: apps}\ndata: {a: b}\n"
	desired := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: same, namespace: apps}\ndata: {a: b}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: changed, namespace: apps}\ndata: {a: new}\n"
	objs := func(text string) []manifest.Object {
		o, err := objectsOf(text, "test")
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	prev, want := objs(stored), objs(desired)
	changedBody, goneBody := &prev[1].Doc.Body[0], &prev[2].Doc.Body[0] // inside the stored buffer
	targets := []*target{{ob: want[0], prev: &prev[0]}, {ob: want[1], prev: &prev[1]}}
	pruned := []manifest.Object{prev[2]}
	keepChangedOnly(targets, pruned)
	if targets[0].prev.Doc != want[0].Doc {
		t.Error("an unchanged object: its stored side is not the desired object")
	}
	if d := targets[1].prev.Doc; &d.Body[0] == changedBody || string(d.YAML()) != string(prev[1].Doc.YAML()) {
		t.Error("a changed object: its stored document is not a copy of its own")
	}
	if d := pruned[0].Doc; &d.Body[0] == goneBody || pruned[0].Name != "gone" {
		t.Error("a pruned object: its stored document is not a copy of its own")
	}

	// Measured the same either way.
	cl := &difftest.Cluster{Objects: difftest.Objects(t, stored)}
	rep, err := Run(context.Background(), cl, Input{Release: "r", Namespace: "apps", Revision: 1, Desired: desired, Previous: stored, Rendered: true, Options: Options{Normalize: Offline}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rowsOf(rep), "\n"); !strings.Contains(got, "ConfigMap apps/changed") || len(rep.Prune) != 1 || rep.Prune[0].Object != "ConfigMap apps/gone" {
		t.Errorf("rows:\n%s\nprune %v", got, rep.Prune)
	}
}

// TestLargestFirst: objects are measured largest document first, equal sizes in their order.
func TestLargestFirst(t *testing.T) {
	objs, err := objectsOf("a: 1\nkind: ConfigMap\n---\nkind: ConfigMap\nmetadata: {name: big, labels: {x: y}}\n---\nb: 2\nkind: ConfigMap\n---\nkind: Secret\nmetadata: {name: mid}", "")
	if err != nil {
		t.Fatal(err)
	}
	var targets []*target
	for _, o := range objs {
		targets = append(targets, &target{ob: o})
	}
	if got, want := largestFirst(targets), []int{1, 3, 0, 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// divergesOn says whether rep diverges by on, whatever could not be measured.
func divergesOn(rep *Report, on ExitOn) bool {
	t := rep.Tally()
	t.Unmeasured = 0
	return t.Verdict(on) == Diverging
}
