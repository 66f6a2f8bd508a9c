package mysqlsim_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// sessionInState reports whether some session's processlist state is state.
func sessionInState(t *testing.T, db *sql.DB, state string) bool {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), "SELECT STATE FROM performance_schema.processlist")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		if s.String == state {
			return true
		}
	}
	return false
}

// count is SELECT COUNT(*) FROM shop.orders on q (a pool, a connection or a
// transaction).
func count(t *testing.T, q func(string) *sql.Row) int {
	t.Helper()
	var n int
	if err := q("SELECT COUNT(*) FROM shop.orders").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// notYet fails when ch delivers within a short while: the statement behind it
// should still be waiting.
func notYet(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s returned (%v) while the lock was held", what, err)
	case <-time.After(200 * time.Millisecond):
	}
}

func goExec(db *sql.DB, q string) <-chan error {
	ch := make(chan error, 1)
	go func() { _, err := db.Exec(q); ch <- err }()
	return ch
}

// TestFlushTablesWithReadLock: the global read lock is taken while another
// transaction that wrote is still open; then other sessions' writes wait
// ("Waiting for global read lock"), that transaction's COMMIT waits
// ("Waiting for commit lock"), nothing commits (judged by the server's
// gtid_executed), the holder's own write is refused (1223), a bounded wait
// ends in 1205; UNLOCK TABLES lets everything through, and a session that
// ends releases its lock.
func TestFlushTablesWithReadLock(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	app := open(t, srv.Addr(), simtest.AppUser, simtest.AppPass, nil, false)
	c := ctx(t)
	mustExec(t, admin, "CREATE DATABASE shop")
	mustExec(t, admin, "CREATE TABLE shop.orders (id BIGINT)")

	open, err := app.BeginTx(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.ExecContext(c, "INSERT INTO shop.orders VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	holder, err := admin.Conn(c)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	for _, q := range []string{"FLUSH NO_WRITE_TO_BINLOG TABLES", "FLUSH TABLES WITH READ LOCK"} {
		if _, err := holder.ExecContext(c, q); err != nil {
			t.Fatalf("%s with another transaction open: %v", q, err)
		}
	}
	atLock := srv.Snapshot().Executed

	write := goExec(app, "INSERT INTO shop.orders VALUES (2)")
	commit := make(chan error, 1)
	go func() { commit <- open.Commit() }()
	eventually(t, 5*time.Second, "a write waiting for the global read lock", func() (bool, string) {
		return sessionInState(t, admin, "Waiting for global read lock"), "none"
	})
	eventually(t, 5*time.Second, "a COMMIT waiting for the commit lock", func() (bool, string) {
		return sessionInState(t, admin, "Waiting for commit lock"), "none"
	})
	notYet(t, write, "the write")
	notYet(t, commit, "the COMMIT")
	if _, err := holder.ExecContext(c, "INSERT INTO shop.orders VALUES (3)"); myErrNo(err) != 1223 {
		t.Fatalf("the lock holder's own write: %v, want 1223", err)
	}
	bounded, err := app.Conn(c)
	if err != nil {
		t.Fatal(err)
	}
	defer bounded.Close()
	mustConnExec(t, bounded, "SET SESSION lock_wait_timeout = 1")
	if _, err := bounded.ExecContext(c, "CREATE DATABASE other"); myErrNo(err) != 1205 {
		t.Fatalf("DDL behind the global read lock with lock_wait_timeout=1: %v, want 1205", err)
	}
	if got := srv.Snapshot().Executed; !got.Equal(atLock) {
		t.Fatalf("gtid_executed moved under the global read lock: %s, was %s", got.OneLine(), atLock.OneLine())
	}

	mustConnExec(t, holder, "UNLOCK TABLES")
	if err := <-write; err != nil {
		t.Fatalf("the write after UNLOCK TABLES: %v", err)
	}
	if err := <-commit; err != nil {
		t.Fatalf("the COMMIT after UNLOCK TABLES: %v", err)
	}
	if n := count(t, func(q string) *sql.Row { return admin.QueryRow(q) }); n != 2 {
		t.Fatalf("rows after UNLOCK TABLES = %d, want 2", n)
	}
	if got := srv.Snapshot().Executed.Count() - atLock.Count(); got != 2 {
		t.Fatalf("%d transactions committed after the unlock, want 2", got)
	}

	// A session that ends releases its lock.
	mustConnExec(t, holder, "FLUSH TABLES WITH READ LOCK")
	write = goExec(app, "INSERT INTO shop.orders VALUES (4)")
	notYet(t, write, "the write")
	killSession(t, admin, holder)
	select {
	case err := <-write:
		if err != nil {
			t.Fatalf("the write after the holder disconnected: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the write still waits after the lock holder's session ended")
	}
}

// killSession ends c's session on the server (KILL CONNECTION), as a
// client that dies does.
func killSession(t *testing.T, admin *sql.DB, c *sql.Conn) {
	t.Helper()
	var id int64
	if err := c.QueryRowContext(ctx(t), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	mustExec(t, admin, "KILL CONNECTION ?", id)
}

func mustConnExec(t *testing.T, c *sql.Conn, q string) {
	t.Helper()
	if _, err := c.ExecContext(ctx(t), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestFlushTablesPrivilegesAndForms: FLUSH TABLES [WITH READ LOCK] needs
// RELOAD or FLUSH_TABLES (1227); a FLUSH TABLES MySQL would write to the
// binary log is refused (1235) rather than silently not logged.
func TestFlushTablesPrivilegesAndForms(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	for _, u := range []string{"reader", "flusher", "reloader"} {
		mustExec(t, admin, "CREATE USER '"+u+"'@'%' IDENTIFIED BY 'pw'")
	}
	mustExec(t, admin, "GRANT SELECT ON *.* TO 'reader'@'%'")
	mustExec(t, admin, "GRANT FLUSH_TABLES ON *.* TO 'flusher'@'%'")
	mustExec(t, admin, "GRANT RELOAD ON *.* TO 'reloader'@'%'")
	for _, q := range []string{"FLUSH TABLES WITH READ LOCK", "FLUSH NO_WRITE_TO_BINLOG TABLES", "FLUSH LOCAL TABLE"} {
		if _, err := open(t, srv.Addr(), "reader", "pw", nil, false).Exec(q); myErrNo(err) != 1227 {
			t.Errorf("%s with SELECT only: %v, want 1227", q, err)
		}
		for _, u := range []string{"flusher", "reloader"} {
			db := open(t, srv.Addr(), u, "pw", nil, false)
			db.SetMaxOpenConns(1)
			if _, err := db.Exec(q); err != nil {
				t.Errorf("%s as %s: %v", q, u, err)
			}
			mustExec(t, db, "UNLOCK TABLES")
		}
	}
	if _, err := admin.Exec("FLUSH TABLES"); myErrNo(err) != 1235 {
		t.Errorf("FLUSH TABLES (logged): %v, want 1235", err)
	}
	if _, err := admin.Exec("FLUSH TABLES shop.orders WITH READ LOCK"); myErrNo(err) != 1235 {
		t.Errorf("FLUSH TABLES with a table list: %v, want 1235", err)
	}
	if _, err := admin.Exec("UNLOCK TABLES"); err != nil {
		t.Errorf("UNLOCK TABLES holding nothing: %v", err)
	}
}

// TestConsistentSnapshot: START TRANSACTION WITH CONSISTENT SNAPSHOT reads
// the data as it was when it started, whatever commits after; a table
// created since is 1412; the read view ends with the transaction. UNLOCK
// TABLES after FLUSH TABLES WITH READ LOCK does not end it (the dump's
// sequence).
func TestConsistentSnapshot(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	app := open(t, srv.Addr(), simtest.AppUser, simtest.AppPass, nil, false)
	c := ctx(t)
	mustExec(t, admin, "CREATE DATABASE shop")
	mustExec(t, admin, "CREATE TABLE shop.orders (id BIGINT)")
	mustExec(t, app, "INSERT INTO shop.orders VALUES (1), (2)")

	reader, err := admin.Conn(c)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	inReader := func(q string) *sql.Row { return reader.QueryRowContext(c, q) }
	mustConnExec(t, reader, "FLUSH TABLES WITH READ LOCK")
	mustConnExec(t, reader, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
	mustConnExec(t, reader, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
	mustConnExec(t, reader, "UNLOCK TABLES")
	mustExec(t, app, "INSERT INTO shop.orders VALUES (3)")
	mustExec(t, admin, "CREATE TABLE shop.later (id BIGINT)")
	if n := count(t, func(q string) *sql.Row { return admin.QueryRow(q) }); n != 3 {
		t.Fatalf("outside the snapshot: %d rows, want 3", n)
	}
	if n := count(t, inReader); n != 2 {
		t.Fatalf("in the snapshot: %d rows, want the 2 committed before it", n)
	}
	var id int
	if err := inReader("SELECT COUNT(*) FROM shop.later").Scan(&id); myErrNo(err) != 1412 {
		t.Fatalf("a table created after the snapshot: %v, want 1412", err)
	}
	mustConnExec(t, reader, "COMMIT")
	if n := count(t, inReader); n != 3 {
		t.Fatalf("after COMMIT: %d rows, want 3", n)
	}
	// A plain START TRANSACTION has no read view in the simulator; a new
	// one with a snapshot replaces an old one.
	mustConnExec(t, reader, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
	mustExec(t, app, "INSERT INTO shop.orders VALUES (4)")
	mustConnExec(t, reader, "START TRANSACTION")
	if n := count(t, inReader); n != 4 {
		t.Fatalf("in a plain transaction after a snapshot one: %d rows, want 4", n)
	}
	mustConnExec(t, reader, "ROLLBACK")
}

// TestBackupLock: LOCK INSTANCE FOR BACKUP needs BACKUP_ADMIN (1227); while
// another session holds it, DML goes on, and CREATE/DROP DATABASE, CREATE
// TABLE and account statements wait ("Waiting for backup lock"; 1205 when
// bounded); the holder's own DDL and a second holder are let through;
// UNLOCK INSTANCE and the end of the session release it.
func TestBackupLock(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	app := open(t, srv.Addr(), simtest.AppUser, simtest.AppPass, nil, false)
	repl := open(t, srv.Addr(), simtest.ReplUser, simtest.ReplPass, nil, false) // holds BACKUP_ADMIN
	c := ctx(t)
	mustExec(t, admin, "CREATE DATABASE shop")
	mustExec(t, admin, "CREATE TABLE shop.orders (id BIGINT)")
	if _, err := app.Exec("LOCK INSTANCE FOR BACKUP"); myErrNo(err) != 1227 {
		t.Fatalf("LOCK INSTANCE FOR BACKUP without BACKUP_ADMIN: %v, want 1227", err)
	}
	second, err := admin.Conn(c)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	mustConnExec(t, second, "LOCK INSTANCE FOR BACKUP")
	mustConnExec(t, second, "CREATE TABLE shop.own (id BIGINT)") // the holder's own DDL is not blocked
	holder, err := repl.Conn(c)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	mustConnExec(t, holder, "LOCK INSTANCE FOR BACKUP") // a second holder
	mustConnExec(t, second, "UNLOCK INSTANCE")

	mustExec(t, app, "INSERT INTO shop.orders VALUES (1)") // DML is not blocked
	ddl := goExec(admin, "CREATE TABLE shop.blocked (id BIGINT)")
	acct := goExec(admin, "CREATE USER 'late'@'%' IDENTIFIED BY 'pw'")
	eventually(t, 5*time.Second, "DDL waiting for the backup lock", func() (bool, string) {
		return sessionInState(t, admin, "Waiting for backup lock"), "none"
	})
	notYet(t, ddl, "CREATE TABLE")
	notYet(t, acct, "CREATE USER")
	mustConnExec(t, second, "SET SESSION lock_wait_timeout = 1")
	if _, err := second.ExecContext(c, "DROP DATABASE shop"); myErrNo(err) != 1205 {
		t.Fatalf("DROP DATABASE behind the backup lock with lock_wait_timeout=1: %v, want 1205", err)
	}
	mustConnExec(t, holder, "UNLOCK INSTANCE")
	for what, ch := range map[string]<-chan error{"CREATE TABLE": ddl, "CREATE USER": acct} {
		if err := <-ch; err != nil {
			t.Fatalf("%s after UNLOCK INSTANCE: %v", what, err)
		}
	}

	// A session's end releases the lock.
	mustConnExec(t, holder, "LOCK INSTANCE FOR BACKUP")
	ddl = goExec(admin, "CREATE DATABASE after")
	notYet(t, ddl, "CREATE DATABASE")
	killSession(t, admin, holder)
	select {
	case err := <-ddl:
		if err != nil {
			t.Fatalf("CREATE DATABASE after the holder disconnected: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("DDL still waits after the backup lock holder's session ended")
	}
}

// TestReplicaApplierWaitsBehindGlobalReadLock: on a replica, FLUSH TABLES
// WITH READ LOCK holds the applier too, so the GTID set read under it is the
// one the data corresponds to; it catches up after UNLOCK TABLES.
func TestReplicaApplierWaitsBehindGlobalReadLock(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	replicate(t, rep, src, "")
	srcDB, repDB := adminDB(t, src), adminDB(t, rep)
	writeRows(t, srcDB, 2)
	waitExecuted(t, rep, src.Snapshot().Executed, "the replica catching up")
	holder, err := repDB.Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	mustConnExec(t, holder, "FLUSH TABLES WITH READ LOCK")
	atLock := rep.Snapshot().Executed
	writeRows(t, srcDB, 3)
	eventually(t, 10*time.Second, "the replica receiving the new transactions", func() (bool, string) {
		s := rep.Snapshot()
		return src.Snapshot().Executed.IsSubsetOf(s.Retrieved.Union(atLock)), s.String()
	})
	time.Sleep(200 * time.Millisecond)
	if got := rep.Snapshot().Executed; !got.Equal(atLock) {
		t.Fatalf("the applier committed under the global read lock: %s, was %s", got.OneLine(), atLock.OneLine())
	}
	mustConnExec(t, holder, "UNLOCK TABLES")
	waitExecuted(t, rep, src.Snapshot().Executed, "the replica applying after UNLOCK TABLES")
}

// TestShowTables: SHOW [FULL] TABLES [FROM db] [LIKE], only the tables the
// session holds a privilege on; 1046 without a schema, 1049 for an unknown
// one.
func TestShowTables(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	mustExec(t, admin, "CREATE DATABASE shop")
	mustExec(t, admin, "CREATE TABLE shop.orders (id BIGINT)")
	mustExec(t, admin, "CREATE TABLE shop.items (id BIGINT)")
	mustExec(t, admin, "CREATE USER 'narrow'@'%' IDENTIFIED BY 'pw'")
	mustExec(t, admin, "GRANT SELECT ON shop.orders TO 'narrow'@'%'")
	list := func(db *sql.DB, q string) []string {
		t.Helper()
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out []string
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				out = append(out, v.String)
			}
		}
		return append([]string{cols[0]}, out...)
	}
	if got := list(admin, "SHOW TABLES FROM shop"); len(got) != 3 || got[0] != "Tables_in_shop" || got[1] != "items" || got[2] != "orders" {
		t.Errorf("SHOW TABLES FROM shop = %q", got)
	}
	if got := list(admin, "SHOW FULL TABLES IN shop LIKE 'ord%'"); len(got) != 3 || got[1] != "orders" || got[2] != "BASE TABLE" {
		t.Errorf("SHOW FULL TABLES LIKE = %q", got)
	}
	if got := list(open(t, srv.Addr(), "narrow", "pw", nil, false), "SHOW TABLES FROM shop"); len(got) != 2 || got[1] != "orders" {
		t.Errorf("SHOW TABLES for an account with SELECT on shop.orders only = %q", got)
	}
	if _, err := admin.Exec("SHOW TABLES"); myErrNo(err) != 1046 {
		t.Errorf("SHOW TABLES without a schema: %v, want 1046", err)
	}
	if _, err := admin.Exec("SHOW TABLES FROM nowhere"); myErrNo(err) != 1049 {
		t.Errorf("SHOW TABLES FROM an unknown schema: %v, want 1049", err)
	}
}
