package topology

import (
	"fmt"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Planned failover, admission part (docs/planned-failover.md, Admission):
// parsing the request annotation and deciding whether a persisted claim may
// leave Admitting. The handoff itself (catch-up, fence, promote, publish,
// roll back) is in planned_handoff.go; the verdicts here are its entry.

// AnnotationPlannedFailover asks for a planned failover to a site. Its value
// is "<site>[:maxLagWait=<duration>]"; maxLagWait overrides
// spec.plannedFailover.maxLagWait for this run.
const AnnotationPlannedFailover = "bloodraven.shipstream.io/planned-failover"

// Bounds of maxLagWait, in the annotation as in spec.plannedFailover (the
// CRD enforces the spec's; the annotation is checked here).
const (
	MinPlannedMaxLagWait = time.Second
	MaxPlannedMaxLagWait = time.Hour
)

// Admission wait, defer and refusal causes, as the API enums spell them.
const (
	PlannedWaitReplicationUnhealthy v1alpha1.PlannedFailoverWaitReason = "ReplicationUnhealthy"
	PlannedWaitTargetUnreachable    v1alpha1.PlannedFailoverWaitReason = "TargetUnreachable"
	PlannedWaitOperationInProgress  v1alpha1.PlannedFailoverWaitReason = "OperationInProgress"
	PlannedWaitTargetLagging        v1alpha1.PlannedFailoverWaitReason = "TargetLagging"

	PlannedDeferDeploymentHold v1alpha1.PlannedFailoverDeferReason = "DeploymentHold"
	PlannedDeferCooldown       v1alpha1.PlannedFailoverDeferReason = "Cooldown"

	PlannedOutcomeNotStarted v1alpha1.PlannedFailoverOutcome = "NotStarted"

	PlannedReasonInvalidTarget      v1alpha1.PlannedFailoverResultReason = "InvalidTarget"
	PlannedReasonTargetNotCandidate v1alpha1.PlannedFailoverResultReason = "TargetNotCandidate"
	PlannedReasonAlreadyActive      v1alpha1.PlannedFailoverResultReason = "AlreadyActive"
	PlannedReasonCooldownActive     v1alpha1.PlannedFailoverResultReason = "CooldownActive"
	PlannedReasonAdmissionTimedOut  v1alpha1.PlannedFailoverResultReason = "AdmissionTimedOut"
)

// PlannedRequest is a parsed planned-failover annotation value.
type PlannedRequest struct {
	Site string
	// MaxLagWait is the annotation's maxLagWait; 0 when absent (the spec's
	// default applies).
	MaxLagWait time.Duration
}

// ParsePlannedFailoverValue parses "<site>[:maxLagWait=<duration>]". Every
// error names the part that is wrong.
func ParsePlannedFailoverValue(v string) (PlannedRequest, error) {
	site, kv, err := parseSiteParts(strings.TrimSpace(v), "<site>[:maxLagWait=<duration>]", "maxLagWait")
	r := PlannedRequest{Site: site}
	if err != nil {
		return r, err
	}
	if val, ok := kv["maxLagWait"]; ok {
		if r.MaxLagWait, err = parseMaxLagWait(val); err != nil {
			return r, err
		}
	}
	return r, nil
}

func parseMaxLagWait(val string) (time.Duration, error) {
	d, err := time.ParseDuration(val)
	if err != nil {
		return 0, fmt.Errorf("maxLagWait=%q is not a duration such as 30s or 5m", val)
	}
	if d < MinPlannedMaxLagWait || d > MaxPlannedMaxLagWait {
		return 0, fmt.Errorf("maxLagWait=%s is outside %s to %s", val, MinPlannedMaxLagWait, MaxPlannedMaxLagWait)
	}
	return d, nil
}

// PlannedHolds is what admission needs of the deployment failover holds
// (leasestore.Store.Holds, queried after the claim was stored).
type PlannedHolds struct {
	Held           bool
	EarliestExpiry time.Time
	OperationID    string
	Instance       string
	Count          int
}

// PlannedSettings are spec.plannedFailover and spec.failoverCooldown with
// their defaults applied by the caller.
type PlannedSettings struct {
	OnCooldown       v1alpha1.PlannedFailoverOnCooldown
	AdmissionTimeout time.Duration
	Cooldown         time.Duration
}

// PlannedAdmissionInput is one admission decision's input. It is evaluated
// only for a claim already stored in status.plannedFailover (phase
// Admitting or Deferred): the hold query is only sound after that write.
type PlannedAdmissionInput struct {
	Now    time.Time
	Target string
	// Active is status.activeSite.
	Active string
	Sites  []SiteSpec
	// TargetTrusted: the target is Reachable with a current poll.
	TargetTrusted bool
	// TargetReplicating: the target's channel replicates from the active
	// site with both threads running and no error.
	TargetReplicating bool
	// OtherOperation names another change in flight (status.transition, a
	// reclone, an ordered update, ...); empty when none.
	OtherOperation string
	// TargetLagging describes a target beyond spec.replication.maxLagSeconds;
	// TargetDiverged one holding transactions the active site lacks. Empty
	// when not so.
	TargetLagging  string
	TargetDiverged string
	// LastFailover is status.lastFailover.time; zero when there was none.
	LastFailover time.Time
	// AdmittingSince is when the run last entered Admitting; the admission
	// timeout counts from there (time spent Deferred does not count).
	AdmittingSince time.Time
	Holds          PlannedHolds
	Settings       PlannedSettings
}

// PlannedAdmission is the verdict for a stored claim.
type PlannedAdmission struct {
	// Phase is the claim's next phase: Admitting (keep waiting), Deferred,
	// Failed (refused, outcome NotStarted) or CatchingUp (admitted: the
	// target catches up within maxLagWait while the source still serves).
	Phase      v1alpha1.PlannedFailoverPhase
	WaitReason v1alpha1.PlannedFailoverWaitReason
	// DeferReason, RetryAfter and Blocking* are set when Deferred.
	DeferReason         v1alpha1.PlannedFailoverDeferReason
	RetryAfter          time.Time
	BlockingOperationID string
	BlockingInstance    string
	// ResultReason is set when Failed.
	ResultReason v1alpha1.PlannedFailoverResultReason
	Message      string
}

// ValidatePlannedTarget checks what no wait can fix: the target exists, is
// a PrimaryCandidate and is not already active. It returns the result
// reason of the refusal and an error naming the cause, or "" and nil.
func ValidatePlannedTarget(sites []SiteSpec, active, target string) (v1alpha1.PlannedFailoverResultReason, error) {
	var spec *SiteSpec
	for i := range sites {
		if sites[i].Name == target {
			spec = &sites[i]
		}
	}
	switch {
	case spec == nil:
		return PlannedReasonInvalidTarget, fmt.Errorf("target site %q is not in spec.sites", target)
	case spec.Role != v1alpha1.SiteRolePrimaryCandidate:
		return PlannedReasonTargetNotCandidate, fmt.Errorf("target site %s has role %s; only a PrimaryCandidate site can become active", target, spec.Role)
	case target == active:
		return PlannedReasonAlreadyActive, fmt.Errorf("target site %s is already the active site", target)
	}
	return "", nil
}

// AdmitPlanned decides the next phase of a stored claim. Refusals come
// first (they never resolve), then the cooldown, then the waits (which
// fail the run after the admission timeout), then the deployment holds:
// holds are checked last so that a Deferred run only ever waits for a hold
// or the cooldown, and is revalidated in full after retryAfter.
func AdmitPlanned(in PlannedAdmissionInput) PlannedAdmission {
	if reason, err := ValidatePlannedTarget(in.Sites, in.Active, in.Target); err != nil {
		return PlannedAdmission{Phase: v1alpha1.PlannedFailoverFailed, ResultReason: reason, Message: err.Error()}
	}
	if a, ok := plannedCooldown(in); ok {
		return a
	}
	if a, ok := plannedWait(in); ok {
		return a
	}
	if in.Holds.Held {
		return PlannedAdmission{Phase: v1alpha1.PlannedFailoverDeferred, DeferReason: PlannedDeferDeploymentHold,
			RetryAfter: in.Holds.EarliestExpiry, BlockingOperationID: in.Holds.OperationID, BlockingInstance: in.Holds.Instance,
			Message: fmt.Sprintf("deployment operation %s of instance %s holds failover until %s (%d hold(s) in force)",
				in.Holds.OperationID, in.Holds.Instance, in.Holds.EarliestExpiry.UTC().Format(time.RFC3339), in.Holds.Count)}
	}
	return PlannedAdmission{Phase: v1alpha1.PlannedFailoverCatchingUp,
		Message: fmt.Sprintf("admitted: site %s takes over from site %s once it has caught up", in.Target, in.Active)}
}

// plannedCooldown applies spec.plannedFailover.onCooldown inside
// failoverCooldown after the last failover.
func plannedCooldown(in PlannedAdmissionInput) (PlannedAdmission, bool) {
	if in.LastFailover.IsZero() || in.Now.Sub(in.LastFailover) >= in.Settings.Cooldown {
		return PlannedAdmission{}, false
	}
	until := in.LastFailover.Add(in.Settings.Cooldown)
	msg := fmt.Sprintf("failoverCooldown %s has not passed since the last failover at %s (until %s)",
		in.Settings.Cooldown, in.LastFailover.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
	if in.Settings.OnCooldown == v1alpha1.PlannedFailoverDeferOnCooldown {
		return PlannedAdmission{Phase: v1alpha1.PlannedFailoverDeferred, DeferReason: PlannedDeferCooldown, RetryAfter: until, Message: msg}, true
	}
	// Reject is the default: an unset onCooldown refuses.
	return PlannedAdmission{Phase: v1alpha1.PlannedFailoverFailed, ResultReason: PlannedReasonCooldownActive,
		Message: msg + "; spec.plannedFailover.onCooldown is Reject"}, true
}

// plannedWait reports a condition the run waits out in Admitting, or the
// admission timeout once it has waited too long.
func plannedWait(in PlannedAdmissionInput) (PlannedAdmission, bool) {
	var reason v1alpha1.PlannedFailoverWaitReason
	var msg string
	switch {
	case in.OtherOperation != "":
		reason, msg = PlannedWaitOperationInProgress, "another operation is in flight: "+in.OtherOperation
	case !in.TargetTrusted:
		reason, msg = PlannedWaitTargetUnreachable, fmt.Sprintf("target site %s is not reachable", in.Target)
	case !in.TargetReplicating:
		reason, msg = PlannedWaitReplicationUnhealthy, fmt.Sprintf("target site %s is not replicating from the active site %s", in.Target, in.Active)
	case in.TargetDiverged != "":
		// Promoting it would publish transactions the source never had.
		reason, msg = PlannedWaitReplicationUnhealthy, in.TargetDiverged+": it is not handed the primary role"
	case in.TargetLagging != "":
		reason, msg = PlannedWaitTargetLagging, in.TargetLagging
	default:
		return PlannedAdmission{}, false
	}
	if !in.AdmittingSince.IsZero() && in.Now.Sub(in.AdmittingSince) >= in.Settings.AdmissionTimeout {
		return PlannedAdmission{Phase: v1alpha1.PlannedFailoverFailed, ResultReason: PlannedReasonAdmissionTimedOut,
			Message: fmt.Sprintf("admission did not complete within spec.plannedFailover.admissionTimeout %s: %s", in.Settings.AdmissionTimeout, msg)}, true
	}
	return PlannedAdmission{Phase: v1alpha1.PlannedFailoverAdmitting, WaitReason: reason, Message: msg}, true
}

// PlannedRequestAction is what becomes of a planned-failover annotation.
type PlannedRequestAction int

const (
	// PlannedRequestClaim: store a new claim for the request.
	PlannedRequestClaim PlannedRequestAction = iota
	// PlannedRequestSkip: a run to the same target is already in flight
	// (a repeat, or this annotation's own claim stored before a crash):
	// the annotation is removed and nothing else changes.
	PlannedRequestSkip
	// PlannedRequestReject: the value does not parse, or a run to another
	// target holds the claim; the run in flight is not touched.
	PlannedRequestReject
)

// PlannedRequestVerdict is the verdict on an annotation, with the Event
// that reports it (none for a claim: admission reports the run).
type PlannedRequestVerdict struct {
	Action  PlannedRequestAction
	Request PlannedRequest
	// Reason and Message are the Event's; Reason is empty for a claim.
	Reason  string
	Warning bool
	Message string
}

// JudgePlannedRequest decides what an annotation value asks for, given the
// stored claim (nil when there is none).
func JudgePlannedRequest(cur *v1alpha1.PlannedFailoverStatus, value string) PlannedRequestVerdict {
	req, err := ParsePlannedFailoverValue(value)
	v := PlannedRequestVerdict{Request: req}
	switch {
	case err != nil:
		v.Action, v.Reason, v.Warning = PlannedRequestReject, v1alpha1.EventPlannedFailoverRejected, true
		v.Message = fmt.Sprintf("annotation %s=%q refused and removed: %v", AnnotationPlannedFailover, value, err)
	case cur != nil && !cur.Phase.IsTerminal() && cur.TargetSite == req.Site:
		v.Action, v.Reason = PlannedRequestSkip, v1alpha1.EventPlannedFailoverSkipped
		v.Message = fmt.Sprintf("annotation %s=%q removed: run %s to site %s is already %s, so no second run is started",
			AnnotationPlannedFailover, value, cur.RunID, cur.TargetSite, cur.Phase)
	case cur != nil && !cur.Phase.IsTerminal():
		v.Action, v.Reason, v.Warning = PlannedRequestReject, v1alpha1.EventPlannedFailoverRejected, true
		v.Message = fmt.Sprintf("annotation %s=%q refused and removed: run %s to site %s is %s",
			AnnotationPlannedFailover, value, cur.RunID, cur.TargetSite, cur.Phase)
	}
	return v
}
