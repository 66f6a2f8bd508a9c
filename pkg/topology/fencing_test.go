package topology

// Issue 19, holes 2 and 3: a fresh answer that a site other than the active
// one takes writes is fenced at once, whatever its trust; nothing is made
// writable while another site answers writable; a returning old primary is
// repointed only on an observation that shows it fenced.

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// recovering is a site that was Unreachable and answered the latest poll,
// not yet recoveryThreshold times: fresh, not trusted.
func recovering(si SiteInput) SiteInput {
	si.Reach = observe.Unreachable
	return si
}

func has(d Decision, kind ActionKind, site string) bool {
	for _, a := range d.Actions {
		if a.Kind == kind && a.Site == site {
			return true
		}
	}
	return false
}

// Hole 2 (a): at CatchingUp, after the deadline, the old primary answers
// writable while still Unreachable. It is fenced, and the candidate is not
// made writable on this decision.
func TestUntrustedWritableOldPrimaryIsFencedBeforePromotion(t *testing.T) {
	obs := steadyObs()
	obs["iad"] = recovering(site("iad", true, "I:1-10", nil))
	obs["pdx"] = site("pdx", false, "I:1-10", &Replica{SourceHost: iadHost, SourcePort: 3306, IORunning: "No", SQLRunning: true})
	st := inFailover(v1alpha1.StepCatchingUp)
	in := failoverInput(obs, st)
	in.Now = st.Transition.SourceFenceDeadline.Add(time.Second)
	d := Decide(in)
	if !has(d, Fence, "iad") {
		t.Errorf("the old primary answers writable and is not fenced: %v", actions(d))
	}
	if has(d, MakeWritable, "pdx") {
		t.Errorf("the candidate is made writable while the old primary answers writable: %v", actions(d))
	}
	if tr := d.Status.Transition; tr == nil || promoted(tr.Step) {
		t.Errorf("Promoting recorded while the old primary answers writable: %+v", tr)
	}
}

// Hole 2 (b): after publication, the old primary returns writable. It is
// fenced on its first answer, not recoveryThreshold polls later.
func TestReturningWritableOldPrimaryIsFencedOnItsFirstAnswer(t *testing.T) {
	obs := steadyObs()
	obs["pdx"] = site("pdx", true, "I:1-10", nil)
	obs["iad"] = recovering(site("iad", true, "I:1-10", nil))
	obs["dr"] = site("dr", false, "I:1-10", replicating(pdxHost))
	obs["reader"] = site("reader", false, "I:1-10", replicating(pdxHost))
	st := active(4, "pdx")
	st.LastFailover = &v1alpha1.LastFailover{Time: metav1.NewTime(t0.Add(-time.Minute)), Target: "pdx", Source: "iad"}
	d := Decide(failoverInput(obs, st))
	if !has(d, Fence, "iad") {
		t.Fatalf("the returning old primary answers writable and is not fenced: %v", actions(d))
	}
	if has(d, Repoint, "iad") {
		t.Fatalf("repointed on its first, untrusted answer: %v", actions(d))
	}
}

// Hole 2: any site, not only an old primary, that answers writable while
// not trusted is fenced in steady state, and the read-only active site is
// not made writable again in the same decision.
func TestUntrustedWritableSiteIsFencedAndBlocksReassertion(t *testing.T) {
	obs := steadyObs()
	obs["iad"] = site("iad", false, "I:1-10", nil)
	obs["dr"] = recovering(site("dr", true, "I:1-10", nil))
	d := Decide(newInput(obs, active(2, "iad")))
	if !has(d, Fence, "dr") {
		t.Errorf("dr answers writable and is not fenced: %v", actions(d))
	}
	if has(d, MakeWritable, "iad") {
		t.Errorf("the active site is made writable while dr answers writable: %v", actions(d))
	}
}

// Hole 2 in a bootstrap: the target is not made writable while another site
// answers writable, trusted or not.
func TestBootstrapWaitsForAnUntrustedWriter(t *testing.T) {
	obs := empty4()
	obs["pdx"] = recovering(site("pdx", true, "", nil))
	d := Decide(newInput(obs, bootstrapping("iad", 1)))
	if !has(d, Fence, "pdx") {
		t.Errorf("pdx answers writable and is not fenced: %v", actions(d))
	}
	if has(d, MakeWritable, "iad") {
		t.Errorf("bootstrap target made writable while pdx answers writable: %v", actions(d))
	}
}

// Hole 3: a returning writable old primary holding nothing the active site
// lacks is fenced in one decision and repointed only in a later one, on an
// observation that shows it fenced; writes it committed between the first
// poll and the fence are then recorded, never rejoined.
func TestReturningOldPrimaryIsFencedThenRepointedOnALaterObservation(t *testing.T) {
	obs := steadyObs()
	obs["pdx"] = site("pdx", true, "I:1-10", nil)
	obs["iad"] = site("iad", true, "I:1-10", nil)
	obs["dr"] = site("dr", false, "I:1-10", replicating(pdxHost))
	obs["reader"] = site("reader", false, "I:1-10", replicating(pdxHost))
	st := active(4, "pdx")
	st.LastFailover = &v1alpha1.LastFailover{Time: metav1.NewTime(t0.Add(-time.Minute)), Target: "pdx", Source: "iad"}
	first := Decide(failoverInput(obs, st))
	if !has(first, Fence, "iad") {
		t.Fatalf("not fenced: %v", actions(first))
	}
	for _, k := range []ActionKind{Repoint, StartReplica, Clone} {
		if has(first, k, "iad") {
			t.Fatalf("%s in the decision that fences it, on the poll before the fence: %v", k, actions(first))
		}
	}
	// Two client writes committed between that poll and the fence.
	obs["iad"] = site("iad", false, "I:1-12", nil)
	second := Decide(failoverInput(obs, first.Status))
	if has(second, Repoint, "iad") {
		t.Fatalf("repointed while holding writes pdx lacks: %v", actions(second))
	}
	if s := siteStatus(second, "iad"); s.DivergentGTID != expand("I:11-12") || s.RecoveryState != v1alpha1.RecoveryBlocked {
		t.Fatalf("iad %+v", s)
	}
	// Without such writes the fenced observation repoints it.
	obs["iad"] = site("iad", false, "I:1-10", nil)
	clean := Decide(failoverInput(obs, first.Status))
	if got := strings.Join(actions(clean), ","); !strings.Contains(got, "Repoint iad") {
		t.Fatalf("fenced, nothing extra, not repointed: %s", got)
	}
}

// An isolated primary is fenced only by its own sidecar. When that sidecar
// did not answer the last time the operator reached the site (or this
// operator process never reached it), nothing is known to fence it, so the
// bound alone does not make a promotion safe: no failover starts, and the
// refusal says what a human can do; the failover-override is that human's
// decision.
func TestFailoverRefusedWhenTheOldPrimarysSidecarWasNotSeenRunning(t *testing.T) {
	obs := iadDown()
	iad := obs["iad"]
	iad.SidecarSeen = false
	obs["iad"] = iad
	d := Decide(failoverInput(obs, active(3, "iad")))
	if d.Status.Transition != nil {
		t.Fatalf("failover started: %+v", d.Status.Transition)
	}
	if g := cond(d, v1alpha1.ConditionDegraded); g.Reason != v1alpha1.ReasonFailoverRefused || !strings.Contains(g.Message, "sidecar") {
		t.Fatalf("Degraded %+v", g)
	}
	in := failoverInput(obs, active(3, "iad"))
	in.Failover.Override = "pdx"
	if d := Decide(in); d.Status.Transition == nil || d.Status.Transition.TargetSite != "pdx" {
		t.Fatalf("override: transition %+v", d.Status.Transition)
	}
}
