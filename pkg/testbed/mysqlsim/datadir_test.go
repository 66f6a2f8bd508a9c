package mysqlsim_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

func countRows(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(ctx(t), "SELECT COUNT(*) FROM app.events").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A journal record cut short by the crash (a torn write) or garbled is
// discarded at recovery, as InnoDB discards an incomplete redo tail: the
// complete records before it are recovered and the server runs on.
func TestTornJournalTailIsDiscarded(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail []byte
	}{
		{"half a length", []byte{0x20, 0x00}},
		{"a record cut short", []byte{0xff, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, '{', '"'}},
		{"a garbled record", append([]byte{0x02, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef}, "{}"...)},
	} {
		dir := t.TempDir()
		s := simtest.Start(t, mysqlsim.Config{DataDir: dir})
		writeRows(t, adminDB(t, s), 5) // CREATE DATABASE, CREATE TABLE, 5 INSERTs
		s.Crash()
		journal := filepath.Join(dir, "sim-redo.log")
		b, err := os.ReadFile(journal)
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: journal after 7 durable commits: %d bytes (%v)", tc.name, len(b), err)
		}
		if err := os.WriteFile(journal, append(b, tc.tail...), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := s.Restart(); err != nil {
			t.Fatalf("%s: restart: %v", tc.name, err)
		}
		db := adminDB(t, s)
		if n := countRows(t, db); n != 5 {
			t.Fatalf("%s: %d rows recovered, want the 5 complete commits", tc.name, n)
		}
		if got := s.Snapshot().Executed.Count(); got != 7 {
			t.Fatalf("%s: gtid_executed has %d GTIDs, want 7", tc.name, got)
		}
		mustExec(t, db, "INSERT INTO app.events (id, note) VALUES (1, 'after')")
		s.Crash()
		if n := s.Snapshot().Executed.Count(); n != 8 {
			t.Fatalf("%s: the server did not run on after recovery: %d GTIDs on disk, want 8", tc.name, n)
		}
	}
}

// Crash drops the server's memory: what the journal had not written with
// innodb_flush_log_at_trx_commit=0 is gone, and the stopped server shows
// the data directory (its Snapshot is what a restart recovers).
func TestCrashDropsUnwrittenCommitsWithRelaxedSettings(t *testing.T) {
	s := simtest.Start(t, mysqlsim.Config{})
	db := adminDB(t, s)
	writeRows(t, db, 3)
	mustExec(t, db, "SET GLOBAL innodb_flush_log_at_trx_commit = 0")
	mustExec(t, db, "SET GLOBAL sync_binlog = 0")
	before := s.Snapshot().Executed
	for i := 0; i < 4; i++ { // well inside the one-second flush interval
		mustExec(t, db, "INSERT INTO app.events (id, note) VALUES (?, 'buffered')", i)
	}
	s.Crash()
	if got := s.Snapshot().Executed; !got.Equal(before) {
		t.Fatalf("after the crash the data directory holds %s, want %s (the buffered commits lost)", got.OneLine(), before.OneLine())
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	db = adminDB(t, s)
	if n := countRows(t, db); n != 3 {
		t.Fatalf("%d rows after restart, want the 3 durable ones", n)
	}
	var sb, fl int
	if err := db.QueryRowContext(ctx(t), "SELECT @@GLOBAL.sync_binlog, @@GLOBAL.innodb_flush_log_at_trx_commit").Scan(&sb, &fl); err != nil || sb != 1 || fl != 1 {
		t.Fatalf("after restart sync_binlog=%d innodb_flush_log_at_trx_commit=%d (%v); SET GLOBAL is not persisted, want 1 and 1", sb, fl, err)
	}
	// The once-a-second flush writes buffered commits without a crash.
	mustExec(t, db, "SET PERSIST innodb_flush_log_at_trx_commit = 2")
	mustExec(t, db, "INSERT INTO app.events (id, note) VALUES (9, 'flushed')")
	time.Sleep(1500 * time.Millisecond)
	s.Crash()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	db = adminDB(t, s)
	if n := countRows(t, db); n != 4 {
		t.Fatalf("%d rows after restart, want 4: the flusher writes buffered commits within about a second", n)
	}
	if err := db.QueryRowContext(ctx(t), "SELECT @@GLOBAL.innodb_flush_log_at_trx_commit").Scan(&fl); err != nil || fl != 2 {
		t.Fatalf("persisted innodb_flush_log_at_trx_commit = %d (%v), want 2", fl, err)
	}
}

// sync_binlog and innodb_flush_log_at_trx_commit are global variables with
// MySQL 9.7's defaults and ranges; SET PERSIST writes mysqld-auto.cnf in
// MySQL's layout.
func TestDurabilityVariablesAndPersistFile(t *testing.T) {
	dir := t.TempDir()
	s := simtest.Start(t, mysqlsim.Config{DataDir: dir})
	db := adminDB(t, s)
	var name, val string
	if err := db.QueryRowContext(ctx(t), "SHOW GLOBAL VARIABLES LIKE 'sync_binlog'").Scan(&name, &val); err != nil || val != "1" {
		t.Fatalf("SHOW VARIABLES sync_binlog = %q (%v), want 1", val, err)
	}
	for _, q := range []string{"SET GLOBAL innodb_flush_log_at_trx_commit = 3", "SET GLOBAL sync_binlog = -1", "SET SESSION sync_binlog = 0"} {
		if _, err := db.ExecContext(ctx(t), q); err == nil {
			t.Fatalf("%s succeeded", q)
		}
	}
	mustExec(t, db, "SET PERSIST sync_binlog = 0")
	b, err := os.ReadFile(filepath.Join(dir, "mysqld-auto.cnf"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Version int
		Vars    map[string]struct {
			Value    string
			Metadata struct {
				Timestamp int64
				User      string
			}
		} `json:"mysql_dynamic_variables"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("mysqld-auto.cnf %s: %v", b, err)
	}
	v := f.Vars["sync_binlog"]
	if f.Version != 2 || v.Value != "0" || v.Metadata.User != simtest.AdminUser || v.Metadata.Timestamp < time.Now().Add(-time.Minute).UnixMicro() {
		t.Fatalf("mysqld-auto.cnf = %s", b)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	var sb int
	if err := adminDB(t, s).QueryRowContext(ctx(t), "SELECT @@GLOBAL.sync_binlog").Scan(&sb); err != nil || sb != 0 {
		t.Fatalf("persisted sync_binlog after restart = %d (%v), want 0", sb, err)
	}
}

// A replica killed mid-stream recovers its channel (connection metadata,
// relay log, received set) from the data directory and catches up by
// itself, without anything applied twice.
func TestReplicaRecoversChannelFromDataDir(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	replicate(t, rep, src, "")
	srcDB := adminDB(t, src)
	writeRows(t, srcDB, 20)
	eventually(t, 10*time.Second, "catch-up", func() (bool, string) {
		return src.Snapshot().Executed.Equal(rep.Snapshot().Executed), rep.Snapshot().String()
	})
	rep.Crash()
	writeRows(t, srcDB, 5)
	if err := rep.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "catch-up after the restart", func() (bool, string) {
		return src.Snapshot().Executed.Equal(rep.Snapshot().Executed), rep.Snapshot().String()
	})
	if n := countRows(t, adminDB(t, rep)); n != 25 {
		t.Fatalf("replica holds %d rows after recovery, want 25", n)
	}
}

// A fault injected while the server is down changes its data directory,
// as errant transactions "on its disk" would: the restart recovers them.
func TestFaultsOnAStoppedServerReachItsDisk(t *testing.T) {
	s := simtest.Start(t, mysqlsim.Config{})
	writeRows(t, adminDB(t, s), 2)
	s.Crash()
	errant := s.InjectErrantTransactions(3)
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := s.Snapshot().Executed; !errant.IsSubsetOf(got) || got.Count() != 7 {
		t.Fatalf("after restart gtid_executed = %s, want the 4 commits and the errant %s", got.OneLine(), errant.OneLine())
	}
	s.Crash()
	s.PurgeBinaryLogs()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if snap := s.Snapshot(); !snap.Purged.Equal(snap.Executed) {
		t.Fatalf("after a purge while down and a restart: %s", snap)
	}
}

// Restart builds the server from the data directory alone: with the
// directory emptied while the server is down, it comes back as a first
// boot, nothing of the previous run's memory kept.
func TestRestartUsesOnlyTheDataDirectory(t *testing.T) {
	dir := t.TempDir()
	s := simtest.Start(t, mysqlsim.Config{DataDir: dir})
	writeRows(t, adminDB(t, s), 3)
	s.Crash()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if snap := s.Snapshot(); !snap.Executed.IsEmpty() {
		t.Fatalf("after restarting on an emptied data directory: %s, want a first boot", snap)
	}
	if _, err := adminDB(t, s).ExecContext(ctx(t), "INSERT INTO app.events (id, note) VALUES (1, 'x')"); myErrNo(err) != 1049 {
		t.Fatalf("insert into the table of the previous run: %v, want 1049 (no such database)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "auto.cnf")); err != nil {
		t.Fatalf("the first boot did not write auto.cnf: %v", err)
	}
}

// BenchmarkCommitRate measures autocommit INSERTs per second over a real
// client connection, with durable settings (each commit synced before it
// is acknowledged) and relaxed ones (synced once a second), so tests can
// size their write loads.
func BenchmarkCommitRate(b *testing.B) {
	for _, tc := range []struct {
		name      string
		sync, trx int
	}{
		{"sync_binlog=1,trx_commit=1", 1, 1},
		{"sync_binlog=0,trx_commit=0", 0, 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sync, trx := tc.sync, tc.trx
			s := simtest.Start(b, mysqlsim.Config{SyncBinlog: &sync, InnoDBFlushLogAtTrxCommit: &trx})
			db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/", simtest.AdminUser, simtest.AdminPass, s.Addr()))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			for _, q := range []string{"CREATE DATABASE bench", "CREATE TABLE bench.t (id BIGINT)"} {
				if _, err := db.Exec(q); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if _, err := db.Exec("INSERT INTO bench.t (id) VALUES (1)"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "commits/s")
		})
	}
}
