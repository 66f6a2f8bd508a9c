package topology

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Issue 21, hole 2: failoverCooldown is the minimum time between two
// automatic failovers; a planned or ordered-update handoff a minute ago
// must not hold off the automatic failover of its new primary.
func TestCooldownCountsOnlyAutomaticFailovers(t *testing.T) {
	for _, tc := range []struct {
		kind v1alpha1.TransitionKind
		held bool
	}{
		{v1alpha1.TransitionPlanned, false},
		{v1alpha1.TransitionOrderedUpdate, false},
		{v1alpha1.TransitionAutomatic, true},
		{"", true}, // restored from the annotations: no kind, counts
		{v1alpha1.TransitionSplitBrainResolution, true},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			st := active(3, "iad")
			st.LastFailover = &v1alpha1.LastFailover{Time: metav1.NewTime(t0.Add(-time.Minute)), Target: "iad", Source: "pdx", Kind: tc.kind}
			d := Decide(failoverInput(iadDown(), st))
			started := d.Status.Transition != nil && d.Status.Transition.Kind == v1alpha1.TransitionAutomatic
			if started == tc.held {
				t.Fatalf("last failover %q a minute ago (cooldown 5m): failover started %v, want %v; Degraded %+v",
					tc.kind, started, !tc.held, cond(d, v1alpha1.ConditionDegraded))
			}
			if tc.held && !strings.Contains(cond(d, v1alpha1.ConditionDegraded).Message, "failoverCooldown") {
				t.Fatalf("held without saying why: %+v", cond(d, v1alpha1.ConditionDegraded))
			}
		})
	}
}
