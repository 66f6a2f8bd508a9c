package topology

import (
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Clock skew between operator instances in the decision-level harness
// (issue 21, hole 4). Every operator restart (resetMemory: a crash, a
// leader change) is a new process whose clock is up to hMaxSkew ahead of
// the world's true time, so any two instances' clocks agree within
// hMaxSkew, the skew the deploy API assumes (leasestore.DefaultMaxClockSkew).
// The operator's decisions read that clock (Input.Now); the world, its
// sidecars and every check keep true time (w.now). A self-fence deadline
// written by one instance and compared as is by a later one that runs ahead
// promotes before the old primary's sidecar has fenced it: two writers, by
// the simulated servers and the clients pinned to every site.
const hMaxSkew = 5 * time.Second

// operatorClock is one operator process's clock and what it remembers of
// the transition it first saw (Input.TransitionSeen).
type operatorClock struct {
	skew     time.Duration
	seenID   string
	seenAt   time.Time
	restarts int
}

// newOperatorClock: the first instance agrees with true time; each later
// one runs 0 to hMaxSkew ahead, half of them the whole hMaxSkew (the
// bound is where a wait that is short by the skew shows).
func (w *world) newOperatorClock() {
	c := operatorClock{restarts: w.clock.restarts + 1}
	if c.restarts > 1 {
		c.skew = hMaxSkew
		if w.r.IntN(2) == 0 {
			c.skew = time.Duration(w.r.IntN(int(hMaxSkew/time.Millisecond)+1)) * time.Millisecond
		}
	}
	w.clock = c
}

// countSkewedDeadline: a decision of an instance that runs ahead, on a
// self-fence deadline another instance wrote.
func (w *world) countSkewedDeadline(in Input) {
	if t := in.Status.Transition; t != nil && t.SourceFenceDeadline != nil && w.clock.skew >= time.Second &&
		in.TransitionSeen.After(t.SourceFenceDeadline.Add(-hSelfFence)) {
		w.stats.outcomes["self-fence deadline read by an instance 1-5 s ahead of its writer"]++
	}
}

// operatorNow is the current instance's reading of true time now.
func (w *world) operatorNow() time.Time { return w.now.Add(w.clock.skew) }

// onOperatorClock places a true time on the current instance's clock (the
// replica times the operator reads, moved by toEvidence).
func (w *world) onOperatorClock(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(w.clock.skew)
}

// transitionSeen is when the current instance first saw t, on its clock.
func (w *world) transitionSeen(t *v1alpha1.Transition, now time.Time) time.Time {
	if t == nil {
		w.clock.seenID, w.clock.seenAt = "", time.Time{}
		return time.Time{}
	}
	if w.clock.seenID != t.ID {
		w.clock.seenID, w.clock.seenAt = t.ID, now
	}
	return w.clock.seenAt
}
