package mysqlsim_test

import (
	"testing"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// TestAdministrativeInterface: admin_address/admin_port serve the same
// protocol on their own port, admit only SERVICE_CONNECTION_ADMIN holders
// (1227 for others), do not count against max_connections, and keep their
// port across a restart. Without AdminAddr there is no such interface.
func TestAdministrativeInterface(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{AdminAddr: "127.0.0.1:0"})
	if srv.AdminAddr() == "" || srv.AdminAddr() == srv.Addr() {
		t.Fatalf("admin address %q (main %q): want its own port", srv.AdminAddr(), srv.Addr())
	}
	c := ctx(t)
	admin := open(t, srv.AdminAddr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	var port int64
	if err := admin.QueryRowContext(c, "SELECT @@GLOBAL.port").Scan(&port); err != nil {
		t.Fatalf("query over the administrative interface: %v", err)
	}
	app := open(t, srv.AdminAddr(), simtest.AppUser, simtest.AppPass, nil, false)
	if err := app.PingContext(c); myErrNo(err) != mysqlsim.ErSpecificAccessDenied {
		t.Fatalf("an account without SERVICE_CONNECTION_ADMIN on the admin port: got %v, want 1227", err)
	}

	// Fill the ordinary interface: max_connections=1 plus the one
	// connection reserved for CONNECTION_ADMIN.
	mustExec(t, admin, "SET GLOBAL max_connections = 1")
	hold := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	hold.SetMaxOpenConns(2)
	c1, err := hold.Conn(c)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := hold.Conn(c)
	if err != nil {
		t.Fatalf("the connection reserved for CONNECTION_ADMIN: %v", err)
	}
	defer c2.Close()
	more := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	if err := more.PingContext(c); myErrNo(err) != mysqlsim.ErConCount {
		t.Fatalf("beyond max_connections + 1 on the ordinary port: got %v, want 1040", err)
	}
	admin2 := open(t, srv.AdminAddr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	admin2.SetMaxOpenConns(3)
	for i := 0; i < 3; i++ {
		conn, err := admin2.Conn(c)
		if err != nil {
			t.Fatalf("administrative connection %d while the ordinary interface is full: %v", i+1, err)
		}
		defer conn.Close()
	}

	before := srv.AdminAddr()
	srv.Crash()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if srv.AdminAddr() != before {
		t.Fatalf("admin address after restart = %s, want %s", srv.AdminAddr(), before)
	}

	plain := simtest.Start(t, mysqlsim.Config{})
	if plain.AdminAddr() != "" {
		t.Fatalf("admin address without AdminAddr = %q, want none", plain.AdminAddr())
	}
}
