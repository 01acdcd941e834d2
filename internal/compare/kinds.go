package compare

// podSpecPaths are where each workload kind keeps its pod spec.
var podSpecPaths = map[string][]string{
	"Pod": {"spec"}, "Deployment": {"spec", "template", "spec"}, "StatefulSet": {"spec", "template", "spec"},
	"DaemonSet": {"spec", "template", "spec"}, "ReplicaSet": {"spec", "template", "spec"}, "Job": {"spec", "template", "spec"},
	"CronJob": {"spec", "jobTemplate", "spec", "template", "spec"},
}

// PodSpecPath returns the fields leading to a workload kind's pod spec; nil for other kinds.
func PodSpecPath(kind string) []string { return podSpecPaths[kind] }
