package mysqlsim_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/binlogfile"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// The replica side of MySQL's replication protocol: streaming across
// restarts, heartbeats, the relay log's loss and recovery, and the
// performance_schema replication tables, each judged by what the source's
// clients committed and what the replica finally holds.

// committedRows counts app.events on a server.
func committedRows(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(ctx(t), "SELECT COUNT(*) FROM app.events").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitExecuted waits until the replica executed every GTID of want.
func waitExecuted(t *testing.T, rep *mysqlsim.Server, want gtid.Set, what string) {
	t.Helper()
	eventually(t, 20*time.Second, what, func() (bool, string) {
		s := rep.Snapshot()
		return want.IsSubsetOf(s.Executed), s.String()
	})
}

// sameData checks the replica holds exactly the source's transactions and
// rows: no gap, no duplicate.
func sameData(t *testing.T, src, rep *mysqlsim.Server) {
	t.Helper()
	want := src.Snapshot().Executed
	waitExecuted(t, rep, want, "the replica applying everything the source committed")
	if got := rep.Snapshot().Executed; !got.Equal(want) {
		t.Fatalf("replica executed %s, source %s", got.OneLine(), want.OneLine())
	}
	if a, b := committedRows(t, adminDB(t, src)), committedRows(t, adminDB(t, rep)); a != b {
		t.Fatalf("replica holds %d rows, the source %d", b, a)
	}
}

func TestStreamingSurvivesRestartsOfEitherSide(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{SuperReadOnly: true})
	writeRows(t, adminDB(t, src), 3)
	replicate(t, rep, src, "")
	sameData(t, src, rep)

	if err := src.Restart(); err != nil {
		t.Fatal(err)
	}
	writeRows(t, adminDB(t, src), 3)
	sameData(t, src, rep)

	if err := rep.Restart(); err != nil {
		t.Fatal(err)
	}
	writeRows(t, adminDB(t, src), 3)
	sameData(t, src, rep)

	rep.Crash()
	writeRows(t, adminDB(t, src), 3) // while the replica is down
	if err := rep.Restart(); err != nil {
		t.Fatal(err)
	}
	writeRows(t, adminDB(t, src), 3)
	sameData(t, src, rep)
	if n := committedRows(t, adminDB(t, rep)); n != 15 {
		t.Fatalf("replica holds %d rows, want the 15 the source's clients committed", n)
	}

	// The relay log is real files in MySQL's format in the data directory.
	dir := rep.BinlogDir()
	idx, err := os.ReadFile(filepath.Join(dir, "sim"+serverNum(rep)+"-relay-bin.index"))
	if err != nil {
		t.Fatalf("relay log index: %v", err)
	}
	var names []string
	for _, l := range strings.Fields(string(idx)) {
		names = append(names, filepath.Base(l))
	}
	if len(names) != 1 {
		// every start began a file; relay_log_purge removed those applied
		t.Fatalf("relay log index lists %v; want only the file the applier reads", names)
	}
	for _, n := range names {
		fc, err := binlogfile.ReadRelayFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatalf("relay log %s: %v", n, err)
		}
		if !strings.Contains(n, "-relay-bin.") || fc.ServerVersion == "" {
			t.Fatalf("relay log %s: %+v", n, fc)
		}
	}
}

// serverNum is the number simtest put in the server's name (sim<N>).
func serverNum(s *mysqlsim.Server) string { return strings.TrimPrefix(s.Name(), "sim") }

// pfsRow reads one performance_schema row as strings (NULL as "NULL").
func pfsRow(t *testing.T, db *sql.DB, q string) map[string]string {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		return nil
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, c := range cols {
		out[c] = vals[i].String
		if !vals[i].Valid {
			out[c] = "NULL"
		}
	}
	return out
}

func connStatus(t *testing.T, db *sql.DB) map[string]string {
	return pfsRow(t, db, "SELECT * FROM performance_schema.replication_connection_status WHERE CHANNEL_NAME = ''")
}

func workerStatus(t *testing.T, db *sql.DB) map[string]string {
	return pfsRow(t, db, "SELECT * FROM performance_schema.replication_applier_status_by_worker")
}

func pfsTime(t *testing.T, v string) time.Time {
	t.Helper()
	tm, err := time.Parse("2006-01-02 15:04:05.000000", v)
	if err != nil {
		t.Fatalf("timestamp %q: %v", v, err)
	}
	return tm
}

const noTimestamp = "0000-00-00 00:00:00.000000"

func TestHeartbeatsWhileIdle(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	db := adminDB(t, rep)
	replicate(t, rep, src, ", SOURCE_HEARTBEAT_PERIOD = 0.2")
	eventually(t, 10*time.Second, "heartbeats", func() (bool, string) {
		st := connStatus(t, db)
		var n int
		fmt.Sscan(st["COUNT_RECEIVED_HEARTBEATS"], &n)
		return n >= 2 && st["LAST_HEARTBEAT_TIMESTAMP"] != noTimestamp, fmt.Sprint(st)
	})
	first := connStatus(t, db)
	time.Sleep(time.Second)
	second := connStatus(t, db)
	var n1, n2 int
	fmt.Sscan(first["COUNT_RECEIVED_HEARTBEATS"], &n1)
	fmt.Sscan(second["COUNT_RECEIVED_HEARTBEATS"], &n2)
	if n2-n1 < 2 {
		t.Fatalf("heartbeats in a second idle at a 0.2 s period: %d -> %d", n1, n2)
	}
	if !pfsTime(t, second["LAST_HEARTBEAT_TIMESTAMP"]).After(pfsTime(t, first["LAST_HEARTBEAT_TIMESTAMP"])) {
		t.Fatalf("LAST_HEARTBEAT_TIMESTAMP did not advance: %s -> %s", first["LAST_HEARTBEAT_TIMESTAMP"], second["LAST_HEARTBEAT_TIMESTAMP"])
	}
	if got := pfsRow(t, db, "SELECT HEARTBEAT_INTERVAL FROM performance_schema.replication_connection_configuration")["HEARTBEAT_INTERVAL"]; got != "0.200" {
		t.Fatalf("HEARTBEAT_INTERVAL %q, want 0.200", got)
	}

	// SOURCE_HEARTBEAT_PERIOD = 0 disables them.
	mustExec(t, db, "STOP REPLICA IO_THREAD")
	mustExec(t, db, "CHANGE REPLICATION SOURCE TO SOURCE_HEARTBEAT_PERIOD = 0")
	mustExec(t, db, "START REPLICA IO_THREAD")
	eventually(t, 10*time.Second, "reconnected", func() (bool, string) {
		st := connStatus(t, db)
		return st["SERVICE_STATE"] == "ON", fmt.Sprint(st)
	})
	before := connStatus(t, db)["COUNT_RECEIVED_HEARTBEATS"]
	time.Sleep(time.Second)
	if after := connStatus(t, db)["COUNT_RECEIVED_HEARTBEATS"]; after != before {
		t.Fatalf("heartbeats with SOURCE_HEARTBEAT_PERIOD = 0: %s -> %s", before, after)
	}
}

// TestFrozenSourceIsDeadAfterReplicaNetTimeout: no event and no heartbeat
// for replica_net_timeout seconds means the connection is dead: the
// receiver shows Connecting with 2013 and reconnects, then catches up once
// the source answers again.
func TestFrozenSourceIsDeadAfterReplicaNetTimeout(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	db := adminDB(t, rep)
	mustExec(t, db, "SET GLOBAL replica_net_timeout = 2")
	replicate(t, rep, src, ", SOURCE_HEARTBEAT_PERIOD = 0.5")
	writeRows(t, adminDB(t, src), 1)
	sameData(t, src, rep)
	// heartbeats keep an idle connection alive past the timeout
	time.Sleep(3 * time.Second)
	if st := replicaStatus(t, db); st.get("Replica_IO_Running") != "Yes" || st.get("Last_IO_Errno") != "0" {
		t.Fatalf("idle with heartbeats: %s %s %s", st.get("Replica_IO_Running"), st.get("Last_IO_Errno"), st.get("Last_IO_Error"))
	}
	src.Freeze()
	frozenAt := time.Now()
	eventually(t, 15*time.Second, "the receiver giving up on a frozen source", func() (bool, string) {
		st := replicaStatus(t, db)
		return st.get("Replica_IO_Running") == "Connecting" && st.get("Last_IO_Errno") == "2013", st.get("Replica_IO_Running") + " " + st.get("Last_IO_Error")
	})
	if d := time.Since(frozenAt); d < 1500*time.Millisecond {
		t.Fatalf("connection declared dead after %v, before replica_net_timeout (2 s)", d)
	}
	src.Thaw()
	writeRows(t, adminDB(t, src), 1)
	sameData(t, src, rep)
	if st := replicaStatus(t, db); st.get("Replica_IO_Running") != "Yes" {
		t.Fatalf("after thaw: %s", st.get("Replica_IO_Running"))
	}
}

// lagged sets up a source and a replica that received every transaction
// but applies none (injected lag), and returns what is unapplied.
func lagged(t *testing.T, recovery bool) (src, rep *mysqlsim.Server, unapplied gtid.Set) {
	t.Helper()
	src = simtest.Start(t, mysqlsim.Config{})
	rep = simtest.Start(t, mysqlsim.Config{RelayLogRecovery: recovery})
	mustExec(t, adminDB(t, rep), "SET GLOBAL sync_relay_log = 1")
	writeRows(t, adminDB(t, src), 2)
	replicate(t, rep, src, "")
	sameData(t, src, rep)
	if err := rep.InjectApplyLag(time.Hour); err != nil {
		t.Fatal(err)
	}
	before := src.Snapshot().Executed
	writeRows(t, adminDB(t, src), 3)
	all := src.Snapshot().Executed
	unapplied = all.Subtract(before)
	eventually(t, 10*time.Second, "received, not applied", func() (bool, string) {
		s := rep.Snapshot()
		return unapplied.IsSubsetOf(s.Retrieved) && uint64(s.RelayLogLength) == unapplied.Count(), s.String()
	})
	return src, rep, unapplied
}

// TestRelayLogRecoveryOffReadsTheRelayLogBack: with relay_log_recovery=OFF
// a restarted replica reads its relay log back: the received transactions
// are still there and get applied even though the source is gone.
func TestRelayLogRecoveryOffReadsTheRelayLogBack(t *testing.T) {
	src, rep, unapplied := lagged(t, false)
	want := src.Snapshot().Executed
	src.Crash() // the source cannot send them again
	rep.Crash()
	if s := rep.Snapshot(); !unapplied.IsSubsetOf(s.Retrieved) || s.Executed.Intersect(unapplied).Count() != 0 {
		t.Fatalf("stopped replica: the relay log should hold the unapplied %s: %s", unapplied.OneLine(), s)
	}
	if err := rep.Restart(); err != nil { // the injected lag is memory: gone
		t.Fatal(err)
	}
	waitExecuted(t, rep, want, "the replica applying its relay log with the source down")
	if n := committedRows(t, adminDB(t, rep)); n != 5 {
		t.Fatalf("replica holds %d rows, the source's clients committed 5", n)
	}
}

// TestRelayLogRecoveryOnDiscardsTheRelayLog: with relay_log_recovery=ON the
// restart discards the relay log: what was received but not applied is gone
// until the source sends it again.
func TestRelayLogRecoveryOnDiscardsTheRelayLog(t *testing.T) {
	src, rep, unapplied := lagged(t, true)
	want := src.Snapshot().Executed
	src.Crash()
	rep.Crash()
	if err := rep.Restart(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // an applier with a relay log would apply now
	s := rep.Snapshot()
	if !s.Retrieved.Intersect(unapplied).IsEmpty() || !s.Executed.Intersect(unapplied).IsEmpty() || s.RelayLogLength != 0 {
		t.Fatalf("relay_log_recovery=ON kept the relay log: %s (unapplied were %s)", s, unapplied.OneLine())
	}
	var v int
	if err := adminDB(t, rep).QueryRowContext(ctx(t), "SELECT @@GLOBAL.relay_log_recovery").Scan(&v); err != nil || v != 1 {
		t.Fatalf("@@relay_log_recovery = %d (%v)", v, err)
	}
	if err := src.Restart(); err != nil {
		t.Fatal(err)
	}
	waitExecuted(t, rep, want, "the lost transactions fetched again from the source")
	if n := committedRows(t, adminDB(t, rep)); n != 5 {
		t.Fatalf("replica holds %d rows, the source's clients committed 5", n)
	}
}

// TestDropRelayLogLosesTheUnappliedTail: the fault loses what was received
// but not applied, on a running and on a stopped replica; with the source
// gone the replica keeps only what it applied.
func TestDropRelayLogLosesTheUnappliedTail(t *testing.T) {
	for _, running := range []bool{true, false} {
		t.Run(fmt.Sprintf("running=%v", running), func(t *testing.T) {
			src, rep, unapplied := lagged(t, false)
			applied := src.Snapshot().Executed.Subtract(unapplied)
			src.Crash()
			if !running {
				rep.Crash()
			}
			lost, err := rep.DropRelayLog()
			if err != nil {
				t.Fatal(err)
			}
			if !lost.Equal(unapplied) {
				t.Fatalf("DropRelayLog lost %s, want the unapplied %s", lost.OneLine(), unapplied.OneLine())
			}
			if !running {
				if err := rep.Restart(); err != nil {
					t.Fatal(err)
				}
			} else if err := rep.InjectApplyLag(0); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
			s := rep.Snapshot()
			if !s.Retrieved.Intersect(unapplied).IsEmpty() || !s.Executed.Equal(applied) {
				t.Fatalf("after losing the relay log: %s; want executed %s and nothing of %s", s, applied.OneLine(), unapplied.OneLine())
			}
			if n := committedRows(t, adminDB(t, rep)); n != 2 {
				t.Fatalf("replica holds %d rows, want the 2 it applied", n)
			}
			// the files lost them too: a restart reads nothing of them back
			rep.Crash()
			if err := rep.Restart(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
			if s := rep.Snapshot(); !s.Retrieved.Intersect(unapplied).IsEmpty() || !s.Executed.Equal(applied) {
				t.Fatalf("after a restart: %s; want executed %s and nothing of %s", s, applied.OneLine(), unapplied.OneLine())
			}
		})
	}
}

// TestReplicationPerformanceSchemaTables checks the tables against what the
// source really committed and when.
func TestReplicationPerformanceSchemaTables(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	srcDB, db := adminDB(t, src), adminDB(t, rep)
	writeRows(t, srcDB, 1)
	if st := connStatus(t, db); st != nil {
		t.Fatalf("a server without a channel has a row: %v", st)
	}
	replicate(t, rep, src, "")
	sameData(t, src, rep)

	before := src.Snapshot().Executed
	t0 := time.Now()
	mustExec(t, srcDB, "INSERT INTO app.events (id, note) VALUES (1, 'x')")
	t1 := time.Now()
	g := src.Snapshot().Executed.Subtract(before)
	if g.Count() != 1 {
		t.Fatalf("one commit gave %s", g.OneLine())
	}
	sameData(t, src, rep)
	cs := connStatus(t, db)
	if cs["SERVICE_STATE"] != "ON" || cs["SOURCE_UUID"] != src.ServerUUID() || cs["THREAD_ID"] == "NULL" ||
		cs["LAST_ERROR_NUMBER"] != "0" || cs["QUEUEING_TRANSACTION"] != "" || cs["QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP"] != noTimestamp {
		t.Fatalf("replication_connection_status: %v", cs)
	}
	if got := gtid.MustParse(cs["RECEIVED_TRANSACTION_SET"]); !got.Equal(src.Snapshot().Executed) {
		t.Fatalf("RECEIVED_TRANSACTION_SET %s, source committed %s", got.OneLine(), src.Snapshot().Executed.OneLine())
	}
	if cs["LAST_QUEUED_TRANSACTION"] != g.String() {
		t.Fatalf("LAST_QUEUED_TRANSACTION %q, want %s", cs["LAST_QUEUED_TRANSACTION"], g)
	}
	orig := pfsTime(t, cs["LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"])
	if orig.Before(t0.Truncate(time.Microsecond)) || orig.After(t1) {
		t.Fatalf("original commit %v outside the client's commit window [%v, %v]", orig, t0, t1)
	}
	if cs["LAST_QUEUED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"] != cs["LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"] {
		t.Fatalf("from the originating source immediate and original commit differ: %v", cs)
	}
	qs, qe := pfsTime(t, cs["LAST_QUEUED_TRANSACTION_START_QUEUE_TIMESTAMP"]), pfsTime(t, cs["LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP"])
	if qs.Before(orig) || qe.Before(qs) || qe.After(time.Now()) {
		t.Fatalf("queue timestamps %v..%v for a commit at %v", qs, qe, orig)
	}
	ws := workerStatus(t, db)
	if ws["SERVICE_STATE"] != "ON" || ws["WORKER_ID"] != "1" || ws["LAST_APPLIED_TRANSACTION"] != g.String() ||
		ws["LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"] != cs["LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"] ||
		ws["APPLYING_TRANSACTION"] != "" || ws["APPLYING_TRANSACTION_START_APPLY_TIMESTAMP"] != noTimestamp {
		t.Fatalf("replication_applier_status_by_worker: %v", ws)
	}
	as, ae := pfsTime(t, ws["LAST_APPLIED_TRANSACTION_START_APPLY_TIMESTAMP"]), pfsTime(t, ws["LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP"])
	if as.Before(qe.Add(-time.Microsecond)) || ae.Before(as) {
		t.Fatalf("apply timestamps %v..%v, queued at %v", as, ae, qe)
	}

	// Received but not applied: the queued transaction is ahead of the applied one.
	if err := rep.InjectApplyLag(time.Hour); err != nil {
		t.Fatal(err)
	}
	before = src.Snapshot().Executed
	mustExec(t, srcDB, "INSERT INTO app.events (id, note) VALUES (2, 'y')")
	g2 := src.Snapshot().Executed.Subtract(before)
	eventually(t, 10*time.Second, "queued", func() (bool, string) {
		cs := connStatus(t, db)
		return cs["LAST_QUEUED_TRANSACTION"] == g2.String(), fmt.Sprint(cs)
	})
	if ws := workerStatus(t, db); ws["LAST_APPLIED_TRANSACTION"] != g.String() {
		t.Fatalf("applied %q while %s waits", ws["LAST_APPLIED_TRANSACTION"], g2)
	}

	// A stopped applier: OFF, no thread; an unknown channel: no row; the
	// app account may read the tables.
	mustExec(t, db, "STOP REPLICA SQL_THREAD")
	if ws := workerStatus(t, db); ws["SERVICE_STATE"] != "OFF" || ws["THREAD_ID"] != "NULL" {
		t.Fatalf("stopped applier: %v", ws)
	}
	if as := pfsRow(t, db, "SELECT SERVICE_STATE FROM performance_schema.replication_applier_status"); as["SERVICE_STATE"] != "OFF" {
		t.Fatalf("replication_applier_status: %v", as)
	}
	if r := pfsRow(t, db, "SELECT * FROM performance_schema.replication_connection_status WHERE CHANNEL_NAME = 'other'"); r != nil {
		t.Fatalf("row for an unknown channel: %v", r)
	}
	app := open(t, rep.Addr(), simtest.AppUser, simtest.AppPass, nil, false)
	if r := pfsRow(t, app, "SELECT SERVICE_STATE, RECEIVED_TRANSACTION_SET FROM performance_schema.replication_connection_status"); r["SERVICE_STATE"] != "ON" {
		t.Fatalf("app account: %v", r)
	}
}

// TestReceiverRefusesASourceWithItsOwnServerID: as MySQL, equal server ids
// stop the receiver with 13117.
func TestReceiverRefusesASourceWithItsOwnServerID(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{ServerID: 4242})
	rep := simtest.Start(t, mysqlsim.Config{ServerID: 4242, ServerUUID: simtest.UUID(4243)})
	db := adminDB(t, rep)
	replicate(t, rep, src, "")
	eventually(t, 10*time.Second, "13117", func() (bool, string) {
		st := replicaStatus(t, db)
		return st.get("Last_IO_Errno") == "13117" && st.get("Replica_IO_Running") == "No", st.get("Replica_IO_Running") + " " + st.get("Last_IO_Error")
	})
	if cs := connStatus(t, db); cs["LAST_ERROR_NUMBER"] != "13117" || cs["SERVICE_STATE"] != "OFF" {
		t.Fatalf("replication_connection_status: %v", cs)
	}
}

// TestApplierErrorInWorkerTable: a transaction that cannot apply stops the
// applier; the worker row names it and its error, as MySQL's does.
func TestApplierErrorInWorkerTable(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	db := adminDB(t, rep)
	replicate(t, rep, src, "")
	rep.InjectErrantTransactions(1) // creates bloodraven_errant on the replica
	before := src.Snapshot().Executed
	mustExec(t, adminDB(t, src), "CREATE DATABASE bloodraven_errant")
	g := src.Snapshot().Executed.Subtract(before)
	eventually(t, 10*time.Second, "the applier stopping", func() (bool, string) {
		ws := workerStatus(t, db)
		return ws["SERVICE_STATE"] == "OFF" && ws["LAST_ERROR_NUMBER"] == "1007", fmt.Sprint(ws)
	})
	ws := workerStatus(t, db)
	if !strings.HasPrefix(ws["LAST_ERROR_MESSAGE"], "Worker 1 failed executing transaction '"+g.String()+"'") ||
		!strings.Contains(ws["LAST_ERROR_MESSAGE"], "database exists") || ws["LAST_ERROR_TIMESTAMP"] == noTimestamp {
		t.Fatalf("worker error: %v", ws)
	}
	if st := replicaStatus(t, db); st.get("Last_SQL_Errno") != "1007" || !strings.Contains(st.get("Last_SQL_Error"), ws["LAST_ERROR_MESSAGE"]) {
		t.Fatalf("SHOW REPLICA STATUS: %s %s", st.get("Last_SQL_Errno"), st.get("Last_SQL_Error"))
	}
}

// TestTaggedGTIDsReplicate: tagged GTIDs (MySQL 8.3+) arrive as type 42
// events and, after a restart, go back to the source in the dump request's
// tagged encoding.
func TestTaggedGTIDsReplicate(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	srcDB := adminDB(t, src)
	writeRows(t, srcDB, 1)
	conn, err := srcDB.Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tagged := src.ServerUUID() + ":bloodraven:1"
	for _, q := range []string{"SET gtid_next = '" + tagged + "'", "INSERT INTO app.events (id, note) VALUES (7, 'tagged')", "SET gtid_next = 'AUTOMATIC'"} {
		if _, err := conn.ExecContext(ctx(t), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	replicate(t, rep, src, "")
	sameData(t, src, rep)
	if !gtid.MustParse(tagged).IsSubsetOf(rep.Snapshot().Executed) {
		t.Fatalf("replica lacks %s: %s", tagged, rep.Snapshot())
	}
	if err := rep.Restart(); err != nil {
		t.Fatal(err)
	}
	writeRows(t, srcDB, 1)
	sameData(t, src, rep)
	if st := replicaStatus(t, adminDB(t, rep)); st.get("Last_IO_Errno") != "0" || st.get("Replica_IO_Running") != "Yes" {
		t.Fatalf("after a restart with a tagged set: %s %s", st.get("Replica_IO_Running"), st.get("Last_IO_Error"))
	}
}

// TestRelayLogRotatesAndPurges: past max_relay_log_size a new relay log
// file starts (whole transactions per file, each file's Previous_gtids
// chaining them); the files survive a restart as the unapplied
// transactions, and relay_log_purge deletes them once applied.
func TestRelayLogRotatesAndPurges(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	db := adminDB(t, rep)
	mustExec(t, db, "SET GLOBAL max_relay_log_size = 4096")
	mustExec(t, db, "SET GLOBAL sync_relay_log = 1")
	writeRows(t, adminDB(t, src), 1)
	replicate(t, rep, src, "")
	sameData(t, src, rep)
	if err := rep.InjectApplyLag(time.Hour); err != nil {
		t.Fatal(err)
	}
	before := src.Snapshot().Executed
	writeRows(t, adminDB(t, src), 60)
	unapplied := src.Snapshot().Executed.Subtract(before)
	eventually(t, 10*time.Second, "received", func() (bool, string) {
		return unapplied.IsSubsetOf(rep.Snapshot().Retrieved), rep.Snapshot().String()
	})
	files := relayFiles(t, rep)
	if len(files) < 3 {
		t.Fatalf("%d relay log files for 60 transactions at max_relay_log_size=4096", len(files))
	}
	var got gtid.Set
	for i, fc := range files {
		if i > 0 && !fc.Previous.Equal(got.Union(files[0].Previous)) {
			t.Fatalf("%s: Previous_gtids %s, want what the earlier files held %s", fc.Name, fc.Previous.OneLine(), got.OneLine())
		}
		for _, tx := range fc.Txns {
			got = got.Add(tx.GTID)
		}
		if fc.ValidEnd != fc.Size {
			t.Fatalf("%s: a transaction split across files (valid end %d of %d)", fc.Name, fc.ValidEnd, fc.Size)
		}
	}
	if !unapplied.IsSubsetOf(got) {
		t.Fatalf("the relay log files hold %s, received %s", got.OneLine(), unapplied.OneLine())
	}
	src.Crash()
	if err := rep.Restart(); err != nil { // lag gone: applies from its files alone
		t.Fatal(err)
	}
	waitExecuted(t, rep, unapplied, "applied from the relay log files")
	if n := committedRows(t, db); n != 61 {
		t.Fatalf("replica holds %d rows, the source's clients committed 61", n)
	}
	eventually(t, 5*time.Second, "applied files purged", func() (bool, string) {
		fs := relayFiles(t, rep)
		return len(fs) == 1, fmt.Sprint(len(fs))
	})
}

// relayFiles reads the replica's relay log files in index order.
func relayFiles(t *testing.T, rep *mysqlsim.Server) []*binlogfile.FileContents {
	t.Helper()
	dir := rep.BinlogDir()
	idx, err := os.ReadFile(filepath.Join(dir, rep.Name()+"-relay-bin.index"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*binlogfile.FileContents
	for _, l := range strings.Fields(string(idx)) {
		fc, err := binlogfile.ReadRelayFile(filepath.Join(dir, filepath.Base(l)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fc)
	}
	return out
}

// TestGetSourcePublicKey: without TLS, caching_sha2_password's full
// authentication needs the source's RSA key, which the receiver asks for
// only with GET_SOURCE_PUBLIC_KEY = 1; otherwise 2061, as MySQL's receiver
// reports it. With TLS the key is not needed.
func TestGetSourcePublicKey(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	db := adminDB(t, rep)
	h, p := hostPort(t, src)
	mustExec(t, db, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST = '%s', SOURCE_PORT = %s, SOURCE_USER = '%s', "+
		"SOURCE_PASSWORD = '%s', SOURCE_AUTO_POSITION = 1, SOURCE_CONNECT_RETRY = 1", h, p, simtest.ReplUser, simtest.ReplPass))
	mustExec(t, db, "START REPLICA")
	eventually(t, 10*time.Second, "2061", func() (bool, string) {
		st := replicaStatus(t, db)
		return st.get("Last_IO_Errno") == "2061" && strings.Contains(st.get("Last_IO_Error"), "Authentication requires secure connection") &&
			st.get("Replica_IO_Running") == "Connecting", st.get("Last_IO_Errno") + " " + st.get("Last_IO_Error")
	})
	mustExec(t, db, "STOP REPLICA")
	mustExec(t, db, "CHANGE REPLICATION SOURCE TO GET_SOURCE_PUBLIC_KEY = 1")
	mustExec(t, db, "START REPLICA")
	writeRows(t, adminDB(t, src), 1)
	sameData(t, src, rep)
}
