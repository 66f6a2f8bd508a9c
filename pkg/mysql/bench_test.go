package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// BenchmarkObserve measures one observation round trip against the
// simulator (the operator's per-site poll), prepared and interpolated.
func BenchmarkObserve(b *testing.B) {
	srv := simtest.Start(b, mysqlsim.Config{})
	for _, m := range modes[:2] {
		b.Run(m.name, func(b *testing.B) {
			c := benchClient(b, srv, m.interpolate)
			ctx := context.Background()
			for b.Loop() {
				if _, err := c.Observe(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReplicatedWrite measures a write on a primary until a replica has
// applied it (commit, receive, apply, WAIT_FOR_EXECUTED_GTID_SET).
func BenchmarkReplicatedWrite(b *testing.B) {
	p := simtest.Start(b, mysqlsim.Config{})
	r := simtest.Start(b, mysqlsim.Config{})
	ctx := context.Background()
	cr := benchClient(b, r, false)
	if err := cr.Repoint(ctx, sourceOfB(b, p)); err != nil {
		b.Fatal(err)
	}
	cp := benchClient(b, p, false)
	db := cp.DB()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE bench"); err != nil {
		b.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE bench.t (id BIGINT)"); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		if _, err := db.ExecContext(ctx, "INSERT INTO bench.t VALUES (?)", i); err != nil {
			b.Fatal(err)
		}
		o, err := cp.Observe(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if ok, err := cr.WaitForGTIDSet(ctx, o.GTIDExecuted, 5*time.Second); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
