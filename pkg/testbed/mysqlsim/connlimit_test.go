package mysqlsim_test

import (
	"database/sql"
	"strings"
	"time"

	"testing"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// TestMaxConnections: max_connections defaults to 151 and is settable;
// mysqld permits max_connections + 1 client connections, the extra one only
// for CONNECTION_ADMIN (or SUPER) holders; beyond that every account gets
// 1040 "Too many connections". A closed connection frees its slot.
func TestMaxConnections(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	c := ctx(t)
	admin := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	var n int64
	if err := admin.QueryRowContext(c, "SELECT @@GLOBAL.max_connections").Scan(&n); err != nil || n != mysqlsim.DefaultMaxConnections {
		t.Fatalf("max_connections = %d (%v), want 151", n, err)
	}
	if _, err := admin.ExecContext(c, "SET GLOBAL max_connections = 0"); myErrNo(err) != mysqlsim.ErWrongValueForVar {
		t.Fatalf("max_connections = 0: got %v, want 1231", err)
	}
	mustExec(t, admin, "SET GLOBAL max_connections = 3") // admin holds one of them
	// Each held connection is its own pool, so closing it closes the
	// connection (a pool's Conn.Close only returns it to the pool).
	var held []*sql.DB
	hold := func(user, pass string) error {
		db := open(t, srv.Addr(), user, pass, nil, false)
		if err := db.PingContext(c); err != nil {
			return err
		}
		held = append(held, db)
		return nil
	}
	for i := 0; i < 2; i++ {
		if err := hold(simtest.AppUser, simtest.AppPass); err != nil {
			t.Fatalf("app connection %d of 3: %v", i+2, err)
		}
	}
	extra := open(t, srv.Addr(), simtest.AppUser, simtest.AppPass, nil, false)
	err := extra.PingContext(c)
	if myErrNo(err) != mysqlsim.ErConCount || !contains(err.Error(), "Too many connections") {
		t.Fatalf("app account on the reserved connection: got %v, want 1040 Too many connections", err)
	}
	// The refused connection frees its slot once the server has closed it,
	// a moment after the client read the error.
	eventually(t, 5*time.Second, "CONNECTION_ADMIN account on the reserved connection", func() (bool, string) {
		err := hold(simtest.AdminUser, simtest.AdminPass)
		return err == nil, errString(err)
	})
	beyond := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	if err := beyond.PingContext(c); myErrNo(err) != mysqlsim.ErConCount {
		t.Fatalf("beyond max_connections + 1: got %v, want 1040", err)
	}
	held[0].Close()
	eventually(t, 5*time.Second, "a closed connection frees its slot", func() (bool, string) {
		err := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false).PingContext(c)
		return err == nil, errString(err)
	})
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
