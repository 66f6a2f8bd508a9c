package topologymanager

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// PlannedFacts are the manager's observations that planned admission needs
// (the admitter does no MySQL I/O of its own).
type PlannedFacts struct {
	// TargetTrusted: the target site is Reachable with a current poll.
	TargetTrusted bool
	// TargetReplicating: the target replicates from the active site with
	// both threads running.
	TargetReplicating bool
	// OtherOperation names another change in flight; empty when none.
	OtherOperation string
	// TargetLagging and TargetDiverged describe a target too far behind or
	// holding transactions the active site lacks; empty when not so.
	TargetLagging, TargetDiverged string
}

// plannedAdmittingPoll is how soon a run waiting in Admitting is judged again.
const plannedAdmittingPoll = time.Second

// PlannedAdmitter runs the admission part of planned failover against the
// API server: it turns the planned-failover annotation into a stored claim,
// then judges the claim (topology.AdmitPlanned) until it is admitted,
// deferred or refused; the manager calls Step each pass while admission has
// work (manager_planned.go), and the handoff itself is topology.Decide's.
type PlannedAdmitter struct {
	Ship versioned.Interface
	// Holds is leasestore.Store.Holds (a quorum read).
	Holds    func(ctx context.Context, g leasestore.GroupRef, topologyGeneration int64) (leasestore.HoldSummary, error)
	Recorder record.EventRecorder
	Now      func() time.Time
	NewRunID func() string
}

// Step advances admission by one step and returns the stored group and how
// soon to call again (0: only when the group changes). The annotation is
// removed only after the claim it produced is stored; a claim never moves
// while an annotation is still present, so a crash between the two writes
// is resumed by removing it and never starts a second run.
func (a *PlannedAdmitter) Step(ctx context.Context, g *v1alpha1.MysqlFailoverGroup, f PlannedFacts) (*v1alpha1.MysqlFailoverGroup, time.Duration, error) {
	if v, ok := g.Annotations[topology.AnnotationPlannedFailover]; ok {
		return a.takeRequest(ctx, g, v)
	}
	claim := g.Status.PlannedFailover
	if claim == nil || (claim.Phase != v1alpha1.PlannedFailoverAdmitting && claim.Phase != v1alpha1.PlannedFailoverDeferred) {
		return g, 0, nil
	}
	now := a.Now()
	waiting := claim.Phase == v1alpha1.PlannedFailoverDeferred && claim.Admission != nil && claim.Admission.RetryAfter != nil &&
		now.Before(claim.Admission.RetryAfter.Time)
	if waiting && claim.Admission.DeferReason != topology.PlannedDeferDeploymentHold {
		return g, claim.Admission.RetryAfter.Sub(now), nil
	}
	// The claim is stored, so the hold query is sound (docs/deploy-api.md).
	hs, err := a.Holds(ctx, leasestore.GroupRef{Namespace: g.Namespace, Name: g.Name, UID: g.UID}, g.Status.TopologyGeneration)
	if err != nil {
		return g, 0, fmt.Errorf("read failover holds: %w", err)
	}
	if waiting && hs.Held {
		// Still held: retryAfter stands (a hold renewed meanwhile is seen
		// at retryAfter). A hold released early ends the wait on the next
		// call (the manager calls every pass).
		return g, claim.Admission.RetryAfter.Sub(now), nil
	}
	v := topology.AdmitPlanned(admissionInput(g, *claim, f, hs, now))
	next := topology.ApplyPlannedAdmission(*claim, v, now)
	if equality.Semantic.DeepEqual(*claim, next) {
		return g, retryIn(v, now), nil
	}
	stored, err := StorePlannedClaim(ctx, a.Ship, g, next)
	if err != nil {
		return g, 0, err
	}
	if next.Phase != claim.Phase {
		a.announce(stored, next, v)
	}
	return stored, retryIn(v, now), nil
}

// takeRequest stores the claim an annotation asks for, or refuses it, and
// then removes the annotation.
func (a *PlannedAdmitter) takeRequest(ctx context.Context, g *v1alpha1.MysqlFailoverGroup, value string) (*v1alpha1.MysqlFailoverGroup, time.Duration, error) {
	v := topology.JudgePlannedRequest(g.Status.PlannedFailover, value)
	if v.Action == topology.PlannedRequestClaim {
		wait := time.Duration(0)
		if s := g.Spec.PlannedFailover; s != nil && s.MaxLagWait != nil {
			wait = s.MaxLagWait.Duration
		}
		stored, err := StorePlannedClaim(ctx, a.Ship, g, topology.NewPlannedClaim(v.Request, a.NewRunID(), g.Status.ActiveSite, wait, a.Now()))
		if err != nil {
			return g, 0, err
		}
		g = stored
	}
	out := g.DeepCopy()
	delete(out.Annotations, topology.AnnotationPlannedFailover)
	// Conditioned on the resourceVersion just read or written: a newer
	// annotation is never removed unseen.
	updated, err := a.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(g.Namespace).Update(ctx, out, metav1.UpdateOptions{})
	if err != nil {
		return g, 0, fmt.Errorf("remove annotation %s: %w", topology.AnnotationPlannedFailover, err)
	}
	// Reported once the annotation is gone, so a retried removal does not
	// report the same request twice.
	if v.Reason != "" {
		typ := corev1.EventTypeNormal
		if v.Warning {
			typ = corev1.EventTypeWarning
		}
		a.Recorder.Event(updated, typ, v.Reason, v.Message)
	}
	return updated, plannedAdmittingPoll, nil
}

func admissionInput(g *v1alpha1.MysqlFailoverGroup, claim v1alpha1.PlannedFailoverStatus, f PlannedFacts, hs leasestore.HoldSummary, now time.Time) topology.PlannedAdmissionInput {
	in := topology.PlannedAdmissionInput{
		Now: now, Target: claim.TargetSite, Active: g.Status.ActiveSite,
		TargetTrusted: f.TargetTrusted, TargetReplicating: f.TargetReplicating, OtherOperation: f.OtherOperation,
		TargetLagging: f.TargetLagging, TargetDiverged: f.TargetDiverged,
		Holds: topology.PlannedHolds{Held: hs.Held, EarliestExpiry: hs.EarliestExpiry, OperationID: hs.OperationID, Instance: hs.Instance, Count: hs.Count},
		// Defaults as the CRD declares them.
		Settings: topology.PlannedSettings{OnCooldown: v1alpha1.DefaultPlannedFailoverOnCooldown, AdmissionTimeout: v1alpha1.DefaultAdmissionTimeout, Cooldown: v1alpha1.DefaultFailoverCooldown},
	}
	for _, s := range g.Spec.Sites {
		in.Sites = append(in.Sites, topology.SiteSpec{Name: s.Name, Role: s.Role})
	}
	if lf := g.Status.LastFailover; lf != nil {
		in.LastFailover = lf.Time.Time
	}
	if d := g.Spec.FailoverCooldown; d != nil {
		in.Settings.Cooldown = d.Duration
	}
	if s := g.Spec.PlannedFailover; s != nil {
		if s.OnCooldown != "" {
			in.Settings.OnCooldown = s.OnCooldown
		}
		if s.AdmissionTimeout != nil {
			in.Settings.AdmissionTimeout = s.AdmissionTimeout.Duration
		}
	}
	if g.Status.UpdatePhase == v1alpha1.UpdateHandingOff {
		// An ordered update's handoff waits out the cooldown rather than
		// failing the update over it.
		in.Settings.OnCooldown = v1alpha1.PlannedFailoverDeferOnCooldown
	}
	// Time spent Deferred does not count against the admission timeout.
	in.AdmittingSince = now
	if claim.Phase == v1alpha1.PlannedFailoverAdmitting && claim.PhaseTime != nil {
		in.AdmittingSince = claim.PhaseTime.Time
	}
	return in
}

func retryIn(v topology.PlannedAdmission, now time.Time) time.Duration {
	switch v.Phase {
	case v1alpha1.PlannedFailoverAdmitting:
		return plannedAdmittingPoll
	case v1alpha1.PlannedFailoverDeferred:
		return max(v.RetryAfter.Sub(now), plannedAdmittingPoll)
	}
	return 0
}

func (a *PlannedAdmitter) announce(g *v1alpha1.MysqlFailoverGroup, c v1alpha1.PlannedFailoverStatus, v topology.PlannedAdmission) {
	switch c.Phase {
	case v1alpha1.PlannedFailoverDeferred:
		a.Recorder.Eventf(g, corev1.EventTypeNormal, v1alpha1.EventPlannedFailoverDeferred, "planned failover %s to site %s deferred (%s): %s", c.RunID, c.TargetSite, v.DeferReason, v.Message)
	case v1alpha1.PlannedFailoverFailed:
		a.Recorder.Eventf(g, corev1.EventTypeWarning, v1alpha1.EventPlannedFailoverRejected, "planned failover %s to site %s not started (%s): %s", c.RunID, c.TargetSite, v.ResultReason, v.Message)
	case v1alpha1.PlannedFailoverCatchingUp:
		a.Recorder.Eventf(g, corev1.EventTypeNormal, v1alpha1.EventPlannedFailoverStarted, "planned failover %s to site %s started: %s", c.RunID, c.TargetSite, v.Message)
	}
}

// plannedFactsOf reads the facts from the decision input the manager built
// for this pass (p.input), so admission and the decision agree on the group.
func plannedFactsOf(in topology.Input, target string) PlannedFacts {
	s := topology.PlannedTargetStateOf(in, target)
	return PlannedFacts{TargetTrusted: s.Trusted, TargetReplicating: s.Replicating, OtherOperation: s.OtherOperation,
		TargetLagging: s.Lagging, TargetDiverged: s.Diverged}
}
