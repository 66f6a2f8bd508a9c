package topology

import (
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// The self-fence deadline, status.transition.sourceFenceDeadline, is a
// wall-clock time written by whichever operator process first served the
// intent, and compared by whichever process leads when it is read. A new
// leader whose clock runs ahead of the one that wrote it would shorten the
// wait by its lead, and the bound keeps only 1 s of margin
// (protocol.SelfFenceClockMargin). So the deadline is trusted as written
// only once it is MaxClockSkew past on this process's clock (the skew
// operator clocks are assumed to keep, leasestore.DefaultMaxClockSkew), or
// once the whole SelfFenceBound has run on this process's own clock since
// it first saw the transition (TransitionSeen): the old primary's
// confirmations ended before this process led, since only the leader
// answers /active-site and it answers from a cache that held the intent.
// The process that wrote the deadline saw the transition no later than it
// wrote it, so the wait is unchanged there (docs/safety.md, Deadlines and
// clock skew).

// selfFenceWaitOver reports whether the unreachable old primary of t has
// surely fenced itself by now, and until when to wait if not.
func (d *decider) selfFenceWaitOver(t *v1alpha1.Transition) (bool, time.Time) {
	dl := t.SourceFenceDeadline
	if dl == nil {
		return false, time.Time{}
	}
	until := SelfFenceWaitEnd(dl.Time, d.in.TransitionSeen, d.in.Failover.SelfFenceBound, d.in.Failover.MaxClockSkew)
	return !d.in.Now.Before(until), until
}

// SelfFenceWaitEnd is when the wait for a self-fence deadline written as
// deadline ends on a clock that first saw its transition at seen (zero:
// unknown): never before the deadline itself, and otherwise the earlier of
// the deadline plus the assumed skew and seen plus the whole bound.
func SelfFenceWaitEnd(deadline, seen time.Time, bound, skew time.Duration) time.Time {
	end := deadline.Add(skew)
	if !seen.IsZero() {
		if own := seen.Add(bound); own.Before(end) {
			end = own
		}
	}
	if end.Before(deadline) {
		return deadline
	}
	return end
}
