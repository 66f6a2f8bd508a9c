package managerintegration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// The faults that hold a fence off or take away what it needs (issue 19):
// an idle open transaction, a long-running write whose rollback is slow,
// the sidecar down or crashed, a thaw after the failover, and every client
// connection in use. Each is what a production primary meets when it is cut
// off; each is then followed by the loss of that primary, so that only its
// own sidecar can stop it before another site is promoted.

// harnessTable is where the faults' transactions write (created at the
// start of every sequence, replicated everywhere).
const harnessTable = "harness.t"

// txnRows numbers the rows the faults' transactions insert.
var txnRows atomic.Int64

// heldTxn is an application transaction left open on a site.
type heldTxn struct {
	site string
	db   *sql.DB
	conn *sql.Conn
	row  int64
	done chan struct{} // closed when its long statement returned (nil: none)
	stop func()        // gives up waiting for the long statement
}

// openTxn opens an application transaction on site that wrote one row, on a
// pooled connection with no read deadline (an idle transaction's client
// waits as long as it likes). It returns nil when the site refused.
func (h *harnessRun) openTxn(site string) *heldTxn {
	db, err := sql.Open("mysql", simtest.AppUser+":"+simtest.AppPass+"@tcp("+h.f.sites[site].sim.Addr()+")/?timeout=1s")
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err == nil {
		_, err = conn.ExecContext(ctx, "BEGIN")
	}
	row := txnRows.Add(1)
	if err == nil {
		_, err = conn.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (id, note) VALUES (%d, 'open')", harnessTable, row))
	}
	if err != nil {
		h.t.Logf("seed %d: no transaction opened on %s: %v", h.seed, site, err)
		if conn != nil {
			_ = conn.Close()
		}
		_ = db.Close()
		return nil
	}
	return &heldTxn{site: site, db: db, conn: conn, row: row}
}

// longWrite runs, inside the open transaction, a statement that takes d
// (an INSERT whose value is SLEEP's), as a long batch write would.
func (x *heldTxn) longWrite(d time.Duration) {
	x.done = make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), d+5*time.Second)
	x.stop = cancel
	go func() {
		defer close(x.done)
		defer cancel()
		_, _ = x.conn.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (id, note) VALUES (%d, SLEEP(%.1f))", harnessTable, txnRows.Add(1), d.Seconds()))
	}()
}

// end commits the transaction (logging the attempt: a commit the server
// acknowledges is a client write like any other) or abandons it, as an
// application finishing or dropping its connection would.
func (h *harnessRun) endTxn(x *heldTxn, commit bool) {
	if x == nil {
		return
	}
	if commit {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		sent := time.Now()
		_, err := x.conn.ExecContext(ctx, "COMMIT")
		cancel()
		h.clients.add(attempt{site: x.site, row: x.row, client: "transaction", sent: sent, acked: time.Now(), ok: err == nil})
		h.t.Logf("seed %d: COMMIT of the open transaction on %s: %v", h.seed, x.site, errOrOK(err))
	}
	if x.stop != nil {
		// The client gives up and drops the connection; the statement may
		// run on in mysqld, as a long one does until it next checks.
		x.stop()
	}
	_ = x.conn.Close()
	if x.done != nil {
		select {
		case <-x.done:
		case <-time.After(time.Second): // the session was killed or is rolling back; the client gives up
		}
	}
	_ = x.db.Close()
}

func errOrOK(err error) string {
	if err == nil {
		return "acknowledged"
	}
	return err.Error()
}

// exhaust lowers site's max_connections to a few above what is connected
// now and opens application connections until mysqld refuses one with 1040.
// The connections stay checked out of their pool (the sessions stay open)
// until the caller closes them.
func (h *harnessRun) exhaust(site string, r *rand.Rand) (*sql.DB, []*sql.Conn) {
	sim := h.f.sites[site].sim
	sim.SetMaxConnections(int64(sim.Snapshot().Sessions + 2 + r.IntN(4)))
	db, err := sql.Open("mysql", simtest.AppUser+":"+simtest.AppPass+"@tcp("+sim.Addr()+")/?timeout=1s")
	if err != nil {
		h.t.Fatal(err)
	}
	var conns []*sql.Conn
	for range 64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := db.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
		}
		cancel()
		if err != nil {
			var me *driver.MySQLError
			if !errors.As(err, &me) || me.Number != 1040 {
				h.t.Logf("seed %d: exhausting %s: %v", h.seed, site, err)
			}
			if c != nil {
				_ = c.Close()
			}
			break
		}
		conns = append(conns, c)
	}
	return db, conns
}

// faultRun is what a fault left open, to be closed when it is healed.
type faultRun struct {
	mu      sync.Mutex
	closers []func()
}

func (fr *faultRun) add(f func()) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.closers = append(fr.closers, f)
}

func (fr *faultRun) close() {
	fr.mu.Lock()
	cs := fr.closers
	fr.closers = nil
	fr.mu.Unlock()
	for _, f := range cs {
		f()
	}
}

// waitPublished waits up to limit for a site other than old to be
// published active and acknowledge a write of its pinned client; it returns
// that site, or "" if none was in time.
func (h *harnessRun) waitPublished(old string, limit time.Duration) string {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if a := h.activeSite(); a != "" && a != old {
			since := time.Now()
			for time.Now().Before(deadline) {
				if h.clients.ackedSince(a, since) {
					return a
				}
				time.Sleep(20 * time.Millisecond)
			}
			return a
		}
		time.Sleep(50 * time.Millisecond)
	}
	return ""
}

// holdFence holds a fault of the active site a: two times in three until
// another site was published and acknowledged a write (at most 30 s), and
// up to 2 s more, so that a fence the fault held off meets a new primary
// taking writes; else 1-10 s (healed before the failover or in the middle).
func (h *harnessRun) holdFence(a string, r *rand.Rand) {
	if r.IntN(3) == 0 {
		time.Sleep(time.Duration(1000+r.IntN(9000)) * time.Millisecond)
		return
	}
	h.waitPublished(a, 30*time.Second)
	time.Sleep(time.Duration(r.IntN(2000)) * time.Millisecond)
}

// injectFenceFault applies one of issue 19's faults to the active site a
// and holds it; the caller heals it. It returns the fault's note.
func (h *harnessRun) injectFenceFault(kind, a string, followers []string, r *rand.Rand) string {
	f := h.f
	hs := f.sites[a]
	peers := r.IntN(2) == 0 // isolated from the operator and its peers, or from the operator only
	cut := "the operator"
	if peers {
		cut = "the operator and its peers"
	}
	switch kind {
	case faultIdleTxn:
		// A pooled connection left in BEGIN after a write: the fence
		// waits for it (mysqlsim waitForOpenTransactionsLocked).
		x := h.openTxn(a)
		f.isolate(a, peers)
		h.holdFence(a, r)
		commit := r.IntN(2) == 0
		h.endTxn(x, commit) // the application commits at last, or drops it
		return fmt.Sprintf("cut off from %s; commit at the end %v", cut, commit)
	case faultLongWrite:
		// A transaction in the middle of a long write; killed (or
		// disconnected) it rolls back for a while, holding the fence off
		// all that time.
		rollback := time.Duration(3000+r.IntN(12000)) * time.Millisecond
		hs.sim.SetRollbackTime(rollback)
		x := h.openTxn(a)
		if x != nil {
			x.longWrite(30 * time.Second)
		}
		f.isolate(a, peers)
		h.holdFence(a, r)
		h.endTxn(x, false)
		return fmt.Sprintf("rollback %s, cut off from %s", rollback, cut)
	case faultSidecarCrash:
		// The sidecar's container crashes while its site is cut off and is
		// restarted by the kubelet: a fresh sidecar with nothing heard.
		f.isolate(a, true)
		before := time.Duration(r.IntN(2000)) * time.Millisecond
		down := time.Duration(500+r.IntN(2500)) * time.Millisecond
		time.Sleep(before)
		f.stopSidecar(hs)
		time.Sleep(down)
		f.runSidecar(hs)
		h.holdFence(a, r)
		return fmt.Sprintf("sidecar down %s to %s after the cut", before, before+down)
	case faultSidecarDown:
		if r.IntN(2) == 0 {
			// A follower without its sidecar: the isolated primary's
			// sidecar hears one peer less, the new primary may be it.
			x := followers[r.IntN(len(followers))]
			f.stopSidecar(f.sites[x])
			f.isolate(a, peers)
			h.holdFence(a, r)
			return fmt.Sprintf("%s's sidecar down, %s cut off from %s", x, a, cut)
		}
		// The active site's sidecar is down when its mysqld crashes: it
		// comes back read-only, without a sidecar, and the operator alone
		// must keep it so.
		f.stopSidecar(hs)
		time.Sleep(time.Duration(200+r.IntN(1000)) * time.Millisecond)
		f.crash(a)
		time.Sleep(hold(r))
		return "its sidecar down, then its mysqld crashes"
	case faultThawAfter:
		// Frozen until another site is published and took a write, then
		// thawed: what it queued runs, and its pinned client writes on.
		f.freeze(a)
		b := h.waitPublished(a, 30*time.Second)
		extra := time.Duration(r.IntN(1000)) * time.Millisecond
		time.Sleep(extra)
		if b == "" {
			return "no other site published within 30s"
		}
		return fmt.Sprintf("thawed %s after %s was published and took a write", extra, b)
	case faultConnsExhausted:
		// Every client connection in use (max_connections reached by
		// application sessions), sometimes one of them in an open
		// transaction; a fence must not need one more.
		var x *heldTxn
		if r.IntN(2) == 0 {
			x = h.openTxn(a)
		}
		db, conns := h.exhaust(a, r)
		h.open.add(func() {
			for _, c := range conns {
				_ = c.Close()
			}
			_ = db.Close()
		})
		f.isolate(a, peers)
		h.holdFence(a, r)
		h.endTxn(x, false)
		return fmt.Sprintf("%d application sessions, open transaction %v, cut off from %s", len(conns), x != nil, cut)
	}
	panic("unknown fault " + kind)
}
