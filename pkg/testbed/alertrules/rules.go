// Package alertrules is test bed for the alerting rules shipped in
// deploy/components/monitoring: it reads them from the PrometheusRule, runs
// the pinned bin/promtool over them, and records a Prometheus registry's
// series, scrape by scrape, as promtool input series, so rule tests run on
// what the operator really exported.
package alertrules

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/e2e/framework"
)

// RuleFile is where the rules live in the repository.
const RuleFile = "deploy/components/monitoring/prometheusrule.yaml"

// Rule is one alerting rule of the PrometheusRule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Group is one rule group.
type Group struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Groups []Group `json:"groups"`
	} `json:"spec"`
}

// Groups reads the rule groups of the shipped PrometheusRule.
func Groups(t testing.TB) []Group {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(framework.RepoRoot(), RuleFile))
	if err != nil {
		t.Fatal(err)
	}
	var pr prometheusRule
	if err := yaml.UnmarshalStrict(b, &pr); err != nil {
		t.Fatalf("%s: %v", RuleFile, err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || len(pr.Spec.Groups) == 0 {
		t.Fatalf("%s: %s %s with %d groups", RuleFile, pr.APIVersion, pr.Kind, len(pr.Spec.Groups))
	}
	return pr.Spec.Groups
}

// Alerts lists every alerting rule.
func Alerts(t testing.TB) []Rule {
	var out []Rule
	for _, g := range Groups(t) {
		out = append(out, g.Rules...)
	}
	return out
}

// WriteRulesFile writes the PrometheusRule's spec, the rule-file format
// Prometheus and promtool read, to dir/rules.yaml and returns its path.
func WriteRulesFile(t testing.TB, dir string) string {
	t.Helper()
	b, err := yaml.Marshal(map[string]any{"groups": Groups(t)})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Promtool is the pinned promtool that `make tools` builds into bin/. A
// missing one fails the test: the rules are untested without it.
func Promtool(t testing.TB) string {
	t.Helper()
	p := filepath.Join(framework.BinDir(), "promtool")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("bin/promtool is missing (%v): run `make tools` (scripts/build-controlplane.sh builds it, pinned)", err)
	}
	return p
}

// Run runs promtool with args in dir and fails the test with its output
// when it exits non-zero.
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(Promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

var metricName = regexp.MustCompile(`\b(?:bloodraven|workqueue|rest_client)_[a-z_]*[a-z]`)

// MetricNames returns the metric names an expression reads, histogram
// suffixes (_bucket, _sum, _count) cut to the family name.
func MetricNames(expr string) []string {
	seen := map[string]bool{}
	for _, m := range metricName.FindAllString(expr, -1) {
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if f, ok := strings.CutSuffix(m, suf); ok && strings.HasSuffix(f, "_seconds") {
				m = f
			}
		}
		seen[m] = true
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

var labelRef = regexp.MustCompile(`\{\{\s*\$labels\.([a-zA-Z_]+)\s*\}\}`)

// Render expands the {{ $labels.name }} references of an annotation
// template, as Prometheus does, and fails on any other template action (a
// test expecting such an annotation must spell it itself).
func Render(t testing.TB, tmpl string, labels map[string]string) string {
	t.Helper()
	out := labelRef.ReplaceAllStringFunc(tmpl, func(ref string) string {
		return labels[labelRef.FindStringSubmatch(ref)[1]]
	})
	if strings.Contains(out, "{{") {
		t.Fatalf("annotation %q has template actions Render does not expand", tmpl)
	}
	return out
}
