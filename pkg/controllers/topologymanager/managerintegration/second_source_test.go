package managerintegration

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/testbed/faultproxy"
)

// The sidecar's /status as the operator's second source, with real
// sidecars: when only the operator's path to the active site's mysqld
// port is cut, its sidecar still answers and reports mysqld healthy, so
// the site is a network problem, not a dead primary: no failover, and the
// active site keeps taking writes. Once the operator loses the sidecar too,
// the site is failed over (its sidecar, cut off from the operator as well,
// fences it within the bound).
func TestSidecarReportingHealthyMySQLPreventsFailover(t *testing.T) {
	t.Parallel()
	f := newFabric(t, harnessSites, harnessLease, harnessInterval)
	f.startOperator()
	f.e.create(f.e.failoverGroup(harnessSites))
	f.e.waitActive("iad", 1)
	f.e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	iad := f.sites["iad"]

	iad.sim.Partition(topologymanager.DefaultProgram) // only the operator's MySQL connections
	t.Cleanup(iad.sim.Heal)
	g := f.e.waitCondition(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonFailoverRefused)
	if c := condition(g, v1alpha1.ConditionDegraded); !strings.Contains(c.Message, "sidecar") {
		t.Fatalf("Degraded %q does not name the sidecar's report", c.Message)
	}
	if st := site(g, "iad"); st.State != v1alpha1.SiteUnreachable || !strings.Contains(st.Message, "network problem") {
		t.Fatalf("iad status %+v", st)
	}
	// Longer than the self-fence bound: still no transition, iad writable.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		g := f.e.get()
		if g.Status.Transition != nil || g.Status.ActiveSite != "iad" {
			t.Fatalf("failed over a site its sidecar reports healthy: %+v", g.Status.Transition)
		}
		if snap := iad.sim.Snapshot(); snap.ReadOnly || snap.SuperReadOnly {
			t.Fatal("the active site was fenced while only the operator's mysqld path was cut")
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The operator loses the sidecar too: now the site is failed over.
	iad.opProxy.Set(faultproxy.Blackhole)
	f.net.Sever("iad", operatorName)
	t.Cleanup(func() { iad.opProxy.Set(faultproxy.Open); f.net.Heal() })
	eventually(t, 60*time.Second, "failover away from iad", func() error {
		if g := f.e.get(); g.Status.ActiveSite == "iad" || g.Status.Transition != nil {
			return errors.New("active " + g.Status.ActiveSite)
		}
		return nil
	})
	if snap := iad.sim.Snapshot(); !snap.SuperReadOnly {
		t.Fatal("iad, cut off from the operator, was not fenced by its sidecar")
	}
}
