package managerintegration

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// The harness's clients and the world-truth judgement of invariant 1.
//
// Besides the client that writes wherever status.activeSite points (as a
// client following DNS would), every site has a client pinned to its
// address (as clients behind a stale DNS answer, or configured with the
// site's address, would be). The pinned clients write throughout the
// sequence, to frozen, thawing, fenced and isolated sites alike, and never
// ask the operator anything. Each attempt is stamped on the client side
// just before the call and just after the answer: a write acknowledged in
// [sent, acked] committed on its server at some instant inside it.

// attempt is one client write and what the client saw.
type attempt struct {
	site, db    string
	row         int64  // a transaction's row in harnessTable (db empty)
	client      string // "pinned", "active" or a fault's client
	sent, acked time.Time
	ok          bool // the server acknowledged it
}

// clientLog is every attempt of a sequence's clients.
type clientLog struct {
	mu  sync.Mutex
	all []attempt
}

func (l *clientLog) add(a attempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, a)
}

// ackedSince reports whether site acknowledged a write sent after since.
func (l *clientLog) ackedSince(site string, since time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.all) - 1; i >= 0 && !l.all[i].acked.Before(since); i-- {
		if a := l.all[i]; a.ok && a.site == site && !a.sent.Before(since) {
			return true
		}
	}
	return false
}

func (l *clientLog) snapshot() []attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]attempt(nil), l.all...)
}

// appDB opens a pool to addr as the application account, waiting at most
// wait for an answer.
func appDB(addr string, wait time.Duration) (*sql.DB, error) {
	return sql.Open("mysql", simtest.AppUser+":"+simtest.AppPass+"@tcp("+addr+")/?timeout=300ms&writeTimeout=300ms&readTimeout="+wait.String())
}

// pinnedWait is how long a pinned client waits for an answer: longer than
// a fence statement may hold its write (protocol.SelfFenceStatementTimeout),
// as an application's query timeout usually is, so a write queued behind a
// fence that gives up is acknowledged when it commits.
const pinnedWait = 10 * time.Second

// pinnedEvery is the pause between a pinned client's writes: three of them
// per sequence, so slower than the active client's 15 ms.
const pinnedEvery = 40 * time.Millisecond

// pinnedWrites writes one database per attempt to site s's own address
// until ctx ends, every pinnedEvery, and logs every attempt.
func (h *harnessRun) pinnedWrites(ctx context.Context, s string) {
	db, err := appDB(h.f.sites[s].sim.Addr(), pinnedWait)
	if err != nil {
		h.t.Errorf("pinned client of %s: %v", s, err)
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for i := 0; ctx.Err() == nil; i++ {
		h.write(ctx, db, s, "pinned", fmt.Sprintf("p%s%d", s, i))
		time.Sleep(pinnedEvery)
	}
}

// write sends one CREATE DATABASE and logs the attempt with its client-side
// stamps; it reports whether the server acknowledged it.
func (h *harnessRun) write(ctx context.Context, db *sql.DB, site, client, name string) bool {
	sent := time.Now()
	_, err := db.ExecContext(ctx, "CREATE DATABASE "+name)
	a := attempt{site: site, db: name, client: client, sent: sent, acked: time.Now(), ok: err == nil}
	if ctx.Err() != nil && err != nil {
		return false // the sequence ended under it: not an answer from the server
	}
	h.clients.add(a)
	return a.ok
}

// writerWindow is a stretch of time during which site certainly took
// writes: its pinned client's consecutive attempts from first to last were
// all acknowledged, nothing refused or unanswered in between, so the site
// committed one at or before from and one at or after to.
type writerWindow struct {
	site     string
	from, to time.Time
}

// writerWindows are the windows of every site's pinned client.
func writerWindows(all []attempt) []writerWindow {
	bySite := map[string][]attempt{}
	for _, a := range all {
		if a.client == "pinned" {
			bySite[a.site] = append(bySite[a.site], a)
		}
	}
	var out []writerWindow
	for s, as := range bySite {
		sort.Slice(as, func(i, j int) bool { return as[i].sent.Before(as[j].sent) })
		for i := 0; i < len(as); {
			if !as[i].ok {
				i++
				continue
			}
			j := i
			for j+1 < len(as) && as[j+1].ok {
				j++
			}
			if w := (writerWindow{site: s, from: as[i].acked, to: as[j].sent}); w.from.Before(w.to) {
				out = append(out, w)
			}
			i = j + 1
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].from.Before(out[j].from) })
	return out
}

// twoWriterFinding is one pair of sites that took writes at once: the
// first acknowledgement that shows it, and when it was sent.
type twoWriterFinding struct {
	msg string
	at  time.Time
}

// twoWriters is invariant 1 judged by what the clients saw: an
// acknowledgement from one site whose whole [sent, acked] lies inside
// another site's writer window. Then both sites took writes at one instant
// (the acknowledged write's commit), whatever the operator believed about
// either. It returns one finding per ordered site pair, with the first such
// write.
func twoWriters(all []attempt) []twoWriterFinding {
	windows := writerWindows(all)
	acked := make([]attempt, 0, len(all))
	for _, a := range all {
		if a.ok {
			acked = append(acked, a)
		}
	}
	sort.Slice(acked, func(i, j int) bool { return acked[i].sent.Before(acked[j].sent) })
	type pair struct{ in, other string }
	first := map[pair]twoWriterFinding{}
	var order []pair
	for _, w := range windows {
		k := sort.Search(len(acked), func(i int) bool { return !acked[i].sent.Before(w.from) })
		for ; k < len(acked) && !acked[k].sent.After(w.to); k++ {
			a := acked[k]
			if a.site == w.site || a.acked.After(w.to) {
				continue
			}
			p := pair{w.site, a.site}
			if _, seen := first[p]; !seen {
				order = append(order, p)
				first[p] = twoWriterFinding{at: a.sent, msg: fmt.Sprintf("invariant 1 (client acknowledgements): %s acknowledged %s (%s client, sent %s, acknowledged %s) while %s acknowledged every write of its pinned client from %s to %s",
					a.site, a.what(), a.client, stamp(a.sent), stamp(a.acked), w.site, stamp(w.from), stamp(w.to))}
			}
		}
	}
	out := make([]twoWriterFinding, 0, len(order))
	for _, p := range order {
		out = append(out, first[p])
	}
	return out
}

// what names the attempt's write.
func (a attempt) what() string {
	if a.db != "" {
		return "CREATE DATABASE " + a.db
	}
	return fmt.Sprintf("the COMMIT of row %d", a.row)
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }
