package bench

import (
	"bytes"
	"fmt"
)

// Stream is a generated rendered release: Deployments, ConfigMaps, Services and HelmReleases,
// Helm's `# Source:` comments included, SelectedHelmReleases of them labelled drift=on.
type Stream struct {
	YAML []byte
	Docs int
}

// SelectedLabel marks the HelmReleases the benchmarks select.
const SelectedLabel = "drift=on"

// Generate makes a stream of about docs documents, helmReleases of them HelmReleases, of which
// selected carry SelectedLabel.
func Generate(docs, helmReleases, selected int) Stream {
	var b bytes.Buffer
	n := 0
	for i := 0; i < helmReleases; i++ {
		label := ""
		if i < selected {
			label = "\n    drift: \"on\""
		}
		fmt.Fprintf(&b, `---
# Source: platform/templates/helmreleases.yaml
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: component-%04d
  namespace: flux-system
  labels:
    app.kubernetes.io/managed-by: Helm%s
spec:
  interval: 10m
  chartRef:
    kind: OCIRepository
    name: component-%04d
  install:
    disableWait: true
  values:
    replicaCount: 2
    image:
      tag: "1.%d.0"
`, i, label, i, i)
		n++
	}
	for i := 0; n < docs; i++ {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, `---
# Source: platform/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%05d
  labels:
    app.kubernetes.io/name: app-%05d
    app.kubernetes.io/managed-by: Helm
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: app-%05d
  template:
    metadata:
      labels:
        app.kubernetes.io/name: app-%05d
      annotations:
        checksum/config: 3f2a9c1e7b4d6f8a0c2e4b6d8f0a1c3e5b7d9f1a3c5e7b9d1f3a5c7e9b1d3f5a
    spec:
      containers:
        - name: app
          image: "registry.example.internal/app:%d.0.1"
          ports:
            - containerPort: 8080
              protocol: TCP
          env:
            - name: LOG_LEVEL
              value: "info"
            - name: SETTINGS
              valueFrom:
                configMapKeyRef:
                  name: app-%05d
                  key: settings.yaml
          readinessProbe:
            httpGet:
              path: /healthz
              port: 8080
            initialDelaySeconds: 5
            periodSeconds: 10
          livenessProbe:
            httpGet:
              path: /livez
              port: 8080
            failureThreshold: 3
          resources:
            limits: {cpu: 500m, memory: 256Mi}
            requests: {cpu: 100m, memory: 128Mi}
          securityContext:
            runAsNonRoot: true
            readOnlyRootFilesystem: true
            allowPrivilegeEscalation: false
      serviceAccountName: app-%05d
`, i, i, i, i, i%9, i+1, i)
		case 1:
			fmt.Fprintf(&b, `---
# Source: platform/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-%05d
data:
  settings.yaml: |
    # settings for app %05d
    server:
      port: 8080
      timeout: 30s
    features: [a, b, c]
    database:
      host: db.data.svc.cluster.local
      port: 5432
      pool: {min: 2, max: 20, idle: 5m}
    cache:
      host: redis.data.svc.cluster.local
      ttl: 10m
    logging:
      level: info
      format: json
      fields: [request_id, user, route, status, duration]
  greeting: 'hello'   # kept as written
  motd: "Welcome to app %05d. Maintenance windows are announced a week ahead."
`, i, i, i)
		default:
			fmt.Fprintf(&b, `---
# Source: platform/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: app-%05d
  annotations:
    prometheus.io/scrape: "true"
    prometheus.io/port: "8080"
    service.example.internal/owner: "team-platform@example.internal"
spec:
  selector:
    app.kubernetes.io/name: app-%05d
  ports:
  - port: 80
    targetPort: 8080
`, i, i-2)
		}
		n++
	}
	return Stream{YAML: b.Bytes(), Docs: n}
}
