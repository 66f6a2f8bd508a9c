package mysqlsim_test

import (
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// gmLogin logs in with go-mysql's client (a client other than the
// product's driver) and runs SELECT CURRENT_USER(); it returns the account
// or the error.
func gmLogin(addr, user, pass string, tlsCfg *tls.Config) (string, error) {
	c, err := client.Connect(addr, user, pass, "", func(c *client.Conn) error {
		if tlsCfg != nil {
			c.SetTLSConfig(tlsCfg)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	defer c.Close()
	r, err := c.Execute("SELECT CURRENT_USER()")
	if err != nil {
		return "", err
	}
	return r.GetString(0, 0)
}

func gmErrNo(err error) uint16 {
	var me *gomysql.MyError
	if errors.As(err, &me) {
		return me.Code
	}
	return 0
}

// wantLogin fails the test unless user/pass logs in as account.
func wantLogin(t *testing.T, addr, user, pass string, tlsCfg *tls.Config, account string) {
	t.Helper()
	got, err := gmLogin(addr, user, pass, tlsCfg)
	if err != nil || got != account {
		t.Fatalf("login %s (tls %v): got %q, %v; want %s", user, tlsCfg != nil, got, err, account)
	}
}

func wantDenied(t *testing.T, addr, user, pass string, tlsCfg *tls.Config) {
	t.Helper()
	if _, err := gmLogin(addr, user, pass, tlsCfg); gmErrNo(err) != 1045 {
		t.Fatalf("login %s/%s (tls %v): got %v, want error 1045", user, pass, tlsCfg != nil, err)
	}
}

func clientTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // throw-away test CA
}

// TestFullAuthenticationWithoutCache: accounts created by SQL (so the server
// never saw their passwords in clear) log in with full caching_sha2
// authentication, over RSA on a plain connection and in clear over TLS,
// also after a restart emptied the cache; then by the fast path; native
// accounts by their scramble; wrong passwords and unknown accounts get 1045.
func TestFullAuthenticationWithoutCache(t *testing.T) {
	tl := simtest.NewTLS(t)
	srv := simtest.Start(t, mysqlsim.Config{TLS: tl.Server})
	admin := adminDB(t, srv)
	mustExec(t, admin, "CREATE USER 'plain'@'%' IDENTIFIED BY 'plain-pw'")
	mustExec(t, admin, "CREATE USER tlsuser@'%' IDENTIFIED WITH caching_sha2_password BY 'tls-pw'")
	mustExec(t, admin, "CREATE USER 'nat'@'%' IDENTIFIED WITH 'mysql_native_password' BY 'nat-pw'")
	mustExec(t, admin, "CREATE USER 'nopw'@'%'")
	addr := srv.Addr()
	wantLogin(t, addr, "nopw", "", nil, "nopw@%")
	wantDenied(t, addr, "nopw", "something", nil)
	wantLogin(t, addr, "plain", "plain-pw", nil, "plain@%")           // full, RSA
	wantLogin(t, addr, "plain", "plain-pw", nil, "plain@%")           // fast
	wantLogin(t, addr, "tlsuser", "tls-pw", clientTLS(), "tlsuser@%") // full, clear over TLS
	wantLogin(t, addr, "tlsuser", "tls-pw", nil, "tlsuser@%")         // fast, plain
	wantLogin(t, addr, "nat", "nat-pw", nil, "nat@%")
	wantDenied(t, addr, "plain", "wrong", nil)
	wantDenied(t, addr, "plain", "wrong", clientTLS())
	wantDenied(t, addr, "nobody", "x", nil)
	wantDenied(t, addr, "nat", "wrong", nil)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	wantLogin(t, addr, "plain", "plain-pw", nil, "plain@%") // full again: the cache died with the process
	wantLogin(t, addr, simtest.AppUser, simtest.AppPass, nil, simtest.AppUser+"@%")
	wantDenied(t, addr, "plain", "plain-pw ", nil)
}

// TestFullAuthenticationFromPyMySQL: a second independent client (PyMySQL,
// Debian's python3-pymysql) does full caching_sha2 authentication with and
// without TLS. CI installs it (.ci/run); the test fails rather than skips
// without it.
func TestFullAuthenticationFromPyMySQL(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import pymysql, cryptography").Run(); err != nil {
		t.Fatalf("python3-pymysql is needed (apt-get install -y python3-pymysql): %v", err)
	}
	tl := simtest.NewTLS(t)
	srv := simtest.Start(t, mysqlsim.Config{TLS: tl.Server})
	admin := adminDB(t, srv)
	mustExec(t, admin, "CREATE USER 'py1'@'%' IDENTIFIED BY 'py-one'")
	mustExec(t, admin, "CREATE USER 'py2'@'%' IDENTIFIED BY 'py-two'")
	host, port := hostPort(t, srv)
	script := `
import sys, ssl, pymysql
host, port, user, pw, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
kw = {}
if mode == "tls":
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    kw["ssl"] = ctx
try:
    c = pymysql.connect(host=host, port=port, user=user, password=pw, **kw)
    cur = c.cursor(); cur.execute("SELECT CURRENT_USER()"); print("OK", cur.fetchone()[0])
except pymysql.err.OperationalError as e:
    print("ERR", e.args[0])
`
	run := func(user, pw, mode string) string {
		out, err := exec.Command("/usr/bin/python3", "-c", script, host, port, user, pw, mode).CombinedOutput()
		if err != nil {
			t.Fatalf("pymysql %s %s: %v: %s", user, mode, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, c := range []struct{ user, pw, mode, want string }{
		{"py1", "py-one", "plain", "OK py1@%"}, // full, RSA
		{"py1", "py-one", "plain", "OK py1@%"}, // fast
		{"py2", "py-two", "tls", "OK py2@%"},   // full, TLS
		{"py2", "nope", "plain", "ERR 1045"},
		{"ghost", "x", "tls", "ERR 1045"},
	} {
		if got := run(c.user, c.pw, c.mode); got != c.want {
			t.Errorf("pymysql %s/%s %s: %q, want %q", c.user, c.pw, c.mode, got, c.want)
		}
	}
}

// TestDualPasswords: RETAIN CURRENT PASSWORD keeps the old password valid
// beside the new one; DISCARD OLD PASSWORD ends it. mysql.user holds only
// authentication strings.
func TestDualPasswords(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	addr := srv.Addr()
	mustExec(t, admin, "CREATE USER 'dual'@'%' IDENTIFIED BY 'first'")
	mustExec(t, admin, "ALTER USER 'dual'@'%' IDENTIFIED BY 'second' RETAIN CURRENT PASSWORD")
	wantLogin(t, addr, "dual", "second", nil, "dual@%")
	wantLogin(t, addr, "dual", "first", nil, "dual@%")
	wantDenied(t, addr, "dual", "third", nil)
	mustExec(t, admin, "ALTER USER 'dual'@'%' DISCARD OLD PASSWORD")
	wantDenied(t, addr, "dual", "first", nil)
	wantLogin(t, addr, "dual", "second", nil, "dual@%")
	var plugin, authStr string
	rows, err := admin.QueryContext(ctx(t), "SELECT User, plugin, authentication_string FROM mysql.user")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var u string
		if err := rows.Scan(&u, &plugin, &authStr); err != nil {
			t.Fatal(err)
		}
		if u == "dual" {
			break
		}
	}
	if plugin != "caching_sha2_password" || !strings.HasPrefix(authStr, "$A$005$") || len(authStr) != 70 || strings.Contains(authStr, "second") {
		t.Fatalf("mysql.user for dual: plugin %q, authentication_string %q; want caching_sha2_password and a $A$005$ hash", plugin, authStr)
	}
}

// TestAccountStatementsAndShowGrants: the statements, MySQL's SHOW GRANTS
// lines and errors.
func TestAccountStatementsAndShowGrants(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	mustExec(t, admin, "CREATE DATABASE shop")
	mustExec(t, admin, "CREATE USER 'u1'@'%' IDENTIFIED BY 'pw'")
	mustExec(t, admin, "GRANT SELECT, INSERT ON *.* TO 'u1'@'%'")
	mustExec(t, admin, "GRANT REPLICATION_SLAVE_ADMIN, BACKUP_ADMIN ON *.* TO u1@'%'")
	mustExec(t, admin, "GRANT CLONE_ADMIN ON *.* TO 'u1'@'%' WITH GRANT OPTION")
	mustExec(t, admin, "GRANT ALL PRIVILEGES ON shop.* TO 'u1'@'%'")
	mustExec(t, admin, "GRANT DELETE ON shop.orders TO 'u1'@'%'")
	want := []string{
		// WITH GRANT OPTION on *.* is also the static GRANT OPTION
		// (mysql.user.Grant_priv); a dynamic privilege's grant option is its own.
		"GRANT SELECT, INSERT ON *.* TO `u1`@`%` WITH GRANT OPTION",
		"GRANT BACKUP_ADMIN,REPLICATION_SLAVE_ADMIN ON *.* TO `u1`@`%`",
		"GRANT CLONE_ADMIN ON *.* TO `u1`@`%` WITH GRANT OPTION",
		"GRANT ALL PRIVILEGES ON `shop`.* TO `u1`@`%`",
		"GRANT DELETE ON `shop`.`orders` TO `u1`@`%`",
	}
	if got := grants(t, admin, "u1"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("SHOW GRANTS FOR u1:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	mustExec(t, admin, "REVOKE INSERT ON *.* FROM 'u1'@'%'")
	mustExec(t, admin, "REVOKE BACKUP_ADMIN ON *.* FROM 'u1'@'%'")
	mustExec(t, admin, "REVOKE ALL PRIVILEGES ON shop.* FROM 'u1'@'%'")
	want = []string{"GRANT SELECT ON *.* TO `u1`@`%` WITH GRANT OPTION", "GRANT REPLICATION_SLAVE_ADMIN ON *.* TO `u1`@`%`",
		"GRANT CLONE_ADMIN ON *.* TO `u1`@`%` WITH GRANT OPTION", "GRANT DELETE ON `shop`.`orders` TO `u1`@`%`"}
	if got := grants(t, admin, "u1"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after REVOKE:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	mustExec(t, admin, "REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'u1'@'%'")
	if got := grants(t, admin, "u1"); len(got) != 1 || got[0] != "GRANT USAGE ON *.* TO `u1`@`%`" {
		t.Fatalf("after REVOKE ALL: %q", got)
	}
	errCases := []struct {
		q    string
		want uint16
	}{
		{"CREATE USER 'u1'@'%'", 1396},
		{"DROP USER 'ghost'@'%'", 1396},
		{"ALTER USER 'ghost'@'%' IDENTIFIED BY 'x'", 1396},
		{"GRANT SELECT ON *.* TO 'ghost'@'%'", 1410},
		{"GRANT BACKUP_ADMIN ON shop.* TO 'u1'@'%'", 3619},
		{"GRANT SUPER ON shop.* TO 'u1'@'%'", 1221},
		{"REVOKE SELECT ON nowhere.* FROM 'u1'@'%'", 1141},
		{"SHOW GRANTS FOR 'ghost'@'%'", 1141},
		{"GRANT NOSUCH ON *.* TO 'u1'@'%'", 1064},
	}
	for _, c := range errCases {
		if _, err := admin.ExecContext(ctx(t), c.q); myErrNo(err) != c.want {
			t.Errorf("%s: got %v, want error %d", c.q, err, c.want)
		}
	}
	mustExec(t, admin, "CREATE USER IF NOT EXISTS 'u1'@'%' IDENTIFIED BY 'other'")
	wantLogin(t, srv.Addr(), "u1", "pw", nil, "u1@%") // IF NOT EXISTS left it alone
	mustExec(t, admin, "DROP USER IF EXISTS 'ghost'@'%', 'u1'@'%'")
	wantDenied(t, srv.Addr(), "u1", "pw", nil)
	// Locked accounts are refused after authenticating (3118).
	mustExec(t, admin, "CREATE USER 'lk'@'%' IDENTIFIED BY 'pw' ACCOUNT LOCK")
	if _, err := gmLogin(srv.Addr(), "lk", "pw", nil); gmErrNo(err) != 3118 {
		t.Errorf("locked account: %v, want 3118", err)
	}
	mustExec(t, admin, "ALTER USER 'lk'@'%' ACCOUNT UNLOCK")
	wantLogin(t, srv.Addr(), "lk", "pw", nil, "lk@%")
	// The role shorthands of Config.Users are real grants.
	if got := grants(t, admin, simtest.ReplUser); len(got) != 2 ||
		got[0] != "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `repl`@`%`" ||
		got[1] != "GRANT BACKUP_ADMIN,CLONE_ADMIN ON *.* TO `repl`@`%`" {
		t.Errorf("repl role grants: %q", got)
	}
}

func grants(t *testing.T, db *sql.DB, user string) []string {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), "SHOW GRANTS FOR '"+user+"'@'%'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// privCase is one privilege check the product depends on: as an account
// without priv, do fails with code and what the server holds is unchanged
// (held); after GRANT priv (and a new connection, as global privileges
// take effect at login), do succeeds and the server changed.
type privCase struct {
	name string
	priv string // granted ON *.*
	code uint16
	// after is the error once the privilege is held (0: success): a
	// statement that then meets its next check has passed this one.
	after uint16
	do    func(db *sql.DB) error
	held  func(t *testing.T) string // the server's state the statement would change
}

func TestPrivilegeChecksFromGrants(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	mustExec(t, admin, "CREATE DATABASE d")
	mustExec(t, admin, "CREATE TABLE d.t (a)")
	scalar := func(q string) func(t *testing.T) string {
		return func(t *testing.T) string {
			var s sql.NullString
			rows, err := admin.QueryContext(ctx(t), q)
			if err != nil {
				return "error " + fmt.Sprint(myErrNo(err))
			}
			defer rows.Close()
			n := 0
			for rows.Next() {
				n++
				_ = rows.Scan(&s)
			}
			return fmt.Sprintf("%d rows, last %q", n, s.String)
		}
	}
	exec := func(q string) func(db *sql.DB) error {
		return func(db *sql.DB) error { _, err := db.Exec(q); return err }
	}
	h, p := hostPort(t, srv)
	cases := []privCase{
		{"insert", "INSERT", 1142, 0, exec("INSERT INTO d.t VALUES (1)"), scalar("SELECT COUNT(*) FROM d.t")},
		{"create database", "CREATE", 1044, 0, exec("CREATE DATABASE made"), scalar("SELECT COUNT(*) FROM made.x")},
		{"set global", "SYSTEM_VARIABLES_ADMIN", 1227, 0, exec("SET GLOBAL max_connections = 77"), scalar("SELECT @@GLOBAL.max_connections")},
		{"change source", "REPLICATION_SLAVE_ADMIN", 1227, 0,
			exec(fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST = '%s', SOURCE_PORT = %s, SOURCE_USER = 'x'", h, p)),
			func(t *testing.T) string { return replicaStatus(t, admin).get("Source_Host") }},
		{"show replica status", "REPLICATION CLIENT", 1227, 0, exec("SHOW REPLICA STATUS"), func(*testing.T) string { return "" }},
		{"purge binary logs", "BINLOG_ADMIN", 1227, 0, exec("PURGE BINARY LOGS BEFORE '2000-01-01 00:00:00'"), func(*testing.T) string { return "" }},
		{"create user", "CREATE USER", 1227, 0, exec("CREATE USER 'made'@'%'"), scalar("SELECT User FROM mysql.user")},
		{"read mysql.user", "SELECT", 1142, 0, exec("SELECT User FROM mysql.user"), func(*testing.T) string { return "" }},
		{"show binlog events", "REPLICATION SLAVE", 1227, 0, exec("SHOW BINLOG EVENTS"), func(*testing.T) string { return "" }},
		{"clone", "CLONE_ADMIN", 1227, 3869, // then: donor not in clone_valid_donor_list
			exec(fmt.Sprintf("CLONE INSTANCE FROM 'repl'@'%s':%s IDENTIFIED BY 'x'", h, p)), scalar("SELECT @@GLOBAL.gtid_executed")},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			user := fmt.Sprintf("p%d", i)
			mustExec(t, admin, "CREATE USER '"+user+"'@'%' IDENTIFIED BY 'pw'")
			before := c.held(t)
			db := open(t, srv.Addr(), user, "pw", nil, false)
			if err := c.do(db); myErrNo(err) != c.code {
				t.Fatalf("without %s: got %v, want error %d", c.priv, err, c.code)
			}
			if after := c.held(t); after != before {
				t.Fatalf("refused statement changed the server: %s -> %s", before, after)
			}
			mustExec(t, admin, "GRANT "+c.priv+" ON *.* TO '"+user+"'@'%'")
			db = open(t, srv.Addr(), user, "pw", nil, false)
			if err := c.do(db); myErrNo(err) != c.after {
				t.Fatalf("with %s: %v, want error %d", c.priv, err, c.after)
			}
		})
	}
	t.Run("sql_log_bin needs SESSION_VARIABLES_ADMIN", func(t *testing.T) {
		mustExec(t, admin, "CREATE USER 'sv'@'%' IDENTIFIED BY 'pw'")
		mustExec(t, admin, "GRANT CREATE USER ON *.* TO 'sv'@'%'")
		db := open(t, srv.Addr(), "sv", "pw", nil, false)
		db.SetMaxOpenConns(1)
		if _, err := db.Exec("SET SESSION sql_log_bin = 0"); myErrNo(err) != 1227 {
			t.Fatalf("without SESSION_VARIABLES_ADMIN: %v, want 1227", err)
		}
		mustExec(t, admin, "GRANT SESSION_VARIABLES_ADMIN ON *.* TO 'sv'@'%'")
		db = open(t, srv.Addr(), "sv", "pw", nil, false)
		db.SetMaxOpenConns(1)
		executedBefore := gtidExecuted(t, admin)
		mustExec(t, db, "SET SESSION sql_log_bin = 0")
		mustExec(t, db, "CREATE USER 'unlogged'@'%' IDENTIFIED BY 'pw'")
		wantLogin(t, srv.Addr(), "unlogged", "pw", nil, "unlogged@%")
		if got := gtidExecuted(t, admin); got != executedBefore {
			t.Fatalf("CREATE USER with sql_log_bin=0 took a GTID: %s -> %s", executedBefore, got)
		}
	})
	// KILL of another user's session needs CONNECTION_ADMIN; of a session
	// with SYSTEM_USER (the admin's: ALL PRIVILEGES) SYSTEM_USER as well
	// (manual "KILL Statement").
	t.Run("kill needs CONNECTION_ADMIN, and SYSTEM_USER for a system session", func(t *testing.T) {
		mustExec(t, admin, "CREATE USER 'killer'@'%' IDENTIFIED BY 'pw'")
		mustExec(t, admin, "CREATE USER 'plainvictim'@'%' IDENTIFIED BY 'pw'")
		session := func(db *sql.DB) (*sql.Conn, int64) {
			c, err := db.Conn(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			var id int64
			if err := c.QueryRowContext(ctx(t), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
				t.Fatal(err)
			}
			return c, id
		}
		plain, plainID := session(open(t, srv.Addr(), "plainvictim", "pw", nil, false))
		sys, sysID := session(admin)
		refused := func(db *sql.DB, victim *sql.Conn, id int64, why string) {
			t.Helper()
			if _, err := db.Exec(fmt.Sprintf("KILL %d", id)); myErrNo(err) != 1095 {
				t.Fatalf("KILL %s: %v, want 1095", why, err)
			}
			if err := victim.PingContext(ctx(t)); err != nil {
				t.Fatalf("refused KILL (%s) closed the session: %v", why, err)
			}
		}
		killed := func(db *sql.DB, victim *sql.Conn, id int64) {
			t.Helper()
			mustExec(t, db, fmt.Sprintf("KILL %d", id))
			eventually(t, 5*time.Second, "the killed session to end", func() (bool, string) {
				err := victim.PingContext(ctx(t))
				return err != nil, fmt.Sprint(err)
			})
		}
		refused(open(t, srv.Addr(), "killer", "pw", nil, false), plain, plainID, "without CONNECTION_ADMIN")
		mustExec(t, admin, "GRANT CONNECTION_ADMIN ON *.* TO 'killer'@'%'")
		db := open(t, srv.Addr(), "killer", "pw", nil, false)
		refused(db, sys, sysID, "of a SYSTEM_USER session without SYSTEM_USER")
		killed(db, plain, plainID)
		mustExec(t, admin, "GRANT SYSTEM_USER ON *.* TO 'killer'@'%'")
		killed(open(t, srv.Addr(), "killer", "pw", nil, false), sys, sysID)
	})
	t.Run("processlist needs PROCESS", func(t *testing.T) {
		mustExec(t, admin, "CREATE USER 'watcher'@'%' IDENTIFIED BY 'pw'")
		users := func(db *sql.DB) string {
			rows, err := db.QueryContext(ctx(t), "SELECT USER FROM information_schema.processlist")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			seen := map[string]bool{}
			for rows.Next() {
				var u sql.NullString
				_ = rows.Scan(&u)
				seen[u.String] = true
			}
			return fmt.Sprint(seen[simtest.AdminUser])
		}
		if got := users(open(t, srv.Addr(), "watcher", "pw", nil, false)); got != "false" {
			t.Fatalf("without PROCESS the admin's sessions are visible")
		}
		mustExec(t, admin, "GRANT PROCESS ON *.* TO 'watcher'@'%'")
		if got := users(open(t, srv.Addr(), "watcher", "pw", nil, false)); got != "true" {
			t.Fatalf("with PROCESS the admin's sessions are not visible")
		}
	})
	t.Run("writes under read_only need CONNECTION_ADMIN", func(t *testing.T) {
		mustExec(t, admin, "CREATE USER 'ro'@'%' IDENTIFIED BY 'pw'")
		mustExec(t, admin, "GRANT INSERT ON d.* TO 'ro'@'%'")
		mustExec(t, admin, "SET GLOBAL read_only = ON")
		defer mustExec(t, admin, "SET GLOBAL read_only = OFF")
		count := scalar("SELECT COUNT(*) FROM d.t")
		before := count(t)
		db := open(t, srv.Addr(), "ro", "pw", nil, false)
		if _, err := db.Exec("INSERT INTO d.t VALUES (2)"); myErrNo(err) != 1290 {
			t.Fatalf("INSERT under read_only without CONNECTION_ADMIN: %v, want 1290", err)
		}
		if count(t) != before {
			t.Fatal("refused INSERT wrote")
		}
		mustExec(t, admin, "GRANT CONNECTION_ADMIN ON *.* TO 'ro'@'%'")
		db = open(t, srv.Addr(), "ro", "pw", nil, false)
		mustExec(t, db, "INSERT INTO d.t VALUES (2)")
		if count(t) == before {
			t.Fatal("INSERT with CONNECTION_ADMIN did not write")
		}
	})
	t.Run("database grant takes effect in open sessions", func(t *testing.T) {
		mustExec(t, admin, "CREATE USER 'live'@'%' IDENTIFIED BY 'pw'")
		db := open(t, srv.Addr(), "live", "pw", nil, false)
		db.SetMaxOpenConns(1)
		if _, err := db.Exec("INSERT INTO d.t VALUES (3)"); myErrNo(err) != 1142 {
			t.Fatalf("before GRANT: %v, want 1142", err)
		}
		mustExec(t, admin, "GRANT INSERT ON d.* TO 'live'@'%'")
		mustExec(t, db, "INSERT INTO d.t VALUES (3)")
		mustExec(t, admin, "REVOKE INSERT ON d.* FROM 'live'@'%'")
		if _, err := db.Exec("INSERT INTO d.t VALUES (3)"); myErrNo(err) != 1142 {
			t.Fatalf("after REVOKE: %v, want 1142", err)
		}
	})
	t.Run("grant needs GRANT OPTION", func(t *testing.T) {
		mustExec(t, admin, "CREATE USER 'g1'@'%' IDENTIFIED BY 'pw'")
		mustExec(t, admin, "CREATE USER 'g2'@'%' IDENTIFIED BY 'pw'")
		mustExec(t, admin, "GRANT SELECT ON *.* TO 'g1'@'%'")
		db := open(t, srv.Addr(), "g1", "pw", nil, false)
		if _, err := db.Exec("GRANT SELECT ON *.* TO 'g2'@'%'"); myErrNo(err) != 1045 {
			t.Fatalf("GRANT ON *.* without GRANT OPTION: %v, want 1045", err)
		}
		if _, err := db.Exec("GRANT SELECT ON d.* TO 'g2'@'%'"); myErrNo(err) != 1044 {
			t.Fatalf("GRANT ON d.* without GRANT OPTION: %v, want 1044", err)
		}
		if got := grants(t, admin, "g2"); len(got) != 1 || got[0] != "GRANT USAGE ON *.* TO `g2`@`%`" {
			t.Fatalf("refused GRANT changed g2: %q", got)
		}
		mustExec(t, admin, "GRANT SELECT ON *.* TO 'g1'@'%' WITH GRANT OPTION")
		db = open(t, srv.Addr(), "g1", "pw", nil, false)
		mustExec(t, db, "GRANT SELECT ON *.* TO 'g2'@'%'")
		if _, err := db.Exec("GRANT INSERT ON *.* TO 'g2'@'%'"); myErrNo(err) != 1045 {
			t.Fatalf("GRANT of a privilege the grantor lacks: %v, want 1045", err)
		}
	})
}

func gtidExecuted(t *testing.T, db *sql.DB) string {
	t.Helper()
	var s string
	if err := db.QueryRowContext(ctx(t), "SELECT @@GLOBAL.gtid_executed").Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAdminInterfaceNeedsServiceConnectionAdmin: the administrative port
// admits an account only with SERVICE_CONNECTION_ADMIN.
func TestAdminInterfaceNeedsServiceConnectionAdmin(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{AdminAddr: "127.0.0.1:0"})
	admin := adminDB(t, srv)
	mustExec(t, admin, "CREATE USER 'ops'@'%' IDENTIFIED BY 'pw'")
	if _, err := gmLogin(srv.AdminAddr(), "ops", "pw", nil); gmErrNo(err) != 1227 {
		t.Fatalf("admin port without SERVICE_CONNECTION_ADMIN: %v, want 1227", err)
	}
	mustExec(t, admin, "GRANT SERVICE_CONNECTION_ADMIN ON *.* TO 'ops'@'%'")
	wantLogin(t, srv.AdminAddr(), "ops", "pw", nil, "ops@%")
}

// TestAccountStatementsReplicate: account statements are logged as Query
// events in MySQL's form (the authentication string, never the password)
// and a replica applies them: the replicated account logs in there with its
// password. With sql_log_bin=0 nothing is logged or replicated.
func TestAccountStatementsReplicate(t *testing.T) {
	source := simtest.Start(t, mysqlsim.Config{})
	replica := simtest.Start(t, mysqlsim.Config{})
	replicate(t, replica, source, "")
	sdb := adminDB(t, source)
	sdb.SetMaxOpenConns(1)
	mustExec(t, sdb, "CREATE USER 'rep1'@'%' IDENTIFIED BY 'rep-secret'")
	mustExec(t, sdb, "GRANT SELECT, PROCESS ON *.* TO 'rep1'@'%'")
	mustExec(t, sdb, "GRANT BACKUP_ADMIN ON *.* TO 'rep1'@'%'")
	mustExec(t, sdb, "CREATE USER 'gone'@'%' IDENTIFIED BY 'x'")
	mustExec(t, sdb, "DROP USER 'gone'@'%'")
	mustExec(t, sdb, "SET SESSION sql_log_bin = 0")
	mustExec(t, sdb, "CREATE USER 'local'@'%' IDENTIFIED BY 'only-here'")
	mustExec(t, sdb, "SET SESSION sql_log_bin = 1")
	mustExec(t, sdb, "CREATE DATABASE marker")
	rdb := adminDB(t, replica)
	want := gtidExecuted(t, sdb)
	eventually(t, 20*time.Second, "the replica to apply the source's transactions", func() (bool, string) {
		got := gtidExecuted(t, rdb)
		return got == want, got
	})
	wantLogin(t, replica.Addr(), "rep1", "rep-secret", nil, "rep1@%")
	if got, want := strings.Join(grants(t, rdb, "rep1"), "\n"), strings.Join(grants(t, sdb, "rep1"), "\n"); got != want {
		t.Fatalf("replica's grants for rep1:\n%s\nsource's:\n%s", got, want)
	}
	wantDenied(t, replica.Addr(), "gone", "x", nil)
	wantDenied(t, replica.Addr(), "local", "only-here", nil)
	wantLogin(t, source.Addr(), "local", "only-here", nil, "local@%")
	rows, err := sdb.QueryContext(ctx(t), "SHOW BINLOG EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var queries []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		if vals[2].String == "Query" {
			queries = append(queries, vals[len(vals)-1].String)
		}
	}
	all := strings.Join(queries, "\n")
	for _, w := range []string{"CREATE USER 'rep1'@'%' IDENTIFIED WITH 'caching_sha2_password' AS ",
		"GRANT SELECT, PROCESS ON *.* TO 'rep1'@'%'", "DROP USER 'gone'@'%'"} {
		if !strings.Contains(all, w) {
			t.Errorf("binary log lacks %q; Query events:\n%s", w, all)
		}
	}
	if strings.Contains(all, "rep-secret") || strings.Contains(all, "'local'") {
		t.Errorf("binary log holds a password or the unlogged statement:\n%s", all)
	}
}

// TestAccountsSurviveRestartAndCrash: accounts are in the data directory
// (checkpoint and journal), not in the configuration.
func TestAccountsSurviveRestartAndCrash(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	mustExec(t, admin, "CREATE USER 'kept'@'%' IDENTIFIED BY 'pw1'")
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	wantLogin(t, srv.Addr(), "kept", "pw1", nil, "kept@%")
	admin = adminDB(t, srv)
	mustExec(t, admin, "ALTER USER 'kept'@'%' IDENTIFIED BY 'pw2'")
	mustExec(t, admin, "GRANT PROCESS ON *.* TO 'kept'@'%'")
	srv.Crash()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	wantDenied(t, srv.Addr(), "kept", "pw1", nil)
	wantLogin(t, srv.Addr(), "kept", "pw2", nil, "kept@%")
	if got := grants(t, adminDB(t, srv), "kept"); len(got) != 1 || got[0] != "GRANT PROCESS ON *.* TO `kept`@`%`" {
		t.Fatalf("grants after crash: %q", got)
	}
}

// TestCloneCopiesAccounts: CLONE copies the donor's mysql schema, so the
// recipient ends with the donor's accounts and grants and loses its own.
func TestCloneCopiesAccounts(t *testing.T) {
	donor := simtest.Start(t, mysqlsim.Config{})
	recipient := simtest.Start(t, mysqlsim.Config{})
	mustExec(t, adminDB(t, donor), "CREATE USER 'fromdonor'@'%' IDENTIFIED BY 'donor-pw'")
	mustExec(t, adminDB(t, donor), "GRANT PROCESS ON *.* TO 'fromdonor'@'%'")
	mustExec(t, adminDB(t, recipient), "CREATE USER 'mine'@'%' IDENTIFIED BY 'mine-pw'")
	cloneFrom(t, recipient, donor) // clone_test.go
	wantLogin(t, recipient.Addr(), "fromdonor", "donor-pw", nil, "fromdonor@%")
	wantDenied(t, recipient.Addr(), "mine", "mine-pw", nil)
	if got := grants(t, adminDB(t, recipient), "fromdonor"); len(got) != 1 || got[0] != "GRANT PROCESS ON *.* TO `fromdonor`@`%`" {
		t.Fatalf("recipient's grants for fromdonor: %q", got)
	}
}

// TestRSAKeyPairKeptInDataDir: the RSA key pair lives in the data directory
// (private_key.pem, public_key.pem) as mysqld's auto-generated pair does,
// so a client holding the public key (PyMySQL's server_public_key, the
// mysql client's --server-public-key-path) still logs in over a plain
// connection after the server process was replaced (a crash and restart,
// the restart that ends a clone).
func TestRSAKeyPairKeptInDataDir(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import pymysql, cryptography").Run(); err != nil {
		t.Fatalf("python3-pymysql is needed (apt-get install -y python3-pymysql): %v", err)
	}
	dir := t.TempDir()
	cfg := mysqlsim.Config{DataDir: dir, ServerID: 4242, ServerUUID: simtest.UUID(4242)}
	first := simtest.Start(t, cfg)
	mustExec(t, adminDB(t, first), "CREATE USER 'keyed'@'%' IDENTIFIED BY 'keyed-pw'")
	pub, err := os.ReadFile(filepath.Join(dir, "public_key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := simtest.Start(t, cfg) // a new process on the same data directory
	host, port := hostPort(t, second)
	script := `
import sys, pymysql
try:
    c = pymysql.connect(host=sys.argv[1], port=int(sys.argv[2]), user="keyed", password="keyed-pw", server_public_key=sys.argv[3].encode())
    cur = c.cursor(); cur.execute("SELECT CURRENT_USER()"); print("OK", cur.fetchone()[0])
except pymysql.err.OperationalError as e:
    print("ERR", e.args[0], e.args[1])
`
	out, err := exec.Command("/usr/bin/python3", "-c", script, host, port, string(pub)).CombinedOutput()
	if err != nil {
		t.Fatalf("pymysql: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "OK keyed@%" {
		t.Fatalf("login with the public key from before the restart: %s", got)
	}
}

// TestExtraConnectionNeedsConnectionAdmin: beyond max_connections the one
// reserved connection is admitted only with CONNECTION_ADMIN (1040 without).
func TestExtraConnectionNeedsConnectionAdmin(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	admin.SetMaxOpenConns(1)
	mustExec(t, admin, "CREATE USER 'cap'@'%' IDENTIFIED BY 'pw'")
	mustExec(t, admin, "SET GLOBAL max_connections = 1") // the admin's connection fills it
	if _, err := gmLogin(srv.Addr(), "cap", "pw", nil); gmErrNo(err) != 1040 {
		t.Fatalf("the connection beyond max_connections without CONNECTION_ADMIN: %v, want 1040", err)
	}
	// mysqld ends the refused session's thread after it sends the error, so
	// the client can try again while that thread still counts (a loaded CI
	// machine did: 1040 before the handshake). Wait until the server itself
	// counts only the admin's connection.
	eventually(t, 5*time.Second, "the refused session to end", func() (bool, string) {
		var name, n string
		if err := admin.QueryRowContext(ctx(t), "SHOW GLOBAL STATUS LIKE 'Threads_connected'").Scan(&name, &n); err != nil {
			return false, err.Error()
		}
		return n == "1", "Threads_connected " + n
	})
	mustExec(t, admin, "GRANT CONNECTION_ADMIN ON *.* TO 'cap'@'%'")
	wantLogin(t, srv.Addr(), "cap", "pw", nil, "cap@%")
}
