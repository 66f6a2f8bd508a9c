package stability

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// healthy returns a two-candidate group plus a reader, iad active and every
// follower replicating: the baseline every case below perturbs.
func healthy() *v1alpha1.MysqlFailoverGroup {
	lag := int64(0)
	return &v1alpha1.MysqlFailoverGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
		Spec: v1alpha1.MysqlFailoverGroupSpec{Sites: []v1alpha1.SiteSpec{
			{Name: "iad", Role: v1alpha1.SiteRolePrimaryCandidate},
			{Name: "pdx", Role: v1alpha1.SiteRolePrimaryCandidate},
			{Name: "reader", Role: v1alpha1.SiteRoleReadOnly},
		}},
		Status: v1alpha1.MysqlFailoverGroupStatus{
			ActiveSite:         "iad",
			TopologyGeneration: 3,
			Sites: []v1alpha1.SiteStatus{
				{Name: "iad", State: v1alpha1.SiteWritable, Replication: v1alpha1.ReplicationNotReplicating},
				{Name: "pdx", State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationRunning, SecondsBehindSource: &lag},
				{Name: "reader", State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationRunning, SecondsBehindSource: &lag},
			},
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonHealthy},
				{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNotDegraded},
			},
		},
	}
}

func site(g *v1alpha1.MysqlFailoverGroup, name string) *v1alpha1.SiteStatus {
	for i := range g.Status.Sites {
		if g.Status.Sites[i].Name == name {
			return &g.Status.Sites[i]
		}
	}
	panic("no site " + name)
}

func setCondition(g *v1alpha1.MysqlFailoverGroup, typ string, status metav1.ConditionStatus, reason string) {
	for i := range g.Status.Conditions {
		if g.Status.Conditions[i].Type == typ {
			g.Status.Conditions[i].Status, g.Status.Conditions[i].Reason = status, reason
			return
		}
	}
	g.Status.Conditions = append(g.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason})
}

type evalCase struct {
	name        string
	mutate      func(g *v1alpha1.MysqlFailoverGroup)
	want        Reason // "" means stable
	wantMessage string // substring of the message, when set
}

var now = metav1.NewTime(time.Date(2026, 4, 15, 9, 30, 0, 0, time.UTC))

var evalCases = []evalCase{
	{name: "healthy group is stable", mutate: func(*v1alpha1.MysqlFailoverGroup) {}},
	{
		name: "lag alone never makes a group unstable",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			lag := int64(86400)
			site(g, "pdx").SecondsBehindSource = &lag
		},
	},
	{
		name: "a broken reader does not make the group unstable",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			site(g, "reader").State = v1alpha1.SiteUnreachable
			site(g, "reader").Replication = v1alpha1.ReplicationError
		},
	},
	{
		name: "a replica's divergence report keeps the group stable",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			setCondition(g, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonDivergentTransactions)
			s := site(g, "pdx")
			s.DivergenceDetectedBy, s.DivergentGTID, s.DivergenceComparedTo = v1alpha1.DivergenceByReplicaAudit, "u:5", "iad"
		},
	},
	{
		name: "a finished planned failover does not count",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.PlannedFailover = &v1alpha1.PlannedFailoverStatus{RunID: "r1", TargetSite: "iad", Phase: v1alpha1.PlannedFailoverSucceeded}
		},
	},
	{
		name: "a failed planned failover does not count",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.PlannedFailover = &v1alpha1.PlannedFailoverStatus{RunID: "r1", TargetSite: "pdx", Phase: v1alpha1.PlannedFailoverFailed}
		},
	},
	{
		name: "a finished dragonfly upgrade does not count",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.Dragonfly = &v1alpha1.DragonflyStatus{Upgrade: &v1alpha1.DragonflyUpgradeStatus{Phase: "Succeeded"}}
		},
	},
	{
		name: "a finished in-place restore does not count",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.RestoreInPlace = &v1alpha1.RestoreInPlaceStatus{Phase: "Succeeded"}
		},
	},
	{
		name: "transition in flight",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.Transition = &v1alpha1.Transition{ID: "t1", Kind: v1alpha1.TransitionAutomatic, SourceSite: "iad", TargetSite: "pdx", TopologyGeneration: 4, Step: v1alpha1.StepFencingSource, StartTime: now}
		},
		want: TopologyTransition, wantMessage: "pdx",
	},
	{
		name: "planned failover claim while admitting",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.PlannedFailover = &v1alpha1.PlannedFailoverStatus{RunID: "r1", TargetSite: "pdx", Phase: v1alpha1.PlannedFailoverAdmitting}
		},
		want: PlannedFailover, wantMessage: "Admitting",
	},
	{
		name: "planned failover deferred behind a hold still holds its claim",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.PlannedFailover = &v1alpha1.PlannedFailoverStatus{RunID: "r1", TargetSite: "pdx", Phase: v1alpha1.PlannedFailoverDeferred}
		},
		want: PlannedFailover,
	},
	{
		name:   "ordered update",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) { g.Status.UpdatePhase = "RollingFollowers" },
		want:   OrderedUpdate, wantMessage: "RollingFollowers",
	},
	{
		name: "in-place restore running",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.RestoreInPlace = &v1alpha1.RestoreInPlaceStatus{Phase: "Running"}
		},
		want: RestoreInPlace,
	},
	{
		name: "post-restore reclones draining",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.RestoreReclones = &v1alpha1.RestoreReclonesStatus{Phase: "Draining"}
		},
		want: RestoreInPlace, wantMessage: "Draining",
	},
	{
		name: "dragonfly upgrade",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.Dragonfly = &v1alpha1.DragonflyStatus{Upgrade: &v1alpha1.DragonflyUpgradeStatus{Phase: "Snapshotting"}}
		},
		want: DragonflyUpgrade,
	},
	{
		name: "automatic failover held",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.AutomaticFailoverHold = &v1alpha1.AutomaticFailoverHold{Reason: "PlannedFailoverSourceLeftFenced", Since: now}
		},
		want: AutomaticFailoverHeld, wantMessage: "PlannedFailoverSourceLeftFenced",
	},
	{
		name:   "two writable sites",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) { site(g, "pdx").State = v1alpha1.SiteWritable },
		want:   SplitBrain, wantMessage: "pdx",
	},
	{
		name: "Degraded reports split brain",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			setCondition(g, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonSplitBrain)
		},
		want: SplitBrain,
	},
	{
		name:   "no active site",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) { g.Status.ActiveSite = "" },
		want:   NoPrimary,
	},
	{
		name:   "active site unreachable",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) { site(g, "iad").State = v1alpha1.SiteUnreachable },
		want:   NoPrimary, wantMessage: "iad",
	},
	{
		name: "a fresh group with no status",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status = v1alpha1.MysqlFailoverGroupStatus{}
		},
		want: NoPrimary,
	},
	{
		name: "a failed clone: Degraded BootstrapFailed",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			setCondition(g, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonBootstrapFailed)
			setCondition(g, v1alpha1.ConditionBootstrapping, metav1.ConditionFalse, v1alpha1.ReasonBootstrapFailed)
			site(g, "pdx").Replication = v1alpha1.ReplicationStopped
		},
		want: BootstrapFailed,
	},
	{
		name: "old primary recovery in progress",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			setCondition(g, v1alpha1.ConditionRecoveryPending, metav1.ConditionTrue, v1alpha1.ReasonRecoveryInProgress)
			site(g, "pdx").RecoveryState = v1alpha1.RecoveryInProgress
		},
		want: RecoveryPending, wantMessage: "RecoveryInProgress",
	},
	{
		name: "old primary blocked on divergent transactions (site record only)",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			s := site(g, "pdx")
			s.RecoveryState, s.DivergentGTID = v1alpha1.RecoveryBlocked, "u:7"
		},
		want: RecoveryPending, wantMessage: "pdx",
	},
	{
		name: "an old primary's divergence report makes the group unstable",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			setCondition(g, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonDivergentTransactions)
			s := site(g, "pdx")
			s.DivergenceDetectedBy, s.DivergentGTID = v1alpha1.DivergenceByOldPrimaryRecovery, "u:7"
		},
		want: RecoveryPending,
	},
	{
		name: "Degraded for a site problem",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			setCondition(g, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonSiteUnhealthy)
		},
		want: Degraded, wantMessage: v1alpha1.ReasonSiteUnhealthy,
	},
	{
		name: "Degraded DivergentTransactions without any replica report",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			setCondition(g, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonDivergentTransactions)
		},
		want: Degraded,
	},
	{
		name:   "candidate follower replication stopped",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) { site(g, "pdx").Replication = v1alpha1.ReplicationStopped },
		want:   ReplicationNotRunning, wantMessage: "pdx",
	},
	{
		name: "disaster-recovery follower replication in error",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Spec.Sites = append(g.Spec.Sites, v1alpha1.SiteSpec{Name: "dr", Role: v1alpha1.SiteRoleDisasterRecovery})
			g.Status.Sites = append(g.Status.Sites, v1alpha1.SiteStatus{Name: "dr", State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationError})
		},
		want: ReplicationNotRunning, wantMessage: "dr",
	},
	{
		name: "a declared candidate never observed",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.Sites = g.Status.Sites[:1]
		},
		want: ReplicationNotRunning, wantMessage: "not been observed",
	},
	{
		name: "a replica divergence report does not hide stopped replication",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			setCondition(g, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonDivergentTransactions)
			s := site(g, "pdx")
			s.DivergenceDetectedBy, s.DivergentGTID = v1alpha1.DivergenceByReplicaAudit, "u:5"
			s.Replication = v1alpha1.ReplicationError
		},
		want: ReplicationNotRunning,
	},
	{
		name: "an operation in flight wins over the symptoms it causes",
		mutate: func(g *v1alpha1.MysqlFailoverGroup) {
			g.Status.Transition = &v1alpha1.Transition{ID: "t1", Kind: v1alpha1.TransitionPlanned, TargetSite: "pdx", TopologyGeneration: 4, Step: v1alpha1.StepPromoting, StartTime: now}
			g.Status.PlannedFailover = &v1alpha1.PlannedFailoverStatus{RunID: "t1", TargetSite: "pdx", Phase: v1alpha1.PlannedFailoverPromoting}
			site(g, "iad").State = v1alpha1.SiteReadOnly
			setCondition(g, v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonSiteUnhealthy)
		},
		want: TopologyTransition,
	},
}

func TestEvaluate(t *testing.T) {
	for _, tc := range evalCases {
		t.Run(tc.name, func(t *testing.T) {
			g := healthy()
			tc.mutate(g)
			got := Evaluate(g)
			if got.Reason != tc.want {
				t.Fatalf("Evaluate() reason = %q (message %q), want %q", got.Reason, got.Message, tc.want)
			}
			if got.Stable != (tc.want == "") {
				t.Fatalf("Evaluate() stable = %v with reason %q", got.Stable, got.Reason)
			}
			if !got.Stable && got.Message == "" {
				t.Fatalf("Evaluate() gave reason %q without a message", got.Reason)
			}
			if tc.wantMessage != "" && !strings.Contains(got.Message, tc.wantMessage) {
				t.Fatalf("Evaluate() message = %q, want it to mention %q", got.Message, tc.wantMessage)
			}
		})
	}
}

// TestEveryReasonIsReachable guards the table above: a reason added to the
// package without a case that produces it fails here.
func TestEveryReasonIsReachable(t *testing.T) {
	all := []Reason{TopologyTransition, PlannedFailover, OrderedUpdate, RestoreInPlace, DragonflyUpgrade,
		AutomaticFailoverHeld, SplitBrain, NoPrimary, BootstrapFailed, RecoveryPending, Degraded, ReplicationNotRunning}
	covered := map[Reason]bool{}
	for _, tc := range evalCases {
		covered[tc.want] = true
	}
	for _, r := range all {
		if !covered[r] {
			t.Errorf("no TestEvaluate case expects reason %s", r)
		}
	}
	if len(all) != len(checks)+1 { // checkWriters yields both SplitBrain and NoPrimary
		t.Fatalf("%d reasons but %d checks: a check was added without its reason here", len(all), len(checks))
	}
}

func TestEvaluateNilGroup(t *testing.T) {
	if v := Evaluate(nil); v.Stable || v.Reason != NoPrimary {
		t.Fatalf("Evaluate(nil) = %+v, want unstable NoPrimary", v)
	}
}

func TestEvaluateDoesNotModifyTheGroup(t *testing.T) {
	g := healthy()
	site(g, "pdx").Replication = v1alpha1.ReplicationStopped
	before := g.DeepCopy()
	Evaluate(g)
	if !equalGroups(before, g) {
		t.Fatal("Evaluate modified its argument")
	}
}

func equalGroups(a, b *v1alpha1.MysqlFailoverGroup) bool {
	// Site and condition slices are the only parts Evaluate reads by index.
	if len(a.Status.Sites) != len(b.Status.Sites) || len(a.Status.Conditions) != len(b.Status.Conditions) {
		return false
	}
	for i := range a.Status.Sites {
		if a.Status.Sites[i].Replication != b.Status.Sites[i].Replication || a.Status.Sites[i].State != b.Status.Sites[i].State {
			return false
		}
	}
	return a.Status.ActiveSite == b.Status.ActiveSite
}
