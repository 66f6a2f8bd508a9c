package topology

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// DefaultPlannedMaxLagWait is spec.plannedFailover.maxLagWait's default.
const DefaultPlannedMaxLagWait = v1alpha1.DefaultMaxLagWait

// NewPlannedClaim is the claim stored in status.plannedFailover when a
// request is accepted, before anything else happens (in particular before
// the deployment holds are queried). The annotation's maxLagWait wins over
// the spec's (specMaxLagWait, 0 when unset).
func NewPlannedClaim(req PlannedRequest, runID, source string, specMaxLagWait time.Duration, now time.Time) v1alpha1.PlannedFailoverStatus {
	wait := DefaultPlannedMaxLagWait
	if specMaxLagWait > 0 {
		wait = specMaxLagWait
	}
	if req.MaxLagWait > 0 {
		wait = req.MaxLagWait
	}
	t := metav1.NewTime(now)
	return v1alpha1.PlannedFailoverStatus{
		RunID: runID, TargetSite: req.Site, SourceSite: source,
		Phase:       v1alpha1.PlannedFailoverAdmitting,
		MaxLagWait:  &metav1.Duration{Duration: wait},
		RequestTime: &t, PhaseTime: &t,
		Admission: &v1alpha1.PlannedFailoverAdmission{},
	}
}

// ApplyPlannedAdmission returns the claim after an admission verdict.
// phaseTime moves only when the phase changes (it is what the admission
// timeout counts from); a refusal ends the run not-started and keeps the
// record, which also releases the claim.
func ApplyPlannedAdmission(claim v1alpha1.PlannedFailoverStatus, v PlannedAdmission, now time.Time) v1alpha1.PlannedFailoverStatus {
	out := *claim.DeepCopy()
	t := metav1.NewTime(now)
	if out.Phase != v.Phase {
		out.Phase, out.PhaseTime = v.Phase, &t
	}
	switch v.Phase {
	case v1alpha1.PlannedFailoverAdmitting:
		out.Admission = &v1alpha1.PlannedFailoverAdmission{WaitReason: v.WaitReason, Message: v.Message}
	case v1alpha1.PlannedFailoverDeferred:
		retry := metav1.NewTime(v.RetryAfter)
		out.Admission = &v1alpha1.PlannedFailoverAdmission{DeferReason: v.DeferReason, RetryAfter: &retry,
			BlockingOperationID: v.BlockingOperationID, BlockingInstance: v.BlockingInstance, Message: v.Message}
	case v1alpha1.PlannedFailoverFailed:
		out.Admission = nil
		out.CompletionTime = &t
		out.Result = &v1alpha1.PlannedFailoverResult{Outcome: PlannedOutcomeNotStarted, Reason: v.ResultReason, Message: v.Message}
	default:
		// Admitted: the admission record has served its purpose.
		out.Admission = nil
	}
	return out
}
