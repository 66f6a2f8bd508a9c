package deployapi

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/leasestore"
)

func healthyGroup() *v1alpha1.MysqlFailoverGroup {
	lag2, lag7 := int64(2), int64(7)
	return &v1alpha1.MysqlFailoverGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "db"},
		Spec: v1alpha1.MysqlFailoverGroupSpec{Sites: []v1alpha1.SiteSpec{
			{Name: "iad", Role: v1alpha1.SiteRolePrimaryCandidate},
			{Name: "pdx", Role: v1alpha1.SiteRolePrimaryCandidate},
			{Name: "reader", Role: v1alpha1.SiteRoleReadOnly},
		}},
		Status: v1alpha1.MysqlFailoverGroupStatus{
			ActiveSite: "iad", TopologyGeneration: 5,
			Sites: []v1alpha1.SiteStatus{
				{Name: "iad", State: v1alpha1.SiteWritable, Replication: v1alpha1.ReplicationNotReplicating},
				{Name: "pdx", State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationRunning, SecondsBehindSource: &lag2},
				{Name: "reader", State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationStopped, SecondsBehindSource: &lag7},
			},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Healthy"}},
		},
	}
}

func TestBuildDocumentHealthAndLeases(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	g := healthyGroup()
	recs := []leasestore.Record{
		{Kind: leasestore.KindMigration, OperationID: "live", Instance: "a", State: leasestore.StateActive, ExpiresAt: now.Add(time.Minute), TopologyGeneration: 5, TokenHash: "sha256:x"},
		{Kind: leasestore.KindFailoverHold, OperationID: "expired", State: leasestore.StateActive, ExpiresAt: now.Add(-time.Second), TopologyGeneration: 5},
		{Kind: leasestore.KindFailoverHold, OperationID: "old-gen", State: leasestore.StateActive, ExpiresAt: now.Add(time.Minute), TopologyGeneration: 4},
		{Kind: leasestore.KindFailoverHold, OperationID: "revoked", State: leasestore.StateRevoked, ExpiresAt: now.Add(time.Minute), TopologyGeneration: 5},
	}
	doc := buildDocument(g, recs, now)
	// A stopped reader neither breaks replicationRunning nor stability;
	// lag is the largest follower lag, and never makes the group unstable.
	if !doc.Stable || !doc.Health.Ready || !doc.Health.ReplicationRunning || doc.Health.ReplicationLagSeconds != 7 {
		t.Fatalf("document %+v", doc)
	}
	if len(doc.Leases) != 1 || doc.Leases[0].OperationID != "live" {
		t.Fatalf("leases %+v, want only the live one", doc.Leases)
	}
	g.Status.Sites[1].Replication = v1alpha1.ReplicationConnecting
	doc = buildDocument(g, nil, now)
	if doc.Stable || doc.UnstableReason != "ReplicationNotRunning" || doc.Health.ReplicationRunning {
		t.Fatalf("follower not replicating: %+v", doc)
	}
	g = healthyGroup()
	g.Status.Sites[1].RecoveryState = v1alpha1.RecoveryBlocked
	if doc = buildDocument(g, nil, now); !doc.Health.RecoveryPending || doc.UnstableReason != "RecoveryPending" {
		t.Fatalf("recovery: %+v", doc)
	}
	if doc.Leases == nil {
		t.Fatal("leases must render as [] not null")
	}
}

// TestHealthAgreesWithStability: the health block never contradicts
// stable/unstableReason, which come from the stability function.
func TestHealthAgreesWithStability(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name               string
		edit               func(*v1alpha1.MysqlFailoverGroup)
		reason             string
		replicationRunning bool
		recoveryPending    bool
	}{
		{name: "healthy", edit: func(*v1alpha1.MysqlFailoverGroup) {}, replicationRunning: true},
		{name: "a stopped status entry of a site no longer declared", replicationRunning: true, edit: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.Sites = append(g.Status.Sites, v1alpha1.SiteStatus{Name: "gone", State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationStopped})
		}},
		{name: "a declared follower never observed", reason: "ReplicationNotRunning", edit: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.Sites = g.Status.Sites[:1]
		}},
		{name: "an old primary's divergence report", reason: "RecoveryPending", replicationRunning: true, recoveryPending: true, edit: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.Sites[1].DivergenceDetectedBy = v1alpha1.DivergenceByOldPrimaryRecovery
			g.Status.Sites[1].DivergentGTID = "3e11fa47-71ca-11e1-9e33-c80aa9429562:23"
		}},
		{name: "a replica's divergence report", replicationRunning: true, edit: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.Sites[1].DivergenceDetectedBy = v1alpha1.DivergenceByReplicaAudit
			g.Status.Sites[1].DivergentGTID = "3e11fa47-71ca-11e1-9e33-c80aa9429562:23"
		}},
	} {
		g := healthyGroup()
		tc.edit(g)
		doc := buildDocument(g, nil, now)
		if doc.UnstableReason != tc.reason || doc.Stable != (tc.reason == "") {
			t.Errorf("%s: stable=%v unstableReason=%q, want reason %q", tc.name, doc.Stable, doc.UnstableReason, tc.reason)
		}
		if doc.Health.ReplicationRunning != tc.replicationRunning || doc.Health.RecoveryPending != tc.recoveryPending {
			t.Errorf("%s: health %+v, want replicationRunning=%v recoveryPending=%v", tc.name, doc.Health, tc.replicationRunning, tc.recoveryPending)
		}
	}
}

func TestPlannedFailoverViewAndBlocks(t *testing.T) {
	for _, tc := range []struct {
		pf                 *v1alpha1.PlannedFailoverStatus
		phase, reason, out string
		observe, holdGrant bool // 423 for GET/renew, for new holds
	}{
		{pf: nil},
		{pf: &v1alpha1.PlannedFailoverStatus{Phase: v1alpha1.PlannedFailoverAdmitting, Admission: &v1alpha1.PlannedFailoverAdmission{WaitReason: "TargetLagging"}},
			phase: "Admitting", reason: "TargetLagging", holdGrant: true},
		{pf: &v1alpha1.PlannedFailoverStatus{Phase: v1alpha1.PlannedFailoverDeferred, Admission: &v1alpha1.PlannedFailoverAdmission{DeferReason: "DeploymentHold", WaitReason: "stale"}},
			phase: "Deferred", reason: "DeploymentHold", holdGrant: true},
		{pf: &v1alpha1.PlannedFailoverStatus{Phase: v1alpha1.PlannedFailoverDraining, Admission: &v1alpha1.PlannedFailoverAdmission{DeferReason: "Cooldown"}},
			phase: "Draining", observe: true, holdGrant: true},
		{pf: &v1alpha1.PlannedFailoverStatus{Phase: v1alpha1.PlannedFailoverFencing}, phase: "Fencing", observe: true, holdGrant: true},
		{pf: &v1alpha1.PlannedFailoverStatus{Phase: v1alpha1.PlannedFailoverRollingBack}, phase: "RollingBack", observe: true, holdGrant: true},
		{pf: &v1alpha1.PlannedFailoverStatus{Phase: v1alpha1.PlannedFailoverFailed, Result: &v1alpha1.PlannedFailoverResult{Outcome: "RolledBack", Reason: "CatchUpTimedOut"}},
			phase: "Failed", reason: "CatchUpTimedOut", out: "RolledBack"},
		{pf: &v1alpha1.PlannedFailoverStatus{Phase: v1alpha1.PlannedFailoverSucceeded, Result: &v1alpha1.PlannedFailoverResult{Outcome: "Succeeded"}},
			phase: "Succeeded", out: "Succeeded"},
	} {
		g := healthyGroup()
		g.Status.PlannedFailover = tc.pf
		v := plannedFailoverView(tc.pf)
		if v.Phase != tc.phase || v.Reason != tc.reason || v.Outcome != tc.out {
			t.Errorf("%s: view %+v", tc.phase, v)
		}
		if _, b := observationBlock(g); b != tc.observe {
			t.Errorf("%s: observation 423 = %v, want %v", tc.phase, b, tc.observe)
		}
		if _, b := holdGrantBlock(g); b != tc.holdGrant {
			t.Errorf("%s: hold-grant 423 = %v, want %v", tc.phase, b, tc.holdGrant)
		}
	}
	g := healthyGroup()
	g.Status.Transition = &v1alpha1.Transition{ID: "t", Kind: v1alpha1.TransitionAutomatic, TargetSite: "pdx", Step: v1alpha1.StepRecorded}
	if r, b := observationBlock(g); !b || r != "TopologyTransition" {
		t.Fatalf("transition: %v %v", r, b)
	}
}
