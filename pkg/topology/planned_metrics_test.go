package topology

import (
	"testing"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// The labels docs/planned-failover.md lists for
// bloodraven_planned_failovers_total{result}.
func TestPlannedOutcomeLabel(t *testing.T) {
	for outcome, want := range map[v1alpha1.PlannedFailoverOutcome]string{
		"Succeeded":              "succeeded",
		"NotStarted":             "not-started",
		"RolledBack":             "rolled-back",
		"SourceLeftFenced":       "source-left-fenced",
		"PromotedUnconfirmed":    "promoted-unconfirmed",
		"ManualRecoveryRequired": "manual-recovery-required",
	} {
		if got := PlannedOutcomeLabel(outcome); got != want {
			t.Errorf("PlannedOutcomeLabel(%s) = %q, want %q", outcome, got, want)
		}
	}
}
