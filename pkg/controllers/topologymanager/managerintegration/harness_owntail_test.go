package managerintegration

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// The own-tail fault of issue 21 (hole 1) in the real-level harness: the
// active site's simulator is switched to relaxed durability through its own
// knobs (SET GLOBAL sync_binlog = 0, innodb_flush_log_at_trx_commit = 2 on
// the simulated server, never through the product, whose my.cnf owns both)
// and crashed while the write load runs: it restarts without what it
// committed since its last once-a-second flush, while its replicas, which
// stream its binary log as it is written, may already hold it. Half of the
// time it is restarted at once, before the operator's failureThreshold
// notices it was gone (the reassertion path), else after hold.
//
// Checked by the simulators' truth and the clients' acknowledgements, at
// the end of the sequence: every write the active site acknowledged that a
// follower held when it crashed is on the final active site's server (a
// reasserted primary issues those GTIDs again for other transactions, and
// the followers skip them); the acknowledged writes no server held after
// the crash are the loss relaxed durability causes, not promised and left
// out of the loss check (docs/safety.md).
const faultOwnTail = "relaxed-durability-active-crashes-losing-its-tail"

// ownTailCrash is what one such crash left.
type ownTailCrash struct {
	site string
	at   time.Time
	// dbs and rows are what the followers held when it crashed.
	dbs  map[string]bool
	rows map[int64]bool
	// forked: GTIDs of its own server UUID the followers held and it lost.
	forked gtid.Set
}

// ownTails are the crashes of each sequence, by seed.
var ownTails sync.Map // uint64 -> *[]ownTailCrash

func (h *harnessRun) ownTailCrashes() []ownTailCrash {
	if v, ok := ownTails.Load(h.seed); ok {
		return *(v.(*[]ownTailCrash))
	}
	return nil
}

// injectOwnTail runs the fault on the active site a; it returns a note.
func (h *harnessRun) injectOwnTail(a string, followers []string, r *rand.Rand) string {
	f := h.f
	db := adminDB(h.t, f.sites[a].sim)
	for _, q := range []string{"SET GLOBAL sync_binlog = 0", "SET GLOBAL innodb_flush_log_at_trx_commit = 2"} {
		if _, err := db.Exec(q); err != nil {
			return fmt.Sprintf("%s refused %q: %v; no crash", a, q, err)
		}
	}
	time.Sleep(time.Duration(300+r.IntN(600)) * time.Millisecond) // writes go on, unflushed
	c := ownTailCrash{site: a, at: time.Now(), dbs: map[string]bool{}, rows: map[int64]bool{}}
	f.crash(a)
	var held gtid.Set
	for _, x := range followers {
		snap := f.sites[x].sim.Snapshot()
		held = held.Union(snap.Executed.Union(snap.Retrieved))
		dbs, rows := h.holdings(x)
		for k := range dbs {
			c.dbs[k] = true
		}
		for k := range rows {
			c.rows[k] = true
		}
	}
	own := f.sites[a].sim.Snapshot().Executed // what its data directory kept
	c.forked = held.Subtract(own).Subtract(topology.Divergent(held, own, h.uuid[a]))
	v, _ := ownTails.LoadOrStore(h.seed, &[]ownTailCrash{})
	list := v.(*[]ownTailCrash)
	*list = append(*list, c)
	note := fmt.Sprintf("%s restarts with %s; its followers hold %s of its own it lost", a, own.OneLine(), c.forked.OneLine())
	if c.forked.IsEmpty() {
		note = fmt.Sprintf("%s restarts with %s; its followers hold nothing of its own it lost", a, own.OneLine())
	}
	if r.IntN(2) == 0 {
		f.restartMySQLD(f.sites[a])
		return note + ", restarted at once"
	}
	time.Sleep(hold(r))
	return note
}

// ownTailUnpromised: an acknowledged write of a site that lost its tail,
// sent before the crash, that neither a follower held then nor the site
// itself holds now: no server kept it (not promised).
func (h *harnessRun) ownTailUnpromised(w attempt, siteHoldings func(string) (map[string]bool, map[int64]bool)) bool {
	for _, c := range h.ownTailCrashes() {
		if w.site != c.site || !w.sent.Before(c.at) {
			continue
		}
		dbs, rows := siteHoldings(c.site)
		if w.db != "" && !c.dbs[w.db] && !dbs[w.db] || w.db == "" && !c.rows[w.row] && !rows[w.row] {
			return true
		}
	}
	return false
}

// checkOwnTail: every write a crashed site acknowledged that a follower
// held when it crashed is on the final active site's server (dbs, rows).
func (h *harnessRun) checkOwnTail(acked []attempt, dbs map[string]bool, rows map[int64]bool, final string) {
	var since time.Time // each write is judged at the first crash after it
	for _, c := range h.ownTailCrashes() {
		n := 0
		for _, w := range acked {
			if w.site != c.site || !w.sent.Before(c.at) || w.sent.Before(since) {
				continue
			}
			if w.db != "" && c.dbs[w.db] && !dbs[w.db] || w.db == "" && c.rows[w.row] && !rows[w.row] {
				n++
				if n == 1 {
					h.violations = append(h.violations, fmt.Sprintf("own tail: %s acknowledged %s before it crashed with relaxed durability, a follower held it then, and the final active site %s does not (it lost %s; reasserted, it issued those GTIDs again)",
						c.site, w.what(), final, c.forked.OneLine()))
				}
			}
		}
		since = c.at
	}
}

// ownTailHoldings caches holdings per site for one report.
func (h *harnessRun) ownTailHoldings() func(string) (map[string]bool, map[int64]bool) {
	type hold struct {
		dbs  map[string]bool
		rows map[int64]bool
	}
	cache := map[string]hold{}
	return func(site string) (map[string]bool, map[int64]bool) {
		if c, ok := cache[site]; ok {
			return c.dbs, c.rows
		}
		dbs, rows := h.holdings(site)
		cache[site] = hold{dbs, rows}
		return dbs, rows
	}
}
