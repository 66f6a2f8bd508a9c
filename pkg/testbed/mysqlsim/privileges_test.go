package mysqlsim_test

import (
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// TestAccountStatementsFromMySQLSchemaPrivileges: the manual's stand-ins
// for CREATE USER (INSERT on the mysql schema for CREATE USER, UPDATE for
// ALTER USER, DELETE for DROP USER), and SYSTEM_USER protecting a system
// account from sessions without it (1227), its own password change
// excepted.
func TestAccountStatementsFromMySQLSchemaPrivileges(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	mustExec(t, admin, "CREATE USER 'ins'@'%' IDENTIFIED BY 'pw'")
	mustExec(t, admin, "CREATE USER 'victim'@'%' IDENTIFIED BY 'pw'")
	db := open(t, srv.Addr(), "ins", "pw", nil, false)
	if _, err := db.Exec("CREATE USER 'made'@'%'"); myErrNo(err) != 1227 {
		t.Fatalf("CREATE USER without CREATE USER or INSERT on mysql: %v, want 1227", err)
	}
	mustExec(t, admin, "GRANT INSERT ON mysql.* TO 'ins'@'%'")
	mustExec(t, db, "CREATE USER 'made'@'%' IDENTIFIED BY 'pw'")
	wantLogin(t, srv.Addr(), "made", "pw", nil, "made@%")
	if _, err := db.Exec("ALTER USER 'victim'@'%' IDENTIFIED BY 'x'"); myErrNo(err) != 1227 {
		t.Fatalf("ALTER USER with INSERT only: %v, want 1227", err)
	}
	if _, err := db.Exec("DROP USER 'made'@'%'"); myErrNo(err) != 1227 {
		t.Fatalf("DROP USER with INSERT only: %v, want 1227", err)
	}
	mustExec(t, admin, "GRANT UPDATE, DELETE ON mysql.* TO 'ins'@'%'")
	db = open(t, srv.Addr(), "ins", "pw", nil, false)
	mustExec(t, db, "ALTER USER 'victim'@'%' IDENTIFIED BY 'changed'")
	wantLogin(t, srv.Addr(), "victim", "changed", nil, "victim@%")
	mustExec(t, db, "DROP USER 'made'@'%'")
	wantDenied(t, srv.Addr(), "made", "pw", nil)
	mustExec(t, admin, "GRANT SELECT ON *.* TO 'victim'@'%'")
	mustExec(t, db, "REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'victim'@'%'") // UPDATE on mysql suffices
	if got := grants(t, admin, "victim"); len(got) != 1 || got[0] != "GRANT USAGE ON *.* TO `victim`@`%`" {
		t.Fatalf("after REVOKE ALL: %q", got)
	}

	// The admin account holds ALL PRIVILEGES, SYSTEM_USER among them.
	for _, q := range []string{
		"ALTER USER '" + simtest.AdminUser + "'@'%' IDENTIFIED BY 'taken'",
		"ALTER USER '" + simtest.AdminUser + "'@'%' ACCOUNT LOCK",
		"DROP USER '" + simtest.AdminUser + "'@'%'",
	} {
		if _, err := db.Exec(q); myErrNo(err) != 1227 {
			t.Fatalf("%s without SYSTEM_USER: %v, want 1227", q, err)
		}
	}
	wantLogin(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, simtest.AdminUser+"@%")
	mustExec(t, admin, "GRANT SYSTEM_USER ON *.* TO 'victim'@'%'")
	v := open(t, srv.Addr(), "victim", "changed", nil, false)
	mustExec(t, v, "ALTER USER 'victim'@'%' IDENTIFIED BY 'own'") // one's own password
	wantLogin(t, srv.Addr(), "victim", "own", nil, "victim@%")
	mustExec(t, admin, "GRANT SYSTEM_USER ON *.* TO 'ins'@'%'")
	db = open(t, srv.Addr(), "ins", "pw", nil, false)
	mustExec(t, db, "ALTER USER 'victim'@'%' IDENTIFIED BY 'again'")
	wantLogin(t, srv.Addr(), "victim", "again", nil, "victim@%")
}

// TestReadOnlyBeforeTablePrivileges: a data change on a read-only server is
// refused with 1290 before its table privilege is checked, as MySQL does;
// on a writable server the missing privilege answers (1142).
func TestReadOnlyBeforeTablePrivileges(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	mustExec(t, admin, "CREATE DATABASE d")
	mustExec(t, admin, "CREATE TABLE d.t (a)")
	mustExec(t, admin, "CREATE USER 'reader'@'%' IDENTIFIED BY 'pw'")
	mustExec(t, admin, "GRANT SELECT ON *.* TO 'reader'@'%'")
	db := open(t, srv.Addr(), "reader", "pw", nil, false)
	if _, err := db.Exec("INSERT INTO d.t VALUES (1)"); myErrNo(err) != 1142 {
		t.Fatalf("INSERT without INSERT on a writable server: %v, want 1142", err)
	}
	mustExec(t, admin, "SET GLOBAL super_read_only = ON")
	for _, q := range []string{"INSERT INTO d.t VALUES (1)", "CREATE DATABASE e", "CREATE TABLE d.u (a)"} {
		if _, err := db.Exec(q); myErrNo(err) != 1290 {
			t.Fatalf("%s without its privilege under super_read_only: %v, want 1290", q, err)
		}
	}
}

// TestPluginStatementsHonourReadOnly: INSTALL and UNINSTALL PLUGIN write
// mysql.plugin, so read_only refuses them to accounts without
// CONNECTION_ADMIN and super_read_only to every account (1290), after the
// privilege check (1142).
func TestPluginStatementsHonourReadOnly(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	mustExec(t, admin, "CREATE USER 'plug'@'%' IDENTIFIED BY 'pw'")
	db := open(t, srv.Addr(), "plug", "pw", nil, false)
	if _, err := db.Exec("UNINSTALL PLUGIN clone"); myErrNo(err) != 1142 {
		t.Fatalf("UNINSTALL PLUGIN without DELETE on mysql: %v, want 1142", err)
	}
	mustExec(t, admin, "GRANT INSERT, DELETE ON mysql.* TO 'plug'@'%'")
	mustExec(t, admin, "SET GLOBAL read_only = ON")
	db = open(t, srv.Addr(), "plug", "pw", nil, false)
	if _, err := db.Exec("UNINSTALL PLUGIN clone"); myErrNo(err) != 1290 {
		t.Fatalf("UNINSTALL PLUGIN under read_only: %v, want 1290", err)
	}
	mustExec(t, admin, "SET GLOBAL super_read_only = ON")
	for _, q := range []string{"UNINSTALL PLUGIN clone", "INSTALL PLUGIN clone SONAME 'mysql_clone.so'"} {
		if _, err := admin.Exec(q); myErrNo(err) != 1290 {
			t.Fatalf("%s by the admin under super_read_only: %v, want 1290", q, err)
		}
	}
	var status string
	if err := admin.QueryRow("SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'clone'").Scan(&status); err != nil || status != "ACTIVE" {
		t.Fatalf("clone plugin: %q, %v; want ACTIVE", status, err)
	}
	mustExec(t, admin, "SET GLOBAL super_read_only = OFF")
	mustExec(t, admin, "SET GLOBAL read_only = OFF")
	mustExec(t, db, "UNINSTALL PLUGIN clone")
}

// TestResetReplicaAndReplicationTablesPrivileges: RESET REPLICA needs
// RELOAD (manual "RESET Statement"); performance_schema's replication
// tables need SELECT on them; ALLOW_NONEXISTENT_DEFINER is a privilege
// MySQL 9.7 knows.
func TestResetReplicaAndReplicationTablesPrivileges(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	mustExec(t, admin, "CREATE USER 'r'@'%' IDENTIFIED BY 'pw'")
	mustExec(t, admin, "GRANT REPLICATION_SLAVE_ADMIN ON *.* TO 'r'@'%'")
	db := open(t, srv.Addr(), "r", "pw", nil, false)
	if _, err := db.Exec("RESET REPLICA ALL"); myErrNo(err) != 1227 {
		t.Fatalf("RESET REPLICA without RELOAD: %v, want 1227", err)
	}
	if _, err := db.Exec("SELECT * FROM performance_schema.replication_connection_status"); myErrNo(err) != 1142 {
		t.Fatalf("replication table without SELECT: %v, want 1142", err)
	}
	mustExec(t, admin, "GRANT RELOAD ON *.* TO 'r'@'%'")
	mustExec(t, admin, "GRANT SELECT ON performance_schema.* TO 'r'@'%'")
	mustExec(t, admin, "GRANT ALLOW_NONEXISTENT_DEFINER ON *.* TO 'r'@'%'")
	db = open(t, srv.Addr(), "r", "pw", nil, false)
	mustExec(t, db, "RESET REPLICA ALL")
	mustExec(t, db, "SELECT * FROM performance_schema.replication_connection_status")
}

// TestShutdownNeedsShutdownPrivilege: SHUTDOWN without the SHUTDOWN
// privilege is 1227 and the server keeps running; with it the server stops
// cleanly and stays stopped until started, or, unsupervised (a container
// the kubelet restarts), comes back by itself.
func TestShutdownNeedsShutdownPrivilege(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	mustExec(t, admin, "CREATE USER 'stopper'@'%' IDENTIFIED BY 'pw'")
	db := open(t, srv.Addr(), "stopper", "pw", nil, false)
	if _, err := db.Exec("SHUTDOWN"); myErrNo(err) != 1227 {
		t.Fatalf("SHUTDOWN without SHUTDOWN: %v, want 1227", err)
	}
	if !srv.Running() {
		t.Fatal("a refused SHUTDOWN stopped the server")
	}
	mustExec(t, admin, "GRANT SHUTDOWN ON *.* TO 'stopper'@'%'")
	db = open(t, srv.Addr(), "stopper", "pw", nil, false)
	mustExec(t, db, "SHUTDOWN")
	eventually(t, 5*time.Second, "the server to stop", func() (bool, string) { return !srv.Running(), "running" })
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	wantLogin(t, srv.Addr(), "stopper", "pw", nil, "stopper@%")

	un := simtest.Start(t, mysqlsim.Config{Unsupervised: true})
	udb := adminDB(t, un)
	mustExec(t, udb, "SET GLOBAL read_only = ON") // not persisted: a restart forgets it
	mustExec(t, udb, "SHUTDOWN")
	eventually(t, 5*time.Second, "the unsupervised server to start again", func() (bool, string) {
		var v string
		if err := udb.QueryRow("SELECT @@GLOBAL.read_only").Scan(&v); err != nil {
			return false, err.Error()
		}
		return v == "0", "read_only " + v
	})
}
