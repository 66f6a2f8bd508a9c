package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/operator"
)

// docMetric is one row of docs/metrics.md's table: a name (or a prefix
// ending in _*) and its label names.
type docMetric struct {
	name   string
	labels []string
}

var (
	docRow   = regexp.MustCompile("^\\| `([a-z_]+\\*?)` \\|[^|]*\\|([^|]*)\\|")
	backtick = regexp.MustCompile("`([a-z_]+)`")
	descName = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
)

func readMetricsDoc(t *testing.T) map[string]docMetric {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]docMetric{}
	for _, line := range strings.Split(string(b), "\n") {
		m := docRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		d := docMetric{name: m[1]}
		for _, l := range backtick.FindAllStringSubmatch(m[2], -1) {
			d.labels = append(d.labels, l[1])
		}
		sort.Strings(d.labels)
		out[d.name] = d
	}
	if len(out) < 10 {
		t.Fatalf("docs/metrics.md: only %d metric rows parsed", len(out))
	}
	return out
}

// documented finds the row of a metric family: its own, or a prefix row.
func documented(doc map[string]docMetric, name string) (docMetric, bool) {
	if d, ok := doc[name]; ok {
		return d, true
	}
	for k, d := range doc {
		if p, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(name, p) {
			return d, true
		}
	}
	return docMetric{}, false
}

// registered reads every descriptor of reg: family name and label names,
// including vectors that have no series yet.
func registered(reg prometheus.Collector) map[string][]string {
	ch := make(chan *prometheus.Desc)
	go func() { reg.Describe(ch); close(ch) }()
	out := map[string][]string{}
	for d := range ch {
		m := descName.FindStringSubmatch(d.String())
		if m == nil {
			continue
		}
		var labels []string
		if m[2] != "" {
			labels = strings.Split(m[2], ",")
		}
		sort.Strings(labels)
		out[m[1]] = labels
	}
	return out
}

// scrapedFamilies returns the family names of a text exposition.
func scrapedFamilies(body string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			out[strings.Fields(rest)[0]] = true
		}
	}
	return out
}

// The operator process, built as main builds it with every controller and
// the deploy API, exports exactly what docs/metrics.md lists: nothing on its
// real /metrics listener or in its registry is missing from the table (with
// the same labels), and every row names a registered metric.
func TestMetricsDocumentListsEveryMetric(t *testing.T) {
	needControlPlane(t)
	ns := cp.NewNamespace(t)
	certDir := writeCert(t)
	metricsAddr := freeAddr(t)
	cfg, err := operator.ParseConfig([]string{
		"--kubeconfig=" + cp.KubeconfigPath, "--namespaces=" + ns, "--leader-elect-namespace=" + ns,
		"--leader-elect-identity=metricsdoc",
		"--leader-elect-lease-duration=" + leaseDuration.String(), "--leader-elect-renew-deadline=" + renewDeadline.String(),
		"--leader-elect-retry-period=" + retryPeriod.String(),
		"--metrics-addr=" + metricsAddr, "--probe-addr=" + freeAddr(t), "--auxiliary-addr=" + freeAddr(t),
		"--tls-cert-file=" + filepath.Join(certDir, "tls.crt"), "--tls-key-file=" + filepath.Join(certDir, "tls.key"),
		"--deploy-api-enabled", "--shutdown-grace-period=10s",
	}, func(k string) string {
		return map[string]string{"BLOODRAVEN_SIDECAR_IMAGE": "sidecar:test", "BLOODRAVEN_ESCROW_TLS_ADDR": freeAddr(t)}[k]
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	p, err := operator.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	p.Exit = func(code int) { t.Errorf("operator exited with %d", code) }
	if err := registerModules(p); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	var body string
	waitUntil(t, "the process leads", 90*time.Second, func() bool {
		code, b, err := get(plain, "http://"+metricsAddr+"/metrics")
		body = b
		return err == nil && code == http.StatusOK && strings.Contains(b, "\nbloodraven_leader 1\n")
	})

	doc := readMetricsDoc(t)
	reg := registered(p.Metrics.Registry)
	for name := range scrapedFamilies(body) {
		if _, ok := documented(doc, name); !ok {
			t.Errorf("/metrics exports %s, which docs/metrics.md does not list", name)
		}
		if _, ok := reg[name]; !ok {
			t.Errorf("/metrics exports %s, which no registered descriptor names", name)
		}
	}
	for name, labels := range reg {
		d, ok := documented(doc, name)
		if !ok {
			t.Errorf("%s (labels %v) is registered but docs/metrics.md does not list it", name, labels)
			continue
		}
		if !strings.HasSuffix(d.name, "*") && strings.Join(d.labels, ",") != strings.Join(labels, ",") {
			t.Errorf("%s: labels %v, docs/metrics.md lists %v", name, labels, d.labels)
		}
	}
	for name := range doc {
		found := false
		for r := range reg {
			if r == name || (strings.HasSuffix(name, "*") && strings.HasPrefix(r, strings.TrimSuffix(name, "*"))) {
				found = true
			}
		}
		if !found {
			t.Errorf("docs/metrics.md lists %s, which the operator never registers", name)
		}
	}
}
