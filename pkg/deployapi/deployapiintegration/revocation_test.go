package deployapiintegration_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/leaserevocation"
	"github.com/shipstream/bloodraven/pkg/deployapi"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/testbed/kubeenv"
)

// startController runs the deploy-lease controller for the test, wired the
// way the operator wires it (shared informers, the Event recorder).
func (f *fixture) startController() *leaserevocation.Controller {
	f.t.Helper()
	op := kubeenv.InNamespace(f.t, cp, f.ns).NewInstance()
	c, err := leaserevocation.New(op.Deps, leaserevocation.Options{
		Store: leasestore.New(f.kube, leasestore.Options{Now: f.clock.Now, MaxClockSkew: 2 * time.Second}),
		Now:   f.clock.Now,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	op.Start(1, c)
	return c
}

// checkProjectedSeconds checks a Lease's spec.leaseDurationSeconds.
func (f *fixture) checkProjectedSeconds(name string, want int32) {
	f.t.Helper()
	l, err := f.kube.CoordinationV1().Leases(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != want {
		f.t.Fatalf("%s: leaseDurationSeconds %v, want %d", name, l.Spec.LeaseDurationSeconds, want)
	}
}

func (f *fixture) groupRef() leasestore.GroupRef {
	g, err := f.ship.ShipstreamV1alpha1().MysqlFailoverGroups(f.ns).Get(f.ctx, "orders", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return leasestore.GroupRef{Namespace: f.ns, Name: "orders", UID: g.UID}
}

// waitRevoked waits until the record is a tombstone with reason.
func (f *fixture) waitRevoked(kind leasestore.Kind, op string, reason leasestore.Reason) {
	f.t.Helper()
	err := wait.PollUntilContextTimeout(f.ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		r, ok, err := f.op.store.Get(ctx, f.ns, "orders", kind, op)
		return ok && r.State == leasestore.StateRevoked && r.RevokedReason == reason, err
	})
	if err != nil {
		f.t.Fatalf("%s %s was not revoked with %s: %v", kind, op, reason, err)
	}
}

// waitEvents waits for n DeploymentLeaseRevoked Events on the group whose
// message names reason, and checks they carry no secret.
func (f *fixture) waitEvents(n int, reason leasestore.Reason, secrets ...string) {
	f.t.Helper()
	var got int
	err := wait.PollUntilContextTimeout(f.ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := f.kube.CoreV1().Events(f.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		got = 0
		for _, ev := range list.Items {
			if ev.Reason != v1alpha1.EventDeploymentLeaseRevoked || ev.InvolvedObject.Name != "orders" || ev.InvolvedObject.Kind != "MysqlFailoverGroup" {
				continue
			}
			for _, s := range secrets {
				if strings.Contains(ev.Message, s) {
					f.t.Fatalf("Event message carries a secret")
				}
			}
			if strings.Contains(ev.Message, string(reason)) {
				got += int(ev.Count)
			}
		}
		return got >= n, nil
	})
	if err != nil {
		f.t.Fatalf("saw %d DeploymentLeaseRevoked Events with %s, want %d: %v", got, reason, n, err)
	}
}

func TestTopologyChangeRevokesAndTombstonesSurvive(t *testing.T) {
	f := newFixture(t)
	c := f.startController()
	leases := "/deploy/v1/groups/orders/leases"
	f.database(f.ns, "orders-reports", "orders", client(f.appNS, "deployer"))
	a := f.do(f.op, "POST", leases, f.token, grantBody("migration", opA, "orders-app", 60), nil)
	f.expect(a, 201, "")
	h := f.do(f.op, "POST", leases, f.token, grantBody("failover-hold", opA, "orders-app", 60), nil)
	f.expect(h, 201, "")

	f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) { s.TopologyGeneration = 4; s.ActiveSite = "pdx" })
	f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) {
		s.Sites[0].State, s.Sites[0].Replication = v1alpha1.SiteReadOnly, v1alpha1.ReplicationRunning
		s.Sites[1].State, s.Sites[1].Replication = v1alpha1.SiteWritable, v1alpha1.ReplicationNotReplicating
	})
	// The handler answers 409 at once, whether or not the controller has run.
	r := f.do(f.op, "PUT", leasePath("orders", "migration", opA), f.token, map[string]any{"token": a.str("token")}, nil)
	f.expect(r, 409, "revoked")
	if r.str("reason") != "TopologyChanged" {
		t.Fatalf("revoked reason %s", r.raw)
	}
	f.waitRevoked(leasestore.KindMigration, opA, leasestore.ReasonTopologyChanged)
	f.waitRevoked(leasestore.KindFailoverHold, opA, leasestore.ReasonTopologyChanged)
	// A tombstone projects the minimum duration (the API server refuses 0).
	f.checkProjectedSeconds("bloodraven-deploy.orders.migration."+opA, 1)
	f.checkProjectedSeconds("bloodraven-deploy.orders.failover-hold."+opA, 1)
	f.waitEvents(2, leasestore.ReasonTopologyChanged, a.str("token"), h.str("token"))
	if n := testutil.ToFloat64(c.Revocations().WithLabelValues("TopologyChanged")); n != 2 {
		t.Fatalf("revocations_total{reason=TopologyChanged} = %v, want 2", n)
	}
	if sum, _ := f.op.store.Holds(f.ctx, f.groupRef(), 4); sum.Held {
		t.Fatalf("a revoked hold still counts: %+v", sum)
	}

	// Another operation takes the mutex at the new generation...
	b := f.do(f.op, "POST", leases, f.token, grantBody("migration", opB, "orders-reports", 60), nil)
	f.expect(b, 201, "")
	if b.body["topologyGeneration"] != float64(4) {
		t.Fatalf("new grant at generation %v, want 4", b.body["topologyGeneration"])
	}
	// ...and the old client still gets 409 from its tombstone, for both
	// leases, and cannot POST its way back.
	for _, kind := range []string{"migration", "failover-hold"} {
		tok := a.str("token")
		if kind == "failover-hold" {
			tok = h.str("token")
		}
		r = f.do(f.op, "PUT", leasePath("orders", kind, opA), f.token, map[string]any{"token": tok}, nil)
		f.expect(r, 409, "revoked")
		if r.str("reason") != "TopologyChanged" {
			t.Fatalf("%s tombstone reason %s", kind, r.raw)
		}
	}
	f.expect(f.do(f.op, "POST", leases, f.token, grantBody("migration", opA, "orders-app", 60), nil), 409, "revoked")
	// Release of a revoked lease is idempotent (and still needs its token).
	f.expect(f.do(f.op, "DELETE", leasePath("orders", "migration", opA), f.token, nil, map[string]string{deployapi.LeaseTokenHeader: a.str("token")}), 204, "")
	// The new lease is not touched by the controller.
	time.Sleep(500 * time.Millisecond)
	f.expect(f.do(f.op, "PUT", leasePath("orders", "migration", opB), f.token, map[string]any{"token": b.str("token")}, nil), 200, "")
}

func TestRevokeAnnotation(t *testing.T) {
	f := newFixture(t)
	c := f.startController()
	a := f.do(f.op, "POST", "/deploy/v1/groups/orders/leases", f.token, grantBody("migration", opA, "orders-app", 60), nil)
	f.expect(a, 201, "")

	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{leaserevocation.RevokeAnnotation: "incident-42"}}})
	if _, err := f.ship.ShipstreamV1alpha1().MysqlFailoverGroups(f.ns).Patch(f.ctx, "orders", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitRevoked(leasestore.KindMigration, opA, leasestore.ReasonOperatorRevoked)
	err := wait.PollUntilContextTimeout(f.ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		g, err := f.ship.ShipstreamV1alpha1().MysqlFailoverGroups(f.ns).Get(ctx, "orders", metav1.GetOptions{})
		_, still := g.Annotations[leaserevocation.RevokeAnnotation]
		return err == nil && !still, err
	})
	if err != nil {
		t.Fatalf("the revoke annotation was not cleared: %v", err)
	}
	r := f.do(f.op, "PUT", leasePath("orders", "migration", opA), f.token, map[string]any{"token": a.str("token")}, nil)
	f.expect(r, 409, "revoked")
	if r.str("reason") != "OperatorRevoked" {
		t.Fatalf("reason %s", r.raw)
	}
	f.waitEvents(1, leasestore.ReasonOperatorRevoked, a.str("token"))
	if n := testutil.ToFloat64(c.Revocations().WithLabelValues("OperatorRevoked")); n != 1 {
		t.Fatalf("revocations_total{reason=OperatorRevoked} = %v, want 1", n)
	}
	// A revoked lease answers 409 even while the group is in transition
	// (423 never hides a persisted revocation).
	f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) {
		s.Transition = &v1alpha1.Transition{ID: "t-2", Kind: v1alpha1.TransitionPlanned, SourceSite: "iad", TargetSite: "pdx", TopologyGeneration: 4, Step: v1alpha1.StepPromoting, StartTime: metav1.Now()}
	})
	f.expect(f.do(f.op, "PUT", leasePath("orders", "migration", opA), f.token, map[string]any{"token": a.str("token")}, nil), 409, "revoked")
	f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) { s.Transition = nil })
	// The mutex was freed by the revocation; a new operation is not revoked
	// again by the cleared annotation.
	b := f.do(f.op, "POST", "/deploy/v1/groups/orders/leases", f.token, grantBody("migration", opB, "orders-app", 60), nil)
	f.expect(b, 201, "")
	time.Sleep(500 * time.Millisecond)
	f.expect(f.do(f.op, "PUT", leasePath("orders", "migration", opB), f.token, map[string]any{"token": b.str("token")}, nil), 200, "")
}

func TestExpiryRecordedByController(t *testing.T) {
	f := newFixture(t)
	f.startController()
	a := f.do(f.op, "POST", "/deploy/v1/groups/orders/leases", f.token, grantBody("migration", opA, "orders-app", 5), nil)
	f.expect(a, 201, "")
	// Real time passes here: the controller requeues the group at expiry.
	err := wait.PollUntilContextTimeout(f.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, ok, err := f.op.store.Get(ctx, f.ns, "orders", leasestore.KindMigration, opA)
		return ok && r.State == leasestore.StateExpired, err
	})
	if err != nil {
		t.Fatalf("expiry was not recorded: %v", err)
	}
	f.checkProjectedSeconds("bloodraven-deploy.orders.migration."+opA, 1)
	l, err := f.kube.CoordinationV1().Leases(f.ns).Get(f.ctx, "bloodraven-deploy-mutex.orders", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(f.ctx, 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err = f.kube.CoordinationV1().Leases(f.ns).Get(ctx, "bloodraven-deploy-mutex.orders", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity == nil, err
	})
	if err != nil {
		t.Fatalf("the mutex was not freed after expiry plus skew: holder %v", l.Spec.HolderIdentity)
	}
	f.expect(f.do(f.op, "PUT", leasePath("orders", "migration", opA), f.token, map[string]any{"token": a.str("token")}, nil), 404, "not_found")
}
