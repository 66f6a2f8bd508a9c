package mysqlsim_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// TestKilledLargeTransactionHoldsTheFenceThroughItsRollback: with a
// rollback time set, a session killed with an open write transaction stays
// in the processlist (Killed, rolling back) and a super_read_only fence
// keeps waiting for it until the rollback ends; its writes are discarded.
func TestKilledLargeTransactionHoldsTheFenceThroughItsRollback(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	c := ctx(t)
	admin := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	app := open(t, srv.Addr(), simtest.AppUser, simtest.AppPass, nil, false)
	mustExec(t, admin, "CREATE DATABASE shop")
	mustExec(t, admin, "CREATE TABLE shop.orders (id BIGINT)")
	const rollback = 1500 * time.Millisecond
	srv.SetRollbackTime(rollback)

	tx, err := app.BeginTx(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(c, "INSERT INTO shop.orders VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := tx.QueryRowContext(c, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	fenced := make(chan time.Time, 1)
	go func() {
		if _, err := admin.ExecContext(c, "SET GLOBAL super_read_only = ON"); err != nil {
			t.Errorf("fence: %v", err)
		}
		fenced <- time.Now()
	}()
	eventually(t, 5*time.Second, "the fence waiting", func() (bool, string) { return fenceWaiting(t, admin), "not waiting" })
	killed := time.Now()
	mustExec(t, admin, "KILL CONNECTION ?", id)
	cmd, state := sessionState(t, admin, id)
	if cmd != "Killed" || state != "rolling back" {
		t.Fatalf("processlist = %q/%q, want Killed/rolling back", cmd, state)
	}
	mustExec(t, admin, "KILL CONNECTION ?", id) // a second KILL changes nothing
	at := <-fenced
	if waited := at.Sub(killed); waited < rollback-100*time.Millisecond {
		t.Fatalf("the fence took effect %s after the KILL, before the %s rollback ended", waited, rollback)
	}
	var n int64
	if err := admin.QueryRowContext(c, "SELECT COUNT(*) FROM shop.orders").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows = %d (%v), want the rolled-back insert gone", n, err)
	}

	// An instant rollback again: the fence no longer waits after a KILL.
	srv.SetRollbackTime(0)
	if !srv.Snapshot().SuperReadOnly {
		t.Fatal("not fenced")
	}
}

// sessionState is the processlist COMMAND and STATE of session id.
func sessionState(t *testing.T, db *sql.DB, id int64) (string, string) {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), "SELECT ID, COMMAND, STATE FROM performance_schema.processlist")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var rid int64
		var cmd, state sql.NullString
		if err := rows.Scan(&rid, &cmd, &state); err != nil {
			t.Fatal(err)
		}
		if rid == id {
			return cmd.String, state.String
		}
	}
	return "", ""
}
