package mysqlsim_test

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// mode is one combination of the DSN options the product uses.
type mode struct {
	name        string
	tls         bool
	interpolate bool
}

var modes = []mode{
	{"plain-prepared", false, false},
	{"plain-interpolated", false, true},
	{"tls-prepared", true, false},
	{"tls-interpolated", true, true},
}

func open(t *testing.T, addr, user, pass string, tlsCfg *tls.Config, interpolate bool) *sql.DB {
	t.Helper()
	cfg := driver.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", addr, user, pass
	cfg.TLS, cfg.InterpolateParams = tlsCfg, interpolate
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 5*time.Second, 30*time.Second, 5*time.Second
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

func myErrNo(err error) uint16 {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestAuthenticationAndTransport: both password plugins, with and without
// TLS, prepared and interpolated; wrong passwords and unknown users get 1045.
func TestAuthenticationAndTransport(t *testing.T) {
	tl := simtest.NewTLS(t)
	srv := simtest.Start(t, mysqlsim.Config{TLS: tl.Server})
	for _, m := range modes {
		for _, u := range []struct{ user, pass string }{{simtest.AdminUser, simtest.AdminPass}, {simtest.NativeUser, simtest.NativePass}} {
			t.Run(m.name+"/"+u.user, func(t *testing.T) {
				var tc *tls.Config
				if m.tls {
					tc = tl.Client
				}
				db := open(t, srv.Addr(), u.user, u.pass, tc, m.interpolate)
				var got string
				if err := db.QueryRowContext(ctx(t), "SELECT @@GLOBAL.server_uuid").Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != srv.ServerUUID() {
					t.Fatalf("server_uuid = %q, want %q", got, srv.ServerUUID())
				}
				// a second connection exercises the caching_sha2 fast path
				db.SetMaxIdleConns(0)
				if err := db.PingContext(ctx(t)); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
	for _, bad := range []struct{ user, pass string }{{simtest.AdminUser, "wrong"}, {"nobody", "x"}, {simtest.NativeUser, "wrong"}} {
		db := open(t, srv.Addr(), bad.user, bad.pass, nil, false)
		err := db.PingContext(ctx(t))
		if myErrNo(err) != 1045 {
			t.Errorf("login %s/%s: got %v, want error 1045", bad.user, bad.pass, err)
		}
	}
}

// TestReadOnlyCoupling checks MySQL's read_only/super_read_only rules and the
// refusals (1290) for each kind of account.
func TestReadOnlyCoupling(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	for _, m := range modes[:2] {
		t.Run(m.name, func(t *testing.T) {
			admin := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, m.interpolate)
			app := open(t, srv.Addr(), simtest.AppUser, simtest.AppPass, nil, m.interpolate)
			c := ctx(t)
			mustExec(t, admin, "SET GLOBAL read_only = OFF")
			mustExec(t, admin, "CREATE DATABASE IF NOT EXISTS shop")
			mustExec(t, admin, "CREATE TABLE IF NOT EXISTS shop.orders (id BIGINT PRIMARY KEY, note VARCHAR(20))")
			roles := func() (int64, int64) {
				var ro, sro int64
				if err := admin.QueryRowContext(c, "SELECT @@GLOBAL.read_only, @@GLOBAL.super_read_only").Scan(&ro, &sro); err != nil {
					t.Fatal(err)
				}
				return ro, sro
			}
			insert := func(db *sql.DB) error {
				_, err := db.ExecContext(c, "INSERT INTO shop.orders (id, note) VALUES (?, ?)", time.Now().UnixNano(), "x")
				return err
			}
			if err := insert(app); err != nil {
				t.Fatalf("writable server refused app write: %v", err)
			}
			mustExec(t, admin, "SET GLOBAL super_read_only = ON")
			if ro, sro := roles(); ro != 1 || sro != 1 {
				t.Fatalf("after super_read_only=ON: read_only=%d super_read_only=%d, want 1 1", ro, sro)
			}
			for _, db := range []*sql.DB{app, admin} {
				err := insert(db)
				if myErrNo(err) != 1290 || !strings.Contains(err.Error(), "--super-read-only") {
					t.Fatalf("write under super_read_only: got %v, want 1290 --super-read-only", err)
				}
			}
			mustExec(t, admin, "SET GLOBAL super_read_only = OFF")
			if ro, sro := roles(); ro != 1 || sro != 0 {
				t.Fatalf("after super_read_only=OFF: read_only=%d super_read_only=%d, want 1 0", ro, sro)
			}
			err := insert(app)
			if myErrNo(err) != 1290 || !strings.Contains(err.Error(), "--read-only") {
				t.Fatalf("app write under read_only: got %v, want 1290 --read-only", err)
			}
			if err := insert(admin); err != nil {
				t.Fatalf("admin (CONNECTION_ADMIN) write under read_only must succeed: %v", err)
			}
			mustExec(t, admin, "SET GLOBAL super_read_only = ON")
			mustExec(t, admin, "SET GLOBAL read_only = OFF")
			if ro, sro := roles(); ro != 0 || sro != 0 {
				t.Fatalf("after read_only=OFF: read_only=%d super_read_only=%d, want 0 0", ro, sro)
			}
			_, err = app.ExecContext(c, "SET GLOBAL super_read_only = ON")
			if myErrNo(err) != 1227 {
				t.Fatalf("app SET GLOBAL: got %v, want 1227", err)
			}
			_, err = admin.ExecContext(c, "SET GLOBAL read_only = 'maybe'")
			if myErrNo(err) != 1231 {
				t.Fatalf("bad value: got %v, want 1231", err)
			}
			_, err = admin.ExecContext(c, "SET SESSION read_only = ON")
			if myErrNo(err) != 1229 {
				t.Fatalf("session scope: got %v, want 1229", err)
			}
			_, err = admin.ExecContext(c, "SET GLOBAL gtid_executed = ''")
			if myErrNo(err) != 1238 {
				t.Fatalf("read-only variable: got %v, want 1238", err)
			}
			_, err = admin.ExecContext(c, "SET GLOBAL no_such_variable = 1")
			if myErrNo(err) != 1193 {
				t.Fatalf("unknown variable: got %v, want 1193", err)
			}
		})
	}
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(ctx(t), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestWritesCommitGTIDs: each autocommit write and each transaction commits
// one GTID of the server's UUID; the first free number is used; an explicit
// gtid_next commits exactly that GTID.
func TestWritesCommitGTIDs(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	db := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	c := ctx(t)
	mustExec(t, db, "CREATE DATABASE d")                         // 1
	mustExec(t, db, "CREATE TABLE d.t (k INT, v VARCHAR(10))")   // 2
	mustExec(t, db, "INSERT INTO d.t VALUES (1, 'a'), (2, 'b')") // 3
	tx, err := db.BeginTx(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := tx.ExecContext(c, "INSERT INTO d.t (k, v) VALUES (?, ?)", 10+i, "tx"); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil { // 4
		t.Fatal(err)
	}
	var executed string
	if err := db.QueryRowContext(c, "SELECT @@GLOBAL.gtid_executed").Scan(&executed); err != nil {
		t.Fatal(err)
	}
	if want := srv.ServerUUID() + ":1-4"; executed != want {
		t.Fatalf("gtid_executed = %q, want %q", executed, want)
	}
	var n int64
	if err := db.QueryRowContext(c, "SELECT COUNT(*) FROM d.t").Scan(&n); err != nil || n != 5 {
		t.Fatalf("rows = %d (%v), want 5", n, err)
	}
	conn, err := db.Conn(c)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	other := simtest.UUID(9999)
	if _, err := conn.ExecContext(c, "SET gtid_next = ?", other+":7"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(c, "INSERT INTO d.t VALUES (99, 'x')"); err != nil {
		t.Fatal(err)
	}
	_, err = conn.ExecContext(c, "INSERT INTO d.t VALUES (100, 'y')")
	if myErrNo(err) != 1837 {
		t.Fatalf("second transaction on a used gtid_next: got %v, want 1837", err)
	}
	if _, err := conn.ExecContext(c, "SET gtid_next = 'AUTOMATIC'"); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(c, "SELECT @@GLOBAL.gtid_executed").Scan(&executed); err != nil {
		t.Fatal(err)
	}
	want := gtid.MustParse(srv.ServerUUID() + ":1-4," + other + ":7").String()
	if executed != want {
		t.Fatalf("gtid_executed = %q, want %q (joined by \",\\n\" as MySQL prints it)", executed, want)
	}
	if !strings.Contains(executed, ",\n") {
		t.Fatalf("multi-UUID gtid_executed must be joined by a comma and newline: %q", executed)
	}
	var notExist int64
	err = db.QueryRowContext(c, "SELECT COUNT(*) FROM d.nope").Scan(&notExist)
	if myErrNo(err) != 1146 {
		t.Fatalf("missing table: got %v, want 1146", err)
	}
}

// TestGTIDFunctions: GTID_SUBTRACT, GTID_SUBSET with the manual's examples,
// NULL and malformed arguments, in every transport mode.
func TestGTIDFunctions(t *testing.T) {
	tl := simtest.NewTLS(t)
	srv := simtest.Start(t, mysqlsim.Config{TLS: tl.Server})
	const u = "3E11FA47-71CA-11E1-9E33-C80AA9429562"
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			var tc *tls.Config
			if m.tls {
				tc = tl.Client
			}
			db := open(t, srv.Addr(), simtest.AppUser, simtest.AppPass, tc, m.interpolate)
			c := ctx(t)
			var diff string
			if err := db.QueryRowContext(c, "SELECT GTID_SUBTRACT(?, ?)", u+":21-57", u+":22-55").Scan(&diff); err != nil {
				t.Fatal(err)
			}
			if want := strings.ToLower(u) + ":21:56-57"; diff != want {
				t.Fatalf("GTID_SUBTRACT = %q, want %q", diff, want)
			}
			for _, tc := range []struct {
				a, b string
				want int64
			}{{u + ":23", u + ":21-57", 1}, {u + ":20-25", u + ":21-57", 0}} {
				var got int64
				if err := db.QueryRowContext(c, "SELECT GTID_SUBSET(?, ?)", tc.a, tc.b).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Fatalf("GTID_SUBSET(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
				}
			}
			var null sql.NullString
			if err := db.QueryRowContext(c, "SELECT GTID_SUBTRACT(NULL, ?)", u+":1").Scan(&null); err != nil || null.Valid {
				t.Fatalf("GTID_SUBTRACT(NULL, x) = %v (%v), want NULL", null, err)
			}
			err := db.QueryRowContext(c, "SELECT GTID_SUBSET(?, ?)", "garbage", u+":1").Scan(&null)
			if myErrNo(err) != 1772 {
				t.Fatalf("malformed set: got %v, want 1772", err)
			}
		})
	}
}

// TestWaitForExecutedGTIDSet: returns 0 at once when contained, 1 on timeout,
// 0 when a write arrives during the wait; negative timeouts are refused.
func TestWaitForExecutedGTIDSet(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	for _, m := range modes[:2] {
		t.Run(m.name, func(t *testing.T) {
			db := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, m.interpolate)
			c := ctx(t)
			mustExec(t, db, "CREATE DATABASE IF NOT EXISTS w")
			var executed string
			if err := db.QueryRowContext(c, "SELECT @@GLOBAL.gtid_executed").Scan(&executed); err != nil {
				t.Fatal(err)
			}
			cur := gtid.MustParse(executed)
			var res int64
			if err := db.QueryRowContext(c, "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)", executed, 1).Scan(&res); err != nil || res != 0 {
				t.Fatalf("wait for executed set: %d %v, want 0", res, err)
			}
			next := gtid.GTID{UUID: srv.ServerUUID(), GNO: cur.NextGNO(gtid.SID{UUID: srv.ServerUUID()})}
			if err := db.QueryRowContext(c, "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)", next.String(), "0.2").Scan(&res); err != nil || res != 1 {
				t.Fatalf("wait for a future GTID with 0.2s timeout: %d %v, want 1", res, err)
			}
			done := make(chan error, 1)
			go func() {
				var r int64
				err := db.QueryRowContext(c, "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)", next.String(), 10).Scan(&r)
				if err == nil && r != 0 {
					err = fmt.Errorf("wait returned %d, want 0", r)
				}
				done <- err
			}()
			time.Sleep(100 * time.Millisecond)
			mustExec(t, db, "CREATE DATABASE IF NOT EXISTS w2"+strings.ReplaceAll(m.name, "-", "_"))
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			err := db.QueryRowContext(c, "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)", executed, -1).Scan(&res)
			if myErrNo(err) != 1210 {
				t.Fatalf("negative timeout: got %v, want 1210", err)
			}
		})
	}
}

// TestProcesslistAndKill: sessions are listed with user, host and statement;
// KILL QUERY interrupts a wait with 1317; KILL CONNECTION drops a session;
// unknown ids give 1094; app users cannot kill other users' sessions (1095).
func TestProcesslistAndKill(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	app := open(t, srv.Addr(), simtest.AppUser, simtest.AppPass, nil, true)
	c := ctx(t)
	appConn, err := app.Conn(c)
	if err != nil {
		t.Fatal(err)
	}
	var appID uint64
	if err := appConn.QueryRowContext(c, "SELECT CONNECTION_ID()").Scan(&appID); err != nil {
		t.Fatal(err)
	}
	waitErr := make(chan error, 1)
	go func() {
		var r int64
		waitErr <- appConn.QueryRowContext(c, "SELECT WAIT_FOR_EXECUTED_GTID_SET('"+simtest.UUID(4242)+":1', 30)").Scan(&r)
	}()
	var found bool
	for i := 0; i < 100 && !found; i++ {
		rows, err := admin.QueryContext(c, "SELECT ID, USER, HOST, DB, COMMAND, TIME, STATE, INFO FROM performance_schema.processlist")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id uint64
			var user, host, command string
			var db, state, info sql.NullString
			var secs int64
			if err := rows.Scan(&id, &user, &host, &db, &command, &secs, &state, &info); err != nil {
				t.Fatal(err)
			}
			if id == appID && command == "Query" && strings.Contains(info.String, "WAIT_FOR_EXECUTED_GTID_SET") {
				found = true
				if user != simtest.AppUser || !strings.HasPrefix(host, "127.0.0.1:") {
					t.Fatalf("processlist row for app session: user=%q host=%q", user, host)
				}
			}
		}
		rows.Close()
		if !found {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !found {
		t.Fatal("the app session's running statement never showed in performance_schema.processlist")
	}
	// app users see only their own sessions
	var visible int
	rows, err := app.QueryContext(c, "SHOW PROCESSLIST")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id uint64
		var user, host, command string
		var db, state, info sql.NullString
		var secs int64
		if err := rows.Scan(&id, &user, &host, &db, &command, &secs, &state, &info); err != nil {
			t.Fatal(err)
		}
		if user != simtest.AppUser {
			t.Fatalf("app user sees %s's session %d", user, id)
		}
		visible++
	}
	rows.Close()
	if visible == 0 {
		t.Fatal("SHOW PROCESSLIST listed nothing for the app user")
	}
	mustExec(t, admin, fmt.Sprintf("KILL QUERY %d", appID))
	if err := <-waitErr; myErrNo(err) != 1317 {
		t.Fatalf("killed wait: got %v, want 1317", err)
	}
	// the session survives KILL QUERY
	var one int64
	if err := appConn.QueryRowContext(c, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("session after KILL QUERY: %v", err)
	}
	adminConn, err := admin.Conn(c)
	if err != nil {
		t.Fatal(err)
	}
	defer adminConn.Close()
	var adminID uint64
	if err := adminConn.QueryRowContext(c, "SELECT CONNECTION_ID()").Scan(&adminID); err != nil {
		t.Fatal(err)
	}
	_, err = appConn.ExecContext(c, fmt.Sprintf("KILL %d", adminID))
	if myErrNo(err) != 1095 {
		t.Fatalf("app killing admin session: got %v, want 1095", err)
	}
	mustExec(t, admin, fmt.Sprintf("KILL CONNECTION %d", appID))
	if err := appConn.QueryRowContext(c, "SELECT 1").Scan(&one); err == nil {
		t.Fatal("killed connection still answers")
	}
	appConn.Close()
	_, err = admin.ExecContext(c, "KILL 987654")
	if myErrNo(err) != 1094 {
		t.Fatalf("unknown thread: got %v, want 1094", err)
	}
}

// TestReplicaStatusShape: no row without a channel; with a configured but
// stopped channel, one row with MySQL 9.7's 60 columns in order, ” / 0 for
// unset values and NULL only in Seconds_Behind_Source and SQL_Remaining_Delay.
func TestReplicaStatusShape(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	for _, m := range modes[:2] {
		t.Run(m.name, func(t *testing.T) {
			db := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, m.interpolate)
			c := ctx(t)
			mustExec(t, db, "RESET REPLICA ALL")
			rows, err := db.QueryContext(c, "SHOW REPLICA STATUS")
			if err != nil {
				t.Fatal(err)
			}
			cols, _ := rows.Columns()
			if rows.Next() {
				t.Fatal("SHOW REPLICA STATUS returned a row on a server without a channel")
			}
			rows.Close()
			if len(cols) != len(wantReplicaColumns) {
				t.Fatalf("zero-row result has %d columns, want %d", len(cols), len(wantReplicaColumns))
			}
			mustExec(t, db, "CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'src.example', SOURCE_PORT = 3306, SOURCE_USER = 'repl', SOURCE_PASSWORD = 'p''w', SOURCE_AUTO_POSITION = 1, SOURCE_SSL = 1")
			rows, err = db.QueryContext(c, "SHOW REPLICA STATUS")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			cols, _ = rows.Columns()
			if strings.Join(cols, ",") != strings.Join(wantReplicaColumns, ",") {
				t.Fatalf("columns:\n got %v\nwant %v", cols, wantReplicaColumns)
			}
			if !rows.Next() {
				t.Fatal("no row with a configured channel")
			}
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			got := map[string]sql.NullString{}
			for i, cname := range cols {
				got[cname] = vals[i]
				nullable := cname == "Seconds_Behind_Source" || cname == "SQL_Remaining_Delay"
				if !vals[i].Valid && !nullable {
					t.Errorf("column %s is NULL; MySQL shows '' or 0", cname)
				}
			}
			for k, want := range map[string]string{"Source_Host": "src.example", "Source_Port": "3306", "Source_User": "repl",
				"Replica_IO_Running": "No", "Replica_SQL_Running": "No", "Auto_Position": "1", "Source_SSL_Allowed": "Yes",
				"Channel_Name": "", "Connect_Retry": "60", "Last_IO_Errno": "0"} {
				if got[k].String != want {
					t.Errorf("%s = %q, want %q", k, got[k].String, want)
				}
			}
			if got["Seconds_Behind_Source"].Valid {
				t.Errorf("Seconds_Behind_Source = %q with the applier stopped, want NULL", got["Seconds_Behind_Source"].String)
			}
			_, err = db.ExecContext(c, "START REPLICA UNTIL SQL_AFTER_GTIDS = 'x'")
			if myErrNo(err) != 1235 {
				t.Fatalf("unsupported option: got %v, want 1235", err)
			}
		})
	}
	app := open(t, srv.Addr(), simtest.AppUser, simtest.AppPass, nil, false)
	if _, err := app.ExecContext(ctx(t), "SHOW REPLICA STATUS"); myErrNo(err) != 1227 {
		t.Fatalf("app SHOW REPLICA STATUS: got %v, want 1227", err)
	}
	admin := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	mustExec(t, admin, "RESET REPLICA ALL")
	if _, err := admin.ExecContext(ctx(t), "START REPLICA"); myErrNo(err) != 1200 {
		t.Fatalf("START REPLICA without a source: got %v, want 1200", err)
	}
}

var wantReplicaColumns = strings.Fields(`Replica_IO_State Source_Host Source_User Source_Port Connect_Retry
Source_Log_File Read_Source_Log_Pos Relay_Log_File Relay_Log_Pos Relay_Source_Log_File Replica_IO_Running
Replica_SQL_Running Replicate_Do_DB Replicate_Ignore_DB Replicate_Do_Table Replicate_Ignore_Table
Replicate_Wild_Do_Table Replicate_Wild_Ignore_Table Last_Errno Last_Error Skip_Counter Exec_Source_Log_Pos
Relay_Log_Space Until_Condition Until_Log_File Until_Log_Pos Source_SSL_Allowed Source_SSL_CA_File
Source_SSL_CA_Path Source_SSL_Cert Source_SSL_Cipher Source_SSL_Key Seconds_Behind_Source
Source_SSL_Verify_Server_Cert Last_IO_Errno Last_IO_Error Last_SQL_Errno Last_SQL_Error
Replicate_Ignore_Server_Ids Source_Server_Id Source_UUID Source_Info_File SQL_Delay SQL_Remaining_Delay
Replica_SQL_Running_State Source_Retry_Count Source_Bind Last_IO_Error_Timestamp Last_SQL_Error_Timestamp
Source_SSL_Crl Source_SSL_Crlpath Retrieved_Gtid_Set Executed_Gtid_Set Auto_Position Replicate_Rewrite_DB
Channel_Name Source_TLS_Version Source_public_key_path Get_Source_public_key Network_Namespace`)

// TestDriverConnectStatements: what the driver may send at connect
// (SET NAMES via charset, SET for unknown params, SELECT @@max_allowed_packet)
// and multi-statements are accepted; parse errors carry 1064.
func TestDriverConnectStatements(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/?charset=utf8mb4&maxAllowedPacket=0&time_zone=%%27%%2B00%%3A00%%27&multiStatements=true",
		simtest.AdminUser, simtest.AdminPass, srv.Addr())
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.PingContext(ctx(t)); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, "SET GLOBAL read_only = ON; SET GLOBAL read_only = OFF; CREATE DATABASE ms")
	if _, err := db.ExecContext(ctx(t), "SELEC 1"); myErrNo(err) != 1064 {
		t.Fatalf("parse error: got %v, want 1064", err)
	}
}

// TestFenceRefusesCommitOfOpenTransaction: on a server already read_only
// (a replica, or a primary half fenced), an account with CONNECTION_ADMIN may
// still write; its transaction, open when super_read_only=ON arrives, is
// refused at COMMIT with 1290 and rolled back, as MySQL's commit checks
// read_only (ha_commit_trans). (Turning read_only itself from OFF to ON waits
// for open transactions in MySQL; the simulator does not model that wait,
// see docs/mysql-simulator.md.)
func TestFenceRefusesCommitOfOpenTransaction(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{ReadOnly: true})
	admin := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	c := ctx(t)
	mustExec(t, admin, "CREATE DATABASE shop")
	mustExec(t, admin, "CREATE TABLE shop.orders (id BIGINT)")
	before := srv.Snapshot().Executed
	writer := open(t, srv.Addr(), simtest.NativeUser, simtest.NativePass, nil, false) // another admin-role account
	tx, err := writer.BeginTx(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(c, "INSERT INTO shop.orders VALUES (?)", 1); err != nil {
		t.Fatalf("CONNECTION_ADMIN write under read_only: %v", err)
	}
	mustExec(t, admin, "SET GLOBAL super_read_only = ON")
	if err := tx.Commit(); myErrNo(err) != 1290 {
		t.Fatalf("COMMIT after super_read_only=ON: got %v, want 1290", err)
	}
	var n int64
	if err := admin.QueryRowContext(c, "SELECT COUNT(*) FROM shop.orders").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows after the refused commit = %d (%v), want 0", n, err)
	}
	if after := srv.Snapshot().Executed; !after.Equal(before) {
		t.Fatalf("gtid_executed moved from %s to %s on a refused commit", before, after)
	}
}

// TestFenceWaitsForOpenTransactions: turning read_only on (here through
// super_read_only=ON on a writable server) waits, as MySQL's global read
// lock does, until other sessions' open transactions end; the transaction
// commits, the fence then takes effect, and a write arriving meanwhile
// waits and meets the fence (1290). lock_wait_timeout bounds the wait (1205);
// inside the caller's own transaction the change is refused (1192).
func TestFenceWaitsForOpenTransactions(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	app := open(t, srv.Addr(), simtest.AppUser, simtest.AppPass, nil, false)
	c := ctx(t)
	mustExec(t, admin, "CREATE DATABASE shop")
	mustExec(t, admin, "CREATE TABLE shop.orders (id BIGINT)")
	readOnly := func() int64 {
		var ro int64
		if err := admin.QueryRowContext(c, "SELECT @@GLOBAL.read_only").Scan(&ro); err != nil {
			t.Fatal(err)
		}
		return ro
	}

	// a bounded fence gives up with 1205 and changes nothing
	tx, err := app.BeginTx(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(c, "INSERT INTO shop.orders VALUES (?)", 1); err != nil {
		t.Fatal(err)
	}
	fencer, err := admin.Conn(c)
	if err != nil {
		t.Fatal(err)
	}
	defer fencer.Close()
	if _, err := fencer.ExecContext(c, "SET SESSION lock_wait_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := fencer.ExecContext(c, "SET GLOBAL super_read_only = ON"); myErrNo(err) != 1205 {
		t.Fatalf("fence behind an open transaction with lock_wait_timeout=1: got %v, want 1205", err)
	}
	if readOnly() != 0 {
		t.Fatal("a fence that timed out changed read_only")
	}

	// an unbounded fence waits; the transaction commits; the fence follows
	fenced := make(chan error, 1)
	go func() {
		_, err := admin.ExecContext(c, "SET GLOBAL super_read_only = ON")
		fenced <- err
	}()
	eventually(t, 5*time.Second, "the fence waiting for the global read lock", func() (bool, string) {
		return fenceWaiting(t, admin), "no session in state Waiting for global read lock"
	})
	late := make(chan error, 1)
	go func() {
		_, err := app.ExecContext(c, "INSERT INTO shop.orders VALUES (?)", 2)
		late <- err
	}()
	select {
	case err := <-fenced:
		t.Fatalf("the fence returned (%v) while a transaction was open", err)
	case err := <-late:
		t.Fatalf("a new write went through (%v) while a fence waited", err)
	case <-time.After(200 * time.Millisecond):
	}
	if readOnly() != 0 {
		t.Fatal("read_only is ON while the fence still waits")
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("COMMIT of the transaction the fence waits for: %v", err)
	}
	if err := <-fenced; err != nil {
		t.Fatalf("fence after the transaction ended: %v", err)
	}
	if err := <-late; myErrNo(err) != 1290 {
		t.Fatalf("write that waited behind the fence: got %v, want 1290", err)
	}
	var n int64
	if err := admin.QueryRowContext(c, "SELECT COUNT(*) FROM shop.orders").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows = %d (%v), want the committed 1", n, err)
	}

	// inside the caller's own transaction: 1192
	mustExec(t, admin, "SET GLOBAL read_only = OFF")
	own, err := admin.BeginTx(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Rollback()
	if _, err := own.ExecContext(c, "SET GLOBAL read_only = ON"); myErrNo(err) != 1192 {
		t.Fatalf("read_only=ON inside an open transaction: got %v, want 1192", err)
	}
}

// fenceWaiting reports a session waiting for the global read lock.
func fenceWaiting(t *testing.T, db *sql.DB) bool {
	rows, err := db.QueryContext(ctx(t), "SELECT STATE FROM performance_schema.processlist")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var state sql.NullString
		if err := rows.Scan(&state); err != nil {
			t.Fatal(err)
		}
		if state.String == "Waiting for global read lock" {
			return true
		}
	}
	return false
}

// TestNowFractionalSeconds: NOW(6) carries microseconds (the operator maps a
// replica's performance_schema timestamps onto its own clock with it), NOW()
// none, and a precision above 6 is refused as MySQL refuses it.
func TestNowFractionalSeconds(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	db := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	before := time.Now().UTC().Truncate(time.Microsecond)
	var six, zero string
	if err := db.QueryRow("SELECT NOW(6)").Scan(&six); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT NOW()").Scan(&zero); err != nil {
		t.Fatal(err)
	}
	after := time.Now().UTC()
	got, err := time.Parse("2006-01-02 15:04:05.000000", six)
	if err != nil {
		t.Fatalf("NOW(6) = %q: %v", six, err)
	}
	if got.Before(before) || got.After(after) {
		t.Fatalf("NOW(6) = %s, want between %s and %s", got, before, after)
	}
	if _, err := time.Parse("2006-01-02 15:04:05", zero); err != nil {
		t.Fatalf("NOW() = %q, want no fraction: %v", zero, err)
	}
	if _, err := db.Exec("SELECT NOW(7)"); myErrNo(err) != 1426 {
		t.Fatalf("NOW(7): %v, want 1426", err)
	}
}
