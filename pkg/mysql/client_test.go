package mysql_test

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

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

func client(t *testing.T, srv *mysqlsim.Server, user, pass string, tc *tls.Config, interpolate bool) *mysql.Client {
	t.Helper()
	c, err := mysql.Open(mysql.Options{
		Addr: srv.Addr(), User: user, Password: pass, TLS: tc, Interpolate: interpolate,
		MaxWait: 5 * time.Second, Program: "bloodraven-test", StatementTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func benchClient(b testing.TB, srv *mysqlsim.Server, interpolate bool) *mysql.Client {
	c, err := mysql.Open(mysql.Options{Addr: srv.Addr(), User: simtest.AdminUser, Password: simtest.AdminPass, Interpolate: interpolate, MaxWait: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func bg(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestCatalogAgainstSimulator runs every catalog statement that needs no
// replication through the client, in each transport mode the product uses,
// and checks results against what the server was made to do.
func TestCatalogAgainstSimulator(t *testing.T) {
	tl := simtest.NewTLS(t)
	covered := map[string]bool{}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := simtest.Start(t, mysqlsim.Config{TLS: tl.Server, ServerID: 7000 + uint32(len(covered))})
			var tc *tls.Config
			if m.tls {
				tc = tl.Client
			}
			admin := client(t, srv, simtest.AdminUser, simtest.AdminPass, tc, m.interpolate)
			app := client(t, srv, simtest.AppUser, simtest.AppPass, tc, m.interpolate)
			ctx := bg(t)

			// observe
			o, err := admin.Observe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if o.ServerUUID != srv.ServerUUID() || o.ReadOnly || o.SuperReadOnly || !o.GTIDExecuted.IsEmpty() {
				t.Fatalf("fresh server observed as %+v", o)
			}
			covered[mysql.StmtObserve.Name] = true

			// writes commit GTIDs the observation reflects
			db := app.DB()
			if _, err := db.ExecContext(ctx, "CREATE DATABASE shop"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, "CREATE TABLE shop.t (id INT)"); err != nil {
				t.Fatal(err)
			}
			o, _ = admin.Observe(ctx)
			if want := gtid.MustParse(srv.ServerUUID() + ":1-2"); !o.GTIDExecuted.Equal(want) {
				t.Fatalf("gtid_executed = %s, want %s", o.GTIDExecuted, want)
			}

			// fence: app writes refused with 1290, observation says read-only
			if err := admin.Fence(ctx); err != nil {
				t.Fatal(err)
			}
			covered[mysql.StmtFence.Name], covered[mysql.StmtSetLockWaitTimeout.Name] = true, true
			_, err = db.ExecContext(ctx, "INSERT INTO shop.t VALUES (?)", 1)
			if !mysql.IsReadOnly(err) {
				t.Fatalf("write on fenced site: %v, want 1290", err)
			}
			var me *driver.MySQLError
			if !errors.As(err, &me) || me.Number != 1290 {
				t.Fatalf("errors.As to *mysql.MySQLError: %v", err)
			}
			if o, _ = admin.Observe(ctx); !o.ReadOnly || !o.SuperReadOnly || o.Writable() {
				t.Fatalf("after fence: %+v", o)
			}
			// unfence clears both
			if err := admin.Unfence(ctx); err != nil {
				t.Fatal(err)
			}
			covered[mysql.StmtUnfence.Name] = true
			if o, _ = admin.Observe(ctx); !o.Writable() {
				t.Fatalf("after unfence: %+v", o)
			}
			if _, err := db.ExecContext(ctx, "INSERT INTO shop.t VALUES (?)", 2); err != nil {
				t.Fatalf("write after unfence: %v", err)
			}
			// the app account lacks the privilege to fence
			if err := app.Fence(ctx); !mysql.IsAccessDenied(err) {
				t.Fatalf("app fencing: %v, want 1227", err)
			}

			// replica status on a primary: nil
			rs, err := admin.ReplicaStatus(ctx)
			if err != nil || rs != nil {
				t.Fatalf("replica status on a primary: %+v, %v", rs, err)
			}
			covered[mysql.StmtReplicaStatus.Name] = true

			// wait for GTID set: reached, then timeout
			o, _ = admin.Observe(ctx)
			if ok, err := admin.WaitForGTIDSet(ctx, o.GTIDExecuted, time.Second); err != nil || !ok {
				t.Fatalf("wait for executed set: %v %v", ok, err)
			}
			future := o.GTIDExecuted.Add(gtid.GTID{UUID: srv.ServerUUID(), GNO: 1000})
			if ok, err := admin.WaitForGTIDSet(ctx, future, 300*time.Millisecond); err != nil || ok {
				t.Fatalf("wait for a future GTID: %v %v, want timeout", ok, err)
			}
			if _, err := admin.WaitForGTIDSet(ctx, future, time.Minute); err == nil {
				t.Fatal("a wait longer than MaxWait must be refused")
			}
			covered[mysql.StmtWaitForGTIDSet.Name] = true

			// GTID functions against local algebra
			errant := gtid.MustParse(simtest.UUID(4040) + ":1-3")
			mine := o.GTIDExecuted.Union(errant)
			diff, err := admin.GTIDSubtract(ctx, mine, o.GTIDExecuted)
			if err != nil || !diff.Equal(errant) {
				t.Fatalf("GTID_SUBTRACT = %s (%v), want %s", diff, err, errant)
			}
			covered[mysql.StmtGTIDSubtract.Name] = true
			if sub, err := admin.GTIDSubset(ctx, o.GTIDExecuted, mine); err != nil || !sub {
				t.Fatalf("GTID_SUBSET(executed, executed+errant) = %v %v", sub, err)
			}
			if sub, err := admin.GTIDSubset(ctx, mine, o.GTIDExecuted); err != nil || sub {
				t.Fatalf("GTID_SUBSET(executed+errant, executed) = %v %v", sub, err)
			}
			covered[mysql.StmtGTIDSubset.Name] = true
			if e, err := admin.ErrantGTIDs(ctx, gtid.MustParse(srv.ServerUUID()+":1")); err != nil || !e.Equal(o.GTIDExecuted.Subtract(gtid.MustParse(srv.ServerUUID()+":1"))) {
				t.Fatalf("ErrantGTIDs = %s %v", e, err)
			}

			// sessions: list (excluding ourselves), evict the app's, keep ours
			appConn, err := app.DB().Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer appConn.Close()
			var appID uint64
			if err := appConn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&appID); err != nil {
				t.Fatal(err)
			}
			sessions, err := admin.ListSessions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			covered[mysql.StmtConnectionID.Name], covered[mysql.StmtListSessions.Name] = true, true
			var sawApp bool
			for _, s := range sessions {
				if s.ID == appID {
					sawApp = s.User == simtest.AppUser && strings.HasPrefix(s.Host, "127.0.0.1:")
				}
			}
			if !sawApp {
				t.Fatalf("app session %d not listed correctly in %+v", appID, sessions)
			}
			killed, err := admin.EvictClientSessions(ctx, simtest.AdminUser)
			if err != nil {
				t.Fatal(err)
			}
			covered[mysql.StmtKillConnection.Name] = true
			var killedApp bool
			for _, s := range killed {
				if s.User == simtest.AdminUser {
					t.Fatalf("evicted a kept user's session: %+v", s)
				}
				killedApp = killedApp || s.ID == appID
			}
			if !killedApp {
				t.Fatalf("app session not evicted: %+v", killed)
			}
			var one int
			if err := appConn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err == nil {
				t.Fatal("evicted session still answers")
			}
			if err := admin.KillSession(ctx, 999999); err != nil {
				t.Fatalf("killing a gone session must not fail: %v", err)
			}
			if err := admin.Ping(ctx); err != nil {
				t.Fatalf("our own session must survive eviction: %v", err)
			}

			// RELOAD TLS (tls.go): this server's TLS comes from Config.TLS,
			// no files, so the reload succeeds and changes nothing.
			if err := admin.ReloadTLS(ctx); err != nil {
				t.Fatalf("ALTER INSTANCE RELOAD TLS: %v", err)
			}
			covered[mysql.StmtReloadTLS.Name] = true

			// clone donor list
			if err := admin.SetCloneDonorList(ctx, "10.0.0.1:3306"); err != nil {
				t.Fatal(err)
			}
			var list string
			if err := admin.DB().QueryRowContext(ctx, "SELECT @@GLOBAL.clone_valid_donor_list").Scan(&list); err != nil || list != "10.0.0.1:3306" {
				t.Fatalf("clone_valid_donor_list = %q %v", list, err)
			}
			covered[mysql.StmtSetCloneDonorList.Name] = true

			// account statements (accounts_test.go)
			for _, n := range exerciseAccounts(t, admin, func(u, p string) error { return client(t, srv, u, p, tc, m.interpolate).Ping(ctx) }) {
				covered[n] = true
			}
		})
	}
	for _, st := range mysql.Catalog() {
		if !st.NeedsReplication && !covered[st.Name] {
			t.Errorf("catalog statement %q is not exercised against the simulator", st.Name)
		}
	}
}

func TestRenderQuotesValues(t *testing.T) {
	got, err := mysql.StmtChangeSource.Render(map[string]any{
		"host": mysql.Str("h'; DROP TABLE x; --"), "port": mysql.Int(3306), "user": mysql.Str(`re\pl`),
		"password": mysql.Str("p'w"), "ssl": mysql.Int(1), "sslCA": mysql.Str("/etc/mysql/tls/ca.crt"), "sslVerify": mysql.Int(1),
		"connectRetry": mysql.Int(2), "retryCount": mysql.Int(3),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'h\'; DROP TABLE x; --', SOURCE_PORT = 3306, SOURCE_USER = 're\\pl', ` +
		`SOURCE_PASSWORD = 'p\'w', SOURCE_AUTO_POSITION = 1, SOURCE_SSL = 1, SOURCE_SSL_CA = '/etc/mysql/tls/ca.crt', ` +
		`SOURCE_SSL_VERIFY_SERVER_CERT = 1, SOURCE_CONNECT_RETRY = 2, SOURCE_RETRY_COUNT = 3, GET_SOURCE_PUBLIC_KEY = 1, ` +
		`SOURCE_HEARTBEAT_PERIOD = 1`
	if got != want {
		t.Fatalf("rendered\n %s\nwant\n %s", got, want)
	}
	if _, err := mysql.StmtKillConnection.Render(map[string]any{}); err == nil {
		t.Fatal("missing slot value accepted")
	}
	if _, err := mysql.StmtKillConnection.Render(map[string]any{"id": mysql.Int(1), "extra": mysql.Int(2)}); err == nil {
		t.Fatal("unused value accepted")
	}
	if _, err := mysql.StmtKillConnection.Render(map[string]any{"id": 5}); err == nil {
		t.Fatal("untyped value accepted")
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, tc := range []struct {
		o    mysql.Options
		want string
	}{
		{mysql.Options{User: "u"}, "Addr"},
		{mysql.Options{Addr: "a:1"}, "User"},
		{mysql.Options{Addr: "a:1", User: "u", ReadTimeout: 10 * time.Second, MaxWait: 30 * time.Second}, "ReadTimeout"},
	} {
		if _, err := tc.o.DriverConfig(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %s", tc.o, err, tc.want)
		}
	}
	dsn, err := mysql.Options{Addr: "127.0.0.1:3306", User: "u", Password: "p", Interpolate: true, MaxWait: 30 * time.Second, Program: "op"}.DSN()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.InterpolateParams || cfg.ReadTimeout < 35*time.Second || cfg.ConnectionAttributes != "program_name:op" {
		t.Fatalf("DSN %s parsed to %+v", dsn, cfg)
	}
	if _, err := (mysql.Options{Addr: "a:1", User: "u", TLS: &tls.Config{}}).DSN(); err == nil {
		t.Fatal("DSN with a TLS config must fail")
	}
}

// TestFenceGivesUpWithItsDeadline: a fence of a writable server waits for
// open transactions (MySQL's global read lock). When the call's deadline
// comes first, the server gives up too (1205, from the session's
// lock_wait_timeout): the fence does not take effect later, when the
// transaction ends, behind the back of a caller that reported it failed.
func TestFenceGivesUpWithItsDeadline(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := client(t, srv, simtest.AdminUser, simtest.AdminPass, nil, false)
	app := client(t, srv, simtest.AppUser, simtest.AppPass, nil, false).DB()
	ctx := bg(t)
	for _, q := range []string{"CREATE DATABASE shop", "CREATE TABLE shop.t (id INT)"} {
		if _, err := admin.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := app.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO shop.t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	err = admin.Fence(fctx)
	if !mysql.IsNumber(err, mysql.ErLockWaitTimeout) {
		t.Fatalf("fence behind an open transaction: %v, want 1205 before the deadline", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("the open transaction commits once the fence gave up: %v", err)
	}
	o, err := admin.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Writable() {
		t.Fatalf("a fence that failed took effect later: %+v", o)
	}
	if err := admin.Fence(ctx); err != nil {
		t.Fatalf("fence with no open transaction: %v", err)
	}
}
