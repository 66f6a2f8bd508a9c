package fencing

import (
	"fmt"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/protocol"
)

// seqWorld is a simulated mysqld for the plan: how a fence statement fares
// (MySQL's rule: SET GLOBAL super_read_only waits for every open write
// transaction to end, up to lock_wait_timeout), what a KILL does, and how
// long the process takes to end after SIGKILL.
type seqWorld struct {
	holder     bool          // an open transaction holds the fence off until killed
	rollback   time.Duration // how long a killed holder still holds it (its rollback)
	down       bool          // mysqld does not answer at all (frozen)
	exitDelay  time.Duration // SIGKILL to process gone
	canStop    bool
	statement  time.Duration // round trip of a statement that does not wait
	releasedAt time.Duration // when the holder lets go; <0 not yet killed
}

type seqOutcome struct {
	confirmedAt time.Duration // <0: gave up
	by          string
	firstEvict  time.Duration
	stoppedAt   time.Duration
	actions     int
}

// run drives plan.Next against w with a simulated clock, as runFence does.
func runPlan(t *testing.T, p Plan, w seqWorld) seqOutcome {
	t.Helper()
	pr := Fresh(w.canStop)
	o := seqOutcome{confirmedAt: -1, firstEvict: -1, stoppedAt: -1}
	w.releasedAt = -1
	if !w.holder {
		w.releasedAt = 0
	}
	now := time.Duration(0)
	var attemptStart, attemptDeadline time.Duration
	// fate is how the running attempt ends, as far as the world is known
	// now: when the holder lets go within lock_wait_timeout, the fence takes
	// effect; otherwise 1205 at the deadline.
	fate := func() (time.Duration, bool) {
		if !w.down && w.releasedAt >= 0 && w.releasedAt <= attemptDeadline {
			return max(attemptStart, w.releasedAt) + w.statement, true
		}
		return attemptDeadline, false
	}
	goneAt := time.Duration(-1)
	for o.actions = 0; o.actions < 10000; o.actions++ {
		pr.Elapsed = now
		act, wake := p.Next(pr)
		switch act {
		case ActDone:
			o.confirmedAt = now
			return o
		case ActGiveUp:
			return o
		case ActAttempt:
			pr.Attempting = true
			attemptStart, attemptDeadline = now, now+max(time.Second, (p.Budget-now)/time.Second*time.Second)
			if w.down {
				attemptDeadline = p.Budget // only the client's deadline ends it
			}
		case ActEvict:
			if o.firstEvict < 0 {
				o.firstEvict = now
			}
			pr.LastEvict = now
			if !w.down && w.holder && w.releasedAt < 0 {
				w.releasedAt = now + w.statement + w.rollback
			}
			now += w.statement
		case ActStop:
			pr.Stopped, o.stoppedAt = true, now
			goneAt = now + w.exitDelay
		case ActWait:
			if wake <= now {
				t.Fatalf("ActWait at %s wakes at %s: the plan would spin", now, wake)
			}
			attemptEnd, attemptOK := fate()
			next := wake
			if pr.Attempting && attemptEnd < next {
				next = attemptEnd
			}
			now = next
			if pr.Attempting && attemptEnd <= now {
				pr.Attempting, pr.LastAttempt = false, now
				if attemptOK && goneAt < 0 {
					pr.Confirmed, o.by = true, "super_read_only"
				}
			}
			if pr.Stopped && goneAt >= 0 && now >= goneAt && !pr.Confirmed {
				pr.Confirmed, o.by = true, "process-gone"
			}
		}
	}
	t.Fatalf("the plan did not end within %d steps", o.actions)
	return o
}

// TestSequenceCases: each situation the sequence must handle ends
// confirmed within the budget, by the step meant for it.
func TestSequenceCases(t *testing.T) {
	p := NewPlan(protocol.SelfFenceStatementTimeout, 250*time.Millisecond)
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		w         seqWorld
		by        string
		evict     bool
		stop      bool
		confirmBy time.Duration
	}{
		{"nothing holds the fence", seqWorld{statement: ms, canStop: true, exitDelay: 20 * ms}, "super_read_only", false, false, 10 * ms},
		{"an idle open transaction", seqWorld{holder: true, statement: ms, canStop: true, exitDelay: 20 * ms}, "super_read_only", true, false, p.EvictAfter + 10*ms},
		{"a killed large transaction rolls back past the escalation point", seqWorld{holder: true, rollback: time.Minute, statement: ms, canStop: true, exitDelay: 20 * ms}, "process-gone", true, true, p.StopAt + 30*ms},
		{"a rollback that ends before the escalation point", seqWorld{holder: true, rollback: time.Second, statement: ms, canStop: true, exitDelay: 20 * ms}, "super_read_only", true, false, p.EvictAfter + time.Second + 10*ms},
		{"a frozen mysqld", seqWorld{down: true, statement: ms, canStop: true, exitDelay: 20 * ms}, "process-gone", true, true, p.StopAt + 30*ms},
		{"the process takes the whole allowance to end", seqWorld{down: true, statement: ms, canStop: true, exitDelay: p.Budget - p.StopAt - p.PollEvery}, "process-gone", true, true, p.Budget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := runPlan(t, p, tc.w)
			if o.confirmedAt < 0 || o.by != tc.by {
				t.Fatalf("seqOutcome %+v, want confirmed by %s", o, tc.by)
			}
			if o.confirmedAt > tc.confirmBy || o.confirmedAt > p.Budget {
				t.Errorf("confirmed at %s, want by %s (budget %s)", o.confirmedAt, tc.confirmBy, p.Budget)
			}
			if (o.firstEvict >= 0) != tc.evict || (tc.evict && o.firstEvict != p.EvictAfter) {
				t.Errorf("first eviction at %s, want evictions %v from %s", o.firstEvict, tc.evict, p.EvictAfter)
			}
			if (o.stoppedAt >= 0) != tc.stop || (tc.stop && o.stoppedAt != p.StopAt) {
				t.Errorf("process stop at %s, want stop %v at %s", o.stoppedAt, tc.stop, p.StopAt)
			}
		})
	}
	// Without a pid file there is no escalation: a rollback that outlasts
	// the budget leaves the sequence unconfirmed, and it says so.
	o := runPlan(t, p, seqWorld{holder: true, rollback: time.Minute, statement: ms})
	if o.confirmedAt >= 0 || o.stoppedAt >= 0 {
		t.Errorf("without a pid file: %+v, want an unconfirmed end and no stop", o)
	}
}

// TestPlanFitsTheSelfFenceBound: for every allowed spec.sidecar timer pair
// (leaseTimeout 2s-5m, peerCheckInterval 500ms-1m and shorter than the
// lease, on a grid), the decision to fence (at most lease + request timeout
// after the operator stops confirming) plus the whole sequence fits within
// SelfFenceBound minus its stated margin, the steps come in order within
// the budget, and an eviction pass ends before the next one starts.
func TestPlanFitsTheSelfFenceBound(t *testing.T) {
	var leases, intervals []time.Duration
	for d := 2 * time.Second; d <= 5*time.Minute; d += 500 * time.Millisecond {
		leases = append(leases, d)
	}
	for d := 500 * time.Millisecond; d <= time.Minute; d += 50 * time.Millisecond {
		intervals = append(intervals, d)
	}
	checked := 0
	for _, lease := range leases {
		for _, interval := range intervals {
			if interval >= lease {
				continue
			}
			r := protocol.SidecarRequestTimeout(interval)
			p := NewPlan(protocol.SelfFenceStatementTimeout, r)
			bound := protocol.SelfFenceBound(lease, interval)
			name := fmt.Sprintf("lease %s interval %s", lease, interval)
			if end := lease + r + p.Budget; end > bound-protocol.SelfFenceClockMargin {
				t.Fatalf("%s: the sequence may end %s after the cut, beyond the bound %s minus the margin %s", name, end, bound, protocol.SelfFenceClockMargin)
			}
			if !(0 < p.EvictAfter && p.EvictAfter < p.StopAt && p.StopAt+p.PollEvery < p.Budget) {
				t.Fatalf("%s: steps out of order: %+v", name, p)
			}
			if p.StepTimeout > p.EvictEvery || p.StepTimeout > r {
				t.Fatalf("%s: a step may take %s, longer than the eviction interval %s or the request timeout %s", name, p.StepTimeout, p.EvictEvery, r)
			}
			if p.Budget-p.StopAt < time.Second {
				t.Fatalf("%s: %s left for the process to end after SIGKILL", name, p.Budget-p.StopAt)
			}
			checked++
		}
	}
	t.Logf("checked %d timer pairs", checked)
}
