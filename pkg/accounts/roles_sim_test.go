package accounts_test

// What each role can and cannot do, judged against the MySQL simulator
// (docs/credentials.md, "Roles" and "What the application account cannot
// do"). Every site is initialised as the product initialises one: the
// rendered init script (pkg/render.InitScript over pkg/accounts) run by the
// image's first boot on an empty data directory, which leaves the site
// fenced (super_read_only=ON persisted). No grant list is copied here: a
// change to a role in pkg/accounts is judged by what the simulator then
// allows.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/render"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// roleAccounts are the accounts every test site holds, one per role.
func roleAccounts() []accounts.Account {
	var out []accounts.Account
	for _, r := range accounts.Roles() {
		out = append(out, accounts.Account{Role: r, User: "u_" + strings.ToLower(string(r)), Password: "pw-" + string(r) + "-x'\\y"})
	}
	return out
}

// site is one simulated mysqld initialised by the rendered init script.
type site struct {
	srv   *mysqlsim.Server
	accts map[accounts.Role]accounts.Account
}

// siteSerial gives every test site its own server id.
var siteSerial atomic.Int64

// newSite boots a simulated mysqld as the official image boots a site's
// container: the image's /etc/my.cnf including the rendered my.cnf
// (pkg/render.MyCnf: partial_revokes=ON among the operator's options), and
// the rendered init script in /docker-entrypoint-initdb.d.
func newSite(t *testing.T) *site {
	t.Helper()
	accts := roleAccounts()
	id := 200 + siteSerial.Add(1)
	g := &v1alpha1.MysqlFailoverGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"}}
	g.Spec.Sites = []v1alpha1.SiteSpec{{Name: "s", ServerID: id}}
	cnf, _, err := render.MyCnf(g, 0)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for p, text := range map[string]string{
		"etc/my.cnf": "[mysqld]\ndatadir=/var/lib/mysql\n!includedir " + render.ConfigDir + "/\n",
		strings.TrimPrefix(render.ConfigDir, "/") + "/" + render.MyCnfKey:  cnf,
		strings.TrimPrefix(render.InitDBDir, "/") + "/" + render.InitDBKey: render.InitScript(g, render.InitAccounts(accts)),
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := mysqlsim.New(mysqlsim.Config{
		DefaultsFile: "/etc/my.cnf", RootDir: root, InitDBDir: render.InitDBDir, AdminAddr: "127.0.0.1:0",
		Env: map[string]string{"MYSQL_ROOT_PASSWORD": "root-pw"}, ServerUUID: simtest.UUID(uint32(id)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	s := &site{srv: srv, accts: map[accounts.Role]accounts.Account{}}
	for _, a := range accts {
		s.accts[a.Role] = a
	}
	return s
}

func (s *site) db(t *testing.T, r accounts.Role) *sql.DB {
	t.Helper()
	a := s.accts[r]
	cfg := driver.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", s.srv.Addr(), a.User, a.Password
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 5*time.Second, 30*time.Second, 5*time.Second
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

// conn is one session of role r (session variables stick to it).
func (s *site) conn(t *testing.T, r accounts.Role) (*sql.Conn, int64) {
	t.Helper()
	c, err := s.db(t, r).Conn(ctx(t))
	if err != nil {
		t.Fatalf("%s logs in: %v", r, err)
	}
	t.Cleanup(func() { c.Close() })
	var id int64
	if err := c.QueryRowContext(ctx(t), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return c, id
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func errNo(err error) uint16 {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

type execer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

func mustExec(t *testing.T, db execer, q string) {
	t.Helper()
	if _, err := db.ExecContext(ctx(t), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// refused runs q and wants MySQL error want.
func refused(t *testing.T, db execer, want uint16, q string) {
	t.Helper()
	_, err := db.ExecContext(ctx(t), q)
	if errNo(err) != want {
		t.Errorf("%s: got %v, want error %d", q, err, want)
	}
}

func scalar(t *testing.T, db execer, q string) string {
	t.Helper()
	var v sql.NullString
	if err := db.QueryRowContext(ctx(t), q).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v.String
}

// rows reads every row of q as strings joined by "|".
func rows(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rs, err := db.QueryContext(ctx(t), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	var out []string
	for rs.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, v := range vals {
			parts = append(parts, v.String)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
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

func replicaField(t *testing.T, db *sql.DB, field string) string {
	t.Helper()
	rs, err := db.QueryContext(ctx(t), "SHOW REPLICA STATUS")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	if !rs.Next() {
		return ""
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rs.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	for i, c := range cols {
		if c == field {
			return vals[i].String
		}
	}
	t.Fatalf("SHOW REPLICA STATUS has no %s", field)
	return ""
}

// pair is an active site (unfenced by the operator account, as a promotion
// does) and a fenced site replicating from it over the replication
// account, with the table d.t holding one row on both.
type pair struct{ active, fenced *site }

func newPair(t *testing.T) pair {
	t.Helper()
	p := pair{active: newSite(t), fenced: newSite(t)}
	op := p.active.db(t, accounts.RoleOperator)
	mustExec(t, op, "SET GLOBAL super_read_only = OFF")
	mustExec(t, op, "SET GLOBAL read_only = OFF")
	mustExec(t, op, "CREATE DATABASE d")
	mustExec(t, op, "CREATE TABLE d.t (a)")
	mustExec(t, op, "INSERT INTO d.t VALUES (1)")
	h, port, _ := net.SplitHostPort(p.active.srv.Addr())
	repl := p.active.accts[accounts.RoleReplication]
	fop := p.fenced.db(t, accounts.RoleOperator)
	mustExec(t, fop, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST = '%s', SOURCE_PORT = %s, SOURCE_USER = '%s', SOURCE_PASSWORD = %s, "+
		"SOURCE_AUTO_POSITION = 1, SOURCE_CONNECT_RETRY = 1, GET_SOURCE_PUBLIC_KEY = 1", h, port, repl.User, accounts.Quote(repl.Password)))
	mustExec(t, fop, "START REPLICA")
	p.waitCaughtUp(t)
	return p
}

// waitCaughtUp waits until the fenced site has executed what the active
// one has.
func (p pair) waitCaughtUp(t *testing.T) {
	t.Helper()
	want := scalar(t, p.active.db(t, accounts.RoleOperator), "SELECT @@GLOBAL.gtid_executed")
	fop := p.fenced.db(t, accounts.RoleOperator)
	eventually(t, "the fenced site to catch up", func() (bool, string) {
		got := scalar(t, fop, "SELECT @@GLOBAL.gtid_executed")
		return got == want, got + " want " + want
	})
}

// TestInitScriptCreatesEveryRole: after the first boot every role's account
// logs in with its password and holds exactly its grants (accounts.Drift
// finds nothing to restore), the accounts took no GTID (sql_log_bin=0), and
// the site is fenced.
func TestInitScriptCreatesEveryRole(t *testing.T) {
	s := newSite(t)
	op := s.db(t, accounts.RoleOperator)
	for _, r := range accounts.Roles() {
		a := s.accts[r]
		if got := scalar(t, s.db(t, r), "SELECT CURRENT_USER()"); got != a.User+"@%" {
			t.Errorf("%s logs in as %q", r, got)
		}
		lines := rows(t, op, "SHOW GRANTS FOR "+accounts.Name(a.User))
		if r == accounts.RoleOperator { // ALL PRIVILEGES, printed whole; Drift does not diff it
			all := strings.Join(lines, "\n")
			for _, p := range []string{" SUPER,", "SYSTEM_USER,", "CONNECTION_ADMIN,", "WITH GRANT OPTION"} {
				if !strings.Contains(all, p) {
					t.Errorf("operator: SHOW GRANTS %q lacks %q", lines, p)
				}
			}
			continue
		}
		if fix, err := accounts.Drift(r, a.User, lines); err != nil || len(fix) != 0 {
			t.Errorf("%s: SHOW GRANTS %q: drift %q, %v; want none", r, lines, fix, err)
		}
	}
	if got := scalar(t, op, "SELECT @@GLOBAL.gtid_executed"); got != "" {
		t.Errorf("the init script logged its accounts: gtid_executed %q", got)
	}
	if got := scalar(t, op, "SELECT @@GLOBAL.super_read_only"); got != "1" {
		t.Errorf("after the first boot super_read_only = %s, want 1", got)
	}
}

// TestAppCannotUndoAFence: on a fenced site (super_read_only=ON, replicating
// from the active site) the application account cannot write, unfence,
// hide writes from replication, kill the operator, touch the binary logs,
// stop or redirect replication, clone over the data, or change accounts
// and plugins. Each refusal is judged by what the servers then hold, as the
// operator account reads it.
func TestAppCannotUndoAFence(t *testing.T) {
	p := newPair(t)
	f := p.fenced
	op := f.db(t, accounts.RoleOperator)
	app, _ := f.conn(t, accounts.RoleApp)
	executed := scalar(t, op, "SELECT @@GLOBAL.gtid_executed")
	binlogs := rows(t, op, "SHOW BINARY LOGS")
	users := rows(t, op, "SELECT User, Host, authentication_string FROM mysql.user")

	t.Run("write", func(t *testing.T) {
		refused(t, app, 1290, "INSERT INTO d.t VALUES (2)")
		refused(t, app, 1290, "DELETE FROM d.t")
		refused(t, app, 1290, "CREATE TABLE d.u (a)")
		refused(t, app, 1290, "CREATE DATABASE e")
		refused(t, app, 1290, "DROP DATABASE d")
		if got := scalar(t, op, "SELECT COUNT(*) FROM d.t"); got != "1" {
			t.Errorf("d.t holds %s rows, want 1", got)
		}
	})
	t.Run("unfence", func(t *testing.T) {
		refused(t, app, 1227, "SET GLOBAL super_read_only = OFF")
		refused(t, app, 1227, "SET @@GLOBAL.super_read_only = 0")
		refused(t, app, 1227, "SET GLOBAL read_only = OFF")
		refused(t, app, 1227, "SET PERSIST super_read_only = OFF")
		refused(t, app, 1227, "SET PERSIST read_only = OFF")
		refused(t, app, 1227, "SET GLOBAL offline_mode = ON")
		refused(t, app, 1227, "SET GLOBAL gtid_purged = '+3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9'")
		for _, v := range []string{"super_read_only", "read_only"} {
			if got := scalar(t, op, "SELECT @@GLOBAL."+v); got != "1" {
				t.Errorf("%s = %s after the application tried to clear it", v, got)
			}
		}
	})
	t.Run("hide writes from replication", func(t *testing.T) {
		refused(t, app, 1227, "SET SESSION sql_log_bin = 0")
		refused(t, app, 1227, "SET sql_log_bin = OFF")
		refused(t, app, 1227, "SET @@SESSION.gtid_next = '3e11fa47-71ca-11e1-9e33-c80aa9429562:1'")
		refused(t, app, 1227, "SET gtid_next = 'AUTOMATIC'")
		if got := scalar(t, app, "SELECT @@SESSION.sql_log_bin"); got != "1" {
			t.Errorf("the application's session has sql_log_bin = %s", got)
		}
	})
	t.Run("kill the operator", func(t *testing.T) {
		victim, id := f.conn(t, accounts.RoleOperator)
		refused(t, app, 1095, fmt.Sprintf("KILL %d", id))
		refused(t, app, 1095, fmt.Sprintf("KILL QUERY %d", id))
		refused(t, app, 1095, fmt.Sprintf("KILL CONNECTION %d", id))
		if err := victim.PingContext(ctx(t)); err != nil {
			t.Errorf("the operator's session died: %v", err)
		}
	})
	t.Run("binary logs", func(t *testing.T) {
		refused(t, app, 1227, "PURGE BINARY LOGS BEFORE '2999-01-01 00:00:00'")
		refused(t, app, 1227, "PURGE BINARY LOGS TO 'binlog.999999'")
		refused(t, app, 1227, "RESET BINARY LOGS AND GTIDS")
		refused(t, app, 1227, "FLUSH BINARY LOGS")
		if got := scalar(t, op, "SELECT @@GLOBAL.gtid_executed"); got != executed {
			t.Errorf("gtid_executed %q, want %q", got, executed)
		}
		if got := rows(t, op, "SHOW BINARY LOGS"); strings.Join(got, ",") != strings.Join(binlogs, ",") {
			t.Errorf("binary logs %q, want %q", got, binlogs)
		}
	})
	t.Run("replication", func(t *testing.T) {
		refused(t, app, 1227, "STOP REPLICA")
		refused(t, app, 1227, "STOP REPLICA IO_THREAD")
		refused(t, app, 1227, "START REPLICA")
		refused(t, app, 1227, "CHANGE REPLICATION SOURCE TO SOURCE_HOST = '127.0.0.2'")
		refused(t, app, 1227, "RESET REPLICA ALL")
		h, _, _ := net.SplitHostPort(p.active.srv.Addr())
		for field, want := range map[string]string{"Replica_IO_Running": "Yes", "Replica_SQL_Running": "Yes", "Source_Host": h} {
			if got := replicaField(t, op, field); got != want {
				t.Errorf("%s = %q, want %q", field, got, want)
			}
		}
		mustExec(t, p.active.db(t, accounts.RoleOperator), "INSERT INTO d.t VALUES (3)")
		p.waitCaughtUp(t) // the channel still carries the active site's writes
	})
	t.Run("clone", func(t *testing.T) {
		h, port, _ := net.SplitHostPort(p.active.srv.Addr())
		repl := p.active.accts[accounts.RoleReplication]
		refused(t, app, 1227, fmt.Sprintf("CLONE INSTANCE FROM '%s'@'%s':%s IDENTIFIED BY %s", repl.User, h, port, accounts.Quote(repl.Password)))
	})
	t.Run("accounts and plugins", func(t *testing.T) {
		opUser, repl := f.accts[accounts.RoleOperator].User, f.accts[accounts.RoleReplication].User
		// The operator's account holds SYSTEM_USER: a session without it
		// cannot change it at all.
		refused(t, app, 1227, "ALTER USER "+accounts.Name(opUser)+" IDENTIFIED BY 'taken'")
		refused(t, app, 1227, "DROP USER "+accounts.Name(opUser))
		// The mysql schema's INSERT/UPDATE/DELETE stand in for CREATE USER
		// and mysql.plugin's for UNINSTALL PLUGIN; the application's are
		// partially revoked there (accounts.PartialRevokes), so the
		// privilege check refuses before super_read_only would (without the
		// partial revokes these are 1290).
		refused(t, app, 1227, "CREATE USER 'intruder'@'%' IDENTIFIED BY 'x'")
		refused(t, app, 1227, "ALTER USER "+accounts.Name(repl)+" IDENTIFIED BY 'taken'")
		refused(t, app, 1045, "GRANT SELECT ON *.* TO "+accounts.Name(f.accts[accounts.RoleMonitor].User))
		refused(t, app, 1142, "UNINSTALL PLUGIN clone")
		if got := rows(t, op, "SELECT User, Host, authentication_string FROM mysql.user"); strings.Join(got, ",") != strings.Join(users, ",") {
			t.Errorf("accounts changed: %q, want %q", got, users)
		}
		if got := scalar(t, op, "SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'clone'"); got != "ACTIVE" {
			t.Errorf("clone plugin %q, want ACTIVE", got)
		}
	})
	if got := scalar(t, op, "SELECT @@GLOBAL.gtid_executed"); got != scalar(t, p.active.db(t, accounts.RoleOperator), "SELECT @@GLOBAL.gtid_executed") {
		t.Errorf("the fenced site executed what the active site did not: %s", got)
	}
	t.Run("shut down", func(t *testing.T) { // last: it would stop the site
		refused(t, app, 1227, "SHUTDOWN")
		time.Sleep(100 * time.Millisecond) // a SHUTDOWN stops the server just after its OK
		if !f.srv.Running() {
			t.Errorf("the fenced site stopped")
		}
	})
}

// TestAppCannotTakeTheReservedConnection: mysqld admits max_connections + 1
// clients, the last one only for CONNECTION_ADMIN (or SUPER): the
// operator's way in to fence a site whose application used up
// max_connections. A fresh fenced site, so that no session of another
// test ends meanwhile and frees a slot.
func TestAppCannotTakeTheReservedConnection(t *testing.T) {
	s := newSite(t)
	admin, _ := s.conn(t, accounts.RoleOperator)
	mustExec(t, admin, "SET GLOBAL max_connections = 3")
	app := s.db(t, accounts.RoleApp)
	var opened int
	for ; opened < 10; opened++ {
		c, err := app.Conn(ctx(t))
		if err == nil {
			err = c.PingContext(ctx(t))
		}
		if err != nil {
			if errNo(err) != 1040 {
				t.Fatalf("application connection %d: %v, want 1040", opened+1, err)
			}
			break
		}
		defer c.Close()
	}
	if opened != 2 {
		t.Errorf("the application opened %d connections beside the operator's at max_connections = 3, want 2", opened)
	}
	// The application's refused connection counts until its thread has
	// ended, as in mysqld: the operator may have to try again.
	op := s.db(t, accounts.RoleOperator)
	eventually(t, "the operator to connect after the application filled max_connections", func() (bool, string) {
		c, err := op.Conn(ctx(t))
		if err != nil {
			return false, err.Error()
		}
		defer c.Close()
		err = c.PingContext(ctx(t))
		return err == nil, fmt.Sprint(err)
	})
}

// TestAppCannotWriteThroughReadOnly: while a fence is half raised or half
// lowered (read_only=ON, super_read_only=OFF: between the two SET GLOBAL
// statements of an unfence), the application still cannot write;
// CONNECTION_ADMIN or SUPER would let it.
func TestAppCannotWriteThroughReadOnly(t *testing.T) {
	s := newSite(t)
	op := s.db(t, accounts.RoleOperator)
	mustExec(t, op, "SET GLOBAL super_read_only = OFF")
	if got := scalar(t, op, "SELECT @@GLOBAL.read_only"); got != "1" {
		t.Fatalf("read_only = %s after super_read_only = OFF, want 1", got)
	}
	mustExec(t, op, "CREATE DATABASE d") // the operator's SUPER writes through read_only
	mustExec(t, op, "CREATE TABLE d.t (a)")
	app := s.db(t, accounts.RoleApp)
	refused(t, app, 1290, "INSERT INTO d.t VALUES (1)")
	refused(t, app, 1290, "CREATE DATABASE e")
	if got := scalar(t, op, "SELECT COUNT(*) FROM d.t"); got != "0" {
		t.Errorf("d.t holds %s rows, want 0", got)
	}
}

// TestAppOnTheActiveSite: where the application does write, its writes are
// always logged with the server's own GTIDs and reach the fenced site, and
// it still cannot kill the operator or fence/unfence anything.
func TestAppOnTheActiveSite(t *testing.T) {
	p := newPair(t)
	a := p.active
	app, _ := a.conn(t, accounts.RoleApp)
	refused(t, app, 1227, "SET SESSION sql_log_bin = 0")
	refused(t, app, 1227, "SET gtid_next = '3e11fa47-71ca-11e1-9e33-c80aa9429562:7'")
	refused(t, app, 1227, "SET GLOBAL super_read_only = ON")
	mustExec(t, app, "INSERT INTO d.t VALUES (2)")
	mustExec(t, app, "CREATE TABLE d.app (a)")
	p.waitCaughtUp(t)
	if got := scalar(t, p.fenced.db(t, accounts.RoleOperator), "SELECT COUNT(*) FROM d.t"); got != "2" {
		t.Errorf("the fenced site holds %s rows of d.t, want 2", got)
	}
	victim, id := a.conn(t, accounts.RoleOperator)
	refused(t, app, 1095, fmt.Sprintf("KILL %d", id))
	if err := victim.PingContext(ctx(t)); err != nil {
		t.Errorf("the operator's session died: %v", err)
	}
	refused(t, app, 1227, "ALTER USER "+accounts.Name(a.accts[accounts.RoleOperator].User)+" IDENTIFIED BY 'taken'")
}

// TestAppCannotManageAccountsOnTheActiveSite: on the writable active site
// (no super_read_only to refuse for it) the application account cannot
// create, change, drop or re-grant another account, read or write the
// mysql schema's tables, uninstall the clone plugin or replace sys's
// objects: its privileges are partially revoked on mysql and sys. Judged
// by what the server then holds (the accounts' logins, password hashes and
// grants as the operator reads them, the plugin's status) and by the
// refusal codes.
func TestAppCannotManageAccountsOnTheActiveSite(t *testing.T) {
	p := newPair(t)
	a := p.active
	op := a.db(t, accounts.RoleOperator)
	app, _ := a.conn(t, accounts.RoleApp)
	users := rows(t, op, "SELECT User, Host, authentication_string FROM mysql.user")
	name := func(r accounts.Role) string { return accounts.Name(a.accts[r].User) }

	refused(t, app, 1227, "CREATE USER 'intruder'@'%' IDENTIFIED BY 'x'")
	for _, r := range []accounts.Role{accounts.RoleReplication, accounts.RoleBackup, accounts.RoleMonitor, accounts.RoleReadOnly} {
		refused(t, app, 1227, "ALTER USER "+name(r)+" IDENTIFIED BY 'taken'")
		refused(t, app, 1227, "ALTER USER "+name(r)+" ACCOUNT LOCK")
		refused(t, app, 1227, "DROP USER "+name(r))
		refused(t, app, 1045, "GRANT SELECT ON *.* TO "+name(r))
		if _, err := app.ExecContext(ctx(t), "REVOKE ALL PRIVILEGES, GRANT OPTION FROM "+name(r)); err == nil {
			t.Errorf("REVOKE ALL PRIVILEGES, GRANT OPTION FROM the %s account succeeded", r)
		}
	}
	refused(t, app, 1142, "SELECT User, authentication_string FROM mysql.user")
	refused(t, app, 1142, "INSERT INTO mysql.user VALUES ('x')")
	refused(t, app, 1142, "CREATE TABLE mysql.intruder (a)")
	refused(t, app, 1142, "UNINSTALL PLUGIN clone")
	refused(t, app, 1142, "CREATE TABLE sys.intruder (a)")

	if got := rows(t, op, "SELECT User, Host, authentication_string FROM mysql.user"); strings.Join(got, ",") != strings.Join(users, ",") {
		t.Errorf("accounts changed: %q, want %q", got, users)
	}
	for _, r := range accounts.Roles() {
		if got := scalar(t, a.db(t, r), "SELECT CURRENT_USER()"); got != a.accts[r].User+"@%" {
			t.Errorf("the %s account logs in as %q", r, got)
		}
		if r == accounts.RoleOperator {
			continue
		}
		if fix, err := accounts.Drift(r, a.accts[r].User, rows(t, op, "SHOW GRANTS FOR "+name(r))); err != nil || len(fix) != 0 {
			t.Errorf("the %s account's grants drifted: %q, %v", r, fix, err)
		}
	}
	if got := scalar(t, op, "SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'clone'"); got != "ACTIVE" {
		t.Errorf("clone plugin %q, want ACTIVE", got)
	}
	// What the application is for still works there.
	mustExec(t, app, "INSERT INTO d.t VALUES (3)")
	if got := scalar(t, app, "SELECT COUNT(*) FROM d.t"); got != "2" {
		t.Errorf("the application reads %s rows of d.t, want 2", got)
	}
}

// TestReadOnlyMonitorBackupRoles: what the CRD reference's grants allow
// each of the other application-side roles, and that none can write on the
// active site (privileges, 1142/1044) or on a fenced one (1290), unfence
// it or kill the operator.
func TestReadOnlyMonitorBackupRoles(t *testing.T) {
	p := newPair(t)
	victim, opID := p.fenced.conn(t, accounts.RoleOperator)
	for _, r := range []accounts.Role{accounts.RoleReadOnly, accounts.RoleMonitor, accounts.RoleBackup} {
		t.Run(string(r), func(t *testing.T) {
			act, fen := p.active.db(t, r), p.fenced.db(t, r)
			refused(t, act, 1142, "INSERT INTO d.t VALUES (9)")
			refused(t, act, 1044, "CREATE DATABASE e")
			refused(t, fen, 1290, "INSERT INTO d.t VALUES (9)")
			refused(t, fen, 1227, "SET GLOBAL super_read_only = OFF")
			refused(t, fen, 1227, "SET SESSION sql_log_bin = 0")
			refused(t, fen, 1227, "STOP REPLICA")
			refused(t, fen, 1227, "PURGE BINARY LOGS BEFORE '2999-01-01 00:00:00'")
			refused(t, fen, 1095, fmt.Sprintf("KILL %d", opID))
			refused(t, fen, 1227, "CREATE USER 'intruder'@'%'")
		})
	}
	if err := victim.PingContext(ctx(t)); err != nil {
		t.Errorf("the operator's session died: %v", err)
	}
	if got := scalar(t, p.active.db(t, accounts.RoleOperator), "SELECT COUNT(*) FROM d.t"); got != "1" {
		t.Errorf("d.t holds %s rows, want 1", got)
	}
	opUser := p.fenced.accts[accounts.RoleOperator].User
	sees := func(db *sql.DB) bool {
		for _, u := range rows(t, db, "SELECT USER FROM information_schema.processlist") {
			if u == opUser {
				return true
			}
		}
		return false
	}
	t.Run("readOnly", func(t *testing.T) {
		db := p.fenced.db(t, accounts.RoleReadOnly)
		if got := scalar(t, db, "SELECT COUNT(*) FROM d.t"); got != "1" {
			t.Errorf("SELECT: %s rows, want 1", got)
		}
		if !sees(db) {
			t.Errorf("PROCESS: the operator's sessions are not visible")
		}
		refused(t, db, 1227, "SHOW REPLICA STATUS")
	})
	t.Run("monitor", func(t *testing.T) {
		db := p.fenced.db(t, accounts.RoleMonitor)
		if got := replicaField(t, db, "Replica_IO_Running"); got != "Yes" {
			t.Errorf("REPLICATION CLIENT: SHOW REPLICA STATUS Replica_IO_Running %q", got)
		}
		if got := scalar(t, db, "SELECT SERVICE_STATE FROM performance_schema.replication_connection_status"); got != "ON" {
			t.Errorf("SELECT on performance_schema: SERVICE_STATE %q, want ON", got)
		}
		if !sees(db) {
			t.Errorf("PROCESS: the operator's sessions are not visible")
		}
		refused(t, db, 1142, "SELECT COUNT(*) FROM d.t")
	})
	t.Run("backup", func(t *testing.T) {
		db := p.fenced.db(t, accounts.RoleBackup)
		if got := scalar(t, db, "SELECT COUNT(*) FROM d.t"); got != "1" {
			t.Errorf("SELECT: %s rows, want 1", got)
		}
		if len(rows(t, db, "SHOW BINARY LOG STATUS")) != 1 {
			t.Errorf("REPLICATION CLIENT: SHOW BINARY LOG STATUS has no row")
		}
		refused(t, db, 1227, "STOP REPLICA")
	})
	t.Run("replication", func(t *testing.T) {
		db := p.fenced.db(t, accounts.RoleReplication)
		refused(t, db, 1142, "SELECT COUNT(*) FROM d.t")
		refused(t, db, 1290, "INSERT INTO d.t VALUES (9)")
		refused(t, db, 1227, "SET GLOBAL super_read_only = OFF")
		refused(t, db, 1095, fmt.Sprintf("KILL %d", opID))
	})
}

// TestOperatorCanUnfenceAndAdminister: the operator's account does what
// the fence and convergence need, on the fenced site.
func TestOperatorCanUnfenceAndAdminister(t *testing.T) {
	p := newPair(t)
	op := p.fenced.db(t, accounts.RoleOperator)
	_, appID := p.fenced.conn(t, accounts.RoleApp)
	mustExec(t, op, fmt.Sprintf("KILL %d", appID))
	mustExec(t, op, "STOP REPLICA")
	mustExec(t, op, "SET GLOBAL super_read_only = OFF")
	mustExec(t, op, "SET GLOBAL read_only = OFF")
	mustExec(t, op, "INSERT INTO d.t VALUES (5)")
	mustExec(t, op, "CREATE USER 'later'@'%' IDENTIFIED BY 'pw'")
	mustExec(t, op, "GRANT SELECT ON d.* TO 'later'@'%'")
	if got := scalar(t, op, "SELECT COUNT(*) FROM d.t"); got != "2" {
		t.Errorf("d.t holds %s rows, want 2", got)
	}
}
