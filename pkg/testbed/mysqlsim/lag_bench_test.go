package mysqlsim_test

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// BenchmarkReplicationLag prints the replication lag of one simulated
// replica: from a commit acknowledged to the client on the source to its
// GTID in the replica's gtid_executed, as p50/p99/max, with durable
// settings (sync_binlog=1, innodb_flush_log_at_trx_commit=1). The write
// rate is the source's sustainable one (one client committing back to
// back, measured first for a second) and a fixed fraction of it (paced):
//
//	go test -run '^$' -bench ReplicationLag -benchtime 2000x ./pkg/testbed/mysqlsim
func BenchmarkReplicationLag(b *testing.B) {
	for _, frac := range []float64{1, 0.5} {
		b.Run(fmt.Sprintf("rate=%d%%", int(frac*100)), func(b *testing.B) { replicationLag(b, frac) })
	}
}

func benchDB(b *testing.B, s *mysqlsim.Server) *sql.DB {
	cfg := driver.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", s.Addr(), simtest.AdminUser, simtest.AdminPass
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		b.Fatal(err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(4)
	b.Cleanup(func() { db.Close() })
	return db
}

func benchExec(b *testing.B, db *sql.DB, q string) {
	if _, err := db.ExecContext(context.Background(), q); err != nil {
		b.Fatalf("%s: %v", q, err)
	}
}

func replicationLag(b *testing.B, frac float64) {
	src := simtest.Start(b, mysqlsim.Config{})
	rep := simtest.Start(b, mysqlsim.Config{SuperReadOnly: true})
	srcDB, repDB := benchDB(b, src), benchDB(b, rep)
	benchExec(b, srcDB, "CREATE DATABASE d")
	benchExec(b, srcDB, "CREATE TABLE d.t (id INT, v VARCHAR(20))")
	h, p, _ := splitAddr(src.Addr())
	benchExec(b, repDB, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST = '%s', SOURCE_PORT = %s, SOURCE_USER = '%s', "+
		"SOURCE_PASSWORD = '%s', SOURCE_AUTO_POSITION = 1, SOURCE_CONNECT_RETRY = 1, GET_SOURCE_PUBLIC_KEY = 1", h, p, simtest.ReplUser, simtest.ReplPass))
	benchExec(b, repDB, "START REPLICA")
	uuid := src.ServerUUID()

	// The sustainable rate: one client committing back to back.
	start, n := time.Now(), 0
	for time.Since(start) < time.Second {
		benchExec(b, srcDB, fmt.Sprintf("INSERT INTO d.t VALUES (%d, 'warm')", n))
		n++
	}
	rate := float64(n) / time.Since(start).Seconds()
	base := src.Snapshot().Executed.Intervals(gtid.SID{UUID: uuid})[0].End // the last GNO so far
	waitReplica(b, repDB, uuid, base)

	acked := make([]time.Time, b.N)
	seen := make([]time.Time, b.N)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // the replica's side: when each GTID becomes visible
		defer wg.Done()
		watchReplica(b, repDB, uuid, base, seen, stop)
	}()
	interval := time.Duration(float64(time.Second) / (rate * frac))
	b.ResetTimer()
	next := time.Now()
	for i := 0; i < b.N; i++ {
		if frac < 1 {
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			next = next.Add(interval)
		}
		benchExec(b, srcDB, fmt.Sprintf("INSERT INTO d.t VALUES (%d, 'x')", i))
		acked[i] = time.Now()
	}
	waitReplica(b, repDB, uuid, base+int64(b.N))
	b.StopTimer()
	close(stop)
	wg.Wait()
	lags := make([]time.Duration, b.N)
	for i := range lags {
		if lags[i] = seen[i].Sub(acked[i]); lags[i] < 0 {
			lags[i] = 0 // visible on the replica before the client got its OK
		}
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	pct := func(q float64) time.Duration { return lags[min(len(lags)-1, int(q*float64(len(lags))))] }
	b.ReportMetric(rate*frac, "commits/s")
	b.ReportMetric(float64(pct(0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lags[len(lags)-1].Microseconds())/1000, "max-ms")
	b.Logf("sustainable %.0f commits/s, ran at %.0f/s: lag p50 %v p99 %v max %v over %d commits",
		rate, rate*frac, pct(0.5), pct(0.99), lags[len(lags)-1], b.N)
}

func splitAddr(addr string) (string, string, error) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[:i], addr[i+1:], nil
		}
	}
	return addr, "", fmt.Errorf("no port in %s", addr)
}

// waitReplica waits until the replica executed uuid:1-gno.
func waitReplica(b *testing.B, db *sql.DB, uuid string, gno int64) {
	var r int64
	q := fmt.Sprintf("SELECT WAIT_FOR_EXECUTED_GTID_SET('%s:1-%d', 60)", uuid, gno)
	if err := db.QueryRowContext(context.Background(), q).Scan(&r); err != nil || r != 0 {
		var io, sql, ioErr, sqlErr, retrieved, executed string
		row := db.QueryRowContext(context.Background(), "SELECT SERVICE_STATE, LAST_ERROR_MESSAGE, RECEIVED_TRANSACTION_SET FROM performance_schema.replication_connection_status")
		_ = row.Scan(&io, &ioErr, &retrieved)
		_ = db.QueryRowContext(context.Background(), "SELECT @@GLOBAL.gtid_executed").Scan(&executed)
		b.Fatalf("the replica did not reach %s:%d (%v): receiver %s %q, received %s, executed %s %s %s",
			uuid, gno, err, io, ioErr, retrieved, executed, sql, sqlErr)
	}
}

// watchReplica records when each GTID after base appears in the replica's
// gtid_executed: it waits for the next one, then reads how far the replica
// got, so a GTID is stamped at most one round trip after it appeared.
func watchReplica(b *testing.B, db *sql.DB, uuid string, base int64, seen []time.Time, stop <-chan struct{}) {
	ctx := context.Background()
	done := int64(0) // GTIDs base+1..base+done are stamped
	for done < int64(len(seen)) {
		select {
		case <-stop:
			return
		default:
		}
		var r int64
		q := fmt.Sprintf("SELECT WAIT_FOR_EXECUTED_GTID_SET('%s:1-%d', 1)", uuid, base+done+1)
		if err := db.QueryRowContext(ctx, q).Scan(&r); err != nil {
			b.Error(err)
			return
		}
		var s string
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_executed").Scan(&s); err != nil {
			b.Error(err)
			return
		}
		now := time.Now()
		ivs := gtid.MustParse(s).Intervals(gtid.SID{UUID: uuid})
		if len(ivs) == 0 {
			continue
		}
		for top := ivs[0].End - base; done < top && done < int64(len(seen)); done++ {
			seen[done] = now
		}
	}
}
