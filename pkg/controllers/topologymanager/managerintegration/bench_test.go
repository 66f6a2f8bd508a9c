package managerintegration

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/render"
)

// BenchmarkFailover measures, per failover, the time from "active site
// declared unreachable" (the failover intent written) to "new primary
// writable, status published and DNSEndpoint pointing at it", with the old
// primary frozen (accepts connections, never answers: every poll runs into
// its deadline) and crashed (connections refused). pollInterval 200ms,
// failureThreshold 3, sidecar leaseTimeout 2s + peerCheckInterval 500ms: the
// promotion waits for that self-fence bound (protocol.SelfFenceBound, 6.25s)
// by design. Also reported:
// the time from the fault to the intent (detection).
//
//	BIN_DIR=$PWD/bin go test ./pkg/controllers/topologymanager/managerintegration -run XXX -bench 'Failover$' -benchtime 10x
func BenchmarkFailover(b *testing.B) {
	if err := cp.InstallCRDs(context.Background(), filepath.Join(framework.RepoRoot(), "deploy", "crds-external")); err != nil {
		b.Fatalf("install DNSEndpoint CRD: %v", err)
	}
	for _, mode := range []string{"frozen", "crashed"} {
		b.Run(mode, func(b *testing.B) {
			var detect, promote []time.Duration
			for range b.N {
				d, p := failoverOnce(b, mode)
				detect, promote = append(detect, d), append(promote, p)
			}
			report(b, "detect", detect)
			report(b, "promote", promote)
		})
	}
}

func failoverOnce(b *testing.B, mode string) (detect, promote time.Duration) {
	b.Helper()
	e := newEnv(b, threeSites)
	var mu sync.Mutex
	var declared time.Time
	e.startOperator(withFailover, func(o *topologymanager.Options) {
		o.StatementTimeout = time.Second
		o.AfterIntentWrite = func(g *v1alpha1.MysqlFailoverGroup) {
			if tr := g.Status.Transition; tr != nil && tr.Kind == v1alpha1.TransitionAutomatic {
				mu.Lock()
				if declared.IsZero() {
					declared = time.Now()
				}
				mu.Unlock()
			}
		}
	})
	e.create(e.failoverGroup(threeSites))
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	eventually(b, waitFor, "DNSEndpoint on iad", func() error { return e.dnsTarget("10.0.1.1") })
	// An automatic failover needs the active site's sidecar seen answering
	// at the operator's last contact (docs/safety.md, rule 1).
	e.waitContact("iad")

	fault := time.Now()
	if mode == "frozen" {
		e.sites["iad"].Freeze()
		b.Cleanup(e.sites["iad"].Thaw)
	} else {
		e.sites["iad"].Crash()
	}
	eventually(b, waitFor, "pdx published, writable, DNS on it", func() error {
		if s := e.sites["pdx"].Snapshot(); s.ReadOnly {
			return fmt.Errorf("pdx read-only")
		}
		if g := e.get(); g.Status.ActiveSite != "pdx" || g.Status.Transition != nil {
			return fmt.Errorf("not published")
		}
		return e.dnsTarget("10.0.2.1")
	})
	done := time.Now()
	mu.Lock()
	defer mu.Unlock()
	return declared.Sub(fault), done.Sub(declared)
}

// dnsTarget checks the group's DNSEndpoint A record target.
func (e *env) dnsTarget(ip string) error {
	u, err := e.dyn.Resource(render.DNSEndpointGVR).Namespace(e.ns).Get(context.Background(), render.DNSEndpointName(groupName), metav1.GetOptions{})
	if err != nil {
		return err
	}
	eps, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
	if len(eps) == 0 {
		return fmt.Errorf("no endpoints")
	}
	targets, _, _ := unstructured.NestedStringSlice(eps[0].(map[string]any), "targets")
	if len(targets) != 1 || targets[0] != ip {
		return fmt.Errorf("targets %v, want %s", targets, ip)
	}
	return nil
}

func report(b *testing.B, name string, ds []time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	pct := func(p float64) time.Duration { return ds[int(p*float64(len(ds)-1))] }
	b.ReportMetric(pct(0.5).Seconds(), name+"-p50-s")
	b.ReportMetric(pct(0.9).Seconds(), name+"-p90-s")
	b.ReportMetric(ds[len(ds)-1].Seconds(), name+"-max-s")
	b.Logf("%s: n=%d min=%s p50=%s p90=%s max=%s", name, len(ds), ds[0].Round(time.Millisecond), pct(0.5).Round(time.Millisecond), pct(0.9).Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
}
