package promrules

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	promqlengine "github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/template"
	"gopkg.in/yaml.v3"
)

const job = "d-helm-drift" // the Service a ServiceMonitor scrapes: the release's full name

// rendered renders charts/helm-drift with its PrometheusRule and dashboard, with the real helm
// v3, and returns its documents by kind.
func rendered(t *testing.T, set string) map[string]map[string]any {
	t.Helper()
	out, err := exec.Command("bash", "../tools.sh", "helm3").Output()
	if err != nil {
		t.Fatalf("scripts/tools.sh helm3: %v", err)
	}
	helm := filepath.Join(strings.TrimSpace(string(out)), "helm3")
	cmd := exec.Command(helm, "template", "d", "../../charts/helm-drift", "-n", "monitoring", "--set", set)
	cmd.Env = append(cmd.Environ(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_CACHE_HOME="+t.TempDir())
	text, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	docs := map[string]map[string]any{}
	dec := yaml.NewDecoder(bytes.NewReader(text))
	for {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			break
		}
		if k, _ := d["kind"].(string); k != "" {
			docs[k] = d
		}
	}
	return docs
}

var promql = parser.NewParser(parser.Options{})

// ruleGroups parses the PrometheusRule's groups as Prometheus loads a rule file.
func ruleGroups(t *testing.T, rule map[string]any) *rulefmt.RuleGroups {
	t.Helper()
	spec, _ := yaml.Marshal(rule["spec"])
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, promql, nil)
	if len(errs) > 0 {
		t.Fatalf("the PrometheusRule's groups do not load: %v\n%s", errs, spec)
	}
	return groups
}

// TestExpressionsParse: every rule and every dashboard expression is valid PromQL, and the
// rule groups load as Prometheus loads a rule file.
func TestExpressionsParse(t *testing.T) {
	docs := rendered(t, "prometheusRule.enabled=true,dashboard.enabled=true")
	groups := ruleGroups(t, docs["PrometheusRule"])
	alerts := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if _, err := promql.ParseExpr(r.Expr); err != nil {
				t.Errorf("rule %s: %v", r.Alert, err)
			}
			alerts++
		}
	}
	if alerts != 2 {
		t.Errorf("%d alerts, want HelmDriftPresent and HelmDriftNotMeasured", alerts)
	}
	data, _ := docs["ConfigMap"]["data"].(map[string]any)
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal([]byte(fmt.Sprint(data["helm-drift.json"])), &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	exprs := 0
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			if _, err := promql.ParseExpr(target.Expr); err != nil {
				t.Errorf("dashboard panel %q: %v", p.Title, err)
			}
			exprs++
		}
	}
	if exprs < 4 {
		t.Errorf("%d dashboard expressions, want drift by class, pending deletions, last success, failed runs", exprs)
	}
}

// alert is one of the PrometheusRule's alerts as Prometheus evaluates it.
func alert(t *testing.T, groups *rulefmt.RuleGroups, name string) *rules.AlertingRule {
	t.Helper()
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert != name {
				continue
			}
			expr, err := promql.ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			return rules.NewAlertingRule(r.Alert, expr, time.Duration(r.For), 0, labels.FromMap(r.Labels), labels.FromMap(r.Annotations), labels.EmptyLabels(), "", false, nil)
		}
	}
	t.Fatalf("no alert %s", name)
	return nil
}

// states evaluates rule every minute over the recorded series and returns, per minute, the
// state of its alerts: "" (none), "pending" or "firing".
func states(t *testing.T, rule *rules.AlertingRule, series string, minutes int) []string {
	t.Helper()
	var st storage.Storage
	if series != "" {
		st = promqltest.LoadedStorage(t, "load 1m\n"+series)
	} else {
		st = promqltest.LoadedStorage(t, "load 1m\n  unrelated_metric 1x200")
	}
	engine := promqltest.NewTestEngine(t, false, 0, 100000)
	query := rules.EngineQueryFunc(engine, st)
	out := make([]string, minutes+1)
	for m := 0; m <= minutes; m++ {
		if _, err := rule.Eval(context.Background(), 0, time.Unix(0, 0).Add(time.Duration(m)*time.Minute), query, nil, 0); err != nil {
			t.Fatalf("minute %d: %v", m, err)
		}
		for _, a := range rule.ActiveAlerts() {
			out[m] = a.State.String()
		}
	}
	return out
}

// TestAlertsFire: each alert evaluated by Prometheus's rule engine on recorded series fires
// when it should and not otherwise.
func TestAlertsFire(t *testing.T) {
	groups := ruleGroups(t, rendered(t, "prometheusRule.enabled=true,prometheusRule.driftFor=1h,serve.interval=10m")["PrometheusRule"])

	// Drift: clean for 30 minutes, then a DIFFERS row that stays; another release clean.
	drift := alert(t, groups, "HelmDriftPresent")
	series := fmt.Sprintf("  helm_drift_divergences{job=%q,namespace=\"shop\",release=\"web\",kind=\"release\",class=\"DIFFERS\"} 0x30 1x150\n"+
		"  helm_drift_divergences{job=%q,namespace=\"shop\",release=\"db\",kind=\"release\",class=\"DIFFERS\"} 0x180\n", job, job)
	s := states(t, drift, series, 150)
	for _, c := range []struct {
		minute int
		want   string
	}{{20, ""}, {29, ""}, {31, "pending"}, {89, "pending"}, {92, "firing"}, {150, "firing"}} {
		if s[c.minute] != c.want {
			t.Errorf("HelmDriftPresent at minute %d: %q, want %q", c.minute, s[c.minute], c.want)
		}
	}

	// Staleness: a run every 10 minutes until minute 60, then none succeeds (the timestamp
	// stays): two intervals later it is pending, five minutes after that firing.
	stale := alert(t, groups, "HelmDriftNotMeasured")
	var values []string
	for m := 0; m <= 150; m++ {
		values = append(values, fmt.Sprint(min(m/10, 6)*600))
	}
	s = states(t, stale, fmt.Sprintf("  helm_drift_last_success_timestamp_seconds{job=%q} %s\n", job, strings.Join(values, " ")), 150)
	for _, c := range []struct {
		minute int
		want   string
	}{{10, ""}, {59, ""}, {75, ""}, {80, ""}, {82, "pending"}, {85, "pending"}, {87, "firing"}, {150, "firing"}} {
		if s[c.minute] != c.want {
			t.Errorf("HelmDriftNotMeasured at minute %d: %q, want %q", c.minute, s[c.minute], c.want)
		}
	}
	// Never measured at all (helm-drift not running): absent, firing after five minutes.
	s = states(t, alert(t, groups, "HelmDriftNotMeasured"), "", 10)
	if s[3] != "pending" || s[6] != "firing" {
		t.Errorf("HelmDriftNotMeasured with no series: minute 3 %q, minute 6 %q, want pending then firing", s[3], s[6])
	}
}

// TestConsoleLink: with serve.externalURL, HelmDriftPresent carries the release's page in the
// drift console as its annotation "console", which Prometheus's template engine expands for
// the alert's labels.
func TestConsoleLink(t *testing.T) {
	groups := ruleGroups(t, rendered(t, "prometheusRule.enabled=true,serve.externalURL=https://drift.example.com/")["PrometheusRule"])
	link := ""
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "HelmDriftPresent" {
				link = r.Annotations["console"]
			}
		}
	}
	if link == "" {
		t.Fatal("HelmDriftPresent has no console annotation")
	}
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	data := template.AlertTemplateData(map[string]string{"kind": "helmrelease", "namespace": "shop", "release": "web"}, nil, "", promqlengine.Sample{})
	got, err := template.NewTemplateExpander(context.Background(), defs+link, "console", data, 0, nil, nil, nil).Expand()
	if err != nil || got != "https://drift.example.com/helmrelease/shop/web" {
		t.Errorf("the console annotation expands to %q (%v), want the HelmRelease's page", got, err)
	}
	if _, ok := ruleGroups(t, rendered(t, "prometheusRule.enabled=true")["PrometheusRule"]).Groups[0].Rules[0].Annotations["console"]; ok {
		t.Errorf("without serve.externalURL: a console annotation")
	}
}
