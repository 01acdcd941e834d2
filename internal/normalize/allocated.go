package normalize

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
		if lm != nil && Equal(lm["port"], p["port"]) && proto(lm) == proto(p) {
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
