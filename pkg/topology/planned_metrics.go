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
