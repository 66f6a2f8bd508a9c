package mysql_test

import (
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// TestClassifySourceReadErrorTable: only 13114 is classified, and a fatal
// read error that names neither refusal is never taken for "purged".
func TestClassifySourceReadErrorTable(t *testing.T) {
	for _, c := range []struct {
		errno int
		msg   string
		want  mysql.SourceReadError
	}{
		{0, "", mysql.SourceReadNone},
		{2003, "Error connecting to source 'repl@x:3306'. Message: Can't connect", mysql.SourceReadNone},
		{13114, "Got fatal error 1236 from source when reading data from binary log: 'Binary log is not open'", mysql.SourceReadOther},
		{13114, "Got fatal error 1236 from source when reading data from binary log: 'I/O error reading log event; the first event '' at 4'", mysql.SourceReadOther},
		// A message naming purged logs only in passing is not the refusal.
		{13114, "Got fatal error 1236 from source when reading data from binary log: 'could not find next log; the first event 'binlog.000002' at 4, purged'", mysql.SourceReadOther},
	} {
		if got := mysql.ClassifySourceReadError(c.errno, c.msg); got != c.want {
			t.Errorf("ClassifySourceReadError(%d, %q) = %q, want %q", c.errno, c.msg, got, c.want)
		}
	}
}

// TestSourceReadErrorAgainstTheSimulator reads both refusals as a replica
// reports them: a source that purged what a new replica needs, and a source
// with relaxed durability that crashed and came back without the tail its
// replica already holds.
func TestSourceReadErrorAgainstTheSimulator(t *testing.T) {
	t.Run("purged", func(t *testing.T) {
		p := simtest.Start(t, mysqlsim.Config{Name: "p"})
		r := simtest.Start(t, mysqlsim.Config{Name: "r", SuperReadOnly: true})
		ctx := bg(t)
		app := client(t, p, simtest.AppUser, simtest.AppPass, nil, false).DB()
		for _, q := range []string{"CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT)", "INSERT INTO shop.orders VALUES (1)"} {
			if _, err := app.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		p.PurgeBinaryLogs()
		cr := client(t, r, simtest.AdminUser, simtest.AdminPass, nil, false)
		if err := cr.Repoint(ctx, sourceOf(t, p)); err != nil {
			t.Fatal(err)
		}
		got := waitReadError(t, cr)
		if got.kind != mysql.SourceReadPurged {
			t.Fatalf("a replica of a source that purged what it needs: %q from %d %q", got.kind, got.errno, got.msg)
		}
	})
	t.Run("replica has more", func(t *testing.T) {
		p := simtest.Start(t, mysqlsim.Config{Name: "p"})
		r := simtest.Start(t, mysqlsim.Config{Name: "r", SuperReadOnly: true})
		ctx := bg(t)
		cp := client(t, p, simtest.AdminUser, simtest.AdminPass, nil, false)
		cr := client(t, r, simtest.AdminUser, simtest.AdminPass, nil, false)
		if err := cr.Repoint(ctx, sourceOf(t, p)); err != nil {
			t.Fatal(err)
		}
		if _, err := cp.DB().ExecContext(ctx, "CREATE DATABASE shop"); err != nil {
			t.Fatal(err)
		}
		// The source's own knobs: commits wait in memory for the once-a-
		// second flush, so a crash loses what its replica already has.
		for _, q := range []string{"SET GLOBAL sync_binlog = 0", "SET GLOBAL innodb_flush_log_at_trx_commit = 2"} {
			if _, err := cp.DB().ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		lost := false
		for attempt := 0; attempt < 10 && !lost; attempt++ {
			if !p.Running() {
				if err := p.Restart(); err != nil {
					t.Fatal(err)
				}
			}
			app := client(t, p, simtest.AppUser, simtest.AppPass, nil, false).DB()
			if _, err := app.ExecContext(ctx, "CREATE TABLE shop.t"+string(rune('a'+attempt))+" (id INT)"); err != nil {
				t.Fatal(err)
			}
			_ = app.Close()
			want := p.Snapshot().Executed
			waitFor(t, "the replica holding the source's set", func() (bool, string) {
				s := r.Snapshot()
				return want.IsSubsetOf(s.Executed.Union(s.Retrieved)), s.Executed.OneLine()
			})
			p.Crash()
			lost = !want.IsSubsetOf(p.Snapshot().Executed)
		}
		if !lost {
			t.Fatal("the source never lost a tail its replica held in 10 crashes (the flush ran first every time)")
		}
		if err := p.Restart(); err != nil {
			t.Fatal(err)
		}
		got := waitReadError(t, cr)
		if got.kind != mysql.SourceReadReplicaHasMore {
			t.Fatalf("a replica holding the tail its source lost: %q from %d %q", got.kind, got.errno, got.msg)
		}
	})
}

type readError struct {
	kind  mysql.SourceReadError
	errno int
	msg   string
}

// waitReadError waits for the replica's receiver to stop on an error.
func waitReadError(t *testing.T, c *mysql.Client) readError {
	t.Helper()
	var got readError
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		rs, err := c.ReplicaStatus(bg(t))
		if err != nil {
			t.Fatal(err)
		}
		if rs != nil && rs.ReplicaIORunning == "No" && rs.LastIOErrno != 0 {
			return readError{rs.SourceReadError(), rs.LastIOErrno, rs.LastIOError}
		}
		if rs != nil {
			got = readError{rs.SourceReadError(), rs.LastIOErrno, rs.LastIOError}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the receiver did not stop on an error; last: %+v", got)
	return got
}
