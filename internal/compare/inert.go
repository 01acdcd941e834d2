package compare

import (
	"regexp"
)

// inertProbeField matches a liveness or readiness probe's initialDelaySeconds, which a
// startupProbe makes inert: the kubelet starts those probes only after the startup probe has
// succeeded, so their initial delay changes nothing.
// xref: Kubernetes docs, "Configure Liveness, Readiness and Startup Probes" (startup probes).
var inertProbeField = regexp.MustCompile(`^(.*\.(?:initContainers|containers)\[name=([^\]]*)\])\.(?:livenessProbe|readinessProbe)\.initialDelaySeconds$`)

// MarkInert sets Inert on the divergences that change nothing in the running pod, given the
// chart's and the cluster's objects: a probe's initialDelaySeconds beside a startupProbe.
func MarkInert(r *Result, chart, cluster map[string]any) {
	for i := range r.Divergences {
		m := inertProbeField.FindStringSubmatch(r.Divergences[i].Path)
		if m == nil {
			continue
		}
		if hasStartupProbe(chart, m[1]) || hasStartupProbe(cluster, m[1]) {
			r.Divergences[i].Inert = true
		}
	}
}

// hasStartupProbe finds the container a Compare path names and reports whether it has a
// startupProbe.
func hasStartupProbe(obj map[string]any, containerPath string) bool {
	c := lookupPath(obj, containerPath)
	m, ok := c.(map[string]any)
	return ok && m["startupProbe"] != nil
}

var pathPart = regexp.MustCompile(`([^.\[]+)(?:\[name=([^\]]*)\])?`)

// lookupPath resolves a Compare path made of fields and [name=X] list selectors.
func lookupPath(obj map[string]any, path string) any {
	var cur any = obj
	for _, p := range pathPart.FindAllStringSubmatch(path, -1) {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p[1]]
		if p[2] == "" {
			continue
		}
		list, _ := cur.([]any)
		cur = nil
		for _, e := range list {
			if em, ok := e.(map[string]any); ok && em["name"] == p[2] {
				cur = em
				break
			}
		}
	}
	return cur
}
