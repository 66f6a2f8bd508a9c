package mysql_test

import (
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

func sourceOf(t *testing.T, s *mysqlsim.Server) mysql.Source { return sourceOfB(t, s) }

func sourceOfB(t testing.TB, s *mysqlsim.Server) mysql.Source {
	h, p, err := net.SplitHostPort(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(p)
	return mysql.Source{Host: h, Port: port, User: simtest.ReplUser, Password: simtest.ReplPass, ConnectRetry: time.Second}
}

func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
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

// TestCatalogWithPrimaryAndTwoReplicas runs the replication statements of
// the catalog through the client against a simulated primary and two
// replicas, and checks every observation against the simulator's own state,
// including Retrieved_Gtid_Set while apply lag is injected. It walks a
// planned failover: fence, wait, promote, repoint, reclone.
func TestCatalogWithPrimaryAndTwoReplicas(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			tl := simtest.NewTLS(t)
			p := simtest.Start(t, mysqlsim.Config{Name: "p", TLS: tl.Server})
			r1 := simtest.Start(t, mysqlsim.Config{Name: "r1", TLS: tl.Server, SuperReadOnly: true})
			r2 := simtest.Start(t, mysqlsim.Config{Name: "r2", TLS: tl.Server, SuperReadOnly: true})
			tc := tl.Client
			if !m.tls {
				tc = nil
			}
			cp := client(t, p, simtest.AdminUser, simtest.AdminPass, tc, m.interpolate)
			c1 := client(t, r1, simtest.AdminUser, simtest.AdminPass, tc, m.interpolate)
			c2 := client(t, r2, simtest.AdminUser, simtest.AdminPass, tc, m.interpolate)
			ctx := bg(t)
			src := sourceOf(t, p)
			src.SSL = m.tls
			for _, c := range []*mysql.Client{c1, c2} {
				if err := c.Repoint(ctx, src); err != nil { // stop-replica, change-source, start-replica
					t.Fatal(err)
				}
			}
			app := client(t, p, simtest.AppUser, simtest.AppPass, tc, m.interpolate).DB()
			for _, q := range []string{"CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT)", "INSERT INTO shop.orders VALUES (1)"} {
				if _, err := app.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			pObs, err := cp.Observe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !pObs.GTIDExecuted.Equal(p.Snapshot().Executed) {
				t.Fatalf("observed %s, simulator has %s", pObs.GTIDExecuted, p.Snapshot().Executed)
			}
			for _, c := range []*mysql.Client{c1, c2} {
				if ok, err := c.WaitForGTIDSet(ctx, pObs.GTIDExecuted, 5*time.Second); err != nil || !ok {
					t.Fatalf("replica did not catch up: %v %v", ok, err)
				}
			}
			rs, err := c1.ReplicaStatus(ctx)
			if err != nil || rs == nil {
				t.Fatalf("replica status: %+v %v", rs, err)
			}
			if !rs.IORunning() || !rs.SQLRunning() || rs.SourceUUID != p.ServerUUID() || !rs.AutoPosition ||
				!rs.RetrievedGTIDSet.Equal(pObs.GTIDExecuted) || !rs.ExecutedGTIDSet.Equal(r1.Snapshot().Executed) ||
				rs.SecondsBehindSource == nil || *rs.SecondsBehindSource != 0 || rs.SourceHost != src.Host || rs.SourcePort != src.Port {
				t.Fatalf("caught-up replica status: %+v", rs)
			}
			if got := rs.SourceSSLAllowed == "Yes"; got != m.tls {
				t.Fatalf("Source_SSL_Allowed = %s with TLS %v", rs.SourceSSLAllowed, m.tls)
			}
			// a replica lists its receiver and applier (HOST NULL in
			// performance_schema.processlist) as system sessions, and
			// eviction leaves them alone
			sessions, err := c1.ListSessions(ctx)
			if err != nil {
				t.Fatalf("ListSessions on a replica: %v", err)
			}
			system := 0
			for _, s := range sessions {
				if s.User == "system user" && s.Host == "" && s.System() {
					system++
				}
			}
			if system != 2 {
				t.Fatalf("replica sessions %+v: want the receiver and the applier as system sessions", sessions)
			}
			if killed, err := c1.EvictClientSessions(ctx, simtest.AdminUser); err != nil || len(killed) != 0 {
				t.Fatalf("eviction on a replica killed %+v (%v); replication threads must stay", killed, err)
			}

			// apply lag on r2: received but not applied, visible in Retrieved_Gtid_Set
			if err := r2.InjectApplyLag(time.Hour); err != nil {
				t.Fatal(err)
			}
			if _, err := app.ExecContext(ctx, "INSERT INTO shop.orders VALUES (2)"); err != nil {
				t.Fatal(err)
			}
			pObs, _ = cp.Observe(ctx)
			var lagging *mysql.ReplicaStatus
			waitFor(t, "r2 receives", func() (bool, string) {
				lagging, err = c2.ReplicaStatus(ctx)
				if err != nil {
					return false, err.Error()
				}
				return lagging.RetrievedGTIDSet.Equal(pObs.GTIDExecuted), lagging.RetrievedGTIDSet.OneLine()
			})
			snap2 := r2.Snapshot()
			if !lagging.RetrievedGTIDSet.Equal(snap2.Retrieved) || !lagging.ExecutedGTIDSet.Equal(snap2.Executed) {
				t.Fatalf("status %s/%s disagrees with simulator %s", lagging.RetrievedGTIDSet, lagging.ExecutedGTIDSet, snap2)
			}
			if lagging.ExecutedGTIDSet.Contains(gtid.GTID{UUID: p.ServerUUID(), GNO: 4}) || lagging.SecondsBehindSource == nil {
				t.Fatalf("lagging replica applied early or reports no lag: %+v", lagging)
			}
			r2Obs, _ := c2.Observe(ctx)
			best := r2Obs.GTIDExecuted.Union(lagging.RetrievedGTIDSet) // how emergency failover ranks candidates
			if !best.Equal(pObs.GTIDExecuted) {
				t.Fatalf("executed ∪ retrieved = %s, want %s", best, pObs.GTIDExecuted)
			}

			// planned failover to r1: fence p, wait, promote r1, repoint r2 and p
			if err := cp.Fence(ctx); err != nil {
				t.Fatal(err)
			}
			if !p.Snapshot().SuperReadOnly {
				t.Fatal("fence did not reach the simulator")
			}
			pObs, _ = cp.Observe(ctx)
			if ok, err := c1.WaitForGTIDSet(ctx, pObs.GTIDExecuted, 5*time.Second); err != nil || !ok {
				t.Fatalf("r1 did not reach the fenced primary's set: %v %v", ok, err)
			}
			if err := c1.StopReplicaIOThread(ctx); err != nil {
				t.Fatal(err)
			}
			if rs, _ := c1.ReplicaStatus(ctx); rs.IORunning() || !rs.SQLRunning() {
				t.Fatalf("after STOP REPLICA IO_THREAD: %+v", rs)
			}
			if err := c1.Promote(ctx); err != nil { // stop-replica, reset-replica-all, unfence
				t.Fatal(err)
			}
			if rs, err := c1.ReplicaStatus(ctx); rs != nil || err != nil {
				t.Fatalf("promoted r1 still has a channel: %+v %v", rs, err)
			}
			if s := r1.Snapshot(); s.ReadOnly || s.SuperReadOnly {
				t.Fatalf("promoted r1 is read-only: %s", s)
			}
			if err := r2.InjectApplyLag(0); err != nil {
				t.Fatal(err)
			}
			newSrc := sourceOf(t, r1)
			newSrc.SSL = m.tls
			for _, c := range []*mysql.Client{c2, cp} {
				if err := c.Repoint(ctx, newSrc); err != nil {
					t.Fatal(err)
				}
			}
			app1 := client(t, r1, simtest.AppUser, simtest.AppPass, tc, m.interpolate).DB()
			if _, err := app1.ExecContext(ctx, "INSERT INTO shop.orders VALUES (3)"); err != nil {
				t.Fatal(err)
			}
			o1, _ := c1.Observe(ctx)
			for _, c := range []*mysql.Client{c2, cp} {
				if ok, err := c.WaitForGTIDSet(ctx, o1.GTIDExecuted, 5*time.Second); err != nil || !ok {
					t.Fatalf("not following the new primary: %v %v", ok, err)
				}
				if errant, err := c.ErrantGTIDs(ctx, o1.GTIDExecuted); err != nil || !errant.IsEmpty() {
					t.Fatalf("errant GTIDs %s %v", errant, err)
				}
			}
			// an errant transaction on r2 is found
			errant := r2.InjectErrantTransactions(1)
			if got, err := c2.ErrantGTIDs(ctx, o1.GTIDExecuted); err != nil || !got.Equal(errant) {
				t.Fatalf("ErrantGTIDs = %s %v, want %s", got, err, errant)
			}

			// reclone r2 from r1 (clone)
			if err := c2.StopReplica(ctx); err != nil {
				t.Fatal(err)
			}
			donor := mysql.Donor{Host: newSrc.Host, Port: newSrc.Port, User: simtest.ReplUser, Password: simtest.ReplPass, RequireSSL: m.tls}
			if err := c2.SetCloneDonorList(ctx, net.JoinHostPort(donor.Host, strconv.Itoa(donor.Port))); err != nil {
				t.Fatal(err)
			}
			err = c2.Clone(ctx, donor, 10*time.Second)
			if err == nil || !isCloneRestart(err) {
				t.Fatalf("clone: %v, want ErrCloneRestarting", err)
			}
			waitFor(t, "r2 back with r1's data", func() (bool, string) {
				o, err := c2.Observe(ctx)
				if err != nil {
					return false, err.Error()
				}
				return o.GTIDExecuted.Equal(o1.GTIDExecuted) && o.GTIDPurged.Equal(o1.GTIDExecuted), o.GTIDExecuted.OneLine()
			})
		})
	}
}

func isCloneRestart(err error) bool {
	for e := err; e != nil; {
		if e == mysql.ErrCloneRestarting {
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

// TestCloneOnMysqldWithoutSupervisor: on a mysqld without a monitoring
// process (a container whose entrypoint execs mysqld) a successful clone
// answers 3707 "Restart server failed" and shuts the server down; the site
// client reports that as ErrCloneRestarting, like the dropped connection of
// a supervised restart, and the server comes back with the donor's data.
func TestCloneOnMysqldWithoutSupervisor(t *testing.T) {
	donor := simtest.Start(t, mysqlsim.Config{})
	ctx := bg(t)
	for _, q := range []string{"CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT)"} {
		if _, err := client(t, donor, simtest.AdminUser, simtest.AdminPass, nil, false).DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	src := sourceOf(t, donor)
	d := mysql.Donor{Host: src.Host, Port: src.Port, User: simtest.ReplUser, Password: simtest.ReplPass}
	donorAddr := net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
	want := donor.Snapshot().Executed

	// through the driver: MySQL's error number
	raw := simtest.Start(t, mysqlsim.Config{Unsupervised: true})
	rawDB := client(t, raw, simtest.AdminUser, simtest.AdminPass, nil, false).DB()
	if _, err := rawDB.ExecContext(ctx, "SET GLOBAL clone_valid_donor_list = ?", donorAddr); err != nil {
		t.Fatal(err)
	}
	_, err := rawDB.ExecContext(ctx, "CLONE INSTANCE FROM 'repl'@'"+d.Host+"':"+strconv.Itoa(d.Port)+" IDENTIFIED BY '"+simtest.ReplPass+"' REQUIRE NO SSL")
	if !mysql.IsNumber(err, mysql.ErRestartServerFailed) {
		t.Fatalf("CLONE on an unsupervised mysqld: %v, want error 3707", err)
	}
	waitFor(t, "the unsupervised server back with the donor's data", func() (bool, string) {
		s := raw.Snapshot()
		return s.Running && s.Executed.Equal(want), s.String()
	})

	// through the site client: a clone that ended in a restart
	rec := simtest.Start(t, mysqlsim.Config{Unsupervised: true})
	c := client(t, rec, simtest.AdminUser, simtest.AdminPass, nil, false)
	if err := c.SetCloneDonorList(ctx, donorAddr); err != nil {
		t.Fatal(err)
	}
	err = c.Clone(ctx, d, 10*time.Second)
	if !errors.Is(err, mysql.ErrCloneRestarting) || !mysql.IsNumber(err, mysql.ErRestartServerFailed) {
		t.Fatalf("Clone on an unsupervised mysqld: %v, want ErrCloneRestarting carrying 3707", err)
	}
	waitFor(t, "the recipient back with the donor's data", func() (bool, string) {
		o, err := c.Observe(ctx)
		if err != nil {
			return false, err.Error()
		}
		return o.GTIDExecuted.Equal(want) && o.GTIDPurged.Equal(want), o.GTIDExecuted.OneLine()
	})
}
