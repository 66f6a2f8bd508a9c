package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/pkg/testbed/alertrules"
)

const (
	monitoring    = "deploy/components/monitoring"
	dashboardFile = "deploy/components/monitoring/dashboards/bloodraven.json"
	runbookPrefix = "https://github.com/shipstream/bloodraven/blob/main/"
)

// monitoringOverlay is a throwaway overlay of the base plus the monitoring
// component.
func monitoringOverlay(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	rel := func(p string) string {
		r, err := filepath.Rel(dir, repo(p))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + rel("deploy/base") + "\ncomponents:\n  - " + rel(monitoring) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The component renders a PrometheusRule and the dashboard ConfigMap in the
// operator's namespace; the ConfigMap carries the Grafana sidecar's label
// and the dashboard file byte for byte, and a real API server accepts it
// with strict validation. (The PrometheusRule's kind needs the Prometheus
// Operator's CRDs, which the test control plane lacks; its content is
// checked by promtool below.)
func TestMonitoringComponentRenders(t *testing.T) {
	text, objs := kustomize(t, monitoringOverlay(t))
	want, err := os.ReadFile(repo(dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var rule, cm, sm, svc map[string]any
	for _, o := range objs {
		switch {
		case o.Kind == "ServiceMonitor" && o.name() == "bloodraven":
			sm = o.raw
		case o.Kind == "Service" && o.name() == "bloodraven-metrics":
			svc = o.raw
		case o.Kind == "PrometheusRule" && o.name() == "bloodraven":
			rule = o.raw
		case o.Kind == "ConfigMap" && o.name() == "bloodraven-dashboard":
			cm = o.raw
		}
	}
	if rule == nil || cm == nil {
		t.Fatalf("rendered PrometheusRule %v, dashboard ConfigMap %v", rule != nil, cm != nil)
	}
	if dig(rule, "apiVersion") != "monitoring.coreos.com/v1" || dig(rule, "metadata", "namespace") != "bloodraven" || dig(cm, "metadata", "namespace") != "bloodraven" {
		t.Errorf("rule %v/%v, ConfigMap in %v", dig(rule, "apiVersion"), dig(rule, "metadata", "namespace"), dig(cm, "metadata", "namespace"))
	}
	if dig(cm, "metadata", "labels", "grafana_dashboard") != "1" {
		t.Errorf("ConfigMap labels %v lack grafana_dashboard: \"1\"", dig(cm, "metadata", "labels"))
	}
	if got, _ := dig(cm, "data", "bloodraven.json").(string); got != string(want) {
		t.Errorf("the ConfigMap's bloodraven.json differs from %s", dashboardFile)
	}
	// The ServiceMonitor selects the metrics Service by its labels, names
	// its metrics port, and keeps the metrics' namespace label.
	if sm == nil || svc == nil {
		t.Fatalf("rendered ServiceMonitor %v, Service bloodraven-metrics %v", sm != nil, svc != nil)
	}
	for k, v := range dig(sm, "spec", "selector", "matchLabels").(map[string]any) {
		if dig(svc, "metadata", "labels", k) != v {
			t.Errorf("ServiceMonitor selects %s=%v; the Service has %v", k, v, dig(svc, "metadata", "labels"))
		}
	}
	if dig(sm, "spec", "endpoints", 0, "port") != dig(svc, "spec", "ports", 0, "name") || dig(sm, "spec", "endpoints", 0, "honorLabels") != true {
		t.Errorf("ServiceMonitor endpoint %v, Service ports %v", dig(sm, "spec", "endpoints", 0), dig(svc, "spec", "ports"))
	}
	if cp == nil {
		return
	}
	var docs []string
	for _, doc := range strings.Split(text, "\n---\n") {
		if strings.Contains(doc, "kind: ConfigMap") && strings.Contains(doc, "name: bloodraven-dashboard") {
			docs = append(docs, doc)
		}
	}
	if out, err := apply(t, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: bloodraven\n---\n"+strings.Join(docs, "\n---\n")); err != nil {
		t.Fatalf("apply the dashboard ConfigMap: %v\n%s", err, out)
	}
}

// Every alert links a runbook that exists under docs/runbooks/, carries a
// severity and a summary, and reads only metrics docs/metrics.md lists.
func TestAlertsLinkRunbooksAndDocumentedMetrics(t *testing.T) {
	doc := documentedMetrics(t)
	alerts := alertrules.Alerts(t)
	if len(alerts) < 10 {
		t.Fatalf("%d alerts", len(alerts))
	}
	for _, r := range alerts {
		url := r.Annotations["runbook_url"]
		path, ok := strings.CutPrefix(url, runbookPrefix)
		if !ok || !strings.HasPrefix(path, "docs/runbooks/") {
			t.Errorf("%s: runbook_url %q is not %sdocs/runbooks/...", r.Alert, url, runbookPrefix)
		} else if _, err := os.Stat(repo(path)); err != nil {
			t.Errorf("%s: runbook %s does not exist", r.Alert, path)
		}
		if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
			t.Errorf("%s: severity %q summary %q", r.Alert, r.Labels["severity"], r.Annotations["summary"])
		}
		names := alertrules.MetricNames(r.Expr)
		if len(names) == 0 {
			t.Errorf("%s reads no operator metric: %s", r.Alert, r.Expr)
		}
		for _, n := range names {
			if !doc[n] {
				t.Errorf("%s reads %s, which docs/metrics.md does not list", r.Alert, n)
			}
		}
	}
}

// promtool accepts the rules, and the committed rule tests (recorded by
// the topology manager's integration suite) pass against them.
func TestAlertRuleTestsPass(t *testing.T) {
	dir := t.TempDir()
	rules := alertrules.WriteRulesFile(t, dir)
	alertrules.Run(t, dir, "check", "rules", rules)
	tests, err := filepath.Glob(repo(monitoring + "/tests/*.test.yaml"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no rule tests under %s/tests: %v", monitoring, err)
	}
	for _, f := range tests {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
		alertrules.Run(t, dir, "test", "rules", filepath.Base(f))
	}
}

// dashboard is the part of Grafana's dashboard model the provisioning
// sidecar and Grafana need to load it.
type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// Grafana's built-in panel types the dashboard may use.
var panelTypes = map[string]bool{"stat": true, "timeseries": true, "state-timeline": true, "table": true, "gauge": true, "bargauge": true}

var templateVar = regexp.MustCompile(`\$\{?([a-zA-Z_]+)\}?`)

// The dashboard JSON has what Grafana requires to load it: a title, a uid
// Grafana accepts (at most 40 characters), a schema version, panels with
// unique ids, a known type, a title, a grid position inside the 24-column
// grid without overlaps, a Prometheus data source, and targets whose
// expressions parse as PromQL (promtool checks them as recording rules)
// and read only documented metrics; every $variable is defined.
func TestDashboardLoads(t *testing.T) {
	b, err := os.ReadFile(repo(dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" || len(d.UID) > 40 || d.SchemaVersion < 36 || len(d.Panels) == 0 {
		t.Fatalf("dashboard title %q uid %q schemaVersion %d panels %d", d.Title, d.UID, d.SchemaVersion, len(d.Panels))
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	doc := documentedMetrics(t)
	ids := map[int]bool{}
	cells := map[[2]int]int{}
	var record []map[string]string
	for _, p := range d.Panels {
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if p.ID <= 0 || ids[p.ID] || !panelTypes[p.Type] || p.Title == "" {
			t.Errorf("%s: id unique and positive, type %q known, title set", where, p.Type)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W < 1 || g.H < 1 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("%s: gridPos %+v outside the 24-column grid", where, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, taken := cells[[2]int{x, y}]; taken {
					t.Errorf("%s overlaps panel %d at column %d row %d", where, other, x, y)
				}
				cells[[2]int{x, y}] = p.ID
			}
		}
		if p.Datasource.Type != "prometheus" || len(p.Targets) == 0 {
			t.Errorf("%s: datasource %+v, %d targets", where, p.Datasource, len(p.Targets))
		}
		for _, s := range append([]string{p.Datasource.UID}, targetsExprs(p)...) {
			for _, m := range templateVar.FindAllStringSubmatch(s, -1) {
				if !vars[m[1]] {
					t.Errorf("%s uses $%s, which the dashboard does not define", where, m[1])
				}
			}
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] || tg.Expr == "" {
				t.Errorf("%s: target refId %q (unique, set) expr %q", where, tg.RefID, tg.Expr)
			}
			refs[tg.RefID] = true
			names := alertrules.MetricNames(tg.Expr)
			if len(names) == 0 {
				t.Errorf("%s reads no Bloodraven metric: %s", where, tg.Expr)
			}
			for _, n := range names {
				if !doc[n] {
					t.Errorf("%s reads %s, which docs/metrics.md does not list", where, n)
				}
			}
			// Grafana substitutes the variables before the query runs; a
			// regex matcher's value stands in for them here.
			expr := templateVar.ReplaceAllString(tg.Expr, ".*")
			record = append(record, map[string]string{"record": fmt.Sprintf("dashboard:panel_%d_%s", p.ID, tg.RefID), "expr": expr})
		}
	}
	rules, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": record}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	alertrules.Run(t, dir, "check", "rules", "dashboard.yaml")
}

func targetsExprs(p panel) []string {
	var out []string
	for _, tg := range p.Targets {
		out = append(out, tg.Expr)
	}
	return out
}

var docMetricRow = regexp.MustCompile("^\\| `([a-z_]+)` \\|")

// documentedMetrics is the set of metric names docs/metrics.md lists.
func documentedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(repo("docs/metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := docMetricRow.FindStringSubmatch(line); m != nil {
			out[m[1]] = true
		}
	}
	return out
}
