package mysqlsim_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// statusValue reads one row of SHOW GLOBAL STATUS LIKE name.
func statusValue(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var n, v string
	if err := db.QueryRowContext(ctx(t), "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
		t.Fatalf("SHOW GLOBAL STATUS LIKE %q: %v", name, err)
	}
	return v
}

// TestFailedAuthenticationsCounted: each refused login (wrong password,
// unknown user, native and caching_sha2 accounts, dual passwords) counts
// once under the user name the client sent and in Aborted_connects; good
// logins, also with the retained old password, count nowhere; a locked
// account counts in Aborted_connects only; a restart resets
// Aborted_connects (a status variable) but not the Go counter.
func TestFailedAuthenticationsCounted(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{TLS: simtest.NewTLS(t).Server})
	admin := adminDB(t, srv)
	if got := srv.FailedAuthentications(); len(got) != 0 {
		t.Fatalf("fresh server: %v, want none", got)
	}
	if v := statusValue(t, admin, "Aborted_connects"); v != "0" {
		t.Fatalf("fresh server: Aborted_connects %s, want 0", v)
	}
	wantLogin(t, srv.Addr(), simtest.AppUser, simtest.AppPass, nil, simtest.AppUser+"@%")
	wantDenied(t, srv.Addr(), simtest.AppUser, "wrong", nil)
	wantDenied(t, srv.Addr(), simtest.AppUser, "wrong", clientTLS())
	wantDenied(t, srv.Addr(), simtest.NativeUser, "wrong", nil)
	wantDenied(t, srv.Addr(), "nobody", "x", nil)
	mustExec(t, admin, "ALTER USER 'app'@'%' IDENTIFIED BY 'new-secret' RETAIN CURRENT PASSWORD")
	wantLogin(t, srv.Addr(), simtest.AppUser, simtest.AppPass, nil, simtest.AppUser+"@%")
	wantLogin(t, srv.Addr(), simtest.AppUser, "new-secret", nil, simtest.AppUser+"@%")
	mustExec(t, admin, "CREATE USER 'locked'@'%' IDENTIFIED BY 'pw' ACCOUNT LOCK")
	if _, err := gmLogin(srv.Addr(), "locked", "pw", nil); gmErrNo(err) != 3118 {
		t.Fatalf("locked account: %v, want 3118", err)
	}
	want := map[string]uint64{simtest.AppUser: 2, simtest.NativeUser: 1, "nobody": 1}
	if got := srv.FailedAuthentications(); !equalCounts(got, want) {
		t.Fatalf("FailedAuthentications %v, want %v", got, want)
	}
	// The server counts an aborted connection after it has sent the client
	// its error, as mysqld does: the last one may still be on its way.
	eventually(t, 5*time.Second, "Aborted_connects 5 (4 denied, 1 locked)", func() (bool, string) {
		v := statusValue(t, admin, "Aborted_connects")
		return v == "5", v
	})
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	admin = adminDB(t, srv)
	if v := statusValue(t, admin, "Aborted_connects"); v != "0" {
		t.Fatalf("after restart: Aborted_connects %s, want 0", v)
	}
	wantDenied(t, srv.Addr(), simtest.AppUser, "wrong", nil)
	want[simtest.AppUser]++
	if got := srv.FailedAuthentications(); !equalCounts(got, want) {
		t.Fatalf("after restart: FailedAuthentications %v, want %v", got, want)
	}
}

func equalCounts(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
