package compare

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helm-drift/helm-drift/internal/normalize"
	"github.com/helm-drift/helm-drift/internal/normalize/defaulting"
)

// written is what the diff compares for a chart's object: the API server's write reproduced
// offline (internal/normalize/defaulting) with the allocated fields taken from the live object, both
// sides normalised.
func written(t *testing.T, tm yaml.TypeMeta, chart, live map[string]any) (map[string]any, map[string]any) {
	t.Helper()
	chart["apiVersion"], chart["kind"] = tm.APIVersion, tm.Kind
	out, ok, err := defaulting.BuiltIn(chart)
	if !ok || err != nil {
		t.Fatalf("defaulting %s: ok %v, %v", tm.Kind, ok, err)
	}
	delete(out, "apiVersion")
	delete(out, "kind")
	return normalize.Object(normalize.Allocated(tm.Kind, out, live), ""), normalize.Object(live, "")
}

// TestDefaultsAreNotDrift: a freshly applied chart, read back with every default the API
// server fills in, shows no divergence; a real edit beside the defaults still does.
func TestDefaultsAreNotDrift(t *testing.T) {
	chart := `
spec:
  selector: {matchLabels: {app: web}}
  template:
    spec:
      containers:
        - name: web
          image: web:1.2
          resources:
            limits: {cpu: "1", memory: 256Mi}
          ports: [{containerPort: 8080}]
          readinessProbe:
            httpGet: {path: /healthz, port: 8080}
          env:
            - name: NODE
              valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        - name: tools
          image: tools
      volumes:
        - name: cfg
          configMap: {name: cfg}
`
	live := `
spec:
  replicas: 1
  progressDeadlineSeconds: 600
  revisionHistoryLimit: 10
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {creationTimestamp: null}
    spec:
      dnsPolicy: ClusterFirst
      restartPolicy: Always
      schedulerName: default-scheduler
      securityContext: {}
      terminationGracePeriodSeconds: 30
      containers:
        - name: web
          image: web:1.2
          imagePullPolicy: IfNotPresent
          terminationMessagePath: /dev/termination-log
          terminationMessagePolicy: File
          resources:
            limits: {cpu: 1000m, memory: 256Mi}
          ports: [{containerPort: 8080, protocol: TCP}]
          readinessProbe:
            httpGet: {path: /healthz, port: 8080, scheme: HTTP}
            timeoutSeconds: 1
            periodSeconds: 10
            successThreshold: 1
            failureThreshold: 3
          env:
            - name: NODE
              valueFrom: {fieldRef: {apiVersion: v1, fieldPath: spec.nodeName}}
        - name: tools
          image: tools
          imagePullPolicy: Always
          terminationMessagePath: /dev/termination-log
          terminationMessagePolicy: File
          resources: {}
      volumes:
        - name: cfg
          configMap: {name: cfg, defaultMode: 420}
`
	r := Compare(written2(t, deployment, chart, live))
	if len(r.Divergences) != 0 {
		t.Errorf("defaults reported as drift:\n%v", summary(r))
	}
	// Real drift among the defaults: a non-default pull policy, another limit, a longer grace.
	edited := live
	for _, e := range [][2]string{
		{"imagePullPolicy: IfNotPresent", "imagePullPolicy: Always"},
		{"cpu: 1000m", "cpu: 1500m"},
		{"terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds: 60"},
	} {
		edited = replaceOnce(t, edited, e[0], e[1])
	}
	want := []string{
		// The chart's side holds the defaults too: an edited default differs from it.
		"DIFFERS spec.template.spec.containers[name=web].imagePullPolicy: IfNotPresent -> Always",
		"DIFFERS spec.template.spec.containers[name=web].resources.limits.cpu: 1 -> 1500m",
		"DIFFERS spec.template.spec.terminationGracePeriodSeconds: 30 -> 60",
	}
	if diff := cmp.Diff(want, summary(Compare(written2(t, deployment, chart, edited)))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestServiceDefaults(t *testing.T) {
	svc := yaml.TypeMeta{APIVersion: "v1", Kind: "Service"}
	chart := "spec:\n  selector: {app: web}\n  ports: [{port: 80}]\n"
	live := "spec:\n  type: ClusterIP\n  clusterIP: 10.0.0.12\n  clusterIPs: [10.0.0.12]\n  ipFamilies: [IPv4]\n  ipFamilyPolicy: SingleStack\n  internalTrafficPolicy: Cluster\n  sessionAffinity: None\n  selector: {app: web}\n  ports: [{port: 80, protocol: TCP, targetPort: 80}]\n"
	if r := Compare(written2(t, svc, chart, live)); len(r.Divergences) != 0 {
		t.Errorf("Service defaults reported as drift: %v", summary(r))
	}
	live2 := replaceOnce(t, live, "targetPort: 80", "targetPort: 8080")
	if got := summary(Compare(written2(t, svc, chart, live2))); len(got) != 1 || got[0] != "DIFFERS spec.ports[port=80,protocol=TCP].targetPort: 80 -> 8080" {
		t.Errorf("a targetPort other than the port is drift: %v", got)
	}
}

func written2(t *testing.T, tm yaml.TypeMeta, chart, live string) (yaml.TypeMeta, map[string]any, map[string]any) {
	t.Helper()
	c, l := written(t, tm, obj(t, chart), obj(t, live))
	return tm, c, l
}

func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	i := indexOf(s, old)
	if i < 0 {
		t.Fatalf("%q not found", old)
	}
	return s[:i] + new + s[i+len(old):]
}

func indexOf(s, sub string) int { return strings.Index(s, sub) }
