package normalize

import (
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
