package drift

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// A default is a value the API server (or a built-in controller) fills in when the chart says
// nothing: such a field in the cluster is not drift. Patterns name fields with "[]" for any
// list element; Podspec stands for the pod spec of every workload kind.
//
// Each entry cites the Kubernetes default it mirrors (API reference, v1.34).
type defaultRule struct {
	pattern string
	// value is the default; when is used instead for defaults that depend on siblings.
	value any
	when  func(value any, parent map[string]any) bool
}

var podDefaults = []defaultRule{
	{pattern: "dnsPolicy", value: "ClusterFirst"},                     // PodSpec.dnsPolicy
	{pattern: "restartPolicy", value: "Always"},                       // PodSpec.restartPolicy (workloads; Jobs set theirs)
	{pattern: "schedulerName", value: "default-scheduler"},            // PodSpec.schedulerName
	{pattern: "securityContext", value: map[string]any{}},             // PodSpec.securityContext
	{pattern: "terminationGracePeriodSeconds", value: int64(30)},      // PodSpec.terminationGracePeriodSeconds
	{pattern: "enableServiceLinks", value: true},                      // PodSpec.enableServiceLinks
	{pattern: "volumes[].configMap.defaultMode", value: int64(0o644)}, // ConfigMapVolumeSource.defaultMode
	{pattern: "volumes[].secret.defaultMode", value: int64(0o644)},    // SecretVolumeSource.defaultMode
	{pattern: "priority", value: int64(0)},                            // set on Pods by the Priority admission plugin (no PriorityClass)
	{pattern: "preemptionPolicy", value: "PreemptLowerPriority"},      // PodSpec.preemptionPolicy, set with priority
}

// webhookDefaults apply to webhooks[] of Validating- and MutatingWebhookConfigurations.
var webhookDefaults = []defaultRule{
	{pattern: "webhooks[].clientConfig.service.port", value: int64(443)}, // ServiceReference.port
	{pattern: "webhooks[].matchPolicy", value: "Equivalent"},             // ValidatingWebhook.matchPolicy
	{pattern: "webhooks[].namespaceSelector", value: map[string]any{}},   // ValidatingWebhook.namespaceSelector
	{pattern: "webhooks[].objectSelector", value: map[string]any{}},      // ValidatingWebhook.objectSelector
	{pattern: "webhooks[].rules[].scope", value: "*"},                    // RuleWithOperations.scope
	{pattern: "webhooks[].timeoutSeconds", value: int64(10)},             // ValidatingWebhook.timeoutSeconds
	{pattern: "webhooks[].failurePolicy", value: "Fail"},                 // ValidatingWebhook.failurePolicy
	{pattern: "webhooks[].reinvocationPolicy", value: "Never"},           // MutatingWebhook.reinvocationPolicy
}

// defaultTolerations are the two the DefaultTolerationSeconds admission plugin adds to a Pod.
var defaultTolerations = []any{
	map[string]any{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": int64(300)},
	map[string]any{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": int64(300)},
}

// containerDefaults apply to containers[] and initContainers[].
var containerDefaults = []defaultRule{
	{pattern: "terminationMessagePath", value: "/dev/termination-log"}, // Container.terminationMessagePath
	{pattern: "terminationMessagePolicy", value: "File"},               // Container.terminationMessagePolicy
	{pattern: "resources", value: map[string]any{}},                    // Container.resources
	{pattern: "ports[].protocol", value: "TCP"},                        // ContainerPort.protocol
	{pattern: "env[].valueFrom.fieldRef.apiVersion", value: "v1"},      // ObjectFieldSelector.apiVersion
	// Container.imagePullPolicy: Always for :latest or no tag, else IfNotPresent.
	{pattern: "imagePullPolicy", when: func(v any, c map[string]any) bool {
		image, _ := c["image"].(string)
		name := image[strings.LastIndex(image, "/")+1:]
		latest := !strings.Contains(name, ":") && !strings.Contains(name, "@") || strings.HasSuffix(name, ":latest")
		return (latest && v == "Always") || (!latest && v == "IfNotPresent")
	}},
}

// probeDefaults apply to livenessProbe, readinessProbe and startupProbe (Probe).
var probeDefaults = []defaultRule{
	{pattern: "timeoutSeconds", value: int64(1)},
	{pattern: "periodSeconds", value: int64(10)},
	{pattern: "successThreshold", value: int64(1)},
	{pattern: "failureThreshold", value: int64(3)},
	{pattern: "httpGet.scheme", value: "HTTP"},
}

// kindDefaults are defaults of one kind's own fields.
var kindDefaults = map[string][]defaultRule{
	"Deployment": {
		{pattern: "spec.replicas", value: int64(1)},                           // DeploymentSpec.replicas
		{pattern: "spec.progressDeadlineSeconds", value: int64(600)},          // DeploymentSpec.progressDeadlineSeconds
		{pattern: "spec.revisionHistoryLimit", value: int64(10)},              // DeploymentSpec.revisionHistoryLimit
		{pattern: "spec.strategy.type", value: "RollingUpdate"},               // DeploymentStrategy.type
		{pattern: "spec.strategy.rollingUpdate.maxSurge", value: "25%"},       // RollingUpdateDeployment.maxSurge
		{pattern: "spec.strategy.rollingUpdate.maxUnavailable", value: "25%"}, // RollingUpdateDeployment.maxUnavailable
	},
	"Service": {
		{pattern: "spec.type", value: "ClusterIP"},                                                                    // ServiceSpec.type
		{pattern: "spec.sessionAffinity", value: "None"},                                                              // ServiceSpec.sessionAffinity
		{pattern: "spec.internalTrafficPolicy", value: "Cluster"},                                                     // ServiceSpec.internalTrafficPolicy
		{pattern: "spec.ipFamilyPolicy", value: "SingleStack"},                                                        // ServiceSpec.ipFamilyPolicy
		{pattern: "spec.ports[].protocol", value: "TCP"},                                                              // ServicePort.protocol
		{pattern: "spec.clusterIP", when: anyValue},                                                                   // allocated by the API server
		{pattern: "spec.clusterIPs[]", when: anyValue},                                                                // allocated by the API server
		{pattern: "spec.ipFamilies[]", when: anyValue},                                                                // chosen by the API server
		{pattern: "spec.ports[].targetPort", when: func(v any, p map[string]any) bool { return equal(v, p["port"]) }}, // ServicePort.targetPort defaults to port
		{pattern: "spec.ports[].nodePort", when: anyValue},                                                            // allocated for NodePort and LoadBalancer Services
		{pattern: "spec.healthCheckNodePort", when: anyValue},                                                         // allocated for externalTrafficPolicy Local
		{pattern: "spec.externalTrafficPolicy", value: "Cluster"},                                                     // ServiceSpec.externalTrafficPolicy (NodePort, LoadBalancer)
		{pattern: "spec.allocateLoadBalancerNodePorts", value: true},                                                  // ServiceSpec.allocateLoadBalancerNodePorts (LoadBalancer)
	},
	"Secret": {
		{pattern: "type", value: "Opaque"}, // Secret.type
	},
	"StatefulSet": {
		{pattern: "spec.replicas", value: int64(1)},                                         // StatefulSetSpec.replicas
		{pattern: "spec.podManagementPolicy", value: "OrderedReady"},                        // StatefulSetSpec.podManagementPolicy
		{pattern: "spec.revisionHistoryLimit", value: int64(10)},                            // StatefulSetSpec.revisionHistoryLimit
		{pattern: "spec.updateStrategy.type", value: "RollingUpdate"},                       // StatefulSetUpdateStrategy.type
		{pattern: "spec.updateStrategy.rollingUpdate.partition", value: int64(0)},           // RollingUpdateStatefulSetStrategy.partition
		{pattern: "spec.persistentVolumeClaimRetentionPolicy.whenDeleted", value: "Retain"}, // StatefulSetPersistentVolumeClaimRetentionPolicy.whenDeleted
		{pattern: "spec.persistentVolumeClaimRetentionPolicy.whenScaled", value: "Retain"},  // StatefulSetPersistentVolumeClaimRetentionPolicy.whenScaled
		{pattern: "spec.volumeClaimTemplates[].apiVersion", value: "v1"},                    // written by the StatefulSet defaulting (v1.27+)
		{pattern: "spec.volumeClaimTemplates[].kind", value: "PersistentVolumeClaim"},       // written by the StatefulSet defaulting (v1.27+)
		{pattern: "spec.volumeClaimTemplates[].spec.volumeMode", value: "Filesystem"},       // PersistentVolumeClaimSpec.volumeMode
		{pattern: "spec.volumeClaimTemplates[].status.phase", value: "Pending"},             // PersistentVolumeClaimStatus.phase
	},
	"Job": {
		{pattern: "spec.backoffLimit", value: int64(6)},                                           // JobSpec.backoffLimit
		{pattern: "spec.completionMode", value: "NonIndexed"},                                     // JobSpec.completionMode
		{pattern: "spec.completions", value: int64(1)},                                            // JobSpec.completions (parallelism unset)
		{pattern: "spec.parallelism", value: int64(1)},                                            // JobSpec.parallelism
		{pattern: "spec.manualSelector", value: false},                                            // JobSpec.manualSelector
		{pattern: "spec.podReplacementPolicy", value: "TerminatingOrFailed"},                      // JobSpec.podReplacementPolicy
		{pattern: "spec.suspend", value: false},                                                   // JobSpec.suspend
		{pattern: "spec.selector.matchLabels.batch.kubernetes.io/controller-uid", when: anyValue}, // generated from the Job's uid (pkg/registry/batch/job/strategy.go generateSelector)
		{pattern: "spec.selector.matchLabels.controller-uid", when: anyValue},                     // the same, legacy label
		{pattern: "spec.template.metadata.labels.batch.kubernetes.io/controller-uid", when: anyValue},
		{pattern: "spec.template.metadata.labels.controller-uid", when: anyValue},
		{pattern: "spec.template.metadata.labels.batch.kubernetes.io/job-name", when: anyValue},
		{pattern: "spec.template.metadata.labels.job-name", when: anyValue},
	},
	"DaemonSet": {
		{pattern: "spec.revisionHistoryLimit", value: int64(10)},                                   // DaemonSetSpec.revisionHistoryLimit
		{pattern: "spec.updateStrategy.type", value: "RollingUpdate"},                              // DaemonSetUpdateStrategy.type
		{pattern: "spec.updateStrategy.rollingUpdate.maxSurge", value: int64(0)},                   // RollingUpdateDaemonSet.maxSurge
		{pattern: "spec.updateStrategy.rollingUpdate.maxUnavailable", value: int64(1)},             // RollingUpdateDaemonSet.maxUnavailable
		{pattern: "metadata.annotations.deprecated.daemonset.template.generation", when: anyValue}, // written by the API server (pkg/registry/apps/daemonset)
	},
	"HorizontalPodAutoscaler": {
		{pattern: "spec.minReplicas", value: int64(1)}, // HorizontalPodAutoscalerSpec.minReplicas
	},
	"NetworkPolicy": {
		{pattern: "spec.ingress[].ports[].protocol", value: "TCP"}, // NetworkPolicyPort.protocol
		{pattern: "spec.egress[].ports[].protocol", value: "TCP"},  // NetworkPolicyPort.protocol
		// NetworkPolicySpec.policyTypes: [Ingress], plus Egress when egress rules are given.
		{pattern: "spec.policyTypes", when: func(v any, spec map[string]any) bool {
			want := []any{"Ingress"}
			if _, egress := spec["egress"]; egress {
				want = append(want, "Egress")
			}
			return equalValue(want, v)
		}},
	},
	"PriorityClass": {
		{pattern: "preemptionPolicy", value: "PreemptLowerPriority"}, // PriorityClass.preemptionPolicy
	},
	"CustomResourceDefinition": {
		{pattern: "spec.conversion.strategy", value: "None"}, // CustomResourceConversion.strategy
		// CustomResourceDefinitionNames.listKind and .singular: KIND+"List", lowercase KIND.
		{pattern: "spec.names.listKind", when: func(v any, names map[string]any) bool {
			kind, _ := names["kind"].(string)
			return v == kind+"List"
		}},
		{pattern: "spec.names.singular", when: func(v any, names map[string]any) bool {
			kind, _ := names["kind"].(string)
			return v == strings.ToLower(kind)
		}},
	},
	"PersistentVolumeClaim": {
		{pattern: "spec.volumeMode", value: "Filesystem"},                              // PersistentVolumeClaimSpec.volumeMode
		{pattern: "metadata.finalizers", value: []any{"kubernetes.io/pvc-protection"}}, // added by the StorageObjectInUseProtection admission plugin
	},
	"PersistentVolume": {
		{pattern: "metadata.finalizers", value: []any{"kubernetes.io/pv-protection"}}, // added by the StorageObjectInUseProtection admission plugin
	},
	"LimitRange": {
		// LimitRangeItem.defaultRequest defaults to default.
		{pattern: "spec.limits[].defaultRequest", when: func(v any, item map[string]any) bool { return reflect.DeepEqual(v, item["default"]) }},
	},
	"Pod": {
		{pattern: "spec.tolerations", when: func(v any, _ map[string]any) bool { return equalUnordered(v, defaultTolerations) }},
	},
	"ValidatingWebhookConfiguration": webhookDefaults,
	"MutatingWebhookConfiguration":   webhookDefaults,
	"CronJob": {
		{pattern: "spec.concurrencyPolicy", value: "Allow"},             // CronJobSpec.concurrencyPolicy
		{pattern: "spec.suspend", value: false},                         // CronJobSpec.suspend
		{pattern: "spec.successfulJobsHistoryLimit", value: int64(3)},   // CronJobSpec.successfulJobsHistoryLimit
		{pattern: "spec.failedJobsHistoryLimit", value: int64(1)},       // CronJobSpec.failedJobsHistoryLimit
		{pattern: "spec.jobTemplate.metadata", value: map[string]any{}}, // an empty ObjectMeta, as the API server serialises it
		{pattern: "spec.jobTemplate.spec.template.metadata", value: map[string]any{}},
	},
}

// podSpecPaths are where each workload kind keeps its pod spec.
var podSpecPaths = map[string][]string{
	"Pod": {"spec"}, "Deployment": {"spec", "template", "spec"}, "StatefulSet": {"spec", "template", "spec"},
	"DaemonSet": {"spec", "template", "spec"}, "ReplicaSet": {"spec", "template", "spec"}, "Job": {"spec", "template", "spec"},
	"CronJob": {"spec", "jobTemplate", "spec", "template", "spec"},
}

// PodSpecPath returns the fields leading to a workload kind's pod spec; nil for other kinds.
func PodSpecPath(kind string) []string { return podSpecPaths[kind] }

func anyValue(any, map[string]any) bool { return true }

// isDefault reports whether value, which the cluster has at pattern and the chart does not
// state, is what the API server fills in by itself for kind.
func isDefault(kind, pattern string, value any, parent map[string]any) bool {
	for _, r := range rulesFor(kind, pattern) {
		if r.when != nil && r.when(value, parent) || r.when == nil && equalValue(r.value, value) {
			return true
		}
	}
	return false
}

// rulesFor returns the rules whose full pattern is pattern.
func rulesFor(kind, pattern string) []defaultRule {
	var out []defaultRule
	for _, r := range kindDefaults[kind] {
		if r.pattern == pattern {
			out = append(out, r)
		}
	}
	podSpec, ok := podSpecPaths[kind]
	if !ok {
		return out
	}
	rest, ok := strings.CutPrefix(pattern, strings.Join(podSpec, ".")+".")
	if !ok {
		return out
	}
	for _, r := range podDefaults {
		if r.pattern == rest {
			out = append(out, r)
		}
	}
	for _, list := range []string{"containers[].", "initContainers[]."} {
		c, ok := strings.CutPrefix(rest, list)
		if !ok {
			continue
		}
		for _, r := range containerDefaults {
			if r.pattern == c {
				out = append(out, r)
			}
		}
		for _, probe := range []string{"livenessProbe.", "readinessProbe.", "startupProbe."} {
			if p, ok := strings.CutPrefix(c, probe); ok {
				for _, r := range probeDefaults {
					if r.pattern == p {
						out = append(out, r)
					}
				}
			}
		}
	}
	return out
}

// equalUnordered reports whether v is a list holding exactly the elements of want, in any order.
func equalUnordered(v any, want []any) bool {
	l, ok := v.([]any)
	if !ok || len(l) != len(want) {
		return false
	}
	used := make([]bool, len(want))
	for _, e := range l {
		found := false
		for i, w := range want {
			if !used[i] && reflect.DeepEqual(normalizeNumbers(e), w) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// normalizeNumbers turns whole float64 numbers into int64, as the tables write them.
func normalizeNumbers(v any) any { return toInt64(deepCopyValue(v)) }

func equalValue(a, b any) bool {
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap || bIsMap {
		return aIsMap && bIsMap && len(am) == 0 && len(bm) == 0
	}
	return equal(a, b)
}

// equalQuantities compares two resource quantities by value ("1000m" is "1"); ok is false
// when either is not a quantity.
func equalQuantities(a, b any) (equal, ok bool) {
	as, aok := a.(string)
	bs, bok := b.(string)
	if !aok && !bok {
		return false, false
	}
	qa, err := resource.ParseQuantity(quantityString(a, as, aok))
	if err != nil {
		return false, false
	}
	qb, err := resource.ParseQuantity(quantityString(b, bs, bok))
	if err != nil {
		return false, false
	}
	return qa.Cmp(qb) == 0, true
}

func quantityString(v any, s string, isString bool) string {
	if isString {
		return s
	}
	return scalarString(v)
}
