package sidecar_test

import (
	"context"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/sidecar/fencing"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// read_only=ON with super_read_only=OFF is not fenced: accounts with
// CONNECTION_ADMIN (or SUPER) still write there (docs/safety.md, rule 1). An
// isolated primary left that way by hand must fence itself like a writable
// one. Found by scripts/mutation-check (19-sidecar-read-only-counts-as-fenced):
// no test saw the sidecar take read_only alone as fenced.
func TestIsolatedPrimaryWithReadOnlyAloneFencesItself(t *testing.T) {
	nw := newNetwork()
	op := startOperator(t, nw, "iad", 1)
	sites := startSites(t, nw, op, threeSites, clusterOpts{})
	iad := sites["iad"]
	eventually(t, 10*time.Second, "iad confirmed by the operator", func() bool { return iad.decision() == fencing.ReasonOperatorConfirms })

	c, err := mysql.Open(mysql.Options{Addr: iad.sim.Addr(), User: simtest.AdminUser, Password: simtest.AdminPass, Program: "by-hand"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.DB().ExecContext(ctx, "SET GLOBAL read_only = ON"); err != nil {
		t.Fatal(err)
	}
	if snap := iad.sim.Snapshot(); !snap.ReadOnly || snap.SuperReadOnly {
		t.Fatalf("setup: want read_only=ON, super_read_only=OFF, have %s", snap)
	}

	cut := time.Now()
	nw.isolate("iad", "operator", "dfw", "sjc")
	fencedAt := waitFenced(t, iad, bound+5*time.Second)
	if took := fencedAt.Sub(cut); took > bound {
		t.Errorf("fenced %s after the partition, beyond the documented bound %s", took, bound)
	}
}
