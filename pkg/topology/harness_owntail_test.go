package topology

// The decision harness's own-tail fault (issue 21, hole 1): the active site
// runs with relaxed durability (sync_binlog and
// innodb_flush_log_at_trx_commit not 1, set on the simulated server
// directly, never through the product) and is killed: it restarts without
// the transactions it committed in the last flush interval, which its
// replicas may already hold. The world then answers as MySQL does: a source
// refuses a replica holding more of its own server UUID's GTIDs than it has
// (13114, "replica has more"). Checked by the world's truth: no site issues
// again a GTID whose first transaction another site still holds (the fork
// a reasserted primary makes, which replicas skip as executed), and the
// loss check leaves out only the acknowledged writes that no server holds
// any more (lost with the unflushed tail: not promised, docs/safety.md).

import (
	"fmt"
	"strings"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// ownTailWorld is the fault's part of the world.
type ownTailWorld struct {
	// relaxed: sites running with relaxed durability.
	relaxed map[string]bool
	// forked are GTIDs of a crashed site's lost tail that another site
	// held when it lost them: their first transaction lives there.
	forked gtid.Set
	// vanished are acknowledged GTIDs of a lost tail no server held.
	vanished gtid.Set
	// hasMore: the site's receiver was refused for holding more.
	hasMore map[string]bool
	// reissued lists the violations found by noteIssue; gapped are the
	// GTIDs issued again inside the stated gap.
	reissued []string
	gapped   gtid.Set
}

const faultOwnTail = "primary restarts without its unflushed tail"

func init() {
	harnessFaultNames = append(harnessFaultNames, faultOwnTail)
	harnessOutcomeNames = append(harnessOutcomeNames, "lost tail held by another site", "failover from a site that lost its own tail")
}

// ownTailFault: relaxed durability on the active site, then a kill: what
// it committed in the last flush interval (one step) is gone from it. Half
// of the time it is running again at once, fenced, before the operator
// noticed anything (the reassertion path); else it restarts later.
func (w *world) ownTailFault() {
	a := w.sites[w.status.ActiveSite]
	if a == nil || !a.alive() || w.status.Transition != nil {
		return
	}
	t := &w.tail
	if t.relaxed == nil {
		t.relaxed, t.hasMore = map[string]bool{}, map[string]bool{}
	}
	t.relaxed[a.name] = true
	var tail gtid.Set
	for _, sid := range a.executed.SIDs() {
		if sid.UUID != a.uuid {
			continue
		}
		for _, iv := range a.executed.Intervals(sid) {
			for n := iv.Start; n <= iv.End; n++ {
				g := gtid.GTID{UUID: sid.UUID, Tag: sid.Tag, GNO: n}
				if at, ok := w.commitAt[g]; ok && !at.Before(w.now.Add(-hPoll)) {
					tail = tail.Add(g)
				}
			}
		}
	}
	a.crashed = true
	w.mysqldStopped(a)
	a.executed, a.purged = a.executed.Subtract(tail), a.purged.Subtract(tail)
	a.retrieved = a.retrieved.Subtract(tail)
	var elsewhere gtid.Set
	for _, n := range w.order {
		if s := w.sites[n]; s != a {
			elsewhere = elsewhere.Union(s.executed.Union(s.retrieved))
		}
	}
	held := tail.Intersect(elsewhere)
	t.forked = t.forked.Union(held)
	t.vanished = t.vanished.Union(tail.Subtract(held).Intersect(w.book.everAcked))
	w.stats.faults[faultOwnTail]++
	if !held.IsEmpty() {
		w.stats.outcomes["lost tail held by another site"]++
	}
	w.logf("%s on %s: lost %s (%s held elsewhere)", faultOwnTail, a.name, GTIDPhrase(tail.OneLine()), GTIDPhrase(held.OneLine()))
	if w.r.IntN(2) == 0 {
		a.crashed, a.ro, a.sro = false, true, true
		w.restartChannel(a)
		w.logf("restart %s at once", a.name)
	}
}

// noteIssue is called for every GTID a site commits: one whose first
// transaction another site still holds is issued again for another
// transaction, and the sites holding the first skip the second.
func (w *world) noteIssue(s *simSite, g gtid.GTID) {
	if !w.tail.forked.Contains(g) || s.sro {
		// Only client writes the site was let take count: an errant write
		// on a fenced site is a fault the harness injects.
		return
	}
	if w.tail.gapped.Contains(g) {
		// Made writable inside the stated gap (noteWritable judged what the
		// operator knew then); what it learns later cannot undo that.
		w.stats.outcomes["a lost tail only sites out of the operator's sight held was issued again (the stated gap)"]++
		return
	}
	var holders []string
	seen := false
	for _, n := range w.order {
		if o := w.sites[n]; o != s && o.executed.Union(o.retrieved).Contains(g) {
			holders = append(holders, n)
			seen = seen || w.operatorKnew(n).Contains(g)
		}
	}
	if !seen {
		// The stated gap (docs/safety.md): only sites out of the
		// operator's sight hold the first transaction, neither its polls
		// since its last restart nor the stored status show it there.
		w.stats.outcomes["a lost tail only sites out of the operator's sight held was issued again (the stated gap)"]++
		w.logf("%s issued %s again; only %s held it, unseen by the operator", s.name, g, strings.Join(holders, ", "))
		w.tail.gapped = w.tail.gapped.Add(g)
		return
	}
	w.tail.reissued = append(w.tail.reissued, fmt.Sprintf("%s issued %s again for another transaction; its first transaction, lost in %s's crash, is on %s, which skips the new one",
		s.name, g, s.name, strings.Join(holders, ", ")))
}

// checkOwnTail reports the first reissue.
func (w *world) checkOwnTail(check func(string, ...any)) {
	if len(w.tail.reissued) > 0 {
		check("%s", w.tail.reissued[0])
	}
}

// refusedForMore is the source's check at a replica's connection (MySQL's
// "replica has more GTIDs than the source"): a replica holding GTIDs of the
// source's own server UUID that the source lacks is refused, its receiver
// stops with 13114. It reports whether it refused.
func (w *world) refusedForMore(s, src *simSite) bool {
	if w.tail.hasMore == nil {
		w.tail.hasMore = map[string]bool{}
	}
	held := s.executed.Union(s.retrieved)
	more := held.Subtract(src.executed).Subtract(Divergent(held, src.executed, src.uuid))
	w.tail.hasMore[s.name] = !more.IsEmpty()
	if more.IsEmpty() {
		return false
	}
	s.ioRunning, s.ioErrno = false, ErrnoSourcePurged
	return true
}

// readError is what the poll reads from the site's Last_IO_Error.
func (w *world) readError(s *simSite) SourceReadError {
	switch {
	case s.ioErrno != ErrnoSourcePurged:
		return ReadErrorNone
	case w.tail.hasMore[s.name]:
		return ReadErrorReplicaHasMore
	}
	return ReadErrorPurged
}

// countOwnTail counts a failover recorded away from a site that lost its
// own tail.
func (w *world) countOwnTail(d Decision) {
	for _, e := range d.Events {
		if strings.Contains(e.Message, "of its own server UUID") && d.Status.Transition != nil {
			w.stats.outcomes["failover from a site that lost its own tail"]++
		}
	}
}

// ownTailExcused is what the end-of-sequence loss check does not count:
// the acknowledged writes of a lost unflushed tail that no server holds
// (not promised), and, while the active site stays fenced
// because it lost its own tail (blocked with a reason), the tail that
// other sites still hold: it is not lost, a person decides.
func (w *world) ownTailExcused() gtid.Set {
	var anywhere gtid.Set
	for _, n := range w.order {
		s := w.sites[n]
		anywhere = anywhere.Union(s.executed.Union(s.retrieved))
	}
	// A tail another site held when its primary lost it, gone later from
	// every server too (that site's relay log lost in its own crash): no
	// server kept it, as with vanished. A clone that destroyed it is
	// caught where clones are judged (do, Clone).
	out := w.tail.vanished.Union(w.tail.forked.Subtract(anywhere)).Union(w.tail.gapped)
	a := w.sites[w.status.ActiveSite]
	if a == nil || a.takesWrites() || w.tail.forked.IsEmpty() {
		return out
	}
	w.stats.outcomes["ended blocked on a lost tail"]++
	return out.Union(w.tail.forked.Intersect(anywhere))
}

// operatorKnew is the latest set the operator knows of a site: its last
// successful poll in this operator process, else what the stored status
// records.
func (w *world) operatorKnew(site string) gtid.Set {
	if m := w.mem[site]; m != nil && m.last != nil {
		set := m.last.Executed
		if m.last.Replica != nil {
			set = set.Union(m.last.Replica.Retrieved)
		}
		return set
	}
	for _, p := range w.status.Sites {
		if p.Name == site {
			if set, err := gtid.Parse(p.GTIDExecuted); err == nil {
				return set
			}
		}
	}
	return gtid.Set{}
}

// notPromised is what a planned handoff need not carry: what a crash with
// relaxed durability took from every server (then or later, with the relay
// log of the only replica that held it), and GTIDs issued again inside the
// stated gap (their first transaction is not the one the target got).
func (w *world) notPromised() gtid.Set {
	var anywhere gtid.Set
	for _, n := range w.order {
		anywhere = anywhere.Union(w.sites[n].executed.Union(w.sites[n].retrieved))
	}
	return w.tail.vanished.Union(w.tail.gapped).Union(w.tail.forked.Subtract(anywhere))
}

// noteWritable is called when the operator makes a site writable: a site
// that lacks GTIDs of its own that another site holds from before its
// crash would issue them again. Inside the stated gap (no holder's set
// known to the operator) it is counted, and what it lacks is not promised.
func (w *world) noteWritable(s *simSite) {
	missing := w.tail.forked.Subtract(s.executed)
	var mine gtid.Set
	for _, sid := range missing.SIDs() {
		if sid.UUID != s.uuid {
			continue
		}
		for _, iv := range missing.Intervals(sid) {
			for n := iv.Start; n <= iv.End; n++ {
				mine = mine.Add(gtid.GTID{UUID: sid.UUID, Tag: sid.Tag, GNO: n})
			}
		}
	}
	var known, held gtid.Set
	for _, n := range w.order {
		if o := w.sites[n]; o != s {
			h := mine.Intersect(o.executed.Union(o.retrieved))
			held = held.Union(h)
			known = known.Union(h.Intersect(w.operatorKnew(n)))
		}
	}
	if !known.IsEmpty() {
		w.tail.reissued = append(w.tail.reissued, fmt.Sprintf("%s made writable without %s of its own, lost in its crash and held by another site the operator had seen",
			s.name, known.OneLine()))
	}
	if gap := held.Subtract(known); !gap.IsEmpty() {
		w.stats.outcomes["a lost tail only sites out of the operator's sight held was issued again (the stated gap)"]++
		w.tail.gapped = w.tail.gapped.Union(gap)
	}
}
