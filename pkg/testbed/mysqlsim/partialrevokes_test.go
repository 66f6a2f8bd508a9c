package mysqlsim_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// withPartialRevokes is a server started with partial_revokes=ON (and the
// clone plugin, as simtest's default options load it).
func withPartialRevokes() mysqlsim.Config {
	return mysqlsim.Config{Options: []string{"plugin-load-add=mysql_clone.so", "partial-revokes=ON"}}
}

func wantGrants(t *testing.T, srv *mysqlsim.Server, user string, want ...string) {
	t.Helper()
	if got := grants(t, adminDB(t, srv), user); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("SHOW GRANTS FOR %s:\n%s\nwant:\n%s", user, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func globalInt(t *testing.T, srv *mysqlsim.Server, name string) int {
	t.Helper()
	var v int
	if err := adminDB(t, srv).QueryRowContext(ctx(t), "SELECT @@global."+name).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPartialRevokesOffRefusesSchemaRevoke: by default partial_revokes is
// OFF and a schema-level REVOKE of a privilege held only globally fails
// with 1141 (the manual's first example); the account is unchanged.
func TestPartialRevokesOffRefusesSchemaRevoke(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := adminDB(t, srv)
	if v := globalInt(t, srv, "partial_revokes"); v != 0 {
		t.Fatalf("@@global.partial_revokes = %d by default, want 0", v)
	}
	mustExec(t, admin, "CREATE USER u1")
	mustExec(t, admin, "GRANT SELECT, INSERT ON *.* TO u1")
	_, err := admin.Exec("REVOKE INSERT ON world.* FROM u1")
	if myErrNo(err) != 1141 || !strings.Contains(err.Error(), "There is no such grant defined for user 'u1' on host '%'") {
		t.Fatalf("REVOKE INSERT ON world.* with partial_revokes=OFF: %v, want 1141", err)
	}
	wantGrants(t, srv, "u1", "GRANT SELECT, INSERT ON *.* TO `u1`@`%`")
	// Turned on at runtime, the same statement succeeds.
	mustExec(t, admin, "SET GLOBAL partial_revokes = ON")
	mustExec(t, admin, "REVOKE INSERT ON world.* FROM u1")
	wantGrants(t, srv, "u1", "GRANT SELECT, INSERT ON *.* TO `u1`@`%`", "REVOKE INSERT ON `world`.* FROM `u1`@`%`")
}

// TestPartialRevokesSemantics follows the manual's examples: SHOW GRANTS
// shows restrictions as REVOKE lines (aggregated per database, databases
// in order), the restricted privilege is refused on that schema only, and
// a restriction is removed by a global GRANT from an unrestricted account,
// a schema-level GRANT (which adds no database grant) or a global REVOKE.
func TestPartialRevokesSemantics(t *testing.T) {
	srv := simtest.Start(t, withPartialRevokes())
	admin := adminDB(t, srv)
	if v := globalInt(t, srv, "partial_revokes"); v != 1 {
		t.Fatalf("@@global.partial_revokes = %d with partial-revokes=ON, want 1", v)
	}
	mustExec(t, admin, "CREATE DATABASE world")
	mustExec(t, admin, "CREATE DATABASE db2")
	mustExec(t, admin, "CREATE TABLE world.t (id INT)")
	mustExec(t, admin, "CREATE TABLE db2.t (id INT)")
	mustExec(t, admin, "CREATE USER 'u1'@'%' IDENTIFIED BY 'pw'")
	mustExec(t, admin, "GRANT SELECT, INSERT, UPDATE, DELETE ON *.* TO 'u1'@'%'")
	mustExec(t, admin, "REVOKE INSERT ON mysql.* FROM 'u1'@'%'")
	mustExec(t, admin, "REVOKE DELETE, UPDATE ON db2.* FROM 'u1'@'%'")
	wantGrants(t, srv, "u1", "GRANT SELECT, INSERT, UPDATE, DELETE ON *.* TO `u1`@`%`",
		"REVOKE UPDATE, DELETE ON `db2`.* FROM `u1`@`%`", "REVOKE INSERT ON `mysql`.* FROM `u1`@`%`")

	// Honoured by the checks: DELETE refused on db2 only; INSERT on db2
	// and world still allowed; INSERT on mysql (CREATE USER's stand-in)
	// refused.
	u1 := open(t, srv.Addr(), "u1", "pw", nil, false)
	mustExec(t, u1, "INSERT INTO db2.t VALUES (1)")
	mustExec(t, u1, "DELETE FROM world.t")
	if _, err := u1.Exec("DELETE FROM db2.t"); myErrNo(err) != 1142 {
		t.Fatalf("DELETE on db2 with DELETE partially revoked there: %v, want 1142", err)
	}
	if _, err := u1.Exec("CREATE USER 'made'@'%' IDENTIFIED BY 'x'"); myErrNo(err) != 1227 {
		t.Fatalf("CREATE USER with INSERT partially revoked on mysql: %v, want 1227", err)
	}

	// Removal: a global GRANT, a schema-level GRANT, a global REVOKE.
	mustExec(t, admin, "GRANT INSERT ON *.* TO 'u1'@'%'")
	mustExec(t, admin, "GRANT UPDATE ON db2.* TO 'u1'@'%'")
	wantGrants(t, srv, "u1", "GRANT SELECT, INSERT, UPDATE, DELETE ON *.* TO `u1`@`%`", "REVOKE DELETE ON `db2`.* FROM `u1`@`%`")
	mustExec(t, admin, "REVOKE DELETE ON *.* FROM 'u1'@'%'")
	wantGrants(t, srv, "u1", "GRANT SELECT, INSERT, UPDATE ON *.* TO `u1`@`%`")

	// A privilege held globally and on the schema takes two revokes: the
	// first removes the schema grant, the second is the partial revoke.
	mustExec(t, admin, "CREATE USER u3")
	mustExec(t, admin, "GRANT SELECT, INSERT ON *.* TO u3")
	mustExec(t, admin, "GRANT INSERT ON world.* TO u3")
	mustExec(t, admin, "REVOKE INSERT ON world.* FROM u3")
	wantGrants(t, srv, "u3", "GRANT SELECT, INSERT ON *.* TO `u3`@`%`")
	mustExec(t, admin, "REVOKE INSERT ON world.* FROM u3")
	wantGrants(t, srv, "u3", "GRANT SELECT, INSERT ON *.* TO `u3`@`%`", "REVOKE INSERT ON `world`.* FROM `u3`@`%`")

	// A nonexistent schema may be restricted, but only for a privilege
	// held globally; global-only privileges cannot be partially revoked.
	mustExec(t, admin, "REVOKE SELECT ON nosuchdb.* FROM u3")
	if _, err := admin.Exec("REVOKE DELETE ON nosuchdb.* FROM u3"); myErrNo(err) != 1141 {
		t.Fatalf("partial revoke of a privilege not held globally: %v, want 1141", err)
	}
	mustExec(t, admin, "GRANT PROCESS ON *.* TO u3")
	if _, err := admin.Exec("REVOKE PROCESS ON world.* FROM u3"); myErrNo(err) != 1221 {
		t.Fatalf("partial revoke of a global-only privilege: %v, want 1221", err)
	}

	// Once a restriction exists partial_revokes cannot be turned OFF.
	if _, err := admin.Exec("SET GLOBAL partial_revokes = OFF"); myErrNo(err) != mysqlsim.ErPartialRevokesExist {
		t.Fatalf("SET GLOBAL partial_revokes = OFF with restrictions: %v, want 3896", err)
	}
	if v := globalInt(t, srv, "partial_revokes"); v != 1 {
		t.Fatalf("partial_revokes = %d after the refused SET, want 1", v)
	}
}

// TestPartialRevokesGrantorRestrictions: a restricted grantor passes its
// restriction on with a global GRANT unless the grantee already held the
// privilege, and cannot grant on the schema it is restricted on.
func TestPartialRevokesGrantorRestrictions(t *testing.T) {
	srv := simtest.Start(t, withPartialRevokes())
	admin := adminDB(t, srv)
	mustExec(t, admin, "CREATE USER u1, u2")
	mustExec(t, admin, "GRANT SELECT ON *.* TO u2")
	mustExec(t, admin, "CREATE USER 'boss'@'%' IDENTIFIED BY 'pw'")
	mustExec(t, admin, "GRANT SELECT ON *.* TO 'boss'@'%' WITH GRANT OPTION")
	mustExec(t, admin, "REVOKE SELECT ON mysql.* FROM 'boss'@'%'")
	wantGrants(t, srv, "boss", "GRANT SELECT ON *.* TO `boss`@`%` WITH GRANT OPTION", "REVOKE SELECT ON `mysql`.* FROM `boss`@`%`")
	boss := open(t, srv.Addr(), "boss", "pw", nil, false)
	mustExec(t, boss, "GRANT SELECT ON *.* TO u1")
	mustExec(t, boss, "GRANT SELECT ON *.* TO u2")
	wantGrants(t, srv, "u1", "GRANT SELECT ON *.* TO `u1`@`%`", "REVOKE SELECT ON `mysql`.* FROM `u1`@`%`")
	wantGrants(t, srv, "u2", "GRANT SELECT ON *.* TO `u2`@`%`")
	if _, err := boss.Exec("GRANT SELECT ON mysql.* TO u2"); myErrNo(err) != 1044 {
		t.Fatalf("a grant on the grantor's restricted schema: %v, want 1044", err)
	}
	if _, err := boss.Exec("SHOW GRANTS FOR u2"); myErrNo(err) != 1044 {
		t.Fatalf("SHOW GRANTS FOR another account without SELECT on mysql: %v, want 1044", err)
	}
}

// TestPartialRevokesKeptReplicatedCloned: restrictions are in the data
// directory (a restart and a crash keep them, and a restart with
// partial_revokes=OFF is turned ON because they exist), the REVOKE that
// made them is logged as a Query event and a replica with
// partial_revokes=ON applies it, and CLONE copies them.
func TestPartialRevokesKeptReplicatedCloned(t *testing.T) {
	cnf := filepath.Join(t.TempDir(), "my.cnf")
	writeFile := func(text string) {
		if err := os.WriteFile(cnf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeFile("[mysqld]\nplugin-load-add = mysql_clone.so\npartial-revokes = ON\n")
	source := simtest.Start(t, mysqlsim.Config{DefaultsFile: cnf})
	replica := simtest.Start(t, withPartialRevokes())
	replicate(t, replica, source, "")
	sdb := adminDB(t, source)
	mustExec(t, sdb, "CREATE USER 'webapp'@'%' IDENTIFIED BY 'pw'")
	mustExec(t, sdb, "GRANT SELECT, INSERT, UPDATE, DELETE ON *.* TO 'webapp'@'%'")
	mustExec(t, sdb, "REVOKE SELECT, INSERT, UPDATE, DELETE ON mysql.* FROM 'webapp'@'%'")
	want := []string{"GRANT SELECT, INSERT, UPDATE, DELETE ON *.* TO `webapp`@`%`", "REVOKE SELECT, INSERT, UPDATE, DELETE ON `mysql`.* FROM `webapp`@`%`"}

	executed := gtidExecuted(t, sdb)
	rdb := adminDB(t, replica)
	eventually(t, 20*time.Second, "the replica to apply the source's account statements", func() (bool, string) {
		got := gtidExecuted(t, rdb)
		return got == executed, got
	})
	wantGrants(t, replica, "webapp", want...)
	if _, err := open(t, replica.Addr(), "webapp", "pw", nil, false).Exec("ALTER USER '" + simtest.ReplUser + "'@'%' IDENTIFIED BY 'x'"); myErrNo(err) != 1227 {
		t.Fatalf("replica: ALTER USER of another account by the restricted app: %v, want 1227", err)
	}

	srv := source
	srv.Crash()
	writeFile("[mysqld]\nplugin-load-add = mysql_clone.so\npartial-revokes = OFF\n")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	wantGrants(t, srv, "webapp", want...)
	if v := globalInt(t, srv, "partial_revokes"); v != 1 {
		t.Fatalf("partial_revokes = %d after a start with OFF while restrictions exist, want 1", v)
	}
	if _, err := open(t, srv.Addr(), "webapp", "pw", nil, false).Exec("ALTER USER '" + simtest.ReplUser + "'@'%' IDENTIFIED BY 'x'"); myErrNo(err) != 1227 {
		t.Fatalf("after a crash: ALTER USER of another account by the restricted app: %v, want 1227", err)
	}

	recipient := simtest.Start(t, withPartialRevokes())
	cloneFrom(t, recipient, source)
	wantGrants(t, recipient, "webapp", want...)
}
