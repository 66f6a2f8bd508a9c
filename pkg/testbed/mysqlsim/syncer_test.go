package mysqlsim_test

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// The independent proof of the source side (docs/mysql-simulator.md,
// "Replication protocol (source)"): go-mysql's BinlogSyncer, which speaks
// COM_REGISTER_SLAVE and COM_BINLOG_DUMP_GTID as a replica does, streams
// from a simulated source and must see exactly what the clients saw
// acknowledged.

// streamedTxn is one transaction as the syncer received it.
type streamedTxn struct {
	gtid             string
	original         time.Time
	written, deleted [][]any
	query            string
	ops              []rowOp // every rows event, in order
}

type rowOp struct {
	table  string // db.table
	delete bool
	rows   [][]any
}

type streamedHeartbeat struct {
	at      time.Time
	file    string
	logPos  uint32
	version int
}

// streamedEvent is the position of an event the syncer received.
type streamedEvent struct {
	file       string
	start      uint32
	typ        replication.EventType
	artificial bool
	when       uint32
}

// collector reads a BinlogStreamer in the background.
type collector struct {
	mu         sync.Mutex
	txns       []streamedTxn
	heartbeats []streamedHeartbeat
	events     []streamedEvent
	err        error
	done       chan struct{}
}

func (c *collector) run(ctx context.Context, s *replication.BinlogStreamer) {
	defer close(c.done)
	var cur *streamedTxn
	file := ""
	for {
		e, err := s.GetEvent(ctx)
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		h := e.Header
		if h.EventType != replication.HEARTBEAT_EVENT && h.EventType != replication.HEARTBEAT_LOG_EVENT_V2 {
			c.events = append(c.events, streamedEvent{file: file, start: h.LogPos - h.EventSize, typ: h.EventType,
				artificial: h.Flags&0x20 != 0, when: h.Timestamp})
		}
		switch ev := e.Event.(type) {
		case *replication.RotateEvent:
			file = string(ev.NextLogName) // a real rotate event lies in the file it ends
		case *replication.HeartbeatEvent:
			c.heartbeats = append(c.heartbeats, streamedHeartbeat{time.Now(), ev.Filename, h.LogPos, ev.Version})
		case *replication.GTIDEvent:
			next, _ := ev.GTIDNext()
			cur = &streamedTxn{gtid: next.String(), original: ev.OriginalCommitTime()}
		case *replication.GtidTaggedLogEvent:
			next, _ := ev.GTIDNext()
			cur = &streamedTxn{gtid: next.String(), original: ev.OriginalCommitTime()}
		case *replication.RowsEvent:
			if cur != nil && ev.Table != nil {
				cur.ops = append(cur.ops, rowOp{string(ev.Table.Schema) + "." + string(ev.Table.Table),
					h.EventType == replication.DELETE_ROWS_EVENTv2, ev.Rows})
			}
			if cur != nil && h.EventType == replication.WRITE_ROWS_EVENTv2 {
				cur.written = append(cur.written, ev.Rows...)
			} else if cur != nil {
				cur.deleted = append(cur.deleted, ev.Rows...)
			}
		case *replication.XIDEvent:
			if cur != nil {
				c.txns, cur = append(c.txns, *cur), nil
			}
		case *replication.QueryEvent:
			if q := string(ev.Query); cur != nil && q != "BEGIN" {
				cur.query = q
				c.txns, cur = append(c.txns, *cur), nil
			}
		}
		c.mu.Unlock()
	}
}

func (c *collector) snapshot() ([]streamedTxn, []streamedHeartbeat, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]streamedTxn(nil), c.txns...), append([]streamedHeartbeat(nil), c.heartbeats...), c.err
}

// gtids lists the streamed GTIDs in order, with go-mysql's own repeat after
// a reconnect removed: the syncer asks again for the last transaction it
// saw the GTID of (its prevGset lags one transaction), so that one may come
// twice in a row; the function fails on any other repeat.
func (c *collector) gtids(t *testing.T) []string {
	t.Helper()
	txns, _, _ := c.snapshot()
	var out []string
	seen := map[string]bool{}
	for _, tx := range txns {
		if len(out) > 0 && out[len(out)-1] == tx.gtid {
			continue
		}
		if seen[tx.gtid] {
			t.Fatalf("the source sent %s twice, not in a row: %v", tx.gtid, txnGTIDs(txns))
		}
		seen[tx.gtid] = true
		out = append(out, tx.gtid)
	}
	return out
}

func txnGTIDs(txns []streamedTxn) []string {
	var out []string
	for _, tx := range txns {
		out = append(out, tx.gtid)
	}
	return out
}

type syncerOpts struct {
	tls       *tls.Config
	heartbeat time.Duration
	user      string
	pass      string
	serverID  uint32
}

// startSyncer starts a BinlogSyncer on addr from the GTID set from; it is
// closed at test cleanup.
func startSyncer(t *testing.T, addr string, from gtid.Set, o syncerOpts) (*replication.BinlogSyncer, *collector) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	if o.user == "" {
		o.user, o.pass = simtest.ReplUser, simtest.ReplPass
	}
	if o.serverID == 0 {
		o.serverID = 9001
	}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: o.serverID, Flavor: gomysql.MySQLFlavor, Host: host, Port: uint16(p),
		User: o.user, Password: o.pass, TLSConfig: o.tls, HeartbeatPeriod: o.heartbeat,
		VerifyChecksum: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	set, err := gomysql.ParseMysqlGTIDSet(from.OneLine())
	if err != nil {
		t.Fatal(err)
	}
	stream, err := syncer.StartSyncGTID(set)
	if err != nil {
		syncer.Close()
		t.Fatal(err)
	}
	c := &collector{done: make(chan struct{})}
	cctx, cancel := context.WithCancel(context.Background())
	go c.run(cctx, stream)
	t.Cleanup(func() {
		cancel()
		syncer.Close()
		<-c.done
	})
	return syncer, c
}

// waitFor polls cond until it holds or 30 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// workload commits a mix of transactions and returns what each client saw.
func workload(t *testing.T, db *sql.DB, round int) []commitRecord {
	t.Helper()
	tbl := fmt.Sprintf("d.t%d", round)
	recs := []commitRecord{
		commit(t, db, "CREATE TABLE "+tbl+" (id INT, v VARCHAR(20))"),
		commit(t, db, fmt.Sprintf("INSERT INTO %s VALUES (1, 'a%d'), (2, NULL)", tbl, round)),
		commit(t, db, "BEGIN", fmt.Sprintf("INSERT INTO %s (id, v) VALUES (3, 'c')", tbl),
			fmt.Sprintf("INSERT INTO %s VALUES (4, 'd')", tbl), "COMMIT"),
		commit(t, db, "DELETE FROM "+tbl),
		commit(t, db, fmt.Sprintf("INSERT INTO %s VALUES (5, 'e%d')", tbl, round)),
	}
	return recs
}

func recordGTIDs(recs []commitRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.gtid.String())
	}
	return out
}

func sameStrings(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// TestSyncerSeesAcknowledgedTransactions: go-mysql's syncer, from a GTID
// set, with and without TLS (caching_sha2_password, full authentication),
// receives exactly the transactions committed after that set, in order,
// with the rows the clients wrote and deleted, original commit timestamps
// inside the window each client saw its commit in, checksums verified, and
// every event at the position the binary log files hold it at.
func TestSyncerSeesAcknowledgedTransactions(t *testing.T) {
	tl := simtest.NewTLS(t)
	for _, mode := range []struct {
		name string
		tls  *tls.Config
	}{{"tls", tl.Client}, {"plain", nil}} {
		t.Run(mode.name, func(t *testing.T) {
			srv := simtest.Start(t, mysqlsim.Config{TLS: tl.Server})
			db := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
			before := []commitRecord{commit(t, db, "CREATE DATABASE d")}
			before = append(before, workload(t, db, 0)...)
			from := executedSet(t, db)
			_, c := startSyncer(t, srv.Addr(), from, syncerOpts{tls: mode.tls})
			recs := workload(t, db, 1)
			if _, err := db.ExecContext(ctx(t), "FLUSH BINARY LOGS"); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, workload(t, db, 2)...)
			want := recordGTIDs(recs)
			waitFor(t, "the syncer to receive every transaction", func() bool {
				txns, _, err := c.snapshot()
				if err != nil {
					t.Fatalf("stream ended: %v", err)
				}
				return len(txns) >= len(want)
			})
			time.Sleep(100 * time.Millisecond) // nothing more may arrive
			if got := c.gtids(t); !sameStrings(got, want) {
				t.Fatalf("streamed GTIDs\n%v\nwant (committed after %s)\n%v", got, from.OneLine(), want)
			}
			txns, _, _ := c.snapshot()
			for i, tx := range txns {
				if !within(tx.original, recs[i].before, recs[i].after) {
					t.Errorf("%s: original commit %v outside the client's window [%v, %v]", tx.gtid, tx.original, recs[i].before, recs[i].after)
				}
			}
			for round, base := range []int{0, 5} {
				r := round + 1
				checkRows(t, txns[base:base+5], r)
			}
			checkStreamMatchesFiles(t, srv, c)
		})
	}
}

// checkRows compares one workload round's row events with what the
// clients wrote (values as text, NULL as nil).
func checkRows(t *testing.T, txns []streamedTxn, round int) {
	t.Helper()
	str := func(rows [][]any) string {
		var b strings.Builder
		for _, r := range rows {
			for _, v := range r {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%v|", v)
			}
			b.WriteString(";")
		}
		return b.String()
	}
	checks := []struct {
		got, want string
	}{
		{txns[0].query, fmt.Sprintf("CREATE TABLE d.t%d (id INT, v VARCHAR(20))", round)},
		{str(txns[1].written), fmt.Sprintf("1|a%d|;2|<nil>|;", round)},
		{str(txns[2].written), "3|c|;4|d|;"},
		{str(txns[3].deleted), fmt.Sprintf("1|a%d|;2|<nil>|;3|c|;4|d|;", round)},
		{str(txns[4].written), fmt.Sprintf("5|e%d|;", round)},
	}
	for i, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("round %d transaction %d: streamed %q, the client wrote %q", round, i, ch.got, ch.want)
		}
	}
}

// checkStreamMatchesFiles: each file's stream starts with an artificial
// rotate event (timestamp and log_pos 0) and the file's format
// description, and every other event the syncer got lies in the source's
// binary log files at the position its header says, with the same type.
func checkStreamMatchesFiles(t *testing.T, srv *mysqlsim.Server, c *collector) {
	t.Helper()
	log := parseBinlogDir(t, srv.BinlogDir())
	c.mu.Lock()
	events := append([]streamedEvent(nil), c.events...)
	c.mu.Unlock()
	inFile := map[string]bool{}
	for f, evs := range log.events {
		for _, e := range evs {
			inFile[f+" "+e] = true
		}
	}
	rotates := 0
	for i, e := range events {
		if e.artificial {
			rotates++
			if e.typ != replication.ROTATE_EVENT || e.when != 0 || i+1 >= len(events) ||
				events[i+1].typ != replication.FORMAT_DESCRIPTION_EVENT {
				t.Errorf("event %d: artificial %v at %d, then %v", i, e.typ, e.when, events[min(i+1, len(events)-1)].typ)
			}
			continue
		}
		if e.typ == replication.FORMAT_DESCRIPTION_EVENT {
			continue // sent with log_pos 0 when the replica skips its first transaction
		}
		if key := fmt.Sprintf("%s %d %s", e.file, e.start, e.typ); !inFile[key] {
			t.Errorf("streamed event %q is not in the source's files", key)
		}
	}
	if rotates < 2 {
		t.Errorf("%d artificial rotate events for a stream across a rotation, want one per file", rotates)
	}
}

// TestSyncerContinuesAcrossRestarts: the source restarts (cleanly, and
// after a crash) under a streaming syncer, which reconnects and goes on
// without a gap or a repeated transaction; then the syncer itself is
// replaced by a new one from the set it had received, which goes on too.
func TestSyncerContinuesAcrossRestarts(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	db := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	recs := []commitRecord{commit(t, db, "CREATE DATABASE d")}
	_, c := startSyncer(t, srv.Addr(), gtid.Set{}, syncerOpts{})
	recs = append(recs, workload(t, db, 1)...)
	waitFor(t, "the first round", func() bool { return len(c.gtids(t)) == len(recs) })
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	recs = append(recs, workload(t, db, 2)...)
	srv.Crash()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	recs = append(recs, workload(t, db, 3)...)
	want := recordGTIDs(recs)
	waitFor(t, "the syncer to catch up after the source's restarts", func() bool {
		_, _, err := c.snapshot()
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		return len(c.gtids(t)) >= len(want)
	})
	if got := c.gtids(t); !sameStrings(got, want) {
		t.Fatalf("streamed across restarts\n%v\nwant\n%v", got, want)
	}

	// The replica side restarts: a new syncer from what was received.
	received := gtid.MustParse(strings.Join(want, ","))
	_, c2 := startSyncer(t, srv.Addr(), received, syncerOpts{serverID: 9002})
	more := workload(t, db, 4)
	want2 := recordGTIDs(more)
	waitFor(t, "the new syncer", func() bool { return len(c2.gtids(t)) >= len(want2) })
	time.Sleep(100 * time.Millisecond)
	if got := c2.gtids(t); !sameStrings(got, want2) {
		t.Fatalf("a syncer started from %s got\n%v\nwant\n%v", received.OneLine(), got, want2)
	}
}

// TestSyncerHeartbeats: an idle source sends a heartbeat at each
// heartbeat period the syncer asked for (SET @source_heartbeat_period),
// naming the current file and position; without a period it sends none.
func TestSyncerHeartbeats(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	db := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	commit(t, db, "CREATE DATABASE d")
	const period = 200 * time.Millisecond
	_, c := startSyncer(t, srv.Addr(), gtid.Set{}, syncerOpts{heartbeat: period})
	_, quiet := startSyncer(t, srv.Addr(), gtid.Set{}, syncerOpts{serverID: 9003})
	waitFor(t, "the transaction", func() bool { return len(c.gtids(t)) == 1 })
	var file string
	var pos uint32
	row := db.QueryRowContext(ctx(t), "SHOW BINARY LOG STATUS")
	var doDB, ignoreDB, executed string
	if err := row.Scan(&file, &pos, &doDB, &ignoreDB, &executed); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "five heartbeats", func() bool {
		_, hb, _ := c.snapshot()
		return len(hb) >= 5
	})
	_, hb, _ := c.snapshot()
	for i, h := range hb {
		if h.file != file || h.logPos != pos || h.version != 1 {
			t.Errorf("heartbeat %d names %s at %d (v%d), the source is at %s %d", i, h.file, h.logPos, h.version, file, pos)
		}
		if i == 0 {
			continue
		}
		// A timer never fires early; the upper bound only catches a
		// heartbeat sent at some other period.
		if gap := h.at.Sub(hb[i-1].at); gap < period*8/10 || gap > 10*period {
			t.Errorf("heartbeats %d and %d are %v apart, the period is %v", i-1, i, gap, period)
		}
	}
	if _, qhb, _ := quiet.snapshot(); len(qhb) != 0 {
		t.Errorf("a syncer without a heartbeat period got %d heartbeats", len(qhb))
	}
}

// TestSyncerGets1236 : a syncer that needs purged transactions, or holds
// GTIDs of the source's UUID the source never executed, gets MySQL's
// fatal error 1236 with MySQL's text, and the stream ends.
func TestSyncerGets1236(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	db := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	commit(t, db, "CREATE DATABASE d")
	commit(t, db, "CREATE DATABASE e")
	srv.PurgeBinaryLogs()
	cases := []struct {
		name string
		from gtid.Set
		text string
	}{
		{"purged", gtid.MustParse(srv.ServerUUID() + ":1"), "Cannot replicate because the source purged required binary logs. Replicate the missing transactions from elsewhere, or provision a new replica from backup. Consider increasing the source's binary log expiration period. The GTID set sent by the replica is '" + srv.ServerUUID() + ":1', and the missing transactions are '" + srv.ServerUUID() + ":2'"},
		{"ahead", gtid.MustParse(srv.ServerUUID() + ":1-3"), "Replica has more GTIDs than the source has, using the source's SERVER_UUID."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, c := startSyncer(t, srv.Addr(), tc.from, syncerOpts{})
			select {
			case <-c.done:
			case <-time.After(30 * time.Second):
				t.Fatal("the stream did not end")
			}
			_, _, err := c.snapshot()
			var me *gomysql.MyError
			if !errors.As(err, &me) || me.Code != 1236 || !strings.HasPrefix(me.Message, tc.text) {
				t.Fatalf("stream ended with %v, want 1236 %q", err, tc.text)
			}
		})
	}
	// Up to date after the purge, a syncer streams on.
	_, c := startSyncer(t, srv.Addr(), executedSet(t, db), syncerOpts{})
	rec := commit(t, db, "CREATE DATABASE f")
	waitFor(t, "the new transaction", func() bool { return len(c.gtids(t)) == 1 })
	if got := c.gtids(t); got[0] != rec.gtid.String() {
		t.Fatalf("got %v, want %s", got, rec.gtid)
	}
}

// TestSyncerAndReplicaSeeTheSame: a simulated replica and go-mysql's syncer
// stream from one source at once; the syncer's transactions are exactly the
// GTIDs the replica executed, and the rows its row events leave in each
// table are the rows SELECT returns on the replica.
func TestSyncerAndReplicaSeeTheSame(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{SuperReadOnly: true})
	db := adminDB(t, src)
	commit(t, db, "CREATE DATABASE d")
	workload(t, db, 1)
	replicate(t, rep, src, "")
	_, c := startSyncer(t, src.Addr(), gtid.Set{}, syncerOpts{})
	workload(t, db, 2)
	workload(t, db, 3)
	commit(t, db, "BEGIN", "INSERT INTO d.t3 VALUES (6, 'f'), (7, NULL)", "INSERT INTO d.t2 VALUES (8, 'g')", "COMMIT")
	want := executedSet(t, db)
	repDB := adminDB(t, rep)
	eventually(t, 30*time.Second, "the replica and the syncer to catch up", func() (bool, string) {
		got := executedSet(t, repDB)
		return got.Equal(want) && uint64(len(c.gtids(t))) >= want.Count(), got.OneLine()
	})
	streamed := gtid.MustParse(strings.Join(c.gtids(t), ","))
	if repSet := executedSet(t, repDB); !streamed.Equal(repSet) || uint64(len(c.gtids(t))) != repSet.Count() {
		t.Fatalf("the syncer got %s (%d transactions), the replica executed %s", streamed.OneLine(), len(c.gtids(t)), repSet.OneLine())
	}
	// Replay the row events: inserts append, deletes remove their rows.
	txns, _, _ := c.snapshot()
	tables := map[string][]string{}
	key := func(r []any) string {
		var b strings.Builder
		for _, v := range r {
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			fmt.Fprintf(&b, "%v|", v)
		}
		return b.String()
	}
	for _, tx := range txns {
		for _, op := range tx.ops {
			tbl := strings.TrimPrefix(op.table, "d.")
			for _, r := range op.rows {
				if !op.delete {
					tables[tbl] = append(tables[tbl], key(r))
					continue
				}
				for i, have := range tables[tbl] {
					if have == key(r) {
						tables[tbl] = append(tables[tbl][:i:i], tables[tbl][i+1:]...)
						break
					}
				}
			}
		}
	}
	for round := 1; round <= 3; round++ {
		tbl := fmt.Sprintf("t%d", round)
		rows, err := repDB.QueryContext(ctx(t), "SELECT id, v FROM d."+tbl)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var id, v sql.NullString
			if err := rows.Scan(&id, &v); err != nil {
				t.Fatal(err)
			}
			vs := "<nil>"
			if v.Valid {
				vs = v.String
			}
			got = append(got, id.String+"|"+vs+"|")
		}
		rows.Close()
		if !sameStrings(got, tables[tbl]) {
			t.Errorf("d.%s on the replica holds %v, the syncer's row events leave %v", tbl, got, tables[tbl])
		}
	}
}
