package mysqlsim_test

import (
	"database/sql"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

func adminDB(t *testing.T, s *mysqlsim.Server) *sql.DB {
	return open(t, s.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
}

func hostPort(t *testing.T, s *mysqlsim.Server) (string, string) {
	h, p, err := net.SplitHostPort(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

// replicate points replica at source over a real connection and starts it.
func replicate(t *testing.T, replica, source *mysqlsim.Server, extra string) {
	t.Helper()
	h, p := hostPort(t, source)
	db := adminDB(t, replica)
	mustExec(t, db, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST = '%s', SOURCE_PORT = %s, SOURCE_USER = '%s', "+
		"SOURCE_PASSWORD = '%s', SOURCE_AUTO_POSITION = 1, SOURCE_CONNECT_RETRY = 1, SOURCE_RETRY_COUNT = 100, GET_SOURCE_PUBLIC_KEY = 1%s",
		h, p, simtest.ReplUser, simtest.ReplPass, extra))
	mustExec(t, db, "START REPLICA")
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; last: %s", what, last)
}

type status map[string]sql.NullString

func replicaStatus(t *testing.T, db *sql.DB) status {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), "SHOW REPLICA STATUS")
	if err != nil {
		t.Fatal(err)
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
	st := status{}
	for i, c := range cols {
		st[c] = vals[i]
	}
	return st
}

func (s status) get(k string) string { return s[k].String }

func writeRows(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	mustExec(t, db, "CREATE DATABASE IF NOT EXISTS app")
	mustExec(t, db, "CREATE TABLE IF NOT EXISTS app.events (id BIGINT, note VARCHAR(40))")
	for i := 0; i < n; i++ {
		mustExec(t, db, "INSERT INTO app.events (id, note) VALUES (?, ?)", time.Now().UnixNano(), "row")
	}
}

func TestReplicationCatchUp(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{SuperReadOnly: true})
	srcDB, repDB := adminDB(t, src), adminDB(t, rep)
	writeRows(t, srcDB, 5) // before replication starts
	replicate(t, rep, src, "")
	writeRows(t, srcDB, 5) // while it runs
	want := src.Snapshot().Executed
	var r int64
	if err := repDB.QueryRowContext(ctx(t), "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, 10)", want.String()).Scan(&r); err != nil || r != 0 {
		t.Fatalf("replica did not catch up: %d %v; %s", r, err, rep.Snapshot())
	}
	var n int64
	if err := repDB.QueryRowContext(ctx(t), "SELECT COUNT(*) FROM app.events").Scan(&n); err != nil || n != 10 {
		t.Fatalf("replicated rows = %d (%v), want 10", n, err)
	}
	st := replicaStatus(t, repDB)
	for k, v := range map[string]string{"Replica_IO_Running": "Yes", "Replica_SQL_Running": "Yes",
		"Source_UUID": src.ServerUUID(), "Auto_Position": "1", "Last_IO_Errno": "0", "Seconds_Behind_Source": "0"} {
		if st.get(k) != v {
			t.Errorf("%s = %q, want %q", k, st.get(k), v)
		}
	}
	if got := gtid.MustParse(st.get("Retrieved_Gtid_Set")); !got.Equal(want) {
		t.Errorf("Retrieved_Gtid_Set = %s, want %s", got, want)
	}
	if got := gtid.MustParse(st.get("Executed_Gtid_Set")); !got.Equal(want) {
		t.Errorf("Executed_Gtid_Set = %s, want %s", got, want)
	}
	// the applier ignores super_read_only; clients don't
	if _, err := repDB.ExecContext(ctx(t), "INSERT INTO app.events VALUES (1, 'x')"); myErrNo(err) != 1290 {
		t.Fatalf("client write on super_read_only replica: %v, want 1290", err)
	}
	// the source shows the dump thread; the replica shows its system threads
	var dumps int
	rows, err := srcDB.QueryContext(ctx(t), "SELECT USER, COMMAND FROM performance_schema.processlist")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var u, c string
		_ = rows.Scan(&u, &c)
		if u == simtest.ReplUser && c == "Binlog Dump GTID" {
			dumps++
		}
	}
	rows.Close()
	if dumps != 1 {
		t.Errorf("source shows %d Binlog Dump GTID sessions, want 1", dumps)
	}
}

// TestReceivedButNotApplied: with injected apply lag, the replica's
// Retrieved_Gtid_Set holds transactions gtid_executed does not, and
// Seconds_Behind_Source counts; then RESET REPLICA ALL loses them.
func TestReceivedButNotAppliedAndResetLosesRelayLog(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	srcDB, repDB := adminDB(t, src), adminDB(t, rep)
	writeRows(t, srcDB, 1)
	replicate(t, rep, src, "")
	before := src.Snapshot().Executed
	eventually(t, 10*time.Second, "catch-up", func() (bool, string) {
		s := rep.Snapshot()
		return before.IsSubsetOf(s.Executed), s.String()
	})
	if err := rep.InjectApplyLag(time.Hour); err != nil {
		t.Fatal(err)
	}
	writeRows(t, srcDB, 3)
	all := src.Snapshot().Executed
	lagging := all.Subtract(before)
	var st status
	eventually(t, 10*time.Second, "received but not applied", func() (bool, string) {
		st = replicaStatus(t, repDB)
		retrieved := gtid.MustParse(st.get("Retrieved_Gtid_Set"))
		return lagging.IsSubsetOf(retrieved), st.get("Retrieved_Gtid_Set")
	})
	executed := gtid.MustParse(st.get("Executed_Gtid_Set"))
	if !executed.Intersect(lagging).IsEmpty() {
		t.Fatalf("lagging transactions %s already applied: %s", lagging, executed)
	}
	if !st["Seconds_Behind_Source"].Valid || !strings.Contains(st.get("Replica_SQL_Running_State"), "Waiting until SOURCE_DELAY") {
		t.Fatalf("lagging replica: Seconds_Behind_Source=%v state=%q", st["Seconds_Behind_Source"], st.get("Replica_SQL_Running_State"))
	}
	if _, err := repDB.ExecContext(ctx(t), "RESET REPLICA ALL"); myErrNo(err) != 3081 {
		t.Fatalf("RESET REPLICA ALL with running threads: %v, want 3081", err)
	}
	mustExec(t, repDB, "STOP REPLICA")
	if st = replicaStatus(t, repDB); st["Seconds_Behind_Source"].Valid {
		t.Fatalf("Seconds_Behind_Source with threads stopped = %q, want NULL", st.get("Seconds_Behind_Source"))
	}
	mustExec(t, repDB, "RESET REPLICA ALL")
	if st := replicaStatus(t, repDB); st != nil {
		t.Fatalf("SHOW REPLICA STATUS after RESET REPLICA ALL: %v", st)
	}
	snap := rep.Snapshot()
	if !snap.Executed.Intersect(lagging).IsEmpty() || snap.RelayLogLength != 0 {
		t.Fatalf("unapplied relay log survived RESET REPLICA ALL: %s", snap)
	}
	if !snap.Executed.Equal(before) {
		t.Fatalf("executed = %s, want %s", snap.Executed, before)
	}
}

func TestPurgedGTIDsStopReceiver(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	writeRows(t, adminDB(t, src), 2)
	src.PurgeBinaryLogs()
	replicate(t, rep, src, "")
	repDB := adminDB(t, rep)
	var st status
	eventually(t, 10*time.Second, "receiver error", func() (bool, string) {
		st = replicaStatus(t, repDB)
		return st.get("Last_IO_Errno") == "13114", st.get("Last_IO_Errno") + " " + st.get("Last_IO_Error")
	})
	if st.get("Replica_IO_Running") != "No" || !strings.Contains(st.get("Last_IO_Error"), "Got fatal error 1236 from source") ||
		!strings.Contains(st.get("Last_IO_Error"), "purged required binary logs") || st.get("Last_IO_Error_Timestamp") == "" {
		t.Fatalf("status after purged-GTID error: io=%s err=%q ts=%q", st.get("Replica_IO_Running"), st.get("Last_IO_Error"), st.get("Last_IO_Error_Timestamp"))
	}
}

func TestClone(t *testing.T) {
	donor := simtest.Start(t, mysqlsim.Config{})
	recipient := simtest.Start(t, mysqlsim.Config{})
	writeRows(t, adminDB(t, donor), 4)
	writeRows(t, adminDB(t, recipient), 1) // data the clone replaces
	h, p := hostPort(t, donor)
	recDB := adminDB(t, recipient)
	cloneStmt := func(user, pass string) string {
		return fmt.Sprintf("CLONE INSTANCE FROM '%s'@'%s':%s IDENTIFIED BY '%s' REQUIRE NO SSL", user, h, p, pass)
	}
	if _, err := recDB.ExecContext(ctx(t), cloneStmt(simtest.ReplUser, simtest.ReplPass)); myErrNo(err) != 3869 {
		t.Fatalf("donor not in clone_valid_donor_list: %v, want 3869", err)
	}
	mustExec(t, recDB, "SET GLOBAL clone_valid_donor_list = ?", h+":"+p)
	if _, err := recDB.ExecContext(ctx(t), cloneStmt(simtest.ReplUser, "wrong")); myErrNo(err) != 3862 || !strings.Contains(err.Error(), "1045") {
		t.Fatalf("wrong donor password: %v, want 3862 carrying 1045", err)
	}
	app := open(t, recipient.Addr(), simtest.AppUser, simtest.AppPass, nil, false)
	if _, err := app.ExecContext(ctx(t), cloneStmt(simtest.ReplUser, simtest.ReplPass)); myErrNo(err) != 1227 {
		t.Fatalf("clone without CLONE_ADMIN: %v, want 1227", err)
	}
	// the clone ends with the recipient restarting: the connection drops
	conn, err := recDB.Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.ExecContext(ctx(t), cloneStmt(simtest.ReplUser, simtest.ReplPass))
	conn.Close()
	if err == nil {
		t.Fatal("CLONE returned success on a connection that the restart must have closed")
	}
	want := donor.Snapshot().Executed
	eventually(t, 10*time.Second, "recipient restarted with the donor's GTIDs", func() (bool, string) {
		s := recipient.Snapshot()
		return s.Running && s.Executed.Equal(want) && s.Purged.Equal(want), s.String()
	})
	var n int64
	fresh := adminDB(t, recipient)
	if err := fresh.QueryRowContext(ctx(t), "SELECT COUNT(*) FROM app.events").Scan(&n); err != nil || n != 4 {
		t.Fatalf("cloned rows = %d (%v), want the donor's 4", n, err)
	}
	// unreachable donor
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	dh, dp, _ := net.SplitHostPort(dead)
	mustExec(t, fresh, "SET GLOBAL clone_valid_donor_list = ?", dh+":"+dp)
	_, err = fresh.ExecContext(ctx(t), fmt.Sprintf("CLONE INSTANCE FROM 'repl'@'%s':%s IDENTIFIED BY 'x'", dh, dp))
	if myErrNo(err) != 3862 || !strings.Contains(err.Error(), "2003") {
		t.Fatalf("unreachable donor: %v, want 3862 carrying 2003", err)
	}
}

// TestReceiverConnectErrors: an unreachable source gives 2003 and a wrong
// password 1045 in Last_IO_Errno, with the receiver retrying (Connecting).
func TestReceiverConnectErrors(t *testing.T) {
	rep := simtest.Start(t, mysqlsim.Config{})
	db := adminDB(t, rep)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	h, p, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	mustExec(t, db, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST = '%s', SOURCE_PORT = %s, SOURCE_USER = 'repl', SOURCE_PASSWORD = 'x', SOURCE_AUTO_POSITION = 1, SOURCE_CONNECT_RETRY = 1, GET_SOURCE_PUBLIC_KEY = 1", h, p))
	mustExec(t, db, "START REPLICA")
	eventually(t, 10*time.Second, "2003", func() (bool, string) {
		st := replicaStatus(t, db)
		return st.get("Last_IO_Errno") == "2003" && st.get("Replica_IO_Running") == "Connecting", st.get("Last_IO_Errno") + " " + st.get("Last_IO_Error")
	})
	mustExec(t, db, "STOP REPLICA")
	src := simtest.Start(t, mysqlsim.Config{})
	sh, sp := hostPort(t, src)
	mustExec(t, db, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST = '%s', SOURCE_PORT = %s, SOURCE_USER = 'repl', SOURCE_PASSWORD = 'wrong'", sh, sp))
	mustExec(t, db, "START REPLICA")
	eventually(t, 10*time.Second, "1045", func() (bool, string) {
		st := replicaStatus(t, db)
		return st.get("Last_IO_Errno") == "1045", st.get("Last_IO_Errno") + " " + st.get("Last_IO_Error")
	})
	if _, err := db.ExecContext(ctx(t), "CHANGE REPLICATION SOURCE TO SOURCE_PASSWORD = 'x'"); myErrNo(err) != 3021 {
		t.Fatalf("changing the source with the receiver running: %v, want 3021", err)
	}
}

// TestSourceHostResolvedThroughSiteMap: a replica given a site's internal
// Service name as SOURCE_HOST reaches the simulated source through the
// development site-address map.
func TestSourceHostResolvedThroughSiteMap(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	key := siteaddr.SiteKey{Namespace: "shop", Group: "orders", Site: "iad"}
	m, err := devsitemap.New(devsitemap.Entry{Site: key, MySQL: src.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	rep := simtest.Start(t, mysqlsim.Config{ResolveSource: m.ResolveMySQL})
	db := adminDB(t, rep)
	mustExec(t, db, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST = '%s', SOURCE_PORT = 3306, SOURCE_USER = 'repl', "+
		"SOURCE_PASSWORD = '%s', SOURCE_AUTO_POSITION = 1, SOURCE_CONNECT_RETRY = 1, GET_SOURCE_PUBLIC_KEY = 1", key.InternalServiceFQDN(), simtest.ReplPass))
	mustExec(t, db, "START REPLICA")
	writeRows(t, adminDB(t, src), 1)
	eventually(t, 10*time.Second, "replicating through the mapped name", func() (bool, string) {
		st := replicaStatus(t, db)
		return st.get("Source_UUID") == src.ServerUUID() && src.Snapshot().Executed.IsSubsetOf(rep.Snapshot().Executed),
			st.get("Source_Host") + " " + st.get("Last_IO_Error")
	})
	if st := replicaStatus(t, db); st.get("Source_Host") != key.InternalServiceFQDN() {
		t.Fatalf("Source_Host = %q, want the name as given", st.get("Source_Host"))
	}
}

// executedAndRetrieved reads the replica's Executed_Gtid_Set and
// Retrieved_Gtid_Set from SHOW REPLICA STATUS.
func executedAndRetrieved(t *testing.T, db *sql.DB) (executed, retrieved gtid.Set, st status) {
	t.Helper()
	st = replicaStatus(t, db)
	return gtid.MustParse(st.get("Executed_Gtid_Set")), gtid.MustParse(st.get("Retrieved_Gtid_Set")), st
}

// lastGTID is the newest GTID a server committed under its own UUID.
func lastGTID(s *mysqlsim.Server) gtid.GTID {
	ivs := s.Snapshot().Executed.Intervals(gtid.SID{UUID: s.ServerUUID()})
	return gtid.GTID{UUID: s.ServerUUID(), GNO: ivs[len(ivs)-1].End}
}

// TestThreadVariantsAndChangeSourceRules: START/STOP REPLICA IO_THREAD and
// SQL_THREAD act on one thread; CHANGE REPLICATION SOURCE TO follows MySQL's
// rules for running threads (3021 receiver options, 3022 applier options,
// 3081 options of both) and deletes the relay log only when both threads
// were stopped; RESET REPLICA keeps the connection settings.
func TestThreadVariantsAndChangeSourceRules(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	srcDB, db := adminDB(t, src), adminDB(t, rep)
	replicate(t, rep, src, "")
	writeRows(t, srcDB, 1)
	eventually(t, 10*time.Second, "catch-up", func() (bool, string) {
		return src.Snapshot().Executed.Equal(rep.Snapshot().Executed), rep.Snapshot().String()
	})

	// applier stopped: transactions are received, not applied
	mustExec(t, db, "STOP REPLICA SQL_THREAD")
	if st := replicaStatus(t, db); st.get("Replica_IO_Running") != "Yes" || st.get("Replica_SQL_Running") != "No" || st["Seconds_Behind_Source"].Valid {
		t.Fatalf("after STOP REPLICA SQL_THREAD: io=%s sql=%s behind=%v", st.get("Replica_IO_Running"), st.get("Replica_SQL_Running"), st["Seconds_Behind_Source"])
	}
	writeRows(t, srcDB, 1)
	g := lastGTID(src)
	eventually(t, 10*time.Second, "received with the applier stopped", func() (bool, string) {
		_, retrieved, _ := executedAndRetrieved(t, db)
		return retrieved.Contains(g), retrieved.OneLine()
	})
	if executed, _, _ := executedAndRetrieved(t, db); executed.Contains(g) {
		t.Fatalf("%s applied with the applier stopped", g)
	}
	for _, c := range []struct {
		stmt string
		want uint16
	}{
		{"CHANGE REPLICATION SOURCE TO SOURCE_CONNECT_RETRY = 2", 3021}, // receiver option, receiver running
		{"CHANGE REPLICATION SOURCE TO SOURCE_AUTO_POSITION = 1", 3081}, // option of both threads, one running
		{"CHANGE REPLICATION SOURCE TO SOURCE_HOST = ''", 1210},
	} {
		if _, err := db.ExecContext(ctx(t), c.stmt); myErrNo(err) != c.want {
			t.Fatalf("%s: got %v, want %d", c.stmt, err, c.want)
		}
	}
	// an applier option with only the applier stopped: allowed, relay log kept
	mustExec(t, db, "CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 0")
	if _, retrieved, _ := executedAndRetrieved(t, db); !retrieved.Contains(g) {
		t.Fatalf("relay log deleted while the receiver ran: Retrieved_Gtid_Set %s", retrieved)
	}
	mustExec(t, db, "START REPLICA SQL_THREAD")
	eventually(t, 10*time.Second, "START REPLICA SQL_THREAD applies the relay log", func() (bool, string) {
		executed, _, st := executedAndRetrieved(t, db)
		return executed.Contains(g) && st.get("Replica_SQL_Running") == "Yes", executed.OneLine()
	})

	// receiver stopped: applier options are refused while the applier runs
	mustExec(t, db, "STOP REPLICA IO_THREAD")
	if st := replicaStatus(t, db); st.get("Replica_IO_Running") != "No" || st.get("Replica_SQL_Running") != "Yes" {
		t.Fatalf("after STOP REPLICA IO_THREAD: io=%s sql=%s", st.get("Replica_IO_Running"), st.get("Replica_SQL_Running"))
	}
	if _, err := db.ExecContext(ctx(t), "CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 1"); myErrNo(err) != 3022 {
		t.Fatalf("applier option with the applier running: got %v, want 3022", err)
	}
	mustExec(t, db, "START REPLICA IO_THREAD")
	eventually(t, 10*time.Second, "START REPLICA IO_THREAD reconnects", func() (bool, string) {
		st := replicaStatus(t, db)
		return st.get("Replica_IO_Running") == "Yes", st.get("Replica_IO_Running")
	})

	// both threads stopped with an unapplied transaction: CHANGE deletes it
	mustExec(t, db, "STOP REPLICA SQL_THREAD")
	writeRows(t, srcDB, 1)
	g = lastGTID(src)
	eventually(t, 10*time.Second, "received", func() (bool, string) {
		_, retrieved, _ := executedAndRetrieved(t, db)
		return retrieved.Contains(g), retrieved.OneLine()
	})
	mustExec(t, db, "STOP REPLICA IO_THREAD")
	mustExec(t, db, "CHANGE REPLICATION SOURCE TO SOURCE_CONNECT_RETRY = 1")
	executed, retrieved, st := executedAndRetrieved(t, db)
	if !retrieved.IsEmpty() || executed.Contains(g) || rep.Snapshot().RelayLogLength != 0 {
		t.Fatalf("CHANGE with both threads stopped kept the relay log: retrieved %s executed %s", retrieved, executed)
	}
	h, p := hostPort(t, src)
	mustExec(t, db, "RESET REPLICA")
	st = replicaStatus(t, db)
	if st == nil || st.get("Source_Host") != h || st.get("Source_Port") != p || st.get("Auto_Position") != "1" {
		t.Fatalf("RESET REPLICA must keep the connection settings: %v", st)
	}
	mustExec(t, db, "START REPLICA")
	eventually(t, 10*time.Second, "auto-position fetches the discarded transaction again", func() (bool, string) {
		return src.Snapshot().Executed.Equal(rep.Snapshot().Executed), rep.Snapshot().String()
	})
}

// TestSourceDelay: SOURCE_DELAY holds each transaction back until that many
// seconds after its commit on the source; meanwhile SHOW REPLICA STATUS shows
// SQL_Delay, SQL_Remaining_Delay and the waiting state.
func TestSourceDelay(t *testing.T) {
	const delay = 2 * time.Second
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	srcDB, db := adminDB(t, src), adminDB(t, rep)
	replicate(t, rep, src, ", SOURCE_DELAY = 2")
	if st := replicaStatus(t, db); st.get("SQL_Delay") != "2" {
		t.Fatalf("SQL_Delay = %q, want 2", st.get("SQL_Delay"))
	}
	committed := time.Now()
	mustExec(t, srcDB, "CREATE DATABASE delayed")
	g := lastGTID(src)
	sawWaiting := false
	eventually(t, 15*time.Second, "the delayed transaction applied", func() (bool, string) {
		executed, retrieved, st := executedAndRetrieved(t, db)
		if retrieved.Contains(g) && !executed.Contains(g) && st["SQL_Remaining_Delay"].Valid &&
			strings.Contains(st.get("Replica_SQL_Running_State"), "Waiting until SOURCE_DELAY") {
			sawWaiting = true
		}
		return executed.Contains(g), st.get("Replica_SQL_Running_State")
	})
	if applied := time.Since(committed); applied < delay {
		t.Fatalf("applied %s after commit, before SOURCE_DELAY %s", applied, delay)
	}
	if !sawWaiting {
		t.Fatal("never saw the applier waiting for SOURCE_DELAY with SQL_Remaining_Delay set")
	}
	if st := replicaStatus(t, db); st["SQL_Remaining_Delay"].Valid {
		t.Fatalf("SQL_Remaining_Delay = %q with nothing to wait for, want NULL", st.get("SQL_Remaining_Delay"))
	}
}

// TestReplicaWithMoreSourceGTIDsStopsReceiver: a replica holding GTIDs of
// the source's own UUID that the source no longer has (the source was reset,
// or lost the end of its binary log) gets MySQL's fatal 1236 "Replica has
// more GTIDs than the source has" instead of diverging silently.
func TestReplicaWithMoreSourceGTIDsStopsReceiver(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	srcDB, db := adminDB(t, src), adminDB(t, rep)
	writeRows(t, srcDB, 2)
	replicate(t, rep, src, "")
	eventually(t, 10*time.Second, "catch-up", func() (bool, string) {
		return src.Snapshot().Executed.Equal(rep.Snapshot().Executed), rep.Snapshot().String()
	})
	mustExec(t, db, "STOP REPLICA")
	mustExec(t, srcDB, "RESET BINARY LOGS AND GTIDS")
	mustExec(t, db, "START REPLICA")
	var st status
	eventually(t, 10*time.Second, "receiver error", func() (bool, string) {
		st = replicaStatus(t, db)
		return st.get("Last_IO_Errno") == "13114", st.get("Last_IO_Errno") + " " + st.get("Last_IO_Error")
	})
	if st.get("Replica_IO_Running") != "No" || !strings.Contains(st.get("Last_IO_Error"), "Got fatal error 1236 from source") ||
		!strings.Contains(st.get("Last_IO_Error"), "Replica has more GTIDs than the source has") {
		t.Fatalf("after the source was reset: io=%s err=%q", st.get("Replica_IO_Running"), st.get("Last_IO_Error"))
	}
}
