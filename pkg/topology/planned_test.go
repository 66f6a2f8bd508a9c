package topology

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

func TestParsePlannedFailoverValue(t *testing.T) {
	cases := []struct {
		value    string
		wantSite string
		wantWait time.Duration
		wantErr  string // substring; "" means valid
	}{
		{value: "pdx", wantSite: "pdx"},
		{value: " pdx ", wantSite: "pdx"},
		{value: "pdx:maxLagWait=90s", wantSite: "pdx", wantWait: 90 * time.Second},
		{value: "pdx:maxLagWait=1s", wantSite: "pdx", wantWait: time.Second},
		{value: "pdx:maxLagWait=1h", wantSite: "pdx", wantWait: time.Hour},
		{value: "pdx:maxLagWait=1m30s", wantSite: "pdx", wantWait: 90 * time.Second},
		{value: "", wantErr: "must start with the site name"},
		{value: ":maxLagWait=5s", wantErr: "must start with the site name"},
		{value: "pdx:maxLagWait=999ms", wantErr: "maxLagWait=999ms is outside 1s to 1h0m0s"},
		{value: "pdx:maxLagWait=61m", wantErr: "maxLagWait=61m is outside"},
		{value: "pdx:maxLagWait=0s", wantErr: "is outside"},
		{value: "pdx:maxLagWait=-5s", wantErr: "is outside"},
		{value: "pdx:maxLagWait=soon", wantErr: `maxLagWait="soon" is not a duration`},
		{value: "pdx:maxLagWait=", wantErr: `part "maxLagWait=" is not key=value`},
		{value: "pdx:maxLagWait", wantErr: `part "maxLagWait" is not key=value`},
		{value: "pdx:maxLagWait=5s:maxLagWait=6s", wantErr: "part maxLagWait appears twice"},
		{value: "pdx:maxlagwait=5s", wantErr: `unknown part "maxlagwait"`},
		{value: "pdx:force=true", wantErr: `unknown part "force"`},
	}
	for _, c := range cases {
		t.Run(c.value, func(t *testing.T) {
			r, err := ParsePlannedFailoverValue(c.value)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if r.Site != c.wantSite || r.MaxLagWait != c.wantWait {
				t.Fatalf("got %+v, want site %q maxLagWait %s", r, c.wantSite, c.wantWait)
			}
		})
	}
}

var plannedNow = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// admissible is a request every check passes: iad active, pdx a healthy
// reachable candidate, no cooldown, no hold, nothing else in flight.
func admissible() PlannedAdmissionInput {
	return PlannedAdmissionInput{
		Now:    plannedNow,
		Target: "pdx",
		Active: "iad",
		Sites: []SiteSpec{
			{Name: "iad", Role: v1alpha1.SiteRolePrimaryCandidate},
			{Name: "pdx", Role: v1alpha1.SiteRolePrimaryCandidate},
			{Name: "dr", Role: v1alpha1.SiteRoleDisasterRecovery},
			{Name: "ro", Role: v1alpha1.SiteRoleReadOnly},
		},
		TargetTrusted:     true,
		TargetReplicating: true,
		LastFailover:      plannedNow.Add(-2 * time.Hour),
		AdmittingSince:    plannedNow.Add(-10 * time.Second),
		Settings: PlannedSettings{
			OnCooldown:       v1alpha1.PlannedFailoverRejectOnCooldown,
			AdmissionTimeout: 5 * time.Minute,
			Cooldown:         10 * time.Minute,
		},
	}
}

func TestAdmitPlanned(t *testing.T) {
	holdExpiry := plannedNow.Add(3 * time.Minute)
	cases := []struct {
		name   string
		mutate func(*PlannedAdmissionInput)
		want   PlannedAdmission // Message is checked by wantIn only
		wantIn []string         // substrings of Message
	}{
		{name: "admitted", mutate: func(*PlannedAdmissionInput) {},
			want: PlannedAdmission{Phase: "CatchingUp"}, wantIn: []string{"site pdx", "site iad"}},
		{name: "never failed over before", mutate: func(in *PlannedAdmissionInput) { in.LastFailover = time.Time{} },
			want: PlannedAdmission{Phase: "CatchingUp"}},
		{name: "cooldown just ended", mutate: func(in *PlannedAdmissionInput) { in.LastFailover = plannedNow.Add(-10 * time.Minute) },
			want: PlannedAdmission{Phase: "CatchingUp"}},

		// Refusals: Failed, outcome not-started, never retried.
		{name: "unknown target", mutate: func(in *PlannedAdmissionInput) { in.Target = "fra" },
			want: PlannedAdmission{Phase: "Failed", ResultReason: "InvalidTarget"}, wantIn: []string{`"fra"`, "spec.sites"}},
		{name: "disaster recovery target", mutate: func(in *PlannedAdmissionInput) { in.Target = "dr" },
			want: PlannedAdmission{Phase: "Failed", ResultReason: "TargetNotCandidate"}, wantIn: []string{"dr", "DisasterRecovery"}},
		{name: "read-only target", mutate: func(in *PlannedAdmissionInput) { in.Target = "ro" },
			want: PlannedAdmission{Phase: "Failed", ResultReason: "TargetNotCandidate"}, wantIn: []string{"ReadOnly"}},
		{name: "target already active", mutate: func(in *PlannedAdmissionInput) { in.Target = "iad" },
			want: PlannedAdmission{Phase: "Failed", ResultReason: "AlreadyActive"}, wantIn: []string{"iad", "already"}},
		{name: "refusal wins over a hold", mutate: func(in *PlannedAdmissionInput) {
			in.Target = "dr"
			in.Holds = PlannedHolds{Held: true, EarliestExpiry: holdExpiry, OperationID: "op-1", Instance: "shop", Count: 1}
		}, want: PlannedAdmission{Phase: "Failed", ResultReason: "TargetNotCandidate"}},
		{name: "cooldown with onCooldown Reject", mutate: func(in *PlannedAdmissionInput) { in.LastFailover = plannedNow.Add(-time.Minute) },
			want:   PlannedAdmission{Phase: "Failed", ResultReason: "CooldownActive"},
			wantIn: []string{"failoverCooldown 10m0s", "2026-11-30T09:09:00Z", "onCooldown is Reject"}},
		{name: "cooldown with onCooldown unset rejects", mutate: func(in *PlannedAdmissionInput) {
			in.LastFailover = plannedNow.Add(-time.Minute)
			in.Settings.OnCooldown = ""
		}, want: PlannedAdmission{Phase: "Failed", ResultReason: "CooldownActive"}},

		// Deferrals: Deferred with retryAfter, revalidated then.
		{name: "cooldown with onCooldown Defer", mutate: func(in *PlannedAdmissionInput) {
			in.LastFailover = plannedNow.Add(-time.Minute)
			in.Settings.OnCooldown = v1alpha1.PlannedFailoverDeferOnCooldown
		}, want: PlannedAdmission{Phase: "Deferred", DeferReason: "Cooldown", RetryAfter: plannedNow.Add(9 * time.Minute)}},
		{name: "deployment hold", mutate: func(in *PlannedAdmissionInput) {
			in.Holds = PlannedHolds{Held: true, EarliestExpiry: holdExpiry, OperationID: "op-7", Instance: "checkout", Count: 2}
		}, want: PlannedAdmission{Phase: "Deferred", DeferReason: "DeploymentHold", RetryAfter: holdExpiry,
			BlockingOperationID: "op-7", BlockingInstance: "checkout"},
			wantIn: []string{"op-7", "checkout", "2026-11-30T09:03:00Z", "2 hold(s)"}},
		{name: "cooldown defer wins over a hold", mutate: func(in *PlannedAdmissionInput) {
			in.LastFailover = plannedNow.Add(-time.Minute)
			in.Settings.OnCooldown = v1alpha1.PlannedFailoverDeferOnCooldown
			in.Holds = PlannedHolds{Held: true, EarliestExpiry: holdExpiry, OperationID: "op-7", Instance: "checkout", Count: 1}
		}, want: PlannedAdmission{Phase: "Deferred", DeferReason: "Cooldown", RetryAfter: plannedNow.Add(9 * time.Minute)}},

		// Waits: Admitting with a wait reason, until admissionTimeout.
		{name: "other operation", mutate: func(in *PlannedAdmissionInput) { in.OtherOperation = "transition t-3 (Automatic)" },
			want: PlannedAdmission{Phase: "Admitting", WaitReason: "OperationInProgress"}, wantIn: []string{"transition t-3"}},
		{name: "target unreachable", mutate: func(in *PlannedAdmissionInput) { in.TargetTrusted = false },
			want: PlannedAdmission{Phase: "Admitting", WaitReason: "TargetUnreachable"}, wantIn: []string{"pdx"}},
		{name: "replication unhealthy", mutate: func(in *PlannedAdmissionInput) { in.TargetReplicating = false },
			want: PlannedAdmission{Phase: "Admitting", WaitReason: "ReplicationUnhealthy"}, wantIn: []string{"pdx", "iad"}},
		{name: "wait wins over a hold", mutate: func(in *PlannedAdmissionInput) {
			in.TargetTrusted = false
			in.Holds = PlannedHolds{Held: true, EarliestExpiry: holdExpiry, OperationID: "op-7", Instance: "checkout", Count: 1}
		}, want: PlannedAdmission{Phase: "Admitting", WaitReason: "TargetUnreachable"}},
		{name: "wait just inside admission timeout", mutate: func(in *PlannedAdmissionInput) {
			in.TargetReplicating = false
			in.AdmittingSince = plannedNow.Add(-5*time.Minute + time.Nanosecond)
		}, want: PlannedAdmission{Phase: "Admitting", WaitReason: "ReplicationUnhealthy"}},
		{name: "admission timed out", mutate: func(in *PlannedAdmissionInput) {
			in.TargetReplicating = false
			in.AdmittingSince = plannedNow.Add(-5 * time.Minute)
		}, want: PlannedAdmission{Phase: "Failed", ResultReason: "AdmissionTimedOut"},
			wantIn: []string{"admissionTimeout 5m0s", "not replicating"}},
		{name: "long hold does not count against the admission timeout", mutate: func(in *PlannedAdmissionInput) {
			in.AdmittingSince = plannedNow.Add(-time.Hour)
			in.Holds = PlannedHolds{Held: true, EarliestExpiry: holdExpiry, OperationID: "op-7", Instance: "checkout", Count: 1}
		}, want: PlannedAdmission{Phase: "Deferred", DeferReason: "DeploymentHold", RetryAfter: holdExpiry,
			BlockingOperationID: "op-7", BlockingInstance: "checkout"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := admissible()
			c.mutate(&in)
			got := AdmitPlanned(in)
			msg := got.Message
			if msg == "" {
				t.Errorf("verdict has no message: %+v", got)
			}
			for _, s := range c.wantIn {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q lacks %q", msg, s)
				}
			}
			got.Message = ""
			if got != c.want {
				t.Fatalf("verdict\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// The wire values must match the CRD enums as the API types declare them
// (a typo would be refused by the API server only at runtime).
func TestPlannedVocabularyMatchesCRDEnums(t *testing.T) {
	src, err := os.ReadFile("../apis/shipstream/v1alpha1/failovergroup_status.go")
	if err != nil {
		t.Fatal(err)
	}
	enumOf := func(typeName string) string {
		t.Helper()
		m := regexp.MustCompile(`\+kubebuilder:validation:Enum=(\S+)\ntype ` + typeName + ` string`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("no Enum marker above type %s", typeName)
		}
		return string(m[1])
	}
	enums := map[string]string{
		"waitReason":  enumOf("PlannedFailoverWaitReason"),
		"deferReason": enumOf("PlannedFailoverDeferReason"),
		"outcome":     enumOf("PlannedFailoverOutcome"),
		"reason":      enumOf("PlannedFailoverResultReason"),
	}
	in := func(field, v string) {
		t.Helper()
		for _, e := range strings.Split(enums[field], ";") {
			if e == v {
				return
			}
		}
		t.Errorf("%s value %q is not in the CRD enum", field, v)
	}
	for _, v := range []v1alpha1.PlannedFailoverWaitReason{PlannedWaitReplicationUnhealthy, PlannedWaitTargetUnreachable, PlannedWaitOperationInProgress} {
		in("waitReason", string(v))
	}
	for _, v := range []v1alpha1.PlannedFailoverDeferReason{PlannedDeferDeploymentHold, PlannedDeferCooldown} {
		in("deferReason", string(v))
	}
	in("outcome", string(PlannedOutcomeNotStarted))
	for _, v := range []v1alpha1.PlannedFailoverResultReason{PlannedReasonInvalidTarget, PlannedReasonTargetNotCandidate,
		PlannedReasonAlreadyActive, PlannedReasonCooldownActive, PlannedReasonAdmissionTimedOut} {
		in("reason", string(v))
	}
}
