package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-openapi/jsonpointer"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/helmcontroller"
	livepkg "github.com/helm-drift/helm-drift/internal/live"
	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/normalize"
)

// markLive reads, for each object of rep with rows, the live object (the head's render objs
// names it) and says per row what the cluster holds there (Row.Live): the head's value already,
// the base's (the merge changes it), another value (drift the merge overwrites), or no object.
// A Secret's values are compared, never shown; a row of one says only whether it agrees.
func markLive(ctx context.Context, rep *diff.Report, objs, baseObjs []manifest.Object, namespace string, cluster helmcontroller.Getter) {
	ids := manifest.NewIdentifier(append(append([]manifest.Object{}, objs...), baseObjs...), namespace, nil)
	byName, baseByName := map[string]manifest.Object{}, map[string]manifest.Object{}
	for _, ob := range objs {
		if ob.Name != "" && !ob.Hook {
			byName[ids.Identity(ob).String()] = ob
		}
	}
	for _, ob := range baseObjs {
		if ob.Name != "" && !ob.Hook {
			baseByName[ids.Identity(ob).String()] = ob
		}
	}
	for i := range rep.Objects {
		o := &rep.Objects[i]
		ob, ok := byName[o.Object]
		if !ok || len(o.Rows) == 0 {
			continue
		}
		id := ids.Identity(ob)
		_, version, found := strings.Cut(ob.APIVersion, "/")
		if !found {
			version = ob.APIVersion
		}
		live, err := cluster.Get(ctx, id.Group, version, id.Kind, id.Namespace, id.Name)
		// No object, or no kind to hold one (its CRD, a chart's crds/ say, comes with it).
		absent := apierrors.IsNotFound(err) || errors.Is(err, livepkg.ErrNotServed)
		_, inBase := baseByName[o.Object]
		for j := range o.Rows {
			r := &o.Rows[j]
			switch {
			case absent && !inBase:
				// The head adds the object: no object is the base's state.
				r.Live = diff.LiveBase
				r.Why += "; live: the object is not in the cluster yet"
				continue
			case absent:
				r.Live = diff.LiveAbsent
			case err != nil:
				r.Why += "; live: unread (" + err.Error() + ")"
				continue
			case !inBase:
				// The head adds the object and one of that name is there: the head's, or
				// another.
				if head, derr := ob.Decode(); derr == nil && covers(normalize.Object(live, id.Namespace), normalize.Object(head, id.Namespace)) {
					r.Live = diff.LiveHead
					r.Why += "; live: the cluster has it already"
				} else {
					r.Live = diff.LiveOther
					r.Why += "; live: an object of that name is there, unlike the head's (made by something else?)"
				}
				continue
			case id.Kind == "Secret" && id.Group == "" && r.Redacted:
				r.Live = secretLive(live, ob, baseByName[o.Object], r.Path)
			default:
				r.Live = liveAt(live, r)
			}
			switch r.Live {
			case diff.LiveAbsent:
				r.Why += "; live: the object is not in the cluster"
			case diff.LiveHead:
				r.Why += "; live: the cluster has it already"
			case diff.LiveOther:
				r.Why += "; live: the cluster holds another value (drift), which the merge overwrites"
			}
		}
	}
}

// liveAt compares the live object's value at the row's field with the row's two sides.
func liveAt(live map[string]any, r *diff.Row) string {
	p, err := jsonpointer.New(r.Pointer)
	if err != nil {
		return diff.LiveOther
	}
	v, _, err := p.Get(normalize.Object(live, ""))
	present := err == nil
	switch {
	case present && sameJSON(v, r.Chart) || !present && r.Chart == nil:
		return diff.LiveHead
	case present && sameJSON(v, r.Cluster) || !present && r.Cluster == nil:
		return diff.LiveBase
	}
	return diff.LiveOther
}

// secretLive compares a Secret's data value (path "data.KEY" or "stringData.KEY") in the
// cluster with the head's and the base's renders, without keeping any of them.
func secretLive(live map[string]any, head, base manifest.Object, path string) string {
	key := path[strings.Index(path, ".")+1:]
	value := func(m map[string]any) (string, bool) {
		if sd, ok := m["stringData"].(map[string]any); ok {
			if s, ok := sd[key].(string); ok {
				return s, true
			}
		}
		if d, ok := m["data"].(map[string]any); ok {
			if s, ok := d[key].(string); ok {
				if dec, err := decodeB64(s); err == nil {
					return dec, true
				}
			}
		}
		return "", false
	}
	side := func(ob manifest.Object) (string, bool) {
		if ob.Doc == nil {
			return "", false
		}
		m, err := ob.Decode()
		if err != nil {
			return "", false
		}
		return value(m)
	}
	lv, lok := value(live)
	hv, hok := side(head)
	bv, bok := side(base)
	switch {
	case lok == hok && lv == hv:
		return diff.LiveHead
	case lok == bok && lv == bv:
		return diff.LiveBase
	}
	return diff.LiveOther
}

// covers reports whether live holds every field want sets, with the same value; live may hold
// more (what the API server and Helm add). An empty map or list in want asks for nothing.
func covers(live, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return live == nil && len(w) == 0
		}
		for k, v := range w {
			lv, present := l[k]
			if !present && empty(v) {
				continue
			}
			if !present || !covers(lv, v) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok {
			return live == nil && len(w) == 0
		}
		if len(l) != len(w) {
			return false
		}
		for i := range w {
			if !covers(l[i], w[i]) {
				return false
			}
		}
		return true
	}
	return sameJSON(live, want)
}

// empty: nil, or a map or list with nothing in it.
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// sameJSON compares two values as JSON (an int and a float of one number are one value).
func sameJSON(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// remoteNotes name the HelmReleases to render whose releases live in another cluster
// (spec.kubeConfig: helm-controller installs them there), which --live does not read: their
// rows say nothing of what a cluster holds.
func remoteNotes(todo []treePair) []string {
	var out []string
	for _, p := range todo {
		if p.head == nil {
			continue
		}
		hr, err := helmcontroller.Decode(p.head.Object)
		if err != nil {
			continue
		}
		if where := helmcontroller.RemoteCluster(hr); where != "" {
			out = append(out, fmt.Sprintf("HelmRelease %s/%s is installed in another cluster (spec.kubeConfig: %s): --live reads only this one, so its rows say nothing of what that cluster holds", p.head.Namespace, p.head.Name, where))
		}
	}
	return out
}
