package managerintegration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// The two admission Events of v1.7.0 that keep or got their names
// (seed 003), against the running operator: a repeated request for the run
// in flight is dropped with PlannedFailoverSkipped and starts nothing; a
// clear-hold annotation with no hold in place is dropped with
// PlannedFailoverHoldAcknowledgmentIgnored and changes nothing.
func TestPlannedFailoverSkippedAndHoldAcknowledgmentIgnored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, threeSites)
	e.startOperator(withFailover)
	e.create(e.failoverGroup(threeSites))
	e.waitActive("iad", 1)
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)

	// A deployment hold keeps the run Deferred for as long as the test needs.
	g := e.get()
	store := leasestore.New(e.kube, leasestore.Options{})
	ref := leasestore.GroupRef{Namespace: e.ns, Name: g.Name, UID: g.UID}
	for _, k := range []leasestore.Kind{leasestore.KindMigration, leasestore.KindFailoverHold} {
		if _, err := store.Grant(context.Background(), leasestore.GrantRequest{Group: ref, Kind: k, OperationID: "op-7", Instance: "orders-app",
			Holder: "ci", TTL: 10 * time.Minute, TopologyGeneration: 1}); err != nil {
			t.Fatalf("grant %s: %v", k, err)
		}
	}
	e.annotatePlanned("pdx")
	run := e.waitClaim("the run deferred", func(pf *v1alpha1.PlannedFailoverStatus) bool {
		return pf.Phase == v1alpha1.PlannedFailoverDeferred
	}).Status.PlannedFailover.RunID

	t.Run("repeat", func(t *testing.T) {
		e.annotatePlanned("pdx:maxLagWait=5m")
		ev := e.waitEvent(v1alpha1.EventPlannedFailoverSkipped, corev1.EventTypeNormal)
		if !strings.Contains(ev.Message, run) || !strings.Contains(ev.Message, "pdx") {
			t.Errorf("Skipped Event %q names neither run %s nor its target", ev.Message, run)
		}
		g := e.waitAnnotationGone(topology.AnnotationPlannedFailover)
		pf := g.Status.PlannedFailover
		if pf.RunID != run || pf.Phase != v1alpha1.PlannedFailoverDeferred || pf.MaxLagWait.Duration == 5*time.Minute {
			t.Errorf("the repeat changed the claim: run %s phase %s maxLagWait %s", pf.RunID, pf.Phase, pf.MaxLagWait.Duration)
		}
		if n := len(e.eventsOf(v1alpha1.EventPlannedFailoverRejected)); n != 0 {
			t.Errorf("%d PlannedFailoverRejected Events for a repeat", n)
		}
		e.checkServing("iad")
	})

	t.Run("acknowledgment without a hold", func(t *testing.T) {
		e.annotate(topology.AnnotationClearAutomaticFailoverHold, groupName)
		ev := e.waitEvent(v1alpha1.EventPlannedFailoverHoldAcknowledgmentIgnored, corev1.EventTypeWarning)
		if !strings.Contains(ev.Message, topology.AnnotationClearAutomaticFailoverHold) {
			t.Errorf("Event %q does not name the annotation", ev.Message)
		}
		g := e.waitAnnotationGone(topology.AnnotationClearAutomaticFailoverHold)
		if g.Status.AutomaticFailoverHold != nil {
			t.Errorf("a hold appeared: %+v", g.Status.AutomaticFailoverHold)
		}
		if n := len(e.eventsOf(v1alpha1.EventAutomaticFailoverHoldCleared)); n != 0 {
			t.Errorf("%d AutomaticFailoverHoldCleared Events with no hold", n)
		}
		if pf := g.Status.PlannedFailover; pf.RunID != run || pf.Phase != v1alpha1.PlannedFailoverDeferred {
			t.Errorf("the run moved: %s", describeClaim(pf))
		}
		e.checkServing("iad")
	})
}

// annotate sets one annotation with a merge patch, as kubectl annotate does.
func (e *env) annotate(key, value string) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if _, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Patch(context.Background(), groupName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) waitAnnotationGone(key string) *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	var g *v1alpha1.MysqlFailoverGroup
	eventually(e.t, waitFor, "annotation "+key+" removed", func() error {
		g = e.get()
		if v, ok := g.Annotations[key]; ok {
			return fmt.Errorf("still %q", v)
		}
		return nil
	})
	return g
}

// checkServing judges by the simulated servers: active alone takes writes.
func (e *env) checkServing(active string) {
	e.t.Helper()
	for name, s := range e.sites {
		snap := s.Snapshot()
		if writable := snap.Running && !snap.ReadOnly && !snap.SuperReadOnly; writable != (name == active) {
			e.t.Errorf("site %s writable=%v (read_only=%v super_read_only=%v), want only %s writable", name, writable, snap.ReadOnly, snap.SuperReadOnly, active)
		}
	}
}
