package topology

import (
	"strings"
	"unicode"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// PlannedOutcomeLabel is the result label of
// bloodraven_planned_failovers_total: the outcome in kebab-case
// (NotStarted → not-started), as docs/planned-failover.md (Outcomes) lists.
func PlannedOutcomeLabel(o v1alpha1.PlannedFailoverOutcome) string {
	var b strings.Builder
	for i, r := range string(o) {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// PlannedOutcomes lists every outcome, in the order the planned-failover
// counter's series are created (all at 0 from the start, so an alert on
// increase() sees the first run that ends in one).
var PlannedOutcomes = []v1alpha1.PlannedFailoverOutcome{PlannedOutcomeSucceeded, PlannedOutcomeNotStarted, PlannedOutcomeRolledBack,
	PlannedOutcomeSourceLeftFenced, PlannedOutcomePromotedUnconfirmed, PlannedOutcomeManualRecoveryRequired}

// PlannedDeferReasons lists every defer reason; the deferral counter has a
// series per group for each from the group's first observation.
var PlannedDeferReasons = []v1alpha1.PlannedFailoverDeferReason{PlannedDeferDeploymentHold, PlannedDeferCooldown}
