package managerintegration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/leasestore"
)

// A planned failover deferred by a deployment failover hold counts once in
// bloodraven_planned_failover_deferrals_total{reason="DeploymentHold"}
// (seed 000's deferral counter), however many passes it stays Deferred;
// while it waits, the per-site gauges carry kebab-case role and state
// values that match what the simulated servers do.
func TestPlannedFailoverDeferralCountedAndSiteLabelsKebabCase(t *testing.T) {
	e, op, _ := handoffEnv(t)
	g := e.get()
	store := leasestore.New(e.kube, leasestore.Options{})
	ref := leasestore.GroupRef{Namespace: e.ns, Name: g.Name, UID: g.UID}
	for _, k := range []leasestore.Kind{leasestore.KindMigration, leasestore.KindFailoverHold} {
		if _, err := store.Grant(context.Background(), leasestore.GrantRequest{Group: ref, Kind: k, OperationID: "op-7", Instance: "orders-app",
			Holder: "ci", TTL: 2 * time.Minute, TopologyGeneration: 1}); err != nil {
			t.Fatalf("grant %s: %v", k, err)
		}
	}
	labels := []string{"namespace", e.ns, "group", groupName, "reason", "DeploymentHold"}
	if v := metricValue(t, op.metrics, "bloodraven_planned_failover_deferrals_total", labels...); v != 0 {
		t.Fatalf("deferrals before any request: %v", v)
	}
	e.annotatePlanned("pdx")
	e.waitClaim("the run deferred", func(pf *v1alpha1.PlannedFailoverStatus) bool { return pf.Phase == v1alpha1.PlannedFailoverDeferred })
	eventually(t, waitFor, "the deferral counted", func() error {
		if v := metricValue(t, op.metrics, "bloodraven_planned_failover_deferrals_total", labels...); v != 1 {
			return fmt.Errorf("deferrals = %v", v)
		}
		return nil
	})
	time.Sleep(2 * time.Second) // ten polls of the group, still Deferred
	if pf := e.get().Status.PlannedFailover; pf.Phase != v1alpha1.PlannedFailoverDeferred {
		t.Fatalf("phase %s, want Deferred while the hold lasts", pf.Phase)
	}
	if v := metricValue(t, op.metrics, "bloodraven_planned_failover_deferrals_total", labels...); v != 1 {
		t.Fatalf("deferrals = %v after more passes of the same Deferred run, want 1", v)
	}

	// The world: iad takes writes, pdx and reader apply iad's stream.
	if s := e.sites["iad"].Snapshot(); !s.Running || s.ReadOnly {
		t.Fatalf("iad %+v", s)
	}
	for _, name := range []string{"pdx", "reader"} {
		if s := e.sites[name].Snapshot(); !s.SuperReadOnly || s.IORunning != "Yes" || !s.SQLRunning {
			t.Fatalf("%s %+v", name, s)
		}
	}
	for _, c := range []struct {
		metric, site, label, value string
	}{
		{"bloodraven_site_state", "iad", "state", "writable"},
		{"bloodraven_site_state", "pdx", "state", "read-only"},
		{"bloodraven_site_role", "iad", "role", "primary-candidate"},
		{"bloodraven_site_role", "reader", "role", "read-only"},
		{"bloodraven_site_replication_state", "pdx", "state", "running"},
		{"bloodraven_site_replication_state", "reader", "state", "running"},
		{"bloodraven_site_replication_state", "iad", "state", "not-replicating"},
	} {
		if v := metricValue(t, op.metrics, c.metric, "namespace", e.ns, "group", groupName, "site", c.site, c.label, c.value); v != 1 {
			t.Errorf("%s{site=%s,%s=%s} = %v, want 1", c.metric, c.site, c.label, c.value, v)
		}
	}
	if v := metricValue(t, op.metrics, "bloodraven_failover_group_max_lag_seconds", "namespace", e.ns, "group", groupName); v != float64(v1alpha1.DefaultMaxLagSeconds) {
		t.Errorf("max lag %v", v)
	}
}
