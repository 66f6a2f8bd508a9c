package sidecar_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/sidecar"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// docs/metrics.md says the sidecar exports no metrics: its real handler
// answers /metrics 404, and its binary links no Prometheus client that
// could serve any.
func TestSidecarExportsNoMetricsAsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "The sidecar exports no metrics") {
		t.Fatal("docs/metrics.md no longer says the sidecar exports no metrics; this test checks that statement")
	}
	sim := simtest.Start(t, mysqlsim.Config{Name: "iad"})
	sc, err := sidecar.New(sidecar.Config{
		Namespace: "ns", Group: "orders", Site: "iad",
		MySQL:            mysql.Options{Addr: sim.Addr(), User: simtest.AdminUser, Password: simtest.AdminPass},
		OperatorEndpoint: "127.0.0.1:1", LeaseTimeout: 2 * time.Second, PeerCheckInterval: 500 * time.Millisecond, Version: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	srv := httptest.NewServer(sc.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the sidecar answers GET /metrics with %d", resp.StatusCode)
	}
	out, err := exec.Command("go", "list", "-deps", filepath.Join(framework.RepoRoot(), "cmd", "bloodraven-sidecar")).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "github.com/prometheus/client_golang") {
		t.Error("cmd/bloodraven-sidecar links github.com/prometheus/client_golang: document what it exports in docs/metrics.md")
	}
}
