package topology

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Issue 21, hole 4: the self-fence deadline is a wall-clock time written by
// one operator process and compared by whichever leads. A new leader whose
// clock runs 4 s ahead (inside the 5 s the deploy API assumes,
// leasestore.DefaultMaxClockSkew) must not promote before the deadline has
// passed in true time.
func TestSelfFenceDeadlineIsRobustToASkewedNewLeader(t *testing.T) {
	const bound, skew, ahead = 20 * time.Second, 5 * time.Second, 4 * time.Second
	written := t0                   // true time the first leader served the intent
	deadline := t0.Add(bound)       // what it stored
	seenTrue := t0.Add(time.Second) // true time the new leader first saw it
	decide := func(trueNow time.Time, seen time.Time) Decision {
		st := inFailover(v1alpha1.StepAwaitingSelfFence)
		dl := v1alpha1.NewPreciseTime(deadline)
		st.Transition.SourceFenceDeadline = &dl
		in := failoverInput(iadDown(), st)
		in.Failover.SelfFenceBound, in.Failover.MaxClockSkew = bound, skew
		in.Now, in.TransitionSeen = trueNow.Add(ahead), seen
		return Decide(in)
	}
	promotes := func(d Decision) bool {
		return d.Status.Transition != nil && d.Status.Transition.Step == v1alpha1.StepCatchingUp
	}
	// One second before the true deadline the skewed leader reads a clock
	// 3 s past it: it waits.
	if d := decide(deadline.Add(-time.Second), seenTrue.Add(ahead)); promotes(d) {
		t.Fatalf("a leader %s ahead went on %s before the deadline in true time: %v", ahead, time.Second, actions(d))
	}
	// It does not know when it first saw the transition (restarted in
	// between, say): the assumed skew alone decides.
	if d := decide(deadline.Add(skew-ahead-time.Millisecond), time.Time{}); promotes(d) {
		t.Fatal("promoted before deadline + skew on its own clock without knowing when it saw the transition")
	}
	if d := decide(deadline.Add(skew-ahead), time.Time{}); !promotes(d) {
		t.Fatal("still waiting at deadline + skew on its own clock")
	}
	// Its own full bound since it first saw the transition has run: the
	// old primary's sidecar has fenced whatever the clocks say.
	if d := decide(seenTrue.Add(bound), seenTrue.Add(ahead)); !promotes(d) {
		t.Fatalf("still waiting once the whole bound ran on its own clock: %+v", d.Status.Transition)
	}
	// The process that wrote the deadline waits exactly until it.
	own := func(now time.Time) bool {
		return !now.Before(SelfFenceWaitEnd(deadline, written, bound, skew))
	}
	if own(deadline.Add(-time.Millisecond)) || !own(deadline) {
		t.Fatal("the writer's own wait changed")
	}
}

// The deadline is what status stores, not what Decide computed: read back
// from its JSON form (what the API server keeps) it is never earlier than
// the pass's time plus the bound, and not rounded up to a whole second.
func TestStoredSelfFenceDeadline(t *testing.T) {
	st := inFailover(v1alpha1.StepRecorded)
	st.Transition.SourceFenceDeadline = nil
	in := failoverInput(iadDown(), st)
	for _, off := range []time.Duration{0, 500 * time.Nanosecond, 300*time.Millisecond + 1500*time.Nanosecond, 999999999 * time.Nanosecond} {
		in.Now = t0.Add(7*time.Second + off)
		b, err := json.Marshal(Decide(in).Status.Transition)
		if err != nil {
			t.Fatal(err)
		}
		var stored v1alpha1.Transition
		if err := json.Unmarshal(b, &stored); err != nil {
			t.Fatal(err)
		}
		want := in.Now.Add(in.Failover.SelfFenceBound)
		dl := stored.SourceFenceDeadline
		if dl == nil || dl.Time.Before(want) || dl.Sub(want) >= time.Microsecond {
			t.Fatalf("now %s: stored deadline %v (%s), want %s rounded up to the microsecond", in.Now, dl, b, want)
		}
	}
}

// Version skew: an operator built before the deadline was kept to the
// microsecond holds it as a metav1.Time. It reads the stored value whole
// (RFC 3339 allows the fraction), but any status write it makes stores it
// truncated to the second, up to 1 s early. This build decodes such a
// transition (metav1.MicroTime could not: its layout requires the
// fraction), and a leader reading it still waits until the true deadline:
// the skew margin exceeds the truncation, and its own full bound runs from
// a moment after the pass that wrote the deadline (only leaders count
// TransitionSeen).
func TestSelfFenceDeadlineRewrittenByAnOlderOperator(t *testing.T) {
	const bound, skew = 20 * time.Second, 5 * time.Second
	type olderTransition struct {
		SourceFenceDeadline *metav1.Time `json:"sourceFenceDeadline,omitempty"`
	}
	for _, off := range []time.Duration{0, time.Microsecond, 400 * time.Millisecond, 999999 * time.Microsecond} {
		pass := t0.Add(off)
		trueDL := v1alpha1.NewPreciseTime(ceilMicrosecond(pass.Add(bound)))
		b, err := json.Marshal(v1alpha1.Transition{SourceFenceDeadline: &trueDL})
		if err != nil {
			t.Fatal(err)
		}
		var older olderTransition
		if err := json.Unmarshal(b, &older); err != nil || older.SourceFenceDeadline == nil || !older.SourceFenceDeadline.Equal(&metav1.Time{Time: trueDL.Time}) {
			t.Fatalf("an older operator reads %s as %v (%v)", b, older.SourceFenceDeadline, err)
		}
		if b, err = json.Marshal(older); err != nil {
			t.Fatal(err)
		}
		var rewritten v1alpha1.Transition
		if err := json.Unmarshal(b, &rewritten); err != nil || rewritten.SourceFenceDeadline == nil {
			t.Fatalf("this operator cannot read %s, written by an older one: %v", b, err)
		}
		for _, seen := range []time.Time{{}, pass, pass.Add(30 * time.Second)} {
			if end := SelfFenceWaitEnd(rewritten.SourceFenceDeadline.Time, seen, bound, skew); end.Before(trueDL.Time) {
				t.Fatalf("deadline %s rewritten as %s, seen %s: the wait ends at %s, before the true deadline",
					trueDL.Time, rewritten.SourceFenceDeadline.Time, seen, end)
			}
		}
	}
}
