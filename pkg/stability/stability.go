// Package stability decides whether a failover group is stable enough for an
// application deployment to proceed: the deployment API's `stable` and
// `unstableReason`. The topology manager, the deployment API and planned
// failover all call Evaluate, so the three never disagree.
//
// Evaluate is a pure function of the group object: no clock, no I/O.
package stability

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Reason is the deployment API's unstableReason. The empty Reason means stable.
type Reason string

// The reasons, in the order Evaluate checks them: the first that applies is
// reported, so an operation in flight wins over the health symptoms it causes.
const (
	// TopologyTransition: status.transition is set, an active-site change is
	// in flight and the published topology may be stale.
	TopologyTransition Reason = "TopologyTransition"
	// PlannedFailover: a planned-failover run is in flight or holds its claim
	// (any phase but Succeeded and Failed). A finished run does not count.
	PlannedFailover Reason = "PlannedFailover"
	// OrderedUpdate: status.updatePhase is not empty.
	OrderedUpdate Reason = "OrderedUpdate"
	// RestoreInPlace: an in-place restore is Pending or Running, or its
	// follower reclones are not drained.
	RestoreInPlace Reason = "RestoreInPlace"
	// DragonflyUpgrade: a Dragonfly image upgrade is running or waiting.
	DragonflyUpgrade Reason = "DragonflyUpgrade"
	// AutomaticFailoverHeld: automatic failover is held
	// (status.automaticFailoverHold), so an outage would not be repaired.
	AutomaticFailoverHeld Reason = "AutomaticFailoverHeld"
	// SplitBrain: more than one site is observed writable.
	SplitBrain Reason = "SplitBrain"
	// NoPrimary: no active site, or the active site is not observed writable.
	NoPrimary Reason = "NoPrimary"
	// BootstrapFailed: a failed clone's target does not replicate
	// (Degraded=True/BootstrapFailed or Bootstrapping=False/BootstrapFailed).
	BootstrapFailed Reason = "BootstrapFailed"
	// RecoveryPending: an old primary is being recovered or is blocked on
	// divergent transactions (RecoveryPending=True, or a site's recoveryState
	// or an old primary's divergence report).
	RecoveryPending Reason = "RecoveryPending"
	// Degraded: Degraded=True for any cause other than a replica's divergence
	// report.
	Degraded Reason = "Degraded"
	// ReplicationNotRunning: a PrimaryCandidate or DisasterRecovery follower
	// does not have replication Running. Readers never count, and lag alone
	// never makes a group unstable.
	ReplicationNotRunning Reason = "ReplicationNotRunning"
)

// Verdict is the outcome of Evaluate.
type Verdict struct {
	// Stable is true when no Reason applies.
	Stable bool
	// Reason is empty when Stable.
	Reason Reason
	// Message is a human-readable detail (which site, which phase); it never
	// contains secrets.
	Message string
}

// Evaluate computes the deployment API's stability of a group from its spec
// (site roles) and status. A nil group is unstable with NoPrimary.
func Evaluate(g *v1alpha1.MysqlFailoverGroup) Verdict {
	if g == nil {
		return unstable(NoPrimary, "group not found")
	}
	for _, check := range checks {
		if r, msg := check(g); r != "" {
			return unstable(r, msg)
		}
	}
	return Verdict{Stable: true}
}

func unstable(r Reason, msg string) Verdict {
	return Verdict{Reason: r, Message: msg}
}

// checks run in precedence order; each returns a Reason and a message, or "".
var checks = []func(*v1alpha1.MysqlFailoverGroup) (Reason, string){
	checkTransition,
	checkPlannedFailover,
	checkOrderedUpdate,
	checkRestoreInPlace,
	checkDragonflyUpgrade,
	checkAutomaticFailoverHold,
	checkWriters,
	checkBootstrapFailed,
	checkRecoveryPending,
	checkDegraded,
	checkReplication,
}

func checkTransition(g *v1alpha1.MysqlFailoverGroup) (Reason, string) {
	t := g.Status.Transition
	if t == nil {
		return "", ""
	}
	return TopologyTransition, fmt.Sprintf("%s transition to site %s at step %s", t.Kind, t.TargetSite, t.Step)
}

func checkPlannedFailover(g *v1alpha1.MysqlFailoverGroup) (Reason, string) {
	pf := g.Status.PlannedFailover
	if pf == nil || pf.Phase == "" || pf.Phase.IsTerminal() {
		return "", ""
	}
	return PlannedFailover, fmt.Sprintf("planned failover to site %s is %s", pf.TargetSite, pf.Phase)
}

func checkOrderedUpdate(g *v1alpha1.MysqlFailoverGroup) (Reason, string) {
	if g.Status.UpdatePhase == "" {
		return "", ""
	}
	return OrderedUpdate, fmt.Sprintf("ordered update is %s", g.Status.UpdatePhase)
}

func checkRestoreInPlace(g *v1alpha1.MysqlFailoverGroup) (Reason, string) {
	if r := g.Status.RestoreInPlace; r != nil && (r.Phase == "Pending" || r.Phase == "Running") {
		return RestoreInPlace, fmt.Sprintf("in-place restore is %s", r.Phase)
	}
	if rr := g.Status.RestoreReclones; rr != nil && rr.Phase != "" {
		return RestoreInPlace, fmt.Sprintf("post-restore reclones are %s", rr.Phase)
	}
	return "", ""
}

func checkDragonflyUpgrade(g *v1alpha1.MysqlFailoverGroup) (Reason, string) {
	if d := g.Status.Dragonfly; d != nil && d.Upgrade.IsActive() {
		return DragonflyUpgrade, fmt.Sprintf("dragonfly upgrade is %s", d.Upgrade.Phase)
	}
	return "", ""
}

func checkAutomaticFailoverHold(g *v1alpha1.MysqlFailoverGroup) (Reason, string) {
	h := g.Status.AutomaticFailoverHold
	if h == nil {
		return "", ""
	}
	return AutomaticFailoverHeld, fmt.Sprintf("automatic failover is held: %s", h.Reason)
}

// checkWriters needs exactly one writable site, and it must be the active one.
func checkWriters(g *v1alpha1.MysqlFailoverGroup) (Reason, string) {
	var writable []string
	for _, s := range g.Status.Sites {
		if s.State == v1alpha1.SiteWritable {
			writable = append(writable, s.Name)
		}
	}
	if len(writable) > 1 {
		return SplitBrain, fmt.Sprintf("sites %v are all writable", writable)
	}
	if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionDegraded); isTrue(c) && c.Reason == v1alpha1.ReasonSplitBrain {
		return SplitBrain, "Degraded reports split brain"
	}
	active := g.Status.ActiveSite
	if active == "" {
		return NoPrimary, "no active site"
	}
	if len(writable) == 0 || writable[0] != active {
		return NoPrimary, fmt.Sprintf("active site %s is not observed writable", active)
	}
	return "", ""
}

func checkBootstrapFailed(g *v1alpha1.MysqlFailoverGroup) (Reason, string) {
	for _, t := range []string{v1alpha1.ConditionDegraded, v1alpha1.ConditionBootstrapping} {
		c := meta.FindStatusCondition(g.Status.Conditions, t)
		if c != nil && c.Reason == v1alpha1.ReasonBootstrapFailed {
			return BootstrapFailed, fmt.Sprintf("%s=%s/BootstrapFailed: a failed clone's target does not replicate", c.Type, c.Status)
		}
	}
	return "", ""
}

// checkRecoveryPending covers old primaries only: a replica's divergence
// report (divergenceDetectedBy ReplicaAudit) does not make the group unstable.
func checkRecoveryPending(g *v1alpha1.MysqlFailoverGroup) (Reason, string) {
	if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionRecoveryPending); isTrue(c) {
		return RecoveryPending, fmt.Sprintf("RecoveryPending: %s", c.Reason)
	}
	for _, s := range g.Status.Sites {
		if s.RecoveryState != "" {
			return RecoveryPending, fmt.Sprintf("site %s is %s", s.Name, s.RecoveryState)
		}
		if s.DivergenceDetectedBy == v1alpha1.DivergenceByOldPrimaryRecovery && s.DivergentGTID != "" {
			return RecoveryPending, fmt.Sprintf("old primary %s has divergent transactions", s.Name)
		}
	}
	return "", ""
}

// checkDegraded ignores a Degraded condition whose only cause is a replica's
// divergence report; every other Degraded reason makes the group unstable.
func checkDegraded(g *v1alpha1.MysqlFailoverGroup) (Reason, string) {
	c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionDegraded)
	if !isTrue(c) {
		return "", ""
	}
	if c.Reason == v1alpha1.ReasonDivergentTransactions && onlyReplicaDivergence(g) {
		return "", ""
	}
	return Degraded, fmt.Sprintf("Degraded: %s", c.Reason)
}

// onlyReplicaDivergence reports whether every divergence report comes from
// the replica audit (and at least one exists).
func onlyReplicaDivergence(g *v1alpha1.MysqlFailoverGroup) bool {
	found := false
	for _, s := range g.Status.Sites {
		switch s.DivergenceDetectedBy {
		case v1alpha1.DivergenceByReplicaAudit:
			found = true
		case "":
		default:
			return false
		}
	}
	return found
}

// checkReplication requires every non-reader follower to replicate.
func checkReplication(g *v1alpha1.MysqlFailoverGroup) (Reason, string) {
	roles := make(map[string]v1alpha1.SiteRole, len(g.Spec.Sites))
	for _, s := range g.Spec.Sites {
		roles[s.Name] = s.Role
	}
	for _, s := range g.Status.Sites {
		if s.Name == g.Status.ActiveSite || roles[s.Name] == v1alpha1.SiteRoleReadOnly {
			continue
		}
		if _, inSpec := roles[s.Name]; !inSpec {
			continue // a stale status entry for a site no longer declared
		}
		if s.Replication != v1alpha1.ReplicationRunning {
			state := string(s.Replication)
			if state == "" {
				state = "unknown"
			}
			return ReplicationNotRunning, fmt.Sprintf("site %s replication is %s", s.Name, state)
		}
	}
	// A declared follower the operator has not observed at all is not
	// replicating as far as anyone knows.
	observed := make(map[string]bool, len(g.Status.Sites))
	for _, s := range g.Status.Sites {
		observed[s.Name] = true
	}
	for _, s := range g.Spec.Sites {
		if s.Name != g.Status.ActiveSite && s.Role != v1alpha1.SiteRoleReadOnly && !observed[s.Name] {
			return ReplicationNotRunning, fmt.Sprintf("site %s has not been observed", s.Name)
		}
	}
	return "", ""
}

func isTrue(c *metav1.Condition) bool {
	return c != nil && c.Status == metav1.ConditionTrue
}
