package normalize

import (
	"encoding/base64"
	"strings"
)

// serverMetadata are the metadata fields the API server writes itself.
// xref: k8s.io/apiserver, pkg/registry/rest/meta.go FillObjectMetaSystemFields, and the
// registry's generation and deletion bookkeeping.
var serverMetadata = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
	"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// toolMarks are the labels and annotations Helm, Flux and kubectl add themselves: not drift.
// xref: Helm, pkg/action (meta.helm.sh/release-name, -namespace, app.kubernetes.io/managed-by);
// helm-controller, the post-renderer of its origin labels; Kubernetes,
// pkg/controller/deployment/util/deployment_util.go RevisionAnnotation; k8s.io/api,
// core/v1/annotation_key_constants.go LastAppliedConfigAnnotation.
var toolMarks = []string{
	"meta.helm.sh/release-name", "meta.helm.sh/release-namespace", "app.kubernetes.io/managed-by",
	"helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace",
	"deployment.kubernetes.io/revision", "kubectl.kubernetes.io/last-applied-configuration",
}

// MergeStringData merges a Secret's stringData into its data, base64-encoded, and drops it, as
// the API server stores the Secret (stringData is write-only). obj's top level is changed; the
// maps it held are not.
// xref: Kubernetes API reference, Secret.stringData.
func MergeStringData(obj map[string]any) {
	sd, ok := obj["stringData"].(map[string]any)
	if !ok {
		return
	}
	data := map[string]any{}
	if d, ok := obj["data"].(map[string]any); ok {
		for k, v := range d {
			data[k] = v
		}
	}
	for k, v := range sd {
		if str, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(str))
		}
	}
	obj["data"] = data
	delete(obj, "stringData")
}

// Object returns a copy of obj (decoded JSON) without what no chart states: status, the
// metadata the API server writes, and the marks Helm, Flux and kubectl add. namespace, when
// not empty, is set on an object that names none (Helm installs it there). Apply it to both
// sides before Compare.
func Object(obj map[string]any, namespace string) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	delete(out, "status")
	if obj["kind"] == "Secret" {
		MergeStringData(out)
	}
	meta, _ := obj["metadata"].(map[string]any)
	m := make(map[string]any, len(meta))
	for k, v := range meta {
		m[k] = v
	}
	for _, f := range serverMetadata {
		delete(m, f)
	}
	if namespace != "" && m["namespace"] == nil {
		m["namespace"] = namespace
	}
	for _, field := range []string{"labels", "annotations"} {
		marks, _ := m[field].(map[string]any)
		kept := map[string]any{}
		for k, v := range marks {
			if !isToolMark(k) {
				kept[k] = v
			}
		}
		if len(kept) == 0 {
			delete(m, field)
		} else {
			m[field] = kept
		}
	}
	out["metadata"] = m
	// A pod template's creationTimestamp: null is an artifact of the API's serialisation.
	if spec, ok := out["spec"].(map[string]any); ok {
		if tpl, ok := spec["template"].(map[string]any); ok {
			if tm, ok := tpl["metadata"].(map[string]any); ok && tm["creationTimestamp"] == nil {
				if _, has := tm["creationTimestamp"]; has {
					tm2 := map[string]any{}
					for k, v := range tm {
						if k != "creationTimestamp" {
							tm2[k] = v
						}
					}
					tpl2 := map[string]any{}
					for k, v := range tpl {
						tpl2[k] = v
					}
					tpl2["metadata"] = tm2
					spec2 := map[string]any{}
					for k, v := range spec {
						spec2[k] = v
					}
					spec2["template"] = tpl2
					out["spec"] = spec2
				}
			}
		}
	}
	return out
}

func isToolMark(k string) bool {
	for _, m := range toolMarks {
		if k == m {
			return true
		}
	}
	return strings.HasPrefix(k, "helm.toolkit.fluxcd.io/")
}
