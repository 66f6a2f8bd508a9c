package topologymanager

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/observe"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// HoldsFunc reads a group's deployment failover holds (a quorum read,
// leasestore.Store.Holds).
type HoldsFunc func(ctx context.Context, g leasestore.GroupRef, topologyGeneration int64) (leasestore.HoldSummary, error)

// planned runs planned-failover admission for this pass (the annotation and
// a claim still Admitting or Deferred) and fills in the planned part of
// the decision's input: the holds re-read right before fencing, whether
// the run serves an ordered update, and the hold-release request. An
// admission error is returned for a retry but never stops the decision:
// fencing and failover must not wait on the deployment API's records.
func (p *mpass) planned(ctx context.Context, results map[string]observe.Result[Sample], in topology.Input) (topology.Input, error) {
	var admitErr error
	if target, ok := p.admissionDue(); ok {
		g, _, err := p.m.admitter.Step(ctx, p.g, plannedFactsOf(in, target))
		if err != nil {
			admitErr = fmt.Errorf("planned failover admission: %w", err)
			p.log.Warn("planned failover admission failed", "err", err.Error())
		}
		if g != p.g {
			p.g = g
			in = p.input(results)
		}
	}
	g := p.g
	in.Planned.OrderedUpdate = g.Status.UpdatePhase == v1alpha1.UpdateHandingOff
	in.Planned.ClearHold = g.Annotations[topology.AnnotationClearAutomaticFailoverHold] == g.Name
	if c := g.Status.PlannedFailover; c != nil && c.Phase == v1alpha1.PlannedFailoverCatchingUp {
		hs, err := p.m.opts.Holds(ctx, leasestore.GroupRef{Namespace: g.Namespace, Name: g.Name, UID: g.UID}, g.Status.TopologyGeneration)
		if err != nil {
			// Without a fresh read the run does not fence (it keeps catching
			// up, and times out if the read keeps failing).
			p.log.Warn("deployment holds not read before fencing", "err", err.Error())
		} else {
			in.Planned.HoldsRead = true
			in.Planned.Holds = topology.PlannedHolds{Held: hs.Held, EarliestExpiry: hs.EarliestExpiry, OperationID: hs.OperationID, Instance: hs.Instance, Count: hs.Count}
		}
	}
	return in, admitErr
}

// admissionDue reports whether admission has work (an annotation, or a
// claim still Admitting or Deferred) and the target it concerns.
func (p *mpass) admissionDue() (string, bool) {
	if v, ok := p.g.Annotations[topology.AnnotationPlannedFailover]; ok {
		req, _ := topology.ParsePlannedFailoverValue(v)
		return req.Site, true
	}
	c := p.g.Status.PlannedFailover
	if c != nil && (c.Phase == v1alpha1.PlannedFailoverAdmitting || c.Phase == v1alpha1.PlannedFailoverDeferred) {
		return c.TargetSite, true
	}
	return "", false
}

// clearHoldAnnotation removes the clear-hold annotation once the decision
// handled it (the hold is gone), or refuses a value that does not name the
// group. Conditioned on the resourceVersion just stored, like clearReclone.
func (p *mpass) clearHoldAnnotation(ctx context.Context) error {
	v, ok := p.g.Annotations[topology.AnnotationClearAutomaticFailoverHold]
	if !ok {
		return nil
	}
	if v == p.g.Name && p.g.Status.AutomaticFailoverHold != nil {
		return nil // not stored yet: the next pass clears it
	}
	if v != p.g.Name {
		p.recordf(corev1.EventTypeWarning, v1alpha1.EventAutomaticFailoverHoldClearRejected,
			"annotation %s=%q refused and removed: its value must be the group's name (%s)", topology.AnnotationClearAutomaticFailoverHold, v, p.g.Name)
	}
	out := p.g.DeepCopy()
	delete(out.Annotations, topology.AnnotationClearAutomaticFailoverHold)
	g, err := p.m.ctrl.ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.g.Namespace).Update(ctx, out, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("remove annotation %s: %w", topology.AnnotationClearAutomaticFailoverHold, err)
	}
	p.g = g
	return nil
}

// plannedProgress logs a claim's phase change over this pass and counts a
// run that ended.
func (p *mpass) plannedProgress(before *v1alpha1.PlannedFailoverStatus) {
	after := p.g.Status.PlannedFailover
	if after == nil || (before != nil && before.RunID == after.RunID && before.Phase == after.Phase) {
		return
	}
	from := ""
	if before != nil && before.RunID == after.RunID {
		from = string(before.Phase)
	}
	attrs := []any{"runID", after.RunID, "from", from, "to", string(after.Phase),
		"sourceSite", after.SourceSite, "targetSite", after.TargetSite, "role", siteRole(p.g, after.TargetSite)}
	if r := after.Result; r != nil && after.Phase.IsTerminal() {
		attrs = append(attrs, "outcome", string(r.Outcome), "reason", string(r.Reason))
	}
	p.log.Info("planned failover phase changed", attrs...)
	p.m.opts.Metrics.plannedPhaseChanged(p.g, after)
	if after.Phase.IsTerminal() && after.Result != nil {
		var took time.Duration
		if after.RequestTime != nil && after.CompletionTime != nil {
			took = after.CompletionTime.Sub(after.RequestTime.Time)
		}
		p.m.opts.Metrics.plannedEnded(after.Result.Outcome, took)
	}
}
