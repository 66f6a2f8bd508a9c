package topology

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Every combination of annotation value and stored claim: a new claim, a
// skip for the run already going to that target (PlannedFailoverSkipped,
// Normal), a rejection otherwise (PlannedFailoverRejected, Warning).
func TestJudgePlannedRequest(t *testing.T) {
	claim := func(target string, phase v1alpha1.PlannedFailoverPhase) *v1alpha1.PlannedFailoverStatus {
		return &v1alpha1.PlannedFailoverStatus{RunID: "run-1", SourceSite: "iad", TargetSite: target, Phase: phase}
	}
	live := []v1alpha1.PlannedFailoverPhase{v1alpha1.PlannedFailoverAdmitting, v1alpha1.PlannedFailoverDeferred,
		v1alpha1.PlannedFailoverCatchingUp, v1alpha1.PlannedFailoverFencing, v1alpha1.PlannedFailoverRollingBack}
	ended := []v1alpha1.PlannedFailoverPhase{v1alpha1.PlannedFailoverSucceeded, v1alpha1.PlannedFailoverFailed}
	type want struct {
		action  PlannedRequestAction
		reason  string
		warning bool
		says    string
	}
	check := func(name string, cur *v1alpha1.PlannedFailoverStatus, value string, w want) {
		t.Helper()
		v := JudgePlannedRequest(cur, value)
		if v.Action != w.action || v.Reason != w.reason || v.Warning != w.warning || !strings.Contains(v.Message, w.says) {
			t.Errorf("%s: verdict %+v, want %+v", name, v, w)
		}
	}
	check("no claim", nil, "pdx", want{action: PlannedRequestClaim})
	check("no claim, bad value", nil, "pdx:maxLagWait=forever", want{PlannedRequestReject, v1alpha1.EventPlannedFailoverRejected, true, `maxLagWait="forever"`})
	for _, ph := range ended {
		check("ended "+string(ph)+", same target", claim("pdx", ph), "pdx", want{action: PlannedRequestClaim})
		check("ended "+string(ph)+", other target", claim("dr", ph), "pdx", want{action: PlannedRequestClaim})
	}
	for _, ph := range live {
		check("live "+string(ph)+", same target", claim("pdx", ph), "pdx:maxLagWait=5m",
			want{PlannedRequestSkip, v1alpha1.EventPlannedFailoverSkipped, false, "run run-1 to site pdx is already " + string(ph)})
		check("live "+string(ph)+", other target", claim("dr", ph), "pdx",
			want{PlannedRequestReject, v1alpha1.EventPlannedFailoverRejected, true, "run run-1 to site dr is " + string(ph)})
		check("live "+string(ph)+", bad value", claim("pdx", ph), ":",
			want{PlannedRequestReject, v1alpha1.EventPlannedFailoverRejected, true, "refused and removed"})
	}
	if v := JudgePlannedRequest(nil, "pdx:maxLagWait=5m"); v.Request.Site != "pdx" || v.Request.MaxLagWait != 5*time.Minute {
		t.Errorf("request %+v", v.Request)
	}
}

// The clear-hold annotation with no hold in place acknowledges nothing: a
// Warning PlannedFailoverHoldAcknowledgmentIgnored, and nothing cleared.
// With a hold in place it clears it and warns of nothing.
func TestClearHoldWithoutAHoldIsIgnored(t *testing.T) {
	h := newHandoff(t)
	h.st.PlannedFailover = nil
	h.in.ClearHold = true
	d := h.decide(time.Second)
	if !hasEvent(d, v1alpha1.EventPlannedFailoverHoldAcknowledgmentIgnored, true) || hasEvent(d, v1alpha1.EventAutomaticFailoverHoldCleared, false) {
		t.Fatalf("no hold: events %+v", d.Events)
	}
	h.st.AutomaticFailoverHold = &v1alpha1.AutomaticFailoverHold{Reason: HoldReasonSourceLeftFenced, Since: metav1.NewTime(t0), Message: "m"}
	d = h.decide(time.Second)
	if h.st.AutomaticFailoverHold != nil || !hasEvent(d, v1alpha1.EventAutomaticFailoverHoldCleared, false) ||
		hasEvent(d, v1alpha1.EventPlannedFailoverHoldAcknowledgmentIgnored, true) {
		t.Fatalf("with a hold: hold %+v events %+v", h.st.AutomaticFailoverHold, d.Events)
	}
	h.in.ClearHold = false
	if d = h.decide(time.Second); hasEvent(d, v1alpha1.EventPlannedFailoverHoldAcknowledgmentIgnored, true) {
		t.Fatalf("no annotation: events %+v", d.Events)
	}
}
