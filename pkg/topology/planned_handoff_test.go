package topology

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// handoff is a planned run from iad to pdx driven decision by decision: the
// test plays the world (what the sites look like after the actions).
type handoff struct {
	t   *testing.T
	now time.Time
	st  v1alpha1.MysqlFailoverGroupStatus
	obs map[string]SiteInput
	in  PlannedInput
}

func newHandoff(t *testing.T) *handoff {
	at := metav1.NewTime(t0)
	st := active(2, "iad")
	st.PlannedFailover = &v1alpha1.PlannedFailoverStatus{RunID: "run-1", SourceSite: "iad", TargetSite: "pdx",
		Phase: v1alpha1.PlannedFailoverCatchingUp, PhaseTime: &at, RequestTime: &at, MaxLagWait: &metav1.Duration{Duration: 20 * time.Second}}
	obs := map[string]SiteInput{
		"iad":    site("iad", true, "I:1-100", nil),
		"pdx":    site("pdx", false, "I:1-90", lagging(iadHost, 5)),
		"dr":     site("dr", false, "I:1-80", replicating(iadHost)),
		"reader": site("reader", false, "I:1-100", replicating(iadHost)),
	}
	return &handoff{t: t, now: t0, st: st, obs: obs, in: PlannedInput{HoldsRead: true}}
}

func lagging(host string, seconds int64) *Replica {
	r := replicating(host)
	r.SecondsBehindSource = &seconds
	return r
}

// decide runs one decision after advance and stores its status.
func (h *handoff) decide(advance time.Duration) Decision {
	h.t.Helper()
	h.now = h.now.Add(advance)
	in := newInput(h.obs, h.st)
	in.Now = h.now
	in.Planned = h.in
	d := Decide(in)
	h.st = d.Status
	return d
}

func (h *handoff) phase() v1alpha1.PlannedFailoverPhase { return h.st.PlannedFailover.Phase }

func (h *handoff) set(name string, writable bool, executed string, rep *Replica) {
	h.obs[name] = site(name, writable, executed, rep)
}

func TestPlannedHandoffSucceedsWithoutLoss(t *testing.T) {
	h := newHandoff(t)
	d := h.decide(time.Second)
	if h.phase() != v1alpha1.PlannedFailoverCatchingUp || h.st.Transition != nil || len(d.Actions) != 0 {
		t.Fatalf("a lagging target must keep the run catching up with the source serving: %s %v", h.phase(), actions(d))
	}

	h.set("pdx", false, "I:1-99", lagging(iadHost, 0))
	d = h.decide(time.Second)
	tr := h.st.Transition
	if tr == nil || tr.Kind != v1alpha1.TransitionPlanned || tr.ID != "run-1" || tr.TopologyGeneration != 3 || tr.Step != v1alpha1.StepFencingSource {
		t.Fatalf("transition %+v", tr)
	}
	if h.phase() != v1alpha1.PlannedFailoverFencing || !d.WriteFirst {
		t.Fatalf("phase %s writeFirst %v", h.phase(), d.WriteFirst)
	}
	if got := strings.Join(actions(d), ","); got != "NotifySidecars ,Fence iad" {
		t.Fatalf("actions %s", got)
	}
	if !hasEvent(d, v1alpha1.EventPlannedFailoverTargetCaughtUp, false) {
		t.Fatalf("events %+v", d.Events)
	}

	// The source is fenced with 101 transactions; the target has 99.
	h.set("iad", false, "I:1-101", nil)
	d = h.decide(time.Second)
	if h.phase() != v1alpha1.PlannedFailoverDraining || h.st.Transition.Step != v1alpha1.StepCatchingUp {
		t.Fatalf("phase %s step %s", h.phase(), h.st.Transition.Step)
	}
	if got := strings.Join(actions(d), ","); got != "EvictSessions iad" || !hasEvent(d, v1alpha1.EventPlannedFailoverDrainStarted, false) {
		t.Fatalf("actions %s events %+v", got, d.Events)
	}
	d = h.decide(time.Second)
	if len(d.Actions) != 0 || h.phase() != v1alpha1.PlannedFailoverDraining {
		t.Fatalf("the target lacks 2 transactions: nothing may be promoted: %v %s", actions(d), h.phase())
	}

	h.set("pdx", false, "I:1-101", lagging(iadHost, 0))
	d = h.decide(time.Second)
	if h.st.Transition.Step != v1alpha1.StepPromoting || h.phase() != v1alpha1.PlannedFailoverPromoting || !d.WriteFirst {
		t.Fatalf("step %s phase %s", h.st.Transition.Step, h.phase())
	}
	if got := strings.Join(actions(d), ","); got != "MakeWritable pdx" || !d.Actions[0].ResetReplication {
		t.Fatalf("actions %s", got)
	}
	if lf := h.st.LastFailover; lf == nil || lf.Kind != v1alpha1.TransitionPlanned || lf.PromotionGTIDExecuted != set(expand("I:1-101")).OneLine() || lf.PossiblyLostGTID != "" {
		t.Fatalf("lastFailover %+v", lf)
	}

	h.set("pdx", true, "I:1-101", nil)
	d = h.decide(time.Second)
	if h.st.ActiveSite != "pdx" || h.st.TopologyGeneration != 3 || h.st.Transition != nil || h.phase() != v1alpha1.PlannedFailoverPublishing {
		t.Fatalf("active %s gen %d transition %+v phase %s", h.st.ActiveSite, h.st.TopologyGeneration, h.st.Transition, h.phase())
	}
	if !slices.Contains(actions(d), "Repoint iad") {
		t.Fatalf("the former source is repointed at the new primary: %v", actions(d))
	}

	h.set("pdx", true, "P:1-3,I:1-101", nil)
	d = h.decide(time.Second)
	pf := h.st.PlannedFailover
	if pf.Phase != v1alpha1.PlannedFailoverSucceeded || pf.Result.Outcome != PlannedOutcomeSucceeded || pf.Result.Reason != PlannedReasonCompleted ||
		pf.Result.TransactionsLost == nil || *pf.Result.TransactionsLost != 0 || pf.CompletionTime == nil {
		t.Fatalf("claim %+v result %+v", pf, pf.Result)
	}
	if !hasEvent(d, v1alpha1.EventPlannedFailoverSucceeded, false) || h.st.AutomaticFailoverHold != nil {
		t.Fatalf("events %+v hold %+v", d.Events, h.st.AutomaticFailoverHold)
	}
	d = h.decide(time.Second)
	if hasEvent(d, v1alpha1.EventPlannedFailoverSucceeded, false) {
		t.Fatalf("a finished run is announced once")
	}
}

func TestPlannedHandoffOrderedUpdateKind(t *testing.T) {
	h := newHandoff(t)
	h.in.OrderedUpdate = true
	h.set("pdx", false, "I:1-100", lagging(iadHost, 1))
	h.decide(time.Second)
	if h.st.Transition == nil || h.st.Transition.Kind != v1alpha1.TransitionOrderedUpdate {
		t.Fatalf("transition %+v", h.st.Transition)
	}
}

func TestPlannedCatchUpTimesOutWithoutTouchingTheSource(t *testing.T) {
	h := newHandoff(t)
	d := h.decide(21 * time.Second) // maxLagWait is 20s
	pf := h.st.PlannedFailover
	if pf.Phase != v1alpha1.PlannedFailoverFailed || pf.Result.Outcome != PlannedOutcomeRolledBack || pf.Result.Reason != PlannedReasonCatchUpTimedOut {
		t.Fatalf("claim %+v", pf.Result)
	}
	if h.st.Transition != nil || slices.Contains(actions(d), "Fence iad") || h.st.AutomaticFailoverHold != nil {
		t.Fatalf("nothing may be fenced or held: %v %+v", actions(d), h.st.AutomaticFailoverHold)
	}
	if !hasEvent(d, v1alpha1.EventPlannedFailoverFailed, true) {
		t.Fatalf("events %+v", d.Events)
	}
}

func TestPlannedHoldsAreReadAgainBeforeFencing(t *testing.T) {
	h := newHandoff(t)
	h.set("pdx", false, "I:1-100", lagging(iadHost, 0))
	h.in.HoldsRead = false
	if d := h.decide(time.Second); h.st.Transition != nil || len(d.Actions) != 0 {
		t.Fatalf("fencing without a fresh hold read: %v", actions(d))
	}
	h.in = PlannedInput{HoldsRead: true, Holds: PlannedHolds{Held: true, EarliestExpiry: t0.Add(time.Minute), OperationID: "op-7", Instance: "orders-app", Count: 1}}
	d := h.decide(time.Second)
	pf := h.st.PlannedFailover
	if pf.Phase != v1alpha1.PlannedFailoverDeferred || pf.Admission.DeferReason != PlannedDeferDeploymentHold ||
		!pf.Admission.RetryAfter.Time.Equal(t0.Add(time.Minute)) || pf.Admission.BlockingOperationID != "op-7" || pf.Admission.BlockingInstance != "orders-app" {
		t.Fatalf("claim %+v admission %+v", pf, pf.Admission)
	}
	if h.st.Transition != nil || len(d.Actions) != 0 || !hasEvent(d, v1alpha1.EventPlannedFailoverDeferred, false) {
		t.Fatalf("transition %+v actions %v events %+v", h.st.Transition, actions(d), d.Events)
	}
}

// toDraining runs a handoff up to Draining with the fenced source at I:1-101.
func toDraining(t *testing.T) *handoff {
	h := newHandoff(t)
	h.set("pdx", false, "I:1-99", lagging(iadHost, 0))
	h.decide(time.Second)
	h.set("iad", false, "I:1-101", nil)
	h.decide(time.Second)
	if h.phase() != v1alpha1.PlannedFailoverDraining {
		t.Fatalf("phase %s", h.phase())
	}
	return h
}

func TestPlannedDrainTimeoutRollsBackAndUnfencesTheSource(t *testing.T) {
	h := toDraining(t)
	d := h.decide(PlannedDrainTimeout)
	if h.st.Transition != nil || h.phase() != v1alpha1.PlannedFailoverRollingBack || !d.WriteFirst {
		t.Fatalf("transition %+v phase %s", h.st.Transition, h.phase())
	}
	if h.st.ActiveSite != "iad" || h.st.TopologyGeneration != 2 {
		t.Fatalf("a rollback changes no topology: %s %d", h.st.ActiveSite, h.st.TopologyGeneration)
	}
	if got := actions(d); !slices.Contains(got, "MakeWritable iad") || slices.Contains(got, "MakeWritable pdx") {
		t.Fatalf("the source is made writable again in the rollback's own decision: %v", got)
	}
	if !hasEvent(d, v1alpha1.EventPlannedFailoverRollbackStarted, true) {
		t.Fatalf("events %+v", d.Events)
	}
	h.set("iad", true, "I:1-101", nil)
	h.decide(2 * time.Second)
	pf := h.st.PlannedFailover
	if pf.Phase != v1alpha1.PlannedFailoverFailed || pf.Result.Outcome != PlannedOutcomeRolledBack || pf.Result.Reason != PlannedReasonCatchUpTimedOut {
		t.Fatalf("result %+v", pf.Result)
	}
	if h.st.AutomaticFailoverHold != nil {
		t.Fatalf("a clean rollback holds nothing")
	}
}

func TestPlannedRollbackThatCannotUnfenceLeavesTheSourceFencedAndHolds(t *testing.T) {
	h := toDraining(t)
	h.decide(PlannedDrainTimeout)
	h.obs["iad"] = unreachable()
	h.decide(5 * time.Second)
	if h.phase() != v1alpha1.PlannedFailoverRollingBack {
		t.Fatalf("phase %s", h.phase())
	}
	d := h.decide(6 * time.Second)
	pf := h.st.PlannedFailover
	if pf.Result.Outcome != PlannedOutcomeSourceLeftFenced || h.st.AutomaticFailoverHold == nil || h.st.AutomaticFailoverHold.Reason != HoldReasonSourceLeftFenced {
		t.Fatalf("result %+v hold %+v", pf.Result, h.st.AutomaticFailoverHold)
	}
	if !hasEvent(d, v1alpha1.EventAutomaticFailoverHoldPlaced, true) {
		t.Fatalf("events %+v", d.Events)
	}
	// The hold stops automatic failover; the administrator's annotation clears it.
	h.decide(time.Minute)
	if h.st.Transition != nil {
		t.Fatalf("automatic failover started despite the hold: %+v", h.st.Transition)
	}
	h.in.ClearHold = true
	d = h.decide(time.Second)
	if h.st.AutomaticFailoverHold != nil || !hasEvent(d, v1alpha1.EventAutomaticFailoverHoldCleared, false) {
		t.Fatalf("hold %+v events %+v", h.st.AutomaticFailoverHold, d.Events)
	}
}

func TestPlannedSourceNeverSeenFencedRollsBack(t *testing.T) {
	h := newHandoff(t)
	h.set("pdx", false, "I:1-100", lagging(iadHost, 0))
	h.decide(time.Second)
	// The fence keeps failing: iad stays writable.
	d := h.decide(10 * time.Second)
	if !slices.Contains(actions(d), "Fence iad") || h.phase() != v1alpha1.PlannedFailoverFencing {
		t.Fatalf("the fence is retried: %v %s", actions(d), h.phase())
	}
	d = h.decide(PlannedDrainTimeout)
	if h.phase() != v1alpha1.PlannedFailoverRollingBack || h.st.PlannedFailover.Result.Reason != PlannedReasonFenceFailed {
		t.Fatalf("phase %s result %+v", h.phase(), h.st.PlannedFailover.Result)
	}
	if slices.Contains(actions(d), "MakeWritable pdx") {
		t.Fatalf("promoted a target while the source was never seen fenced")
	}
}

func TestPlannedTargetWritableBeforePromotionNeedsAHuman(t *testing.T) {
	h := toDraining(t)
	h.set("pdx", true, "I:1-101", nil)
	d := h.decide(time.Second)
	pf := h.st.PlannedFailover
	if pf.Result == nil || pf.Result.Outcome != PlannedOutcomeManualRecoveryRequired || h.st.AutomaticFailoverHold == nil {
		t.Fatalf("claim %+v hold %+v", pf, h.st.AutomaticFailoverHold)
	}
	if !slices.Contains(actions(d), "Fence pdx") || slices.Contains(actions(d), "MakeWritable iad") || h.st.Transition != nil {
		t.Fatalf("actions %v transition %+v", actions(d), h.st.Transition)
	}
}

func TestPlannedPromotionIsFinishedEvenWhenUnconfirmed(t *testing.T) {
	h := toDraining(t)
	h.set("pdx", false, "I:1-101", lagging(iadHost, 0))
	h.decide(time.Second) // Promoting recorded, MakeWritable pdx sent
	h.obs["pdx"] = unreachable()
	d := h.decide(PlannedConfirmBound)
	pf := h.st.PlannedFailover
	if pf.Result == nil || pf.Result.Outcome != PlannedOutcomePromotedUnconfirmed || h.st.AutomaticFailoverHold == nil {
		t.Fatalf("claim %+v", pf)
	}
	if h.st.Transition == nil || h.st.Transition.Step != v1alpha1.StepPromoting {
		t.Fatalf("a promotion is never abandoned: transition %+v", h.st.Transition)
	}
	if slices.Contains(actions(d), "MakeWritable iad") {
		t.Fatalf("the source was unfenced after a promotion was sent")
	}
	// The target comes back writable: the promotion is published, the
	// finished run stays as it ended.
	h.set("pdx", true, "I:1-101", nil)
	h.decide(time.Second)
	if h.st.ActiveSite != "pdx" || h.st.Transition != nil || h.st.PlannedFailover.Result.Outcome != PlannedOutcomePromotedUnconfirmed {
		t.Fatalf("active %s transition %+v claim %+v", h.st.ActiveSite, h.st.Transition, h.st.PlannedFailover.Result)
	}
}

func TestPlannedCatchUpSupersededByAutomaticFailover(t *testing.T) {
	h := newHandoff(t)
	down := unreachable()
	down.Last = h.obs["iad"].Last // the operator's last good poll of it
	h.obs["iad"] = down
	in := newInput(withEvidence(h.obs), h.st)
	in.Now = t0.Add(time.Second)
	// pdx lacks the last 10 transactions seen on iad: accepted here.
	in.Failover = FailoverSettings{Enabled: true, Cooldown: time.Minute, MaxMissing: 10}
	d := Decide(in)
	if d.Status.Transition == nil || d.Status.Transition.Kind != v1alpha1.TransitionAutomatic {
		t.Fatalf("transition %+v %+v", d.Status.Transition, cond(d, v1alpha1.ConditionDegraded))
	}
	pf := d.Status.PlannedFailover
	if pf.Phase != v1alpha1.PlannedFailoverFailed || pf.Result.Reason != PlannedReasonSuperseded || d.Status.AutomaticFailoverHold != nil {
		t.Fatalf("claim %+v hold %+v", pf.Result, d.Status.AutomaticFailoverHold)
	}
}

func TestPlannedTargetDivergedOrLaggingWaitsInAdmission(t *testing.T) {
	obs := map[string]SiteInput{
		"iad": site("iad", true, "I:1-100", nil),
		"pdx": site("pdx", false, "I:1-100,P:1", lagging(iadHost, 0)),
		"dr":  site("dr", false, "I:1-100", replicating(iadHost)), "reader": site("reader", false, "I:1-100", replicating(iadHost)),
	}
	in := newInput(obs, active(2, "iad"))
	s := PlannedTargetStateOf(in, "pdx")
	if !strings.Contains(s.Diverged, "1 transactions") || s.Lagging != "" {
		t.Fatalf("%+v", s)
	}
	v := AdmitPlanned(PlannedAdmissionInput{Now: t0, Target: "pdx", Active: "iad", Sites: fourSites, TargetTrusted: s.Trusted, TargetReplicating: s.Replicating,
		TargetDiverged: s.Diverged, Settings: PlannedSettings{AdmissionTimeout: time.Minute}})
	if v.Phase != v1alpha1.PlannedFailoverAdmitting || v.WaitReason != PlannedWaitReplicationUnhealthy {
		t.Fatalf("%+v", v)
	}
	in.Observed["pdx"] = site("pdx", false, "I:1-50", lagging(iadHost, 400))
	s = PlannedTargetStateOf(in, "pdx")
	v = AdmitPlanned(PlannedAdmissionInput{Now: t0, Target: "pdx", Active: "iad", Sites: fourSites, TargetTrusted: s.Trusted, TargetReplicating: s.Replicating,
		TargetLagging: s.Lagging, Settings: PlannedSettings{AdmissionTimeout: time.Minute}})
	if v.Phase != v1alpha1.PlannedFailoverAdmitting || v.WaitReason != PlannedWaitTargetLagging || !strings.Contains(v.Message, "400s behind") {
		t.Fatalf("%+v", v)
	}
}
