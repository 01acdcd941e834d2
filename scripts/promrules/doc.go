// Package promrules checks charts/helm-drift's PrometheusRule and Grafana dashboard with
// Prometheus's own code: every expression parsed, the rule groups validated, and each alert
// evaluated on recorded series to fire when it should and not otherwise. A module of its own
// (run by make test), so that Prometheus's dependencies stay out of helm-drift's build.
package promrules
