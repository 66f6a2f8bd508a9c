package topology

import (
	"strings"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
)

// A candidate promoted short of what it held when chosen (a relay log lost
// in a restart, then promoted at the catch-up bound by the failover-override)
// lacks those transactions for good: possiblyLostGtid must name them, with
// what the operator saw on the old primary (docs/safety.md, "What Bloodraven
// does not promise"). Found by scripts/mutation-check
// (20-loss-report-understated): no test promoted short of the chosen set,
// so leaving it out of the report failed nothing.
func TestPossiblyLostNamesWhatTheCandidateHeldWhenChosen(t *testing.T) {
	obs := iadDown() // iad last seen at I:1-10
	r := replicating(iadHost)
	r.Retrieved = set(expand("I:1-12")) // received after the operator's last poll of iad
	obs["pdx"] = site("pdx", false, "I:1-10", r)
	pdx := obs["pdx"]
	pdx.Evidence = &LagEvidence{ObservedAt: t0, LastHeartbeat: t0, LastQueued: expand("I:12"), LastQueuedAt: t0, LastQueuedCommit: t0,
		LastApplied: expand("I:10"), LastAppliedCommit: t0.Add(-time.Second)}
	obs["pdx"] = pdx
	start := Decide(failoverInput(withEvidence(obs), active(3, "iad")))
	if start.Status.Transition == nil || start.Status.Transition.CandidateGTIDSet != set(expand("I:1-12")).OneLine() {
		t.Fatalf("not started with pdx's set: %+v (Degraded %+v)", start.Status.Transition, cond(start, v1alpha1.ConditionDegraded))
	}
	// pdx restarts and its relay log is gone: it holds I:1-10. At the
	// bound, a person accepts the loss with the override.
	lost := replicating(iadHost)
	lost.IORunning, lost.Retrieved = "No", set("")
	obs["pdx"] = site("pdx", false, "I:1-10", lost)
	in := failoverInput(obs, catchingUpAt(start.Status.Transition))
	in.Now = t0.Add(time.Hour)
	in.Failover.Override = "pdx"
	d := Decide(in)
	lf := d.Status.LastFailover
	if tr := d.Status.Transition; tr == nil || tr.Step != v1alpha1.StepPromoting || lf == nil {
		t.Fatalf("not promoted by the override at the bound: transition %+v, lastFailover %+v", tr, lf)
	}
	got, err := gtid.Parse(lf.PossiblyLostGTID)
	if err != nil {
		t.Fatal(err)
	}
	if want := set(expand("I:11-12")); !want.IsSubsetOf(got) {
		t.Errorf("possiblyLostGtid %q leaves out %s, which pdx held when chosen and no longer holds", lf.PossiblyLostGTID, want.Subtract(got).OneLine())
	}
	if !strings.Contains(strings.Join(actions(d), ","), "MakeWritable pdx") {
		t.Errorf("actions %v: the override's promotion was not made", actions(d))
	}
}
