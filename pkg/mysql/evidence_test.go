package mysql_test

import (
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// TestReplicationEvidenceAgainstTheSimulator reads a replica's
// performance_schema evidence through the client (the failover lag
// guard's input) and checks it against what the simulated servers hold: the
// last queued and applied transactions are the primary's latest write, the
// heartbeat follows while the primary is idle, an applier held back shows
// a queued transaction it has not applied, a stopped applier is started
// again by START REPLICA SQL_THREAD, and a restarted replica reports no
// evidence at all (performance_schema starts empty).
func TestReplicationEvidenceAgainstTheSimulator(t *testing.T) {
	p := simtest.Start(t, mysqlsim.Config{Name: "p"})
	r := simtest.Start(t, mysqlsim.Config{Name: "r", SuperReadOnly: true})
	cr := client(t, r, simtest.AdminUser, simtest.AdminPass, nil, false)
	ctx := bg(t)
	if err := cr.Repoint(ctx, sourceOf(t, p)); err != nil {
		t.Fatal(err)
	}
	app := client(t, p, simtest.AppUser, simtest.AppPass, nil, false).DB()
	for _, q := range []string{"CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT)", "INSERT INTO shop.orders VALUES (1)"} {
		if _, err := app.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	last := func() string { // the primary's latest transaction, by its own state
		ex := p.Snapshot().Executed
		sid := ex.SIDs()[0]
		ivs := ex.Intervals(sid)
		return gtid.GTID{UUID: sid.UUID, GNO: ivs[len(ivs)-1].End}.String()
	}
	var e mysql.ChannelEvidence
	waitFor(t, "the replica to apply the primary's last write", func() (bool, string) {
		var err error
		e, err = cr.ReplicationEvidence(ctx)
		return err == nil && e.LastQueued == last() && e.LastApplied == last(), e.LastQueued + " / " + e.LastApplied
	})
	if e.LastQueuedCommit.IsZero() || e.LastQueuedEnd.IsZero() || !e.LastAppliedCommit.Equal(e.LastQueuedCommit) || e.Now.IsZero() {
		t.Fatalf("evidence %+v", e)
	}
	// The replica's NOW(6) is its clock (the same host's here): inside the
	// window the read took, to the microsecond.
	before := time.Now().Truncate(time.Microsecond)
	clock, err := cr.ReplicationEvidence(ctx)
	after := time.Now()
	if err != nil || clock.Now.Before(before) || clock.Now.After(after) {
		t.Fatalf("the replica's NOW(6) %s is not its clock: read between %s and %s (%v)", clock.Now, before.UTC(), after.UTC(), err)
	}
	// Idle primary: heartbeats every SOURCE_HEARTBEAT_PERIOD (1 s).
	waitFor(t, "a heartbeat after the last queued transaction", func() (bool, string) {
		e, _ = cr.ReplicationEvidence(ctx)
		return e.LastHeartbeat.After(e.LastQueuedEnd), e.LastHeartbeat.String()
	})

	// The primary stops: the evidence stays on the replica while its
	// receiver retries (what a failover reads, by a new leader too).
	p.Crash()
	waitFor(t, "the receiver retrying", func() (bool, string) {
		rs, err := cr.ReplicaStatus(ctx)
		return err == nil && rs != nil && rs.ReplicaIORunning == "Connecting", "not Connecting"
	})
	kept, err := cr.ReplicationEvidence(ctx)
	if err != nil || kept.LastHeartbeat.Before(e.LastHeartbeat) || kept.LastQueued != last() || kept.LastHeartbeat.IsZero() {
		t.Fatalf("evidence after the source stopped: %+v (%v), before: %+v", kept, err, e)
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}

	// The applier held back: queued, not applied.
	if err := r.InjectApplyLag(time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := app.ExecContext(ctx, "INSERT INTO shop.orders VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new write queued but not applied", func() (bool, string) {
		e, _ = cr.ReplicationEvidence(ctx)
		return e.LastQueued == last() && e.LastApplied != last(), e.LastQueued + " / " + e.LastApplied
	})
	if !e.LastQueuedCommit.After(e.LastAppliedCommit) {
		t.Fatalf("queued commit %s not after applied commit %s", e.LastQueuedCommit, e.LastAppliedCommit)
	}
	if err := r.InjectApplyLag(0); err != nil {
		t.Fatal(err)
	}

	// A stopped applier is started by START REPLICA SQL_THREAD.
	if err := r.StopApplier(1062, "Duplicate entry"); err != nil {
		t.Fatal(err)
	}
	if err := cr.StartReplicaSQLThread(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the applier running again", func() (bool, string) {
		rs, err := cr.ReplicaStatus(ctx)
		return err == nil && rs != nil && rs.SQLRunning(), "not running"
	})

	// Restarted: performance_schema starts empty, so nothing is known.
	r.Crash()
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := r.StopApplier(0, ""); err != nil { // hold it still so nothing new arrives before the read
		t.Fatal(err)
	}
	e, err = cr.ReplicationEvidence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e.LastApplied != "" || !e.LastAppliedCommit.IsZero() {
		t.Fatalf("a restarted replica reports an applied transaction: %+v", e)
	}
}
