package groupobjects

// The ordered update's I/O: it gathers PlanRollout's input from the group,
// starts the primary-role handoff by storing a planned-failover claim, and
// reports the rollout in status.updatePhase, the Updating condition and
// Events. The handoff itself (admission, holds, catch-up, fencing,
// promotion) is the topology manager's planned failover: this file only
// writes the claim and reads how it ended.

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// rolloutInput assembles PlanRollout's input from the stored group and the
// observed sites.
func (p *pass) rolloutInput(states []SiteState) RolloutInput {
	g := p.g
	in := RolloutInput{
		Strategy: strategyOf(g), Active: g.Status.ActiveSite, Now: p.c.now(), Sites: states,
		Phase: g.Status.UpdatePhase, Claim: g.Status.PlannedFailover, Incomplete: len(states) < len(g.Spec.Sites),
	}
	if t := g.Status.Transition; t != nil {
		in.Transition = fmt.Sprintf("%s (%s, %s to %s)", t.ID, t.Kind, t.SourceSite, t.TargetSite)
	}
	if sb := g.Spec.SplitBrainPolicy; sb != nil {
		in.SitePriorities = sb.SitePriorities
	}
	return in
}

// orderedUpdate acts on the rollout decision's group-wide part: the
// handoff start, the phase, the Updating condition and the Events.
func (p *pass) orderedUpdate(ctx context.Context, plan Rollout) {
	if plan.Failure != nil {
		p.announceHandoffFailure(*plan.Failure)
	}
	if plan.Handoff != nil {
		if err := p.startHandoff(ctx, *plan.Handoff); err != nil {
			// Nothing was stored: the phase stays as it was, and the next
			// pass decides again on the group as it then is.
			p.fail(err)
			plan.Phase, plan.Notes = p.g.Status.UpdatePhase, append(plan.Notes, "the handoff could not be started yet")
		}
	}
	p.phase, p.phaseDecided = plan.Phase, true
	p.requeue = sooner(p.requeue, plan.RequeueAfter)
	p.updatingCondition(plan)
}

// startHandoff stores, in one status write conditioned on the
// resourceVersion read, status.updatePhase HandingOff and a new
// planned-failover claim to the target. The manager's planned failover
// recognises the run as the ordered update's by the phase.
func (p *pass) startHandoff(ctx context.Context, h Handoff) error {
	g := p.g
	if g.Status.Transition != nil || (g.Status.PlannedFailover != nil && !g.Status.PlannedFailover.Phase.IsTerminal()) {
		return fmt.Errorf("start ordered-update handoff: an active-site change or planned failover is in flight")
	}
	var maxLagWait time.Duration
	if s := g.Spec.PlannedFailover; s != nil && s.MaxLagWait != nil {
		maxLagWait = s.MaxLagWait.Duration
	}
	claim := topology.NewPlannedClaim(topology.PlannedRequest{Site: h.Target}, p.c.newID(), g.Status.ActiveSite, maxLagWait, p.c.now())
	out := g.DeepCopy()
	out.Status.UpdatePhase = v1alpha1.UpdateHandingOff
	out.Status.PlannedFailover = &claim
	stored, err := p.c.ship.ShipstreamV1alpha1().MysqlFailoverGroups(g.Namespace).UpdateStatus(ctx, out, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("start ordered-update handoff to site %s: store planned-failover claim: %w", h.Target, err)
	}
	p.g = stored
	msg := fmt.Sprintf("every follower runs the new pod template: handing the primary role from site %s to site %s (planned failover %s)",
		claim.SourceSite, h.Target, claim.RunID)
	if h.Retry {
		msg += fmt.Sprintf("; retry after planned failover %s failed", h.PreviousRun)
	}
	p.c.recorder.Event(stored, corev1.EventTypeNormal, v1alpha1.EventOrderedUpdateHandoffStarted, msg)
	p.c.log.Info("ordered update: handoff started", "namespace", g.Namespace, "group", g.Name,
		"runID", claim.RunID, "sourceSite", claim.SourceSite, "targetSite", h.Target, "retry", h.Retry)
	return nil
}

func (p *pass) announceHandoffFailure(f HandoffFailure) {
	msg := fmt.Sprintf("the primary role was not handed to site %s: planned failover %s ended %s/%s", f.Target, f.RunID, f.Outcome, f.Reason)
	switch {
	case f.RunID == "":
		msg = "the primary role was not handed over: the planned-failover claim of the handoff is gone"
	case f.Moved:
		msg = fmt.Sprintf("planned failover %s ended %s/%s after publishing site %s as the active site (see status.plannedFailover.result); the ordered update goes on with the former primary as a follower",
			f.RunID, f.Outcome, f.Reason, f.Target)
		p.eventAfterStatus(corev1.EventTypeWarning, v1alpha1.EventOrderedUpdateHandoffFailed, msg)
		return
	}
	if !f.RetryAt.IsZero() {
		msg += "; the ordered update retries the handoff at " + stamp(f.RetryAt)
	} else {
		msg += "; the ordered update retries the handoff"
	}
	p.eventAfterStatus(corev1.EventTypeWarning, v1alpha1.EventOrderedUpdateHandoffFailed, msg)
}

// updatingCondition reports the rollout: True/OrderedUpdateStalled when it
// cannot move on by itself (a Warning Event when that begins),
// True/Rolling while it runs, False/UpToDate when done.
func (p *pass) updatingCondition(plan Rollout) {
	if st := plan.Stall; st != nil {
		if prev := p.previous(v1alpha1.ConditionUpdating); prev == nil || prev.Reason != v1alpha1.ReasonOrderedUpdateStalled {
			p.eventAfterStatus(corev1.EventTypeWarning, v1alpha1.EventOrderedUpdateStalled, st.Message)
		}
		p.setCondition(v1alpha1.ConditionUpdating, metav1.ConditionTrue, v1alpha1.ReasonOrderedUpdateStalled, st.Message)
		return
	}
	if plan.Done() {
		p.setCondition(v1alpha1.ConditionUpdating, metav1.ConditionFalse, v1alpha1.ReasonUpToDate, "every site runs the current pod template")
		return
	}
	msg := "rolling onto the new pod template"
	if out := plan.Outdated(); len(out) > 0 {
		msg += ": " + strings.Join(out, ", ")
	}
	if plan.Phase != "" {
		msg += " (" + string(plan.Phase) + ")"
	}
	for _, s := range plan.Sites {
		if s.Waiting {
			msg += fmt.Sprintf("; %s waits for %s", s.Name, s.WaitingFor)
		}
	}
	for _, n := range plan.Notes {
		msg += "; " + n
	}
	p.setCondition(v1alpha1.ConditionUpdating, metav1.ConditionTrue, v1alpha1.ReasonRolling, msg)
}
