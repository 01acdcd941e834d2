package fluxtree

import (
	"path"

	"sigs.k8s.io/kustomize/api/resource"
)

// setCommonMetadata sets spec.commonMetadata's labels and annotations on obj, as
// kustomize-controller does after the build.
func setCommonMetadata(obj map[string]any, spec map[string]any) {
	cm, _ := spec["commonMetadata"].(map[string]any)
	if cm == nil {
		return
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	for _, field := range []string{"labels", "annotations"} {
		add, _ := cm[field].(map[string]any)
		if len(add) == 0 {
			continue
		}
		have, _ := meta[field].(map[string]any)
		if have == nil {
			have = map[string]any{}
			meta[field] = have
		}
		for k, v := range add {
			have[k] = v
		}
	}
}

// originFile is the file of the source an object was built from, when kustomize recorded it
// (its config.kubernetes.io/origin annotation is off by default, so mostly "").
func originFile(r *resource.Resource, rel string) string {
	o, err := r.GetOrigin()
	if err != nil || o == nil || o.Path == "" {
		return ""
	}
	return path.Join(rel, o.Path)
}

// isSOPS: a Secret encrypted by SOPS (its top-level sops metadata).
func isSOPS(m map[string]any) bool {
	s, ok := m["sops"].(map[string]any)
	return ok && s != nil
}

// stringData is a ConfigMap's data, or a Secret's data decoded and stringData over it.
func stringData(o map[string]any, secret bool) map[string]string {
	out := map[string]string{}
	data, _ := o["data"].(map[string]any)
	for k, v := range data {
		s, _ := v.(string)
		if secret {
			if dec, err := decodeBase64(s); err == nil {
				s = dec
			}
		}
		out[k] = s
	}
	if secret {
		sd, _ := o["stringData"].(map[string]any)
		for k, v := range sd {
			s, _ := v.(string)
			out[k] = s
		}
	}
	return out
}
