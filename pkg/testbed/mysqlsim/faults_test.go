package mysqlsim_test

import (
	"database/sql"
	"net"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// openAs connects with a program_name attribute and a short read timeout,
// as a client that can notice an unresponsive server.
func openAs(t *testing.T, s *mysqlsim.Server, program string, readTimeout time.Duration) *sql.DB {
	t.Helper()
	cfg := driver.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", s.Addr(), simtest.AdminUser, simtest.AdminPass
	cfg.Timeout, cfg.ReadTimeout = time.Second, readTimeout
	cfg.ConnectionAttributes = "program_name:" + program
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestCrashAndRestart(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{SuperReadOnly: true})
	replicate(t, rep, src, "")
	srcDB := adminDB(t, src)
	writeRows(t, srcDB, 2)
	repDB := adminDB(t, rep)
	conn, err := repDB.Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mustExec(t, repDB, "SET GLOBAL read_only = OFF") // not persisted: lost at restart
	mustExec(t, repDB, "SET PERSIST offline_mode = ON")
	eventually(t, 10*time.Second, "catch-up", func() (bool, string) {
		return src.Snapshot().Executed.Equal(rep.Snapshot().Executed), rep.Snapshot().String()
	})
	before := rep.Snapshot()
	rep.Crash()
	var one int
	if err := conn.QueryRowContext(ctx(t), "SELECT 1").Scan(&one); err == nil {
		t.Fatal("a connection survived the crash")
	}
	if err := repDB.PingContext(ctx(t)); err == nil {
		t.Fatal("a crashed server accepted a connection")
	}
	writeRows(t, srcDB, 2) // written while the replica is down
	if err := rep.Restart(); err != nil {
		t.Fatal(err)
	}
	after := rep.Snapshot()
	if !before.Executed.IsSubsetOf(after.Executed) || !after.SuperReadOnly {
		t.Fatalf("after restart: %s (before %s); super_read_only must return to its configured ON", after, before)
	}
	var offline int64
	if err := repDB.QueryRowContext(ctx(t), "SELECT @@GLOBAL.offline_mode").Scan(&offline); err != nil || offline != 1 {
		t.Fatalf("persisted offline_mode after restart = %d (%v), want 1", offline, err)
	}
	eventually(t, 10*time.Second, "replication resumes by itself after restart", func() (bool, string) {
		return src.Snapshot().Executed.Equal(rep.Snapshot().Executed), rep.Snapshot().String()
	})
}

// With skip_replica_start=ON (as the operator's my.cnf sets it) a restart
// leaves replication stopped, so a restarted replica never fetches from a
// source the operator has not checked; START REPLICA resumes it.
func TestSkipReplicaStartKeepsThreadsStoppedAfterRestart(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{SuperReadOnly: true, SkipReplicaStart: true})
	replicate(t, rep, src, "")
	srcDB, repDB := adminDB(t, src), adminDB(t, rep)
	for db, want := range map[*sql.DB]int64{repDB: 1, srcDB: 0} {
		var skip int64
		if err := db.QueryRowContext(ctx(t), "SELECT @@GLOBAL.skip_replica_start").Scan(&skip); err != nil || skip != want {
			t.Fatalf("@@GLOBAL.skip_replica_start = %d (%v), want %d", skip, err, want)
		}
	}
	if _, err := repDB.ExecContext(ctx(t), "SET GLOBAL skip_replica_start = OFF"); myErrNo(err) != 1238 {
		t.Fatalf("skip_replica_start is not dynamic: got %v, want 1238", err)
	}
	writeRows(t, srcDB, 1)
	eventually(t, 10*time.Second, "catch-up", func() (bool, string) {
		return src.Snapshot().Executed.Equal(rep.Snapshot().Executed), rep.Snapshot().String()
	})
	rep.Crash()
	writeRows(t, srcDB, 2) // written while the replica is down
	if err := rep.Restart(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // long enough for a started receiver to fetch (about 1 ms here)
	if s := rep.Snapshot(); s.IORunning != "No" || s.SQLRunning || s.Executed.Equal(src.Snapshot().Executed) {
		t.Fatalf("after a restart with skip_replica_start: %s; want both threads stopped and nothing fetched", s)
	}
	mustExec(t, repDB, "START REPLICA")
	eventually(t, 10*time.Second, "START REPLICA resumes from the kept channel", func() (bool, string) {
		return src.Snapshot().Executed.Equal(rep.Snapshot().Executed), rep.Snapshot().String()
	})
}

func TestFreeze(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	db := openAs(t, srv, "probe", time.Second)
	if err := db.PingContext(ctx(t)); err != nil {
		t.Fatal(err)
	}
	srv.Freeze()
	start := time.Now()
	var one int
	err := db.QueryRowContext(ctx(t), "SELECT 1").Scan(&one)
	if err == nil {
		t.Fatal("a frozen server answered")
	}
	// a new connection is accepted but never greeted
	fresh := openAs(t, srv, "probe2", time.Second)
	if err := fresh.PingContext(ctx(t)); err == nil {
		t.Fatal("a frozen server completed a handshake")
	}
	t.Logf("frozen server noticed after %s", time.Since(start).Round(time.Millisecond))
	// a connection attempt pending during the freeze completes after thaw
	patient := openAs(t, srv, "patient", 10*time.Second)
	pending := make(chan error, 1)
	go func() { pending <- patient.PingContext(ctx(t)) }()
	time.Sleep(100 * time.Millisecond)
	srv.Thaw()
	if err := <-pending; err != nil {
		t.Fatalf("connection held during the freeze: %v", err)
	}
	eventually(t, 5*time.Second, "answers after thaw", func() (bool, string) {
		err := db.QueryRowContext(ctx(t), "SELECT 1").Scan(&one)
		return err == nil, errString(err)
	})
}

// TestCloseWhileFrozen: Close returns even with connections held by a freeze.
func TestCloseWhileFrozen(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	srv.Freeze()
	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	held := openAs(t, srv, "held", 10*time.Second)
	go func() { _ = held.PingContext(ctx(t)) }()
	time.Sleep(100 * time.Millisecond)
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on connections held by a freeze")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestPartitionClientAndPeers(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{Name: "iad"})
	rep := simtest.Start(t, mysqlsim.Config{Name: "dfw"})
	replicate(t, rep, src, "")
	operator := openAs(t, src, "bloodraven-operator", time.Second)
	other := openAs(t, src, "bloodraven-sidecar", time.Second)
	if err := operator.PingContext(ctx(t)); err != nil {
		t.Fatal(err)
	}
	src.Partition("bloodraven-operator")
	var one int
	if err := operator.QueryRowContext(ctx(t), "SELECT 1").Scan(&one); err == nil {
		t.Fatal("a partitioned client got an answer")
	}
	if err := other.QueryRowContext(ctx(t), "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("a client outside the partition: %v", err)
	}
	src.Heal()
	eventually(t, 5*time.Second, "operator reaches the source after heal", func() (bool, string) {
		err := operator.QueryRowContext(ctx(t), "SELECT 1").Scan(&one)
		return err == nil, errString(err)
	})

	// between peers: replication stalls with a receiver error, then resumes
	mysqlsim.PartitionPeers(src, rep)
	writeRows(t, adminDB(t, src), 2)
	repDB := adminDB(t, rep)
	eventually(t, 15*time.Second, "receiver notices the partition", func() (bool, string) {
		st := replicaStatus(t, repDB)
		return st.get("Replica_IO_Running") == "Connecting" && st.get("Last_IO_Errno") != "0", st.get("Replica_IO_Running") + " " + st.get("Last_IO_Error")
	})
	if src.Snapshot().Executed.IsSubsetOf(rep.Snapshot().Executed) {
		t.Fatal("transactions crossed a partition")
	}
	src.Heal()
	rep.Heal()
	eventually(t, 15*time.Second, "catch-up after heal", func() (bool, string) {
		return src.Snapshot().Executed.IsSubsetOf(rep.Snapshot().Executed), rep.Snapshot().String()
	})
}

func TestStopThreadsWithErrorsAndErrantTransactions(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	replicate(t, rep, src, "")
	repDB := adminDB(t, rep)
	eventually(t, 10*time.Second, "replica connected", func() (bool, string) {
		s := rep.Snapshot()
		return s.IORunning == "Yes", s.String()
	})
	if err := rep.StopReceiver(2013, "Lost connection to MySQL server during query"); err != nil {
		t.Fatal(err)
	}
	st := replicaStatus(t, repDB)
	if st.get("Replica_IO_Running") != "No" || st.get("Last_IO_Errno") != "2013" || st.get("Replica_SQL_Running") != "Yes" {
		t.Fatalf("after receiver failure: io=%s errno=%s sql=%s", st.get("Replica_IO_Running"), st.get("Last_IO_Errno"), st.get("Replica_SQL_Running"))
	}
	if err := rep.StopApplier(1146, "Table 'x.y' doesn't exist"); err != nil {
		t.Fatal(err)
	}
	st = replicaStatus(t, repDB)
	if st.get("Replica_SQL_Running") != "No" || st.get("Last_SQL_Errno") != "1146" || st.get("Last_Errno") != "1146" || st.get("Last_SQL_Error_Timestamp") == "" {
		t.Fatalf("after applier failure: %s %s %s", st.get("Replica_SQL_Running"), st.get("Last_SQL_Errno"), st.get("Last_Errno"))
	}
	mustExec(t, repDB, "START REPLICA")
	eventually(t, 10*time.Second, "restart clears the errors", func() (bool, string) {
		st := replicaStatus(t, repDB)
		return st.get("Replica_IO_Running") == "Yes" && st.get("Last_IO_Errno") == "0" && st.get("Last_SQL_Errno") == "0", st.get("Last_IO_Error")
	})

	errant := rep.InjectErrantTransactions(2)
	if errant.Count() != 2 || errant.SIDs()[0].UUID != rep.ServerUUID() {
		t.Fatalf("errant set %s", errant)
	}
	var diff string
	if err := repDB.QueryRowContext(ctx(t), "SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, ?)", src.Snapshot().Executed.String()).Scan(&diff); err != nil {
		t.Fatal(err)
	}
	if !gtid.MustParse(diff).Equal(errant) {
		t.Fatalf("errant GTIDs seen by GTID_SUBTRACT = %q, want %s", diff, errant)
	}
}

// TestApplierStopsOnConflict: a relayed change that cannot apply stops the
// applier with the change's error number, as MySQL's does.
func TestApplierStopsOnConflict(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	mustExec(t, adminDB(t, rep), "CREATE DATABASE clash") // errant and conflicting
	replicate(t, rep, src, "")
	mustExec(t, adminDB(t, src), "CREATE DATABASE clash")
	repDB := adminDB(t, rep)
	eventually(t, 10*time.Second, "applier error", func() (bool, string) {
		st := replicaStatus(t, repDB)
		return st.get("Last_SQL_Errno") == "1007", st.get("Last_SQL_Error")
	})
	st := replicaStatus(t, repDB)
	if st.get("Replica_SQL_Running") != "No" || !strings.Contains(st.get("Last_SQL_Error"), "database exists") {
		t.Fatalf("applier after conflict: %s %q", st.get("Replica_SQL_Running"), st.get("Last_SQL_Error"))
	}
}

// TestSkipReplicaStartAfterClone: the restart that ends a clone also leaves
// the replication threads stopped under skip_replica_start, with the
// channel the clone brought (the donor's connection metadata, manual
// "Cloning for Replication"), so the operator decides where the recloned
// site replicates from.
func TestSkipReplicaStartAfterClone(t *testing.T) {
	top := simtest.Start(t, mysqlsim.Config{})
	donor := simtest.Start(t, mysqlsim.Config{SuperReadOnly: true})
	rep := simtest.Start(t, mysqlsim.Config{SuperReadOnly: true, SkipReplicaStart: true})
	writeRows(t, adminDB(t, top), 2)
	replicate(t, donor, top, "")
	eventually(t, 10*time.Second, "the donor replicating", func() (bool, string) {
		s := donor.Snapshot()
		return s.Executed.Equal(top.Snapshot().Executed), s.String()
	})
	replicate(t, rep, donor, "")
	repDB := adminDB(t, rep)
	eventually(t, 10*time.Second, "replicating", func() (bool, string) {
		s := rep.Snapshot()
		return s.IORunning == "Yes" && s.SQLRunning, s.String()
	})
	h, p := hostPort(t, donor)
	mustExec(t, repDB, "SET GLOBAL clone_valid_donor_list = ?", h+":"+p)
	conn, err := repDB.Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = conn.ExecContext(ctx(t), "CLONE INSTANCE FROM '"+simtest.ReplUser+"'@'"+h+"':"+p+" IDENTIFIED BY '"+simtest.ReplPass+"' REQUIRE NO SSL")
	conn.Close()
	want := donor.Snapshot().Executed
	eventually(t, 10*time.Second, "restarted with the donor's data", func() (bool, string) {
		s := rep.Snapshot()
		return s.Running && s.Executed.Equal(want), s.String()
	})
	time.Sleep(300 * time.Millisecond) // long enough for a started receiver to connect (about 1 ms here)
	st := replicaStatus(t, adminDB(t, rep))
	th, tp := hostPort(t, top)
	if st == nil || st.get("Replica_IO_Running") != "No" || st.get("Replica_SQL_Running") != "No" || st.get("Source_Host") != th || st.get("Source_Port") != tp {
		t.Fatalf("after a clone with skip_replica_start: %v; want the donor's channel (%s:%s) with both threads stopped", st, th, tp)
	}
}
