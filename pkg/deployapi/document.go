package deployapi

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/stability"
)

// GroupDocument is the body of GET /deploy/v1/groups/{group}.
type GroupDocument struct {
	Group              string        `json:"group"`
	Namespace          string        `json:"namespace"`
	ActiveSite         string        `json:"activeSite"`
	TopologyGeneration int64         `json:"topologyGeneration"`
	Health             Health        `json:"health"`
	Operations         Operations    `json:"operations"`
	Stable             bool          `json:"stable"`
	UnstableReason     string        `json:"unstableReason"`
	Leases             []LeaseStatus `json:"leases"`
}

// Health summarizes the group's health. Lag never makes a group unstable;
// callers apply their own threshold to ReplicationLagSeconds.
type Health struct {
	Ready                 bool    `json:"ready"`
	DegradedReason        string  `json:"degradedReason"`
	ReplicationRunning    bool    `json:"replicationRunning"`
	ReplicationLagSeconds float64 `json:"replicationLagSeconds"`
	RecoveryPending       bool    `json:"recoveryPending"`
}

// Operations are the group's operation phases; empty when none runs.
type Operations struct {
	PlannedFailover  PlannedFailoverView `json:"plannedFailover"`
	UpdatePhase      string              `json:"updatePhase"`
	RestoreInPlace   string              `json:"restoreInPlace"`
	DragonflyUpgrade string              `json:"dragonflyUpgrade"`
}

// PlannedFailoverView carries the v1.7.0 planned-failover vocabulary.
type PlannedFailoverView struct {
	Phase   string `json:"phase"`
	Reason  string `json:"reason"`
	Outcome string `json:"outcome"`
}

// LeaseStatus is a live lease as shown to observers (no token, no hash).
type LeaseStatus struct {
	Kind               string    `json:"kind"`
	OperationID        string    `json:"operationId"`
	Instance           string    `json:"instance"`
	ExpiresAt          time.Time `json:"expiresAt"`
	TopologyGeneration int64     `json:"topologyGeneration"`
}

// buildDocument is the pure rendering of a group and its lease records.
func buildDocument(g *v1alpha1.MysqlFailoverGroup, recs []leasestore.Record, now time.Time) GroupDocument {
	v := stability.Evaluate(g)
	doc := GroupDocument{
		Group:              g.Name,
		Namespace:          g.Namespace,
		ActiveSite:         g.Status.ActiveSite,
		TopologyGeneration: g.Status.TopologyGeneration,
		Health:             health(g),
		Operations:         operations(g),
		Stable:             v.Stable,
		UnstableReason:     string(v.Reason),
		Leases:             []LeaseStatus{},
	}
	for _, r := range recs {
		if !r.Live(now) || r.TopologyGeneration != g.Status.TopologyGeneration {
			continue
		}
		doc.Leases = append(doc.Leases, LeaseStatus{
			Kind: string(r.Kind), OperationID: r.OperationID, Instance: r.Instance,
			ExpiresAt: r.ExpiresAt.UTC(), TopologyGeneration: r.TopologyGeneration,
		})
	}
	return doc
}

func isTrue(c *metav1.Condition) bool { return c != nil && c.Status == metav1.ConditionTrue }

// health renders the health block with the same rules as the stability
// function, so the document never shows, say, stable=true next to
// replicationRunning=false: readers and status entries of sites no longer
// declared never count, a declared follower never observed is not
// replicating, and an old primary's divergence report is pending recovery.
func health(g *v1alpha1.MysqlFailoverGroup) Health {
	var h Health
	h.Ready = isTrue(meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady))
	if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionDegraded); isTrue(c) {
		h.DegradedReason = c.Reason
	}
	h.RecoveryPending = isTrue(meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionRecoveryPending))
	roles := map[string]v1alpha1.SiteRole{}
	for _, s := range g.Spec.Sites {
		roles[s.Name] = s.Role
	}
	h.ReplicationRunning = true
	for _, s := range g.Status.Sites {
		if s.RecoveryState != "" || (s.DivergenceDetectedBy == v1alpha1.DivergenceByOldPrimaryRecovery && s.DivergentGTID != "") {
			h.RecoveryPending = true
		}
		if s.Name == g.Status.ActiveSite {
			continue
		}
		if s.SecondsBehindSource != nil {
			h.ReplicationLagSeconds = max(h.ReplicationLagSeconds, float64(*s.SecondsBehindSource))
		}
		role, declared := roles[s.Name]
		if !declared || role == v1alpha1.SiteRoleReadOnly {
			continue
		}
		if s.Replication != v1alpha1.ReplicationRunning {
			h.ReplicationRunning = false
		}
	}
	for _, s := range g.Spec.Sites {
		if s.Name != g.Status.ActiveSite && s.Role != v1alpha1.SiteRoleReadOnly && !observed(g, s.Name) {
			h.ReplicationRunning = false
		}
	}
	return h
}

func observed(g *v1alpha1.MysqlFailoverGroup, site string) bool {
	for _, s := range g.Status.Sites {
		if s.Name == site {
			return true
		}
	}
	return false
}

func operations(g *v1alpha1.MysqlFailoverGroup) Operations {
	ops := Operations{
		PlannedFailover: plannedFailoverView(g.Status.PlannedFailover),
		UpdatePhase:     string(g.Status.UpdatePhase),
	}
	if r := g.Status.RestoreInPlace; r != nil && (r.Phase == "Pending" || r.Phase == "Running") {
		ops.RestoreInPlace = string(r.Phase)
	}
	if d := g.Status.Dragonfly; d != nil && d.Upgrade.IsActive() {
		ops.DragonflyUpgrade = string(d.Upgrade.Phase)
	}
	return ops
}

// plannedFailoverView maps status.plannedFailover: reason belongs to the
// current phase only (waitReason while Admitting, deferReason while
// Deferred, result.reason once ended); outcome is result.outcome.
func plannedFailoverView(pf *v1alpha1.PlannedFailoverStatus) PlannedFailoverView {
	if pf == nil {
		return PlannedFailoverView{}
	}
	v := PlannedFailoverView{Phase: string(pf.Phase)}
	switch {
	case pf.Phase == v1alpha1.PlannedFailoverAdmitting && pf.Admission != nil:
		v.Reason = string(pf.Admission.WaitReason)
	case pf.Phase == v1alpha1.PlannedFailoverDeferred && pf.Admission != nil:
		v.Reason = string(pf.Admission.DeferReason)
	case pf.Phase.IsTerminal() && pf.Result != nil:
		v.Reason = string(pf.Result.Reason)
	}
	if pf.Result != nil {
		v.Outcome = string(pf.Result.Outcome)
	}
	return v
}

// claimInFlight: a planned failover past admission (draining through
// publishing or rolling back). The topology the group shows may be about to
// change, so observation and renewal answer 423. Admitting and Deferred runs
// do not count: a deferred run waits for holds, which must stay renewable.
func claimInFlight(g *v1alpha1.MysqlFailoverGroup) bool {
	pf := g.Status.PlannedFailover
	if pf == nil {
		return false
	}
	switch pf.Phase {
	case v1alpha1.PlannedFailoverDraining, v1alpha1.PlannedFailoverCatchingUp, v1alpha1.PlannedFailoverFencing,
		v1alpha1.PlannedFailoverPromoting, v1alpha1.PlannedFailoverPublishing, v1alpha1.PlannedFailoverRollingBack:
		return true
	}
	return false
}

// claimPersisted: any planned-failover run holds the group's operation
// claim (every phase but Succeeded and Failed).
func claimPersisted(g *v1alpha1.MysqlFailoverGroup) bool {
	pf := g.Status.PlannedFailover
	return pf != nil && pf.Phase != "" && !pf.Phase.IsTerminal()
}

// observationBlock is the 423 rule of GET, renewal and migration grants:
// an unconfirmed topology transition or a planned failover in flight.
func observationBlock(g *v1alpha1.MysqlFailoverGroup) (stability.Reason, bool) {
	if g.Status.Transition != nil {
		return stability.TopologyTransition, true
	}
	if claimInFlight(g) {
		return stability.PlannedFailover, true
	}
	return "", false
}

// holdGrantBlock is the 423 rule of new failover holds: additionally any
// persisted planned-operation claim, so no hold slips in between planned
// admission and fencing.
func holdGrantBlock(g *v1alpha1.MysqlFailoverGroup) (stability.Reason, bool) {
	if r, blocked := observationBlock(g); blocked {
		return r, true
	}
	if claimPersisted(g) {
		return stability.PlannedFailover, true
	}
	return "", false
}
