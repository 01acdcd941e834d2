package compare

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// BuiltIn reports whether the kind is one Kubernetes itself defines, as opposed to a custom
// resource: one client-go's scheme knows (what Helm decodes into a typed object and patches
// with a strategic merge), or a CustomResourceDefinition.
func BuiltIn(t yaml.TypeMeta) bool {
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	if err != nil {
		return false
	}
	return gv.Group == "apiextensions.k8s.io" || scheme.Scheme.Recognizes(gv.WithKind(t.Kind))
}

// allocatedLabels are the labels the Job controller's defaulting writes from the Job's uid and
// name (xref: Kubernetes, pkg/registry/batch/job/strategy.go generateSelector).
var allocatedLabels = []string{"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"}

// ForDryRun returns what to send to a dry-run create of desired under another name: without
// the addresses and ports a Service states, which the live Service holds already (a create
// asking for them again is refused as already allocated). Unallocate puts them back.
func ForDryRun(kind string, desired map[string]any) map[string]any {
	if kind != "Service" {
		return desired
	}
	out := deepCopy(desired)
	spec, _ := out["spec"].(map[string]any)
	if spec == nil {
		return out
	}
	if ip, _ := spec["clusterIP"].(string); ip != "None" { // headless is a choice, not an address
		delete(spec, "clusterIP")
		delete(spec, "clusterIPs")
	}
	delete(spec, "healthCheckNodePort")
	ports, _ := spec["ports"].([]any)
	for _, p := range ports {
		if pm, ok := p.(map[string]any); ok {
			delete(pm, "nodePort")
		}
	}
	return out
}

// Unallocate prepares an object a server-side dry-run returned under a temporary name for
// comparison with the live one: the name is set back to name; what the API server allocates
// afresh on every create (cluster IPs, node ports, a Job's uid-based selector and labels) is
// set to what desired states, or, where it states nothing, removed, for Allocated to take from
// the live object.
func Unallocate(kind string, dryRun, desired map[string]any, name string) map[string]any {
	out := deepCopy(dryRun)
	md, _ := out["metadata"].(map[string]any)
	if md != nil {
		md["name"] = name
		delete(md, "generateName")
	}
	spec, _ := out["spec"].(map[string]any)
	want, _ := desired["spec"].(map[string]any)
	if spec == nil {
		return out
	}
	switch kind {
	case "Service":
		for _, f := range []string{"clusterIP", "clusterIPs", "healthCheckNodePort"} {
			if v, stated := want[f]; stated {
				spec[f] = deepCopyValue(v)
			} else {
				delete(spec, f)
			}
		}
		wantPorts, _ := want["ports"].([]any)
		ports, _ := spec["ports"].([]any)
		for i, p := range ports {
			pm, _ := p.(map[string]any)
			var wp map[string]any
			if i < len(wantPorts) {
				wp, _ = wantPorts[i].(map[string]any)
			}
			if pm == nil {
				continue
			}
			if v, stated := wp["nodePort"]; stated {
				pm["nodePort"] = deepCopyValue(v)
			} else {
				delete(pm, "nodePort")
			}
		}
	case "Job":
		if _, stated := want["selector"]; !stated {
			delete(spec, "selector")
		}
		tmpl, _ := spec["template"].(map[string]any)
		tmd, _ := tmpl["metadata"].(map[string]any)
		labels, _ := tmd["labels"].(map[string]any)
		wantMD, _ := desired["metadata"].(map[string]any)
		wantLabels, _ := wantMD["labels"].(map[string]any)
		own, _ := md["labels"].(map[string]any)
		for _, l := range allocatedLabels {
			delete(labels, l)
			if _, stated := wantLabels[l]; !stated {
				delete(own, l)
			}
		}
		if len(own) == 0 && len(wantLabels) == 0 {
			delete(md, "labels")
		}
	}
	return out
}

// UnallocateReads reports whether Unallocate reads desired for kind (the kinds whose allocated
// fields the chart may state); for any other kind it may be nil.
func UnallocateReads(kind string) bool { return kind == "Service" || kind == "Job" }

func deepCopy(m map[string]any) map[string]any {
	out, _ := deepCopyValue(m).(map[string]any)
	return out
}

// deepCopyValue copies a decoded JSON value, whole float64 numbers as int64 (as toInt64); a
// value of another type goes through JSON.
func deepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopyValue(e)
		}
		return out
	case nil, string, bool, int64:
		return t
	case float64:
		return toInt64(t)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return toInt64(out)
}

// toInt64 turns whole float64 numbers (what encoding/json decodes) into int64, as the
// decoded objects elsewhere hold them.
func toInt64(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = toInt64(e)
		}
	case []any:
		for i, e := range t {
			t[i] = toInt64(e)
		}
	case float64:
		if t == float64(int64(t)) {
			return int64(t)
		}
	}
	return v
}

// Allocated returns obj with what the API server allocates on a create, and the chart does not
// state, taken from the live object: a Service's cluster IPs, IP families and policy, node
// ports (ports matched by port and protocol) and health-check node port; a Job's uid-based
// selector and labels; a DaemonSet's template generation. Such a value is the cluster's choice, not drift, whichever way obj was
// defaulted (offline, or a dry-run under another name, after Unallocate).
// xref: Kubernetes, pkg/registry/core/service/storage (IP and port allocation),
// pkg/registry/batch/job/strategy.go generateSelector.
func Allocated(kind string, obj, live map[string]any) map[string]any {
	if live == nil || kind != "Service" && kind != "Job" && kind != "DaemonSet" {
		return obj
	}
	out := deepCopy(obj)
	if kind == "DaemonSet" {
		// The registry sets a DaemonSet's template generation on create and bumps it on every
		// template change; the v1 conversion writes it as this annotation (0 for an object never
		// stored): its value is the cluster's.
		// xref: Kubernetes, pkg/registry/apps/daemonset/strategy.go PrepareForCreate,
		// pkg/apis/apps/v1/conversion.go Convert_apps_DaemonSet_To_v1_DaemonSet.
		const ann = "deprecated.daemonset.template.generation"
		if v, ok := nested(live, "metadata", "annotations")[ann]; ok {
			md, _ := out["metadata"].(map[string]any)
			if md == nil {
				md = map[string]any{}
				out["metadata"] = md
			}
			a, _ := md["annotations"].(map[string]any)
			if a == nil {
				a = map[string]any{}
				md["annotations"] = a
			}
			a[ann] = deepCopyValue(v)
		}
		return out
	}
	spec, _ := out["spec"].(map[string]any)
	liveSpec, _ := live["spec"].(map[string]any)
	if spec == nil || liveSpec == nil {
		return out
	}
	switch kind {
	case "Service":
		for _, f := range []string{"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "healthCheckNodePort"} {
			fillFrom(spec, liveSpec, f)
		}
		livePorts, _ := liveSpec["ports"].([]any)
		ports, _ := spec["ports"].([]any)
		for _, p := range ports {
			pm, _ := p.(map[string]any)
			if lp := matchPort(pm, livePorts); lp != nil {
				fillFrom(pm, lp, "nodePort")
			}
		}
	case "Job":
		fillFrom(spec, liveSpec, "selector")
		if sel, ok := spec["selector"].(map[string]any); ok {
			if ml, ok := sel["matchLabels"].(map[string]any); ok {
				liveML := nested(liveSpec, "selector", "matchLabels")
				for _, l := range allocatedLabels {
					fillFrom(ml, liveML, l)
				}
			}
		}
		tmpl, _ := spec["template"].(map[string]any)
		if tmpl == nil {
			return out
		}
		tmd, _ := tmpl["metadata"].(map[string]any)
		if tmd == nil {
			tmd = map[string]any{}
			tmpl["metadata"] = tmd
		}
		liveLabels := nested(liveSpec, "template", "metadata", "labels")
		labels, _ := tmd["labels"].(map[string]any)
		for _, l := range allocatedLabels {
			if _, has := liveLabels[l]; has {
				if labels == nil {
					labels = map[string]any{}
					tmd["labels"] = labels
				}
				fillFrom(labels, liveLabels, l)
			}
		}
	}
	return out
}

// fillFrom sets dst[k] to a copy of src[k] when dst has no value there and src has one.
func fillFrom(dst, src map[string]any, k string) {
	if dst == nil || src == nil {
		return
	}
	if v, has := dst[k]; has && v != nil {
		return
	}
	if v, has := src[k]; has && v != nil {
		dst[k] = deepCopyValue(v)
	}
}

// matchPort finds the live Service port with p's port and protocol (TCP when unset).
func matchPort(p map[string]any, live []any) map[string]any {
	if p == nil {
		return nil
	}
	proto := func(m map[string]any) any {
		if v, ok := m["protocol"]; ok && v != nil {
			return v
		}
		return "TCP"
	}
	for _, l := range live {
		lm, _ := l.(map[string]any)
		if lm != nil && equal(lm["port"], p["port"]) && proto(lm) == proto(p) {
			return lm
		}
	}
	return nil
}

func nested(m map[string]any, path ...string) map[string]any {
	for _, k := range path {
		next, _ := m[k].(map[string]any)
		if next == nil {
			return nil
		}
		m = next
	}
	return m
}
