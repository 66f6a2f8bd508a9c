package topology

// The decision harness's replication lag model and issue 20's faults and
// checks (docs/testing.md, the decision-level harness): every transaction
// has an original commit time, each replica's receiver and applier keep
// the performance_schema evidence a real one keeps (last heartbeat, last
// queued and last applied transaction with their original commit times;
// all gone when mysqld restarts), Seconds_Behind_Source is computed as
// MySQL does (NULL while the applier is stopped, or has applied all it
// received while the receiver cannot reach its source). Faults: errant
// transactions on candidates, applier lag, a candidate restarted with and
// without its relay log and with skip-replica-start, an applier error, a
// leader change during a failover. Checks, by the world's truth: the
// chosen candidate holds nothing the old primary really lacks and no
// trusted candidate holds more of the old primary's transactions; and at
// the end of every sequence, once every fault is healed and the group has
// settled, every acknowledged write the final primary lacks lies inside
// what the operator reported as possibly lost or recorded as divergent.

import (
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/observe"
)

const (
	// hMaxLag is the harness's spec.replication.maxLagSeconds: small, so
	// that the lag guard and the catch-up bound (hMaxLag + CatchUpPolls
	// pollIntervals) are reached within a sequence.
	hMaxLag = 5
	// hSettleSteps run after the faults, with every fault healed.
	hSettleSteps = 30
)

// channelEvidence is the performance_schema state of a site's channel.
type channelEvidence struct {
	heartbeat, queuedAt         time.Time
	lastQueued, lastApplied     gtid.GTID
	queuedCommit, appliedCommit time.Time
	sqlErrno                    int
	applierBroken               bool // its error recurs on every start
	// crashAfterShip: mysqld stops right after its replicas received its
	// latest writes and before the operator's next poll, so they hold
	// transactions the operator never saw on it.
	crashAfterShip bool
}

// lossBook is what the loss check compares: every write a client saw
// acknowledged, and what the stored status ever reported as possibly lost
// or recorded as divergent (or discarded by a reclone request).
type lossBook struct {
	everAcked, reported, everDiverg gtid.Set
	// heldAtChoice is, by transition id, what the chosen candidate really
	// held (executed or received) when the failover was recorded.
	heldAtChoice map[string]gtid.Set
}

// latest is the GTID of set committed last, and when.
func (w *world) latest(set gtid.Set) (gtid.GTID, time.Time) {
	var g gtid.GTID
	var at time.Time
	for _, sid := range set.SIDs() {
		ivs := set.Intervals(sid)
		c := gtid.GTID{UUID: sid.UUID, Tag: sid.Tag, GNO: ivs[len(ivs)-1].End}
		if t := w.commitAt[c]; !t.Before(at) {
			g, at = c, t
		}
	}
	return g, at
}

// receive queues what the source has that the replica lacks.
func (w *world) receive(s *simSite, add gtid.Set) {
	s.ch.heartbeat = w.now
	if fresh := add.Subtract(s.retrieved); !fresh.IsEmpty() {
		s.ch.lastQueued, s.ch.queuedCommit = w.latest(fresh)
		s.ch.queuedAt = w.now
	}
}

// apply executes what the replica received.
func (w *world) apply(s *simSite) {
	if fresh := s.retrieved.Subtract(s.executed); !fresh.IsEmpty() {
		s.ch.lastApplied, s.ch.appliedCommit = w.latest(fresh)
		s.executed = s.executed.Union(s.retrieved)
	}
}

// connected: the receiver runs and reaches its source.
func (w *world) connected(s *simSite) bool {
	src := w.sites[s.source]
	return src != nil && s.ioRunning && src.alive() && !src.isolated && !s.isolated
}

// secondsBehind is Seconds_Behind_Source as MySQL reports it.
func (w *world) secondsBehind(s *simSite) *int64 {
	if !s.sqlRunning {
		return nil
	}
	var v int64
	if s.retrieved.IsSubsetOf(s.executed) {
		if !w.connected(s) {
			return nil
		}
		return &v
	}
	v = max(0, int64(w.now.Sub(s.ch.appliedCommit)/time.Second))
	return &v
}

// evidence is what the operator reads from the site's performance_schema.
func (w *world) evidence(s *simSite) *LagEvidence {
	if s.source == "" {
		return nil
	}
	// Read and placed on the operator's clock, as toEvidence does.
	e := &LagEvidence{ObservedAt: w.operatorNow(), LastHeartbeat: w.onOperatorClock(s.ch.heartbeat), LastQueuedAt: w.onOperatorClock(s.ch.queuedAt),
		LastQueuedCommit: s.ch.queuedCommit, LastAppliedCommit: s.ch.appliedCommit}
	if s.ch.lastQueued.UUID != "" {
		e.LastQueued = s.ch.lastQueued.String()
	}
	if s.ch.lastApplied.UUID != "" {
		e.LastApplied = s.ch.lastApplied.String()
	}
	return e
}

// restartChannel: mysqld started again; performance_schema starts empty,
// the relay log may be gone, and skip-replica-start leaves both threads
// stopped.
func (w *world) restartChannel(s *simSite) {
	s.ch.heartbeat, s.ch.queuedAt, s.ch.queuedCommit, s.ch.appliedCommit = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	s.ch.lastQueued, s.ch.lastApplied = gtid.GTID{}, gtid.GTID{}
	if s.source == "" {
		return
	}
	if w.r.IntN(2) == 0 && !s.retrieved.IsSubsetOf(s.executed) {
		s.retrieved = s.executed.Intersect(s.retrieved)
		w.stats.faults["candidate restart losing its relay log"]++
		w.logf("%s lost its relay log", s.name)
	} else {
		w.stats.faults["candidate restart keeping its relay log"]++
	}
	if w.r.IntN(2) == 0 {
		s.ioRunning, s.sqlRunning = false, false
		w.stats.faults["restart with skip-replica-start"]++
	}
}

// lagFault injects one of issue 20's faults.
func (w *world) lagFault() {
	var cands []*simSite
	for _, sp := range w.specs {
		if sp.Name != w.status.ActiveSite && (sp.Role == v1alpha1.SiteRolePrimaryCandidate || sp.Name == "dr") {
			cands = append(cands, w.sites[sp.Name])
		}
	}
	s := cands[w.r.IntN(len(cands))]
	if t := w.status.Transition; t != nil && t.Kind == v1alpha1.TransitionAutomatic && w.r.IntN(2) == 0 {
		s = w.sites[t.TargetSite] // the candidate of a failover in flight
	}
	switch w.r.IntN(6) {
	case 0:
		if s.alive() && s.sro {
			g := s.commit()
			w.stats.faults["errant transaction on a candidate"]++
			w.logf("errant transaction %s on candidate %s", g, s.name)
		}
	case 1:
		if s.alive() && s.source != "" {
			s.sqlRunning, s.ch.sqlErrno, s.ch.applierBroken = false, 1062, w.r.IntN(2) == 0
			w.stats.faults["applier error"]++
			w.logf("applier error on %s (recurs %v)", s.name, s.ch.applierBroken)
		}
	case 2:
		if !s.lagging {
			s.lagging = true
			w.stats.faults["applier lag"]++
		}
	case 3:
		if s.alive() && !s.gap {
			w.mysqldStopped(s)
			s.ro, s.sro = true, true
			w.restartChannel(s)
			w.logf("restart %s", s.name)
		}
	case 5:
		if a := w.sites[w.status.ActiveSite]; a != nil && a.alive() && w.status.Transition == nil {
			a.ch.crashAfterShip, s.lagging = true, true // with a candidate's applier behind
			w.stats.faults["primary stops right after shipping, before the next poll"]++
		}
	case 4:
		if a := w.mem[w.status.ActiveSite]; w.status.Transition != nil || (a != nil && a.reach != observe.Reachable) {
			w.resetMemory()
			w.stats.faults["leader change during the fault"]++
			w.logf("leader change: the new leader starts with empty memory")
		}
	}
}

// crashShipped stops a mysqld marked crashAfterShip (between replication
// and the poll).
func (w *world) crashShipped() {
	for _, n := range w.order {
		if s := w.sites[n]; s.ch.crashAfterShip {
			s.ch.crashAfterShip = false
			s.crashed = true
			w.mysqldStopped(s)
			w.logf("crash %s right after shipping", s.name)
		}
	}
}

// startApplier is START REPLICA SQL_THREAD.
func (w *world) startApplier(s *simSite) bool {
	if s.ch.applierBroken {
		w.stats.outcomes["applier start failed: the error recurs"]++
		return false
	}
	s.sqlRunning, s.ch.sqlErrno = true, 0
	return true
}

// settle heals every fault so that the group can converge before the loss
// check.
func (w *world) settle() {
	for _, n := range w.order {
		s := w.sites[n]
		if s.frozen {
			w.thaw(s)
		}
		if s.crashed {
			s.crashed, s.ro, s.sro = false, true, true
			w.restartChannel(s)
		}
		s.isolated, s.oneWay, s.lagging, s.sidecarDown, s.gap = false, false, false, false, false
		s.idleTxn, s.connFull, s.longWriteUntil, s.thawAfterFailover = false, false, time.Time{}, false
		s.ch.applierBroken = false
		s.backAt = time.Time{}
	}
}

// noteStored accumulates what a stored status reported as possibly lost
// and recorded as divergent or discarded.
func (w *world) noteStored(st v1alpha1.MysqlFailoverGroupStatus) {
	parse := func(v string) gtid.Set {
		s, err := gtid.Parse(v)
		if err != nil {
			return gtid.Set{}
		}
		return s
	}
	if lf := st.LastFailover; lf != nil {
		w.book.reported = w.book.reported.Union(parse(lf.PossiblyLostGTID))
	}
	for _, p := range st.Sites {
		w.book.everDiverg = w.book.everDiverg.Union(parse(p.DivergentGTID))
	}
	for _, h := range st.RecloneHistory {
		w.book.everDiverg = w.book.everDiverg.Union(parse(h.DiscardedGTID))
	}
}

// checkLoss (the loss check of automatic failover, by world truth): every
// write a client saw acknowledged that the final primary lacks lies inside
// what the operator reported as possibly lost or recorded as divergent.
func (w *world) checkLoss(check func(string, ...any)) {
	a := w.sites[w.status.ActiveSite]
	if a == nil || w.status.Transition != nil {
		w.stats.outcomes["loss check skipped: no settled active site"]++
		return
	}
	missing := w.book.everAcked.Subtract(a.executed)
	if !missing.IsEmpty() {
		w.stats.outcomes["acknowledged writes missing, reported"]++
	}
	if unreported := missing.Subtract(w.book.reported).Subtract(w.book.everDiverg).Subtract(w.ownTailExcused()); !unreported.IsEmpty() {
		check("acknowledged writes %s are missing from the final primary %s and were never reported possibly lost or recorded as divergent", unreported.OneLine(), a.name)
	}
}

// checkPromotion: at Promoting, every acknowledged write the target held
// when it was chosen and no longer holds (a relay log lost in a restart)
// is in lastFailover.possiblyLostGtid: it is gone from the new primary,
// and the report must say so.
func (w *world) checkPromotion(t *v1alpha1.Transition, lf *v1alpha1.LastFailover, check func(string, ...any)) {
	tgt := w.sites[t.TargetSite]
	if tgt == nil || lf == nil {
		return
	}
	reported, err := gtid.Parse(lf.PossiblyLostGTID)
	if err != nil {
		check("possiblyLostGtid %q unreadable: %v", lf.PossiblyLostGTID, err)
		return
	}
	short := w.book.heldAtChoice[t.ID].Subtract(tgt.executed).Intersect(w.book.everAcked)
	if !short.IsEmpty() {
		w.stats.outcomes["promoted short of what the candidate held when chosen"]++
	}
	if unreported := short.Subtract(reported); !unreported.IsEmpty() {
		check("%s promoted without acknowledged writes %s it held when chosen, not reported possibly lost (%q)", tgt.name, unreported.OneLine(), lf.PossiblyLostGTID)
	}
}

// checkChoice ("most advanced" by what the servers held): the target
// holds nothing the old primary really lacks, and no trusted
// PrimaryCandidate holds a transaction of the old primary the target lacks.
func (w *world) checkChoice(t *v1alpha1.Transition, check func(string, ...any)) {
	src, tgt := w.sites[t.SourceSite], w.sites[t.TargetSite]
	if src == nil || tgt == nil {
		return
	}
	if w.book.heldAtChoice == nil {
		w.book.heldAtChoice = map[string]gtid.Set{}
	}
	w.book.heldAtChoice[t.ID] = tgt.executed.Union(tgt.retrieved)
	if m := w.mem[tgt.name]; m.reach != observe.Reachable || !m.fresh || !tgt.operatorReaches() {
		check("failover target %s not trusted", tgt.name)
	}
	held := func(s *simSite) gtid.Set { return s.executed.Union(s.retrieved) }
	// What the old primary lost with its unflushed tail it did have
	// (harness_owntail_test.go).
	if extra := held(tgt).Subtract(src.executed).Subtract(w.tail.forked); !extra.IsEmpty() {
		check("failover chose %s, which holds %s the old primary %s never had", tgt.name, extra.OneLine(), src.name)
	}
	for _, sp := range w.specs {
		o, m := w.sites[sp.Name], w.mem[sp.Name]
		if o == tgt || o == src || sp.Role != v1alpha1.SiteRolePrimaryCandidate || m.reach != observe.Reachable || !m.fresh || !o.operatorReaches() {
			continue
		}
		if more := held(o).Intersect(src.executed).Subtract(held(tgt)); !more.IsEmpty() {
			check("failover chose %s while %s holds %s of the old primary's transactions that %s lacks", tgt.name, o.name, more.OneLine(), tgt.name)
		}
	}
}
