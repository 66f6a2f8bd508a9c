package topology

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Planned failover, handoff part (docs/planned-failover.md; invariant 2 of
// docs/safety.md). A stored claim that admission
// passed (phase CatchingUp) is carried to its end here, one step per
// decision, every step recorded in status before it is acted on:
//
//	CatchingUp   the source still serves; the target's lag must fall to
//	             PlannedCaughtUpLagSeconds within maxLagWait. Deployment holds
//	             are re-checked here, immediately before fencing.
//	Fencing      status.transition is recorded (kind Planned or
//	             OrderedUpdate); the source is fenced and sidecars told.
//	Draining     the source was observed fenced: its client sessions are
//	             evicted and the target must come to hold every transaction
//	             the fenced source has, within PlannedDrainTimeout.
//	Promoting    the target is made writable (never abandoned from here on).
//	Publishing   activeSite and topologyGeneration are published, the
//	             transition cleared; the run ends once the target is seen
//	             writable as the active site.
//	RollingBack  the transition is cleared and the source made writable
//	             again, within PlannedRollbackBound.
//
// Outcomes: Succeeded; RolledBack (nothing lost, the source serves again);
// SourceLeftFenced, PromotedUnconfirmed and ManualRecoveryRequired, which
// also place status.automaticFailoverHold, because the operator can no
// longer tell on its own that an automatic failover would be safe.

// Timers of the handoff.
const (
	// PlannedCaughtUpLagSeconds: a target whose receiver runs and whose
	// Seconds_Behind_Source is at most this is close enough to fence the
	// source: the rest is shipped while writes pause.
	PlannedCaughtUpLagSeconds = 1
	// PlannedDrainTimeout bounds the write pause: from the write that
	// records Fencing until the target holds the fenced source's set.
	// Past it the run rolls back.
	PlannedDrainTimeout = 30 * time.Second
	// PlannedRollbackBound: a rollback that has not seen the source
	// writable again this long after it began ends SourceLeftFenced.
	PlannedRollbackBound = 10 * time.Second
	// PlannedConfirmBound: a promotion not seen confirmed (the target
	// writable) this long after Promoting was recorded ends the run
	// PromotedUnconfirmed; the promotion itself is still finished.
	PlannedConfirmBound = 30 * time.Second
)

// Outcomes and result reasons of the handoff, as the API enums spell them.
const (
	PlannedOutcomeSucceeded              v1alpha1.PlannedFailoverOutcome = "Succeeded"
	PlannedOutcomeRolledBack             v1alpha1.PlannedFailoverOutcome = "RolledBack"
	PlannedOutcomeSourceLeftFenced       v1alpha1.PlannedFailoverOutcome = "SourceLeftFenced"
	PlannedOutcomePromotedUnconfirmed    v1alpha1.PlannedFailoverOutcome = "PromotedUnconfirmed"
	PlannedOutcomeManualRecoveryRequired v1alpha1.PlannedFailoverOutcome = "ManualRecoveryRequired"

	PlannedReasonCompleted       v1alpha1.PlannedFailoverResultReason = "Completed"
	PlannedReasonCatchUpTimedOut v1alpha1.PlannedFailoverResultReason = "CatchUpTimedOut"
	PlannedReasonFenceFailed     v1alpha1.PlannedFailoverResultReason = "FenceFailed"
	PlannedReasonPromotionFailed v1alpha1.PlannedFailoverResultReason = "PromotionFailed"
	PlannedReasonSuperseded      v1alpha1.PlannedFailoverResultReason = "Superseded"
)

// Reasons of status.automaticFailoverHold placed by planned failover.
const (
	HoldReasonSourceLeftFenced       = "PlannedFailoverSourceLeftFenced"
	HoldReasonPromotedUnconfirmed    = "PlannedFailoverPromotedUnconfirmed"
	HoldReasonManualRecoveryRequired = "PlannedFailoverManualRecoveryRequired"
)

// AnnotationClearAutomaticFailoverHold, set to the group's name, clears
// status.automaticFailoverHold; the operator removes it once handled.
const AnnotationClearAutomaticFailoverHold = "bloodraven.shipstream.io/clear-automatic-failover-hold"

// PlannedInput is the planned-failover part of a decision's input.
type PlannedInput struct {
	// Holds are the deployment failover holds, read after the claim was
	// stored; HoldsRead is false when they were not read in this pass (the
	// run then does not leave CatchingUp).
	Holds     PlannedHolds
	HoldsRead bool
	// OrderedUpdate: the run hands the primary role over for an ordered
	// update (status.updatePhase is HandingOff); its transition has kind
	// OrderedUpdate.
	OrderedUpdate bool
	// ClearHold: an administrator asked to clear status.automaticFailoverHold.
	ClearHold bool
}

// plannedClaim returns the stored claim when a run is past admission and
// not finished.
func (d *decider) plannedClaim() *v1alpha1.PlannedFailoverStatus {
	c := d.out.Status.PlannedFailover
	if c == nil || c.Phase.IsTerminal() || c.Phase == v1alpha1.PlannedFailoverAdmitting || c.Phase == v1alpha1.PlannedFailoverDeferred {
		return nil
	}
	return c
}

// IsPlannedKind reports whether a transition is a planned handoff (a
// planned failover or an ordered update's).
func IsPlannedKind(k v1alpha1.TransitionKind) bool {
	return k == v1alpha1.TransitionPlanned || k == v1alpha1.TransitionOrderedUpdate
}

// claimPhase moves the claim to phase (phaseTime moves with it).
func (d *decider) claimPhase(c *v1alpha1.PlannedFailoverStatus, phase v1alpha1.PlannedFailoverPhase) *v1alpha1.PlannedFailoverStatus {
	nc := c.DeepCopy()
	if nc.Phase != phase {
		t := metav1.NewTime(d.in.Now)
		nc.Phase, nc.PhaseTime = phase, &t
	}
	d.out.Status.PlannedFailover = nc
	return nc
}

// endClaim finishes the run with an outcome. Every outcome but Succeeded
// is announced as PlannedFailoverFailed; the uncertain ones place the
// automatic-failover hold.
func (d *decider) endClaim(c *v1alpha1.PlannedFailoverStatus, outcome v1alpha1.PlannedFailoverOutcome, reason v1alpha1.PlannedFailoverResultReason, lost *int64, msg string) {
	phase := v1alpha1.PlannedFailoverFailed
	if outcome == PlannedOutcomeSucceeded {
		phase = v1alpha1.PlannedFailoverSucceeded
	}
	nc := d.claimPhase(c, phase)
	t := metav1.NewTime(d.in.Now)
	nc.CompletionTime = &t
	nc.Admission = nil
	nc.Result = &v1alpha1.PlannedFailoverResult{Outcome: outcome, Reason: reason, TransactionsLost: lost, Message: truncate(msg, 1024)}
	d.out.WriteFirst = true
	if outcome == PlannedOutcomeSucceeded {
		d.event(false, v1alpha1.EventPlannedFailoverSucceeded, "planned failover %s: %s", c.RunID, msg)
		return
	}
	d.event(true, v1alpha1.EventPlannedFailoverFailed, "planned failover %s to site %s ended %s (%s): %s", c.RunID, c.TargetSite, outcome, reason, msg)
	hold := map[v1alpha1.PlannedFailoverOutcome]string{
		PlannedOutcomeSourceLeftFenced:       HoldReasonSourceLeftFenced,
		PlannedOutcomePromotedUnconfirmed:    HoldReasonPromotedUnconfirmed,
		PlannedOutcomeManualRecoveryRequired: HoldReasonManualRecoveryRequired,
	}[outcome]
	if hold != "" && reason != PlannedReasonSuperseded && d.out.Status.AutomaticFailoverHold == nil {
		d.out.Status.AutomaticFailoverHold = &v1alpha1.AutomaticFailoverHold{Reason: hold, Since: t, Message: truncate(fmt.Sprintf(
			"planned failover %s ended %s: %s. Automatic failover stays off until an administrator has checked the sites and set the annotation %s=%s (docs/runbooks/planned-failover.md)",
			c.RunID, outcome, msg, AnnotationClearAutomaticFailoverHold, d.in.Group), 1024)}
		d.event(true, v1alpha1.EventAutomaticFailoverHoldPlaced, "automatic failover is held (%s) after planned failover %s ended %s", hold, c.RunID, outcome)
	}
}

func since(t *metav1.Time, now time.Time) time.Duration {
	if t == nil {
		return 0
	}
	return now.Sub(t.Time)
}

func maxLagWaitOf(c *v1alpha1.PlannedFailoverStatus) time.Duration {
	if c.MaxLagWait != nil && c.MaxLagWait.Duration > 0 {
		return c.MaxLagWait.Duration
	}
	return DefaultPlannedMaxLagWait
}

// clearHold handles the administrator's clear-hold request. A request
// naming the group while no hold is in place acknowledges nothing: it is
// removed without effect (the manager removes the annotation), and the
// Warning says so, since whoever set it may believe a hold was cleared.
func (d *decider) clearHold() {
	if !d.in.Planned.ClearHold {
		return
	}
	if d.in.Status.AutomaticFailoverHold == nil && d.out.Status.AutomaticFailoverHold == nil {
		d.event(true, v1alpha1.EventPlannedFailoverHoldAcknowledgmentIgnored,
			"annotation %s removed without effect: no automatic failover hold is in place", AnnotationClearAutomaticFailoverHold)
		return
	}
	if d.out.Status.AutomaticFailoverHold == nil {
		return
	}
	h := d.out.Status.AutomaticFailoverHold
	d.out.Status.AutomaticFailoverHold = nil
	d.event(false, v1alpha1.EventAutomaticFailoverHoldCleared, "automatic failover hold %s (placed %s) cleared by annotation %s",
		h.Reason, h.Since.UTC().Format(time.RFC3339), AnnotationClearAutomaticFailoverHold)
}

// plannedSteady advances a run that has no transition recorded: the
// catch-up while the source serves, a rollback in progress, and the
// confirmation after publishing. It runs after steady(active).
func (d *decider) plannedSteady(active string) {
	c := d.plannedClaim()
	if c == nil {
		return
	}
	switch c.Phase {
	case v1alpha1.PlannedFailoverCatchingUp:
		d.plannedCatchUp(c, active)
	case v1alpha1.PlannedFailoverRollingBack:
		d.plannedRollingBack(c, active)
	case v1alpha1.PlannedFailoverPublishing:
		d.plannedConfirm(c, active)
	default:
		// Fencing, Draining or Promoting without a transition: the
		// transition was finished or abandoned by another path (an
		// emergency failover owns the group now). The run is over.
		d.endClaim(c, PlannedOutcomeRolledBack, PlannedReasonSuperseded, nil,
			fmt.Sprintf("the handoff was interrupted at %s and site %s is the active site", c.Phase, active))
	}
}

// plannedCatchUp waits, while the source still serves, for the target to
// come within PlannedCaughtUpLagSeconds, then records the transition and
// fences the source.
func (d *decider) plannedCatchUp(c *v1alpha1.PlannedFailoverStatus, active string) {
	if active != c.SourceSite {
		d.endClaim(c, PlannedOutcomeRolledBack, PlannedReasonSuperseded, nil,
			fmt.Sprintf("site %s became the active site before the handoff from %s started", active, c.SourceSite))
		return
	}
	wait := maxLagWaitOf(c)
	ready, why := d.targetCaughtUp(c)
	if !ready {
		if since(c.PhaseTime, d.in.Now) >= wait {
			d.endClaim(c, PlannedOutcomeRolledBack, PlannedReasonCatchUpTimedOut, nil,
				fmt.Sprintf("target site %s did not catch up within maxLagWait %s (%s); site %s was never fenced and kept serving", c.TargetSite, wait, why, c.SourceSite))
			return
		}
		d.waiting = fmt.Sprintf("planned failover to %s: %s", c.TargetSite, why)
		return
	}
	if !d.in.Planned.HoldsRead {
		d.waiting = fmt.Sprintf("planned failover to %s: re-reading deployment holds before fencing", c.TargetSite)
		return
	}
	if h := d.in.Planned.Holds; h.Held {
		nc := d.claimPhase(c, v1alpha1.PlannedFailoverDeferred)
		retry := metav1.NewTime(h.EarliestExpiry)
		nc.Admission = &v1alpha1.PlannedFailoverAdmission{DeferReason: PlannedDeferDeploymentHold, RetryAfter: &retry,
			BlockingOperationID: h.OperationID, BlockingInstance: h.Instance,
			Message: fmt.Sprintf("deployment operation %s of instance %s holds failover until %s", h.OperationID, h.Instance, h.EarliestExpiry.UTC().Format(time.RFC3339))}
		d.out.WriteFirst = true
		d.event(false, v1alpha1.EventPlannedFailoverDeferred, "planned failover %s to site %s deferred before fencing: %s", c.RunID, c.TargetSite, nc.Admission.Message)
		return
	}
	kind := v1alpha1.TransitionPlanned
	if d.in.Planned.OrderedUpdate {
		kind = v1alpha1.TransitionOrderedUpdate
	}
	now := metav1.NewTime(d.in.Now)
	t := &v1alpha1.Transition{ID: c.RunID, Kind: kind, SourceSite: c.SourceSite, TargetSite: c.TargetSite,
		TopologyGeneration: d.in.Status.TopologyGeneration + 1, Step: v1alpha1.StepFencingSource, StartTime: now, StepTime: &now,
		Message: fmt.Sprintf("planned handoff from %s to %s", c.SourceSite, c.TargetSite)}
	d.out.Status.Transition = t
	d.claimPhase(c, v1alpha1.PlannedFailoverFencing)
	d.out.WriteFirst = true
	d.act(Action{Kind: NotifySidecars, Why: t.Message})
	d.act(Action{Kind: Fence, Site: c.SourceSite, Why: fmt.Sprintf("planned failover %s: the source stops taking writes", c.RunID)})
	d.event(false, v1alpha1.EventPlannedFailoverTargetCaughtUp, "planned failover %s: target site %s is caught up (%s); fencing site %s, writes pause until %s holds all of them",
		c.RunID, c.TargetSite, why, c.SourceSite, c.TargetSite)
}

// targetCaughtUp reports whether the target is close enough to the
// serving source to fence it, and a description either way.
func (d *decider) targetCaughtUp(c *v1alpha1.PlannedFailoverStatus) (bool, string) {
	tv, sv := d.view(c.TargetSite), d.view(c.SourceSite)
	switch {
	case tv == nil:
		return false, fmt.Sprintf("target site %s is not observed", c.TargetSite)
	case sv == nil:
		return false, fmt.Sprintf("source site %s is not observed", c.SourceSite)
	case tv.Writable:
		return false, fmt.Sprintf("target site %s is writable", c.TargetSite)
	case tv.Replica == nil || tv.Replica.IORunning != "Yes" || !tv.Replica.SQLRunning || !SameHost(tv.Replica.SourceHost, SourceHost(d.in.Namespace, d.in.Group, c.SourceSite)):
		return false, fmt.Sprintf("target site %s is not replicating from %s", c.TargetSite, c.SourceSite)
	}
	if extra := d.divergentFrom(tv, sv, c.SourceSite); !extra.IsEmpty() {
		return false, fmt.Sprintf("target site %s holds %d transactions %s lacks (%s)", c.TargetSite, extra.Count(), c.SourceSite, GTIDPhrase(extra.OneLine()))
	}
	if why := d.plannedTargetLacksOwnTail(c, tv, sv); why != "" {
		return false, why
	}
	lag := tv.Replica.SecondsBehindSource
	if lag == nil || *lag > PlannedCaughtUpLagSeconds {
		shown := "unknown"
		if lag != nil {
			shown = fmt.Sprintf("%ds", *lag)
		}
		return false, fmt.Sprintf("target site %s is %s behind (at most %ds to fence)", c.TargetSite, shown, PlannedCaughtUpLagSeconds)
	}
	return true, fmt.Sprintf("%ds behind, %d transactions to apply", *lag, sv.Executed.Subtract(tv.Executed).Count())
}

// continuePlanned advances a recorded planned (or ordered-update) handoff.
func (d *decider) continuePlanned(t *v1alpha1.Transition) {
	c := d.plannedClaim()
	if c != nil && c.RunID != t.ID {
		c = nil // the claim is not this transition's (never expected)
	}
	src, target := t.SourceSite, t.TargetSite
	if promoted(t.Step) {
		d.plannedPromote(t, c)
		return
	}
	sv, tv := d.view(src), d.view(target)
	if tv != nil && tv.Writable {
		// Nothing made the target writable: an outside write or a bug. Two
		// writers may exist; fence it and leave the decision to a human.
		d.act(Action{Kind: Fence, Site: target, Why: fmt.Sprintf("planned failover %s: the target became writable before promotion", t.ID)})
		d.plannedAbort(t, c, PlannedOutcomeManualRecoveryRequired, PlannedReasonPromotionFailed,
			fmt.Sprintf("target site %s was found writable before it was promoted", target))
		return
	}
	elapsed := since(&t.StartTime, d.in.Now)
	if sv == nil || sv.Writable {
		if sa := d.answer(src); sa != nil && sa.Writable {
			d.act(Action{Kind: Fence, Site: src, Why: fmt.Sprintf("planned failover %s: the source stops taking writes", t.ID)})
		}
		d.act(Action{Kind: NotifySidecars, Why: t.Message})
		if elapsed >= PlannedDrainTimeout {
			d.plannedRollback(t, c, PlannedReasonFenceFailed, fmt.Sprintf("site %s was not seen fenced within %s", src, PlannedDrainTimeout))
			return
		}
		d.waiting = fmt.Sprintf("planned failover to %s: fencing site %s", target, src)
		return
	}
	if t.Step == v1alpha1.StepFencingSource {
		d.step(t, v1alpha1.StepCatchingUp)
		if c != nil {
			d.claimPhase(c, v1alpha1.PlannedFailoverDraining)
		}
		d.act(Action{Kind: EvictSessions, Site: src, Why: fmt.Sprintf("planned failover %s: client sessions of the fenced source", t.ID)})
		d.event(false, v1alpha1.EventPlannedFailoverDrainStarted, "planned failover %s: site %s is fenced at %s; waiting until site %s holds all of it",
			t.ID, src, GTIDPhrase(sv.Executed.OneLine()), target)
		return
	}
	// Draining: the fenced source's set is final; the target must hold it.
	if tv == nil || !sv.Executed.IsSubsetOf(tv.Executed) {
		missing := "unknown (target not observed)"
		if tv != nil {
			missing = fmt.Sprintf("%d transactions", sv.Executed.Subtract(tv.Executed).Count())
		}
		if elapsed >= PlannedDrainTimeout {
			d.plannedRollback(t, c, PlannedReasonCatchUpTimedOut, fmt.Sprintf("site %s still lacked %s of the fenced source after %s", target, missing, PlannedDrainTimeout))
			return
		}
		d.waiting = fmt.Sprintf("planned failover to %s: it lacks %s of the fenced source", target, missing)
		return
	}
	if w := d.writersBesides(target); len(w) > 0 {
		// Any other site answering writable is fenced first (issue 19).
		d.fenceWritable(target, fmt.Sprintf("planned failover %s: only %s may take writes", t.ID, target))
		d.waiting = fmt.Sprintf("planned failover to %s: fencing %s first", target, w[0])
		return
	}
	nt := d.step(t, v1alpha1.StepPromoting)
	if c != nil {
		d.claimPhase(c, v1alpha1.PlannedFailoverPromoting)
	}
	d.out.Status.LastFailover = &v1alpha1.LastFailover{Time: *nt.StepTime, Target: target, Source: src, Kind: t.Kind,
		PromotionGTIDExecuted: tv.Executed.OneLine()}
	d.act(Action{Kind: MakeWritable, Site: target, ResetReplication: tv.Replica != nil,
		Why: fmt.Sprintf("planned failover %s: it holds every transaction of the fenced %s", t.ID, src)})
}

// plannedPromote finishes a promotion: make the target writable, then
// publish; a promotion never goes back.
func (d *decider) plannedPromote(t *v1alpha1.Transition, c *v1alpha1.PlannedFailoverStatus) {
	src, target := t.SourceSite, t.TargetSite
	if w := d.writersBesides(target); len(w) > 0 {
		// Never made writable while the source (or any other site) answers
		// writable: fenced, and the target made writable on an observation
		// after the fence (issue 19).
		d.fenceWritable(target, fmt.Sprintf("planned failover %s: %s is being promoted", t.ID, target))
		d.waiting = fmt.Sprintf("planned failover to %s: fencing %s first", target, w[0])
		return
	}
	tv := d.view(target)
	if tv == nil || !tv.Writable {
		if tv != nil {
			d.act(Action{Kind: MakeWritable, Site: target, ResetReplication: tv.Replica != nil, Why: fmt.Sprintf("planned failover %s", t.ID)})
		}
		if c != nil && since(t.StepTime, d.in.Now) >= PlannedConfirmBound {
			d.endClaim(c, PlannedOutcomePromotedUnconfirmed, PlannedReasonPromotionFailed, nil,
				fmt.Sprintf("site %s was told to become writable but was not seen writable within %s; the promotion is still being finished", target, PlannedConfirmBound))
		}
		d.waiting = fmt.Sprintf("planned failover to %s: making it writable", target)
		return
	}
	if sv := d.view(src); sv != nil && sv.Writable {
		d.waiting = fmt.Sprintf("planned failover to %s: fencing %s again before publishing", target, src)
		return
	}
	lf := d.publish(t)
	if c != nil {
		d.claimPhase(c, v1alpha1.PlannedFailoverPublishing)
	}
	d.event(false, v1alpha1.EventFailoverSucceeded, "site %s is the active site (was %s, %s handoff); topologyGeneration is %d; promoted at %s",
		target, src, t.Kind, t.TopologyGeneration, GTIDPhrase(lf.PromotionGTIDExecuted))
	d.steady(target)
}

// plannedConfirm ends a published run once the target is seen writable as
// the active site.
func (d *decider) plannedConfirm(c *v1alpha1.PlannedFailoverStatus, active string) {
	if tv := d.view(c.TargetSite); active == c.TargetSite && tv != nil && tv.Writable {
		zero := int64(0)
		d.endClaim(c, PlannedOutcomeSucceeded, PlannedReasonCompleted, &zero, fmt.Sprintf(
			"site %s is the active site (was %s); topologyGeneration %d; no transaction lost", c.TargetSite, c.SourceSite, d.out.Status.TopologyGeneration))
		return
	}
	if since(c.PhaseTime, d.in.Now) >= PlannedConfirmBound {
		d.endClaim(c, PlannedOutcomePromotedUnconfirmed, PlannedReasonPromotionFailed, nil,
			fmt.Sprintf("site %s was published as the active site but not seen writable within %s", c.TargetSite, PlannedConfirmBound))
	}
}

// plannedRollback abandons a handoff before promotion: the transition is
// cleared in the same write that records RollingBack, so the sidecars stop
// fencing the source, and the source is made writable again.
func (d *decider) plannedRollback(t *v1alpha1.Transition, c *v1alpha1.PlannedFailoverStatus, reason v1alpha1.PlannedFailoverResultReason, why string) {
	d.out.Status.Transition = nil
	d.out.WriteFirst = true
	if c != nil {
		nc := d.claimPhase(c, v1alpha1.PlannedFailoverRollingBack)
		nc.Result = &v1alpha1.PlannedFailoverResult{Outcome: PlannedOutcomeRolledBack, Reason: reason, Message: truncate(why, 1024)}
	}
	d.act(Action{Kind: NotifySidecars, Why: fmt.Sprintf("planned failover %s rolled back", t.ID)})
	d.event(true, v1alpha1.EventPlannedFailoverRollbackStarted, "planned failover %s to site %s is rolled back: %s; site %s is made writable again", t.ID, t.TargetSite, why, t.SourceSite)
	// The source is the active site again: steady reasserts it under the
	// same rule as after a restart (nothing another site holds is lost).
	d.steady(t.SourceSite)
}

// plannedAbort ends a handoff before promotion without unfencing anything.
func (d *decider) plannedAbort(t *v1alpha1.Transition, c *v1alpha1.PlannedFailoverStatus, outcome v1alpha1.PlannedFailoverOutcome, reason v1alpha1.PlannedFailoverResultReason, why string) {
	d.out.Status.Transition = nil
	d.out.WriteFirst = true
	if c != nil {
		d.endClaim(c, outcome, reason, nil, why)
	}
}

// plannedRollingBack finishes a rollback: done once the source is seen
// writable as the active site; SourceLeftFenced past PlannedRollbackBound.
// steady(active), which ran before, asks to make the source writable again.
func (d *decider) plannedRollingBack(c *v1alpha1.PlannedFailoverStatus, active string) {
	reason, why := PlannedReasonCatchUpTimedOut, "rolled back"
	if r := c.Result; r != nil {
		reason, why = r.Reason, r.Message
	}
	if sv := d.view(c.SourceSite); active == c.SourceSite && sv != nil && sv.Writable {
		zero := int64(0)
		d.endClaim(c, PlannedOutcomeRolledBack, reason, &zero, fmt.Sprintf("%s; site %s serves again, nothing was lost", why, c.SourceSite))
		return
	}
	if since(c.PhaseTime, d.in.Now) >= PlannedRollbackBound {
		d.endClaim(c, PlannedOutcomeSourceLeftFenced, reason, nil,
			fmt.Sprintf("%s; site %s could not be made writable again within %s", why, c.SourceSite, PlannedRollbackBound))
		return
	}
	d.waiting = fmt.Sprintf("planned failover rolled back: making site %s writable again", c.SourceSite)
}

// supersedePlanned ends a run without a transition of its own when an
// automatic failover takes the group (its transition was just recorded):
// the group's automation owns the outcome, so no hold is placed.
func (d *decider) supersedePlanned(active string) {
	c := d.plannedClaim()
	if c == nil {
		return
	}
	outcome := PlannedOutcomeRolledBack // CatchingUp: nothing was fenced
	switch c.Phase {
	case v1alpha1.PlannedFailoverRollingBack:
		outcome = PlannedOutcomeSourceLeftFenced
	case v1alpha1.PlannedFailoverPublishing:
		outcome = PlannedOutcomePromotedUnconfirmed
	}
	d.endClaim(c, outcome, PlannedReasonSuperseded, nil,
		fmt.Sprintf("active site %s became unreachable: an automatic failover took over", active))
}
