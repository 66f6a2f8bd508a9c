package topology

import (
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

func TestNewPlannedClaimMaxLagWait(t *testing.T) {
	cases := []struct {
		name       string
		annotation time.Duration
		spec       time.Duration
		want       time.Duration
	}{
		{"default when neither is set", 0, 0, time.Minute},
		{"spec when the annotation has none", 0, 2 * time.Minute, 2 * time.Minute},
		{"annotation wins over spec", 5 * time.Second, 2 * time.Minute, 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := NewPlannedClaim(PlannedRequest{Site: "pdx", MaxLagWait: c.annotation}, "run-1", "iad", c.spec, plannedNow)
			if cl.MaxLagWait == nil || cl.MaxLagWait.Duration != c.want {
				t.Fatalf("maxLagWait = %v, want %s", cl.MaxLagWait, c.want)
			}
			if cl.Phase != "Admitting" || cl.RunID != "run-1" || cl.TargetSite != "pdx" || cl.SourceSite != "iad" {
				t.Fatalf("claim = %+v", cl)
			}
			if !cl.RequestTime.Time.Equal(plannedNow) || !cl.PhaseTime.Time.Equal(plannedNow) {
				t.Fatalf("times = %v %v, want %v", cl.RequestTime, cl.PhaseTime, plannedNow)
			}
		})
	}
}

func TestApplyPlannedAdmission(t *testing.T) {
	claim := NewPlannedClaim(PlannedRequest{Site: "pdx"}, "run-1", "iad", 0, plannedNow)
	later := plannedNow.Add(time.Minute)

	// Still waiting: the phase time stays (the admission timeout counts from it).
	w := ApplyPlannedAdmission(claim, PlannedAdmission{Phase: "Admitting", WaitReason: "TargetUnreachable", Message: "m"}, later)
	if !w.PhaseTime.Time.Equal(plannedNow) || w.Admission.WaitReason != "TargetUnreachable" || w.Result != nil {
		t.Fatalf("waiting claim = %+v %+v", w, w.Admission)
	}

	// Deferred behind a hold: new phase time, retryAfter and blocker recorded.
	expiry := plannedNow.Add(5 * time.Minute)
	d := ApplyPlannedAdmission(w, PlannedAdmission{Phase: "Deferred", DeferReason: "DeploymentHold", RetryAfter: expiry,
		BlockingOperationID: "op-7", BlockingInstance: "checkout", Message: "held"}, later)
	a := d.Admission
	if d.Phase != "Deferred" || !d.PhaseTime.Time.Equal(later) || a.WaitReason != "" || a.DeferReason != "DeploymentHold" ||
		a.RetryAfter == nil || !a.RetryAfter.Time.Equal(expiry) || a.BlockingOperationID != "op-7" || a.BlockingInstance != "checkout" {
		t.Fatalf("deferred claim = %+v %+v", d, a)
	}
	if w.Admission.WaitReason != "TargetUnreachable" {
		t.Fatal("ApplyPlannedAdmission modified its input")
	}

	// Refused: ends not-started with the reason; the phase is terminal.
	f := ApplyPlannedAdmission(d, PlannedAdmission{Phase: "Failed", ResultReason: "CooldownActive", Message: "cooldown"}, later)
	if !f.Phase.IsTerminal() || f.Result == nil || f.Result.Outcome != "NotStarted" || f.Result.Reason != "CooldownActive" ||
		f.CompletionTime == nil || f.Admission != nil {
		t.Fatalf("failed claim = %+v", f)
	}

	// Admitted: moves on, nothing terminal recorded.
	ok := ApplyPlannedAdmission(d, PlannedAdmission{Phase: v1alpha1.PlannedFailoverCatchingUp, Message: "admitted"}, later)
	if ok.Phase != "CatchingUp" || ok.Phase.IsTerminal() || ok.Result != nil || ok.CompletionTime != nil || ok.Admission != nil {
		t.Fatalf("admitted claim = %+v", ok)
	}
}
