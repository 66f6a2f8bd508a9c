package topology

// The decision harness's sidecar model, its pinned clients and the faults of
// issue 19 (docs/testing.md, the decision-level harness). The model is what
// the product claims, not what makes the checks pass: a sidecar fences only
// when its rule says so, its fence may be held off (an open transaction, a
// long write, all connections in use, a frozen mysqld) for up to
// hFenceBudget, after which its sequence stops mysqld; a sidecar that is not
// running fences nothing.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// sidecar is the state of a site's sidecar process.
type sidecar struct {
	// sidecarDown: not running at all (a crash loop, an image that does not
	// pull); nothing fences the site.
	sidecarDown bool
	// backAt: a crashed sidecar runs again from then (the kubelet restarts
	// it); restarted: it has not run a round since, so it remembers nothing.
	backAt, lastCrash time.Time
	restarted         bool
	// fencing: its fence sequence runs and completes at fenceAt.
	fencing bool
	fenceAt time.Time
	// gap: the sidecar stopped while the operator could not reach the site
	// (outside what the product claims, docs/safety.md); gapSeen: the
	// operator's decision has since had a fresh answer from the site.
	gap, gapSeen bool
	// gapReturn: the cut heals once another site is published (the old
	// primary returns while DNS keeps clients on it), or, duringFailover,
	// once the failover away from it passed its self-fence deadline.
	gapReturn, duringFailover bool
}

// holds are what holds a fence off, and writes queued on a frozen mysqld.
type holds struct {
	idleTxn        bool      // a pooled connection left in BEGIN
	longWriteUntil time.Time // a long write runs (then rolls back) until then
	connFull       bool      // every client connection in use
	queued         int       // client writes sent to a frozen mysqld
	// thawAfterFailover: frozen until another site is the active one.
	thawAfterFailover bool
}

func (s *simSite) sidecarRuns(now time.Time) bool { return !s.sidecarDown && !now.Before(s.backAt) }

// heldOff: the fence statement cannot complete at once.
func (s *simSite) heldOff(now time.Time) bool {
	return s.frozen || s.idleTxn || s.longWriteUntil.After(now) || s.connFull
}

// Fault and outcome names the run must reach (TestInvariantHarness).
var (
	harnessFaultNames = []string{"idle open transaction", "long-running write", "sidecar down", "sidecar crash",
		"freeze until after a failover", "connection exhaustion", "read_only=ON by hand",
		"sidecar stops while its site is cut off (outside the guarantee)",
		"errant transaction on a candidate", "applier error", "applier lag", "candidate restart losing its relay log", "candidate restart keeping its relay log",
		"restart with skip-replica-start", "leader change during the fault", "primary stops right after shipping, before the next poll"}
	harnessOutcomeNames = []string{"self-fence by super_read_only", "self-fence by stopping mysqld", "operator fence failed",
		"failover refused: sidecar not seen", "frozen old primary stopped by its sidecar", "acknowledged writes off the active site",
		"operator fenced a site answering writable while not trusted", "cut-off old primary without a sidecar returns", "cut-off old primary returns to a restarted operator",
		"failover refused: " + RefusalCandidateLagUnknown, "failover refused: " + RefusalCandidateLagging, "failover refused: " + RefusalErrantCandidates,
		"errant candidate excluded", "catch-up timed out", "candidate's applier started", "acknowledged writes missing, reported"}
)

// newFault injects one of issue 19's faults, mostly on the active site.
func (w *world) newFault(k int) {
	s := w.sites[w.order[w.r.IntN(len(w.order))]]
	if a := w.sites[w.status.ActiveSite]; a != nil && w.r.IntN(3) != 0 {
		s = a
	}
	name := ""
	switch k {
	case 0, 1:
		if s.alive() && !s.idleTxn {
			s.idleTxn, name = true, "idle open transaction"
		}
	case 2, 3:
		if s.alive() && !s.longWriteUntil.After(w.now) && !s.gap {
			s.longWriteUntil, name = w.now.Add(time.Duration(1+w.r.IntN(8))*time.Second), "long-running write"
		}
	case 4:
		// Begins only where the operator sees it (its next poll): a sidecar
		// that stops while its site is cut off from the operator is the gap
		// docs/safety.md states, not a fault the product claims to survive.
		if !s.sidecarDown && s.operatorReaches() {
			s.sidecarDown, s.fencing, name = true, false, "sidecar down"
		}
	case 5:
		// A crash at any moment, restarted one step later; at most once per
		// hSelfFence (a crash loop is "down": the kubelet backs off).
		if s.sidecarRuns(w.now) && !s.sidecarDown && w.now.Sub(s.lastCrash) >= hSelfFence {
			s.backAt, s.lastCrash, s.restarted, s.fencing, name = w.now.Add(hPoll), w.now, true, false, "sidecar crash"
		}
	case 6, 7:
		if s.name == w.status.ActiveSite && s.alive() && w.status.Transition == nil {
			s.frozen, s.thawAfterFailover, name = true, true, "freeze until after a failover"
		}
	case 8, 9:
		if s.gap {
			break
		}
		s.connFull = !s.connFull
		if s.connFull {
			name = "connection exhaustion"
		}
	case 10:
		// Someone "fences" by hand with read_only=ON: privileged accounts
		// still write (hole 4).
		if s.takesWrites() && !s.ro {
			s.ro, name = true, "read_only=ON by hand"
		}
	case 12, 13:
		// The gap: nothing fences this site while it is cut off, so two
		// sites may take writes once another is promoted; the harness
		// judges only what the operator does once it reaches the site
		// again: fence it on its first answer (issue 19, hole 2).
		if s.sidecarRuns(w.now) && s.takesWrites() && !s.frozen && !s.sidecarDown {
			// Cut off now if it is not yet: its sidecar stops right after
			// the operator's last contact.
			s.isolated = s.isolated || s.operatorReaches()
			s.sidecarDown, s.fencing, s.gap, s.gapSeen = true, false, true, false
			s.connFull, s.longWriteUntil = false, time.Time{}
			s.gapReturn, s.duringFailover = w.r.IntN(2) == 0, w.r.IntN(2) == 0
			name = "sidecar stops while its site is cut off (outside the guarantee)"
		}
	case 11:
		if s.sidecarDown && !s.gap {
			s.sidecarDown, s.restarted = false, true
			w.logf("sidecar of %s running again", s.name)
		}
	}
	if name != "" {
		w.stats.faults[name]++
		w.logf("%s on %s", name, s.name)
	}
}

// heal ends faults that end by themselves.
func (w *world) heal() {
	for _, n := range w.order {
		s := w.sites[n]
		if s.gap && !s.takesWrites() {
			s.gap, s.gapSeen, s.gapReturn = false, false, false
		}
		if s.gapReturn && w.failedOverFrom(s) {
			s.isolated, s.oneWay, s.gapReturn = false, false, false
			w.stats.outcomes["cut-off old primary without a sidecar returns"]++
			w.logf("%s reachable again", n)
			if w.r.IntN(3) == 0 {
				// To an operator restarted meanwhile, which trusts its first
				// answer (nothing in memory says it was Unreachable).
				w.resetMemory()
				w.stats.outcomes["cut-off old primary returns to a restarted operator"]++
				w.logf("operator restart")
			}
		}
		if !s.longWriteUntil.IsZero() && !s.longWriteUntil.After(w.now) {
			s.longWriteUntil = time.Time{}
		}
		if !s.thawAfterFailover {
			continue
		}
		switch {
		case !s.frozen:
			s.thawAfterFailover = false
			if s.crashed {
				w.stats.outcomes["frozen old primary stopped by its sidecar"]++
			}
		case w.status.ActiveSite != n && w.status.ActiveSite != "" && w.status.Transition == nil, w.r.IntN(40) == 0:
			w.stats.outcomes["thaw after a failover"]++
			w.thaw(s)
		}
	}
}

// failedOverFrom: a gap site's return point has come (gapReturn).
func (w *world) failedOverFrom(s *simSite) bool {
	if t := w.status.Transition; s.duringFailover && t != nil && t.SourceSite == s.name {
		return t.SourceFenceDeadline != nil && !w.now.Before(t.SourceFenceDeadline.Time)
	}
	return !s.duringFailover && w.status.ActiveSite != "" && w.status.ActiveSite != s.name && w.status.Transition == nil
}

// thaw lets a frozen mysqld run what it queued: the client writes commit
// unless its fence got there first.
func (w *world) thaw(s *simSite) {
	s.frozen = false
	w.logf("thaw %s (%d client writes queued)", s.name, s.queued)
	for ; s.queued > 0; s.queued-- {
		if s.takesWrites() {
			w.ack(s, "queued")
		}
	}
}

// mysqldStopped: what a stopped mysqld loses (nothing it acknowledged).
func (w *world) mysqldStopped(s *simSite) {
	s.frozen, s.queued, s.idleTxn, s.longWriteUntil, s.fencing = false, 0, false, time.Time{}, false
}

// pinnedWrites: clients pinned to each site's address write wherever
// they are let: a frozen mysqld queues them.
func (w *world) pinnedWrites() {
	for _, n := range w.order {
		s := w.sites[n]
		if !s.takesWrites() || w.r.IntN(2) == 0 {
			continue
		}
		if s.frozen {
			s.queued++
			continue
		}
		w.ack(s, "pinned")
	}
}

// sawGaps lists the gap sites the coming decision has a fresh answer from;
// once that decision's actions all ran, they are judged like every other
// site (judgeGaps): the operator must have fenced them at once.
func (w *world) sawGaps() []*simSite {
	var out []*simSite
	for _, n := range w.order {
		if s, m := w.sites[n], w.mem[n]; s.gap && m.fresh {
			out = append(out, s)
		}
	}
	return out
}

func judgeGaps(seen []*simSite) {
	for _, s := range seen {
		s.gapSeen = true
	}
}

// unjudged: a gap site the operator has not heard from since its sidecar
// stopped; what it does then is the stated gap, not a decision's.
func (s *simSite) unjudged() bool { return s.gap && !s.gapSeen }

// ack commits one client write on s and records that it was acknowledged.
func (w *world) ack(s *simSite, who string) {
	g := s.commit()
	w.book.everAcked = w.book.everAcked.Add(g)
	w.ackedStep[s.name] = w.ackedStep[s.name] || !s.unjudged()
	w.stats.outcomes["acknowledged writes"]++
	if s.name == w.status.ActiveSite && w.status.Transition == nil {
		w.ackedOn[s.name] = w.ackedOn[s.name].Add(g)
		return
	}
	w.stats.outcomes["acknowledged writes off the active site"]++
	if who != "application" {
		w.logf("%s client write %s on %s", who, g, s.name)
	}
}

// sidecarRound is one round of a running sidecar: renew its lease while
// the operator's cache confirms its site; once the lease ran out, start the
// fence sequence, which completes within hFenceBudget (at once unless
// something holds it off) and, if mysqld still cannot be fenced then,
// stops it.
func (w *world) sidecarRound(s *simSite) {
	if !s.sidecarRuns(w.now) {
		return
	}
	if s.restarted {
		s.restarted, s.lease = false, time.Time{} // remembers nothing
	}
	if !s.isolated && w.cache.ActiveSite == s.name && w.cache.Transition == nil {
		s.lease = w.now
	}
	if t := w.cache.Transition; t != nil && t.TargetSite == s.name {
		return // being promoted: the transition names it
	}
	if !s.takesWrites() {
		s.fencing = false
		return
	}
	if !s.fencing && w.now.Sub(s.lease) >= hLease {
		s.fencing, s.fenceAt = true, w.now
		if s.heldOff(w.now) {
			s.fenceAt = w.now.Add(time.Duration(w.r.IntN(int(hFenceBudget/hPoll)+1)) * hPoll)
		}
	}
	if s.fencing && !w.now.Before(s.fenceAt) {
		s.fencing = false
		if s.frozen || s.longWriteUntil.After(w.now) {
			s.crashed = true
			w.mysqldStopped(s)
			w.stats.outcomes["self-fence by stopping mysqld"]++
			w.logf("%s stopped by its sidecar", s.name)
			return
		}
		s.ro, s.sro, s.idleTxn = true, true, false
		w.stats.outcomes["self-fence by super_read_only"]++
		w.logf("%s self-fenced", s.name)
	}
}

// operatorFence is the executor's fence (mpass.fence): it kills the
// sessions of an open transaction, but cannot get a connection while all
// are in use, and waits in vain behind a long write (killed, it holds the
// lock through its rollback).
func (w *world) operatorFence(s *simSite) bool {
	switch {
	case s.connFull:
		w.logf("fence of %s failed: too many connections", s.name)
		return false
	case s.longWriteUntil.After(w.now):
		w.logf("fence of %s failed: held off by a long write", s.name)
		return false
	}
	if m := w.mem[s.name]; m.reach != observe.Reachable && !s.sro {
		w.stats.outcomes["operator fenced a site answering writable while not trusted"]++
	}
	s.ro, s.sro, s.idleTxn = true, true, false
	return true
}

// countDecision counts what a decision chose that the faults aim at.
func (w *world) countDecision(d Decision) {
	for _, e := range d.Events {
		switch {
		case e.Reason == v1alpha1.EventFailoverRefused && strings.Contains(e.Message, "sidecar did not answer"):
			w.stats.outcomes["failover refused: sidecar not seen"]++
		case e.Reason == v1alpha1.EventFailoverRefused:
			w.stats.outcomes["failover refused: "+refusalCause(e.Message)]++
		case e.Reason == v1alpha1.EventFailoverCatchUpTimedOut:
			w.stats.outcomes["catch-up timed out"]++
		case e.Reason == v1alpha1.EventFailoverStarted && strings.Contains(e.Message, "excluded:"):
			w.stats.outcomes["errant candidate excluded"]++
		case e.Reason == v1alpha1.EventFailoverAborted:
			w.stats.outcomes["failover abandoned"]++
		}
	}
}

// refusalCause is the refusal cause a FailoverRefused message names.
func refusalCause(msg string) string {
	for _, c := range []string{RefusalNoCandidate, RefusalErrantCandidates, RefusalIncomparableCandidates, RefusalCandidateLagUnknown,
		RefusalCandidateLagStale, RefusalCandidateLagging, RefusalCandidateMissingTransactions} {
		if strings.Contains(msg, ", "+c+")") {
			return c
		}
	}
	return "other guard"
}

// countEnd counts how a sequence ended.
func (w *world) countEnd() {
	w.stats.outcomes["sequences"]++
	if w.status.ActiveSite == "" {
		w.stats.outcomes["ended without an active site"]++
	}
}

// countsLine prints counts sorted by name.
func countsLine(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
