package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// TestEveryCallHasADeadline: against a server that stops answering this
// client (a partition on its program_name: connections open, statements get
// no answer), every call of the site client returns its deadline error on
// its own, even with a caller context that never ends. The driver's read
// timeout (60 s here) is far longer, so only the call's deadline can end it.
func TestEveryCallHasADeadline(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	c, err := mysql.Open(mysql.Options{
		Addr: srv.Addr(), User: simtest.AdminUser, Password: simtest.AdminPass,
		MaxWait: 5 * time.Second, Program: "bloodraven-deadline", StatementTimeout: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Partition("bloodraven-deadline")
	t.Cleanup(srv.Heal)

	set := gtid.MustParse(srv.ServerUUID() + ":1")
	src := mysql.Source{Host: "127.0.0.1", Port: 3306, User: simtest.ReplUser, Password: simtest.ReplPass}
	donor := mysql.Donor{Host: "127.0.0.1", Port: 3306, User: simtest.ReplUser, Password: simtest.ReplPass}
	calls := map[string]func(context.Context) error{
		mysql.StmtObserve.Name:             func(ctx context.Context) error { _, err := c.Observe(ctx); return err },
		mysql.StmtReplicaStatus.Name:       func(ctx context.Context) error { _, err := c.ReplicaStatus(ctx); return err },
		mysql.StmtFence.Name:               c.Fence,
		mysql.StmtSetLockWaitTimeout.Name:  c.Fence,
		mysql.StmtUnfence.Name:             c.Unfence,
		mysql.StmtStopReplica.Name:         c.StopReplica,
		mysql.StmtStopReplicaIOThread.Name: c.StopReplicaIOThread,
		mysql.StmtStartReplica.Name:        c.StartReplica,
		mysql.StmtResetReplicaAll.Name:     c.ResetReplicaAll,
		mysql.StmtChangeSource.Name:        func(ctx context.Context) error { return c.ChangeSource(ctx, src) },
		mysql.StmtWaitForGTIDSet.Name: func(ctx context.Context) error {
			_, err := c.WaitForGTIDSet(ctx, set, 300*time.Millisecond)
			return err
		},
		mysql.StmtGTIDSubtract.Name:          func(ctx context.Context) error { _, err := c.GTIDSubtract(ctx, set, set); return err },
		mysql.StmtGTIDSubset.Name:            func(ctx context.Context) error { _, err := c.GTIDSubset(ctx, set, set); return err },
		mysql.StmtConnectionID.Name:          func(ctx context.Context) error { _, err := c.ListSessions(ctx); return err },
		mysql.StmtListSessions.Name:          func(ctx context.Context) error { _, err := c.EvictClientSessions(ctx); return err },
		mysql.StmtKillConnection.Name:        func(ctx context.Context) error { return c.KillSession(ctx, 12345) },
		mysql.StmtSetCloneDonorList.Name:     func(ctx context.Context) error { return c.SetCloneDonorList(ctx, "127.0.0.1:3306") },
		mysql.StmtClone.Name:                 func(ctx context.Context) error { return c.Clone(ctx, donor, 300*time.Millisecond) },
		mysql.StmtStartReplicaSQLThread.Name: c.StartReplicaSQLThread,
		mysql.StmtNow.Name:                   func(ctx context.Context) error { _, err := c.ReplicationEvidence(ctx); return err },
		mysql.StmtConnectionStatus.Name:      func(ctx context.Context) error { _, err := c.ReplicationEvidence(ctx); return err },
		mysql.StmtApplierByWorker.Name:       func(ctx context.Context) error { _, err := c.ReplicationEvidence(ctx); return err },
		mysql.StmtReloadTLS.Name:             c.ReloadTLS,
	}
	for n, f := range accountCalls(c) { // accounts_test.go
		calls[n] = f
	}
	for _, st := range mysql.Catalog() {
		if calls[st.Name] == nil {
			t.Errorf("catalog statement %q has no call in this test", st.Name)
		}
	}
	for name, call := range calls {
		done := make(chan error, 1)
		go func() { done <- call(context.Background()) }()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s against an unresponsive server: %v, want its deadline (context.DeadlineExceeded)", name, err)
			}
			if errors.Is(err, mysql.ErrCloneRestarting) {
				t.Errorf("%s: a deadline must not look like a clone's restart: %v", name, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s against an unresponsive server did not return: it has no deadline", name)
		}
	}
}
