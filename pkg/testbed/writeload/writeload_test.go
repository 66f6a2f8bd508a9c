package writeload_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
	"github.com/shipstream/bloodraven/pkg/testbed/writeload"
)

func opts(s *mysqlsim.Server) mysql.Options {
	return mysql.Options{Addr: s.Addr(), User: simtest.AdminUser, Password: simtest.AdminPass, MaxWait: 5 * time.Second}
}

func adminClient(t *testing.T, s *mysqlsim.Server) *mysql.Client {
	c, err := mysql.Open(opts(s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func run(t *testing.T, l *writeload.Loader) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestLossReportFindsAKnownLoss: writes replicate to a replica; then, with
// apply lag injected, more writes are received but not applied, and
// RESET REPLICA ALL discards them (the known loss). The loss report against
// the promoted replica names exactly those writes, and nothing against the
// primary.
func TestLossReportFindsAKnownLoss(t *testing.T) {
	p := simtest.Start(t, mysqlsim.Config{Name: "p"})
	r := simtest.Start(t, mysqlsim.Config{Name: "r"})
	rc := adminClient(t, r)
	ctx := context.Background()
	h, port, _ := net.SplitHostPort(p.Addr())
	pn, _ := strconv.Atoi(port)
	if err := rc.Repoint(ctx, mysql.Source{Host: h, Port: pn, User: simtest.ReplUser, Password: simtest.ReplPass, ConnectRetry: time.Second}); err != nil {
		t.Fatal(err)
	}
	const writer = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
	l, err := writeload.New(writeload.Config{Endpoint: opts(p), WriterUUID: writer, MaxWrites: 20})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	run(t, l)
	if s := l.Stats(); s.Acknowledged != 20 || s.Refused != 0 || s.Uncertain != 0 {
		t.Fatalf("stats after 20 writes: %+v", s)
	}
	if ok, err := rc.WaitForGTIDSet(ctx, l.Acknowledged(), 5*time.Second); err != nil || !ok {
		t.Fatalf("replica did not catch up: %v %v", ok, err)
	}
	if err := r.InjectApplyLag(time.Hour); err != nil {
		t.Fatal(err)
	}
	run(t, l) // 20 more, received but not applied
	lost := gtid.MustParse(writer + ":21-40")
	waitUntil(t, "replica received the lagging writes", func() bool {
		return lost.IsSubsetOf(r.Snapshot().Retrieved)
	})
	if err := rc.StopReplica(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rc.ResetReplicaAll(ctx); err != nil {
		t.Fatal(err)
	}
	missing, err := l.MissingOn(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	if !missing.Equal(lost) {
		t.Fatalf("loss report against the replica = %s, want exactly %s", missing, lost)
	}
	if missing, err := l.MissingOn(ctx, adminClient(t, p)); err != nil || !missing.IsEmpty() {
		t.Fatalf("loss report against the primary = %s %v, want empty", missing, err)
	}
}

// TestRefusedWritesAreNotAcknowledged: writes to a fenced server are refused
// (1290) and never appear in the acknowledged set.
func TestRefusedWritesAreNotAcknowledged(t *testing.T) {
	p := simtest.Start(t, mysqlsim.Config{})
	l, err := writeload.New(writeload.Config{Endpoint: opts(p), MaxWrites: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	run(t, l)
	if err := adminClient(t, p).Fence(context.Background()); err != nil {
		t.Fatal(err)
	}
	run(t, l)
	s := l.Stats()
	if s.Acknowledged != 5 || s.Refused != 5 {
		t.Fatalf("stats: %+v, want 5 acknowledged and 5 refused", s)
	}
	want := gtid.MustParse(fmt.Sprintf("%s:1-5", l.WriterUUID()))
	if !l.Acknowledged().Equal(want) {
		t.Fatalf("acknowledged = %s, want %s", l.Acknowledged(), want)
	}
	if !want.IsSubsetOf(p.Snapshot().Executed) || p.Snapshot().Executed.Contains(gtid.GTID{UUID: l.WriterUUID(), GNO: 6}) {
		t.Fatalf("server executed %s", p.Snapshot().Executed)
	}
}

// TestUncertainWritesWhenTheServerCrashes: a write whose connection breaks is
// recorded as uncertain, not acknowledged.
func TestUncertainWritesWhenTheServerCrashes(t *testing.T) {
	p := simtest.Start(t, mysqlsim.Config{})
	o := opts(p)
	o.ReadTimeout, o.MaxWait, o.DialTimeout = 500*time.Millisecond, 0, 200*time.Millisecond
	l, err := writeload.New(writeload.Config{Endpoint: o, MaxWrites: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	run(t, l)
	p.Freeze() // the next write gets no answer
	run(t, l)
	p.Thaw()
	s := l.Stats()
	if s.Acknowledged != 3 || s.Uncertain == 0 || l.Uncertain().IsEmpty() {
		t.Fatalf("stats %+v uncertain %s", s, l.Uncertain())
	}
	if !l.Acknowledged().Intersect(l.Uncertain()).IsEmpty() {
		t.Fatal("a write is both acknowledged and uncertain")
	}
	if missing := writeload.Missing(l.Acknowledged(), p.Snapshot().Executed); !missing.IsEmpty() {
		t.Fatalf("acknowledged writes missing on the server: %s", missing)
	}
}

// TestRerunWithTheSameWriterUUID: a second loader with the same WriterUUID
// continues after the numbers the server already executed; otherwise MySQL
// would skip its writes (GTID already executed) and they would count as
// acknowledged without a row written.
func TestRerunWithTheSameWriterUUID(t *testing.T) {
	p := simtest.Start(t, mysqlsim.Config{})
	const writer = "bbbbbbbb-cccc-4ddd-8eee-ffffffffffff"
	var acked []gtid.Set
	for i := 0; i < 2; i++ {
		l, err := writeload.New(writeload.Config{Endpoint: opts(p), WriterUUID: writer, MaxWrites: 4})
		if err != nil {
			t.Fatal(err)
		}
		run(t, l)
		l.Close()
		acked = append(acked, l.Acknowledged())
	}
	if want := gtid.MustParse(writer + ":5-8"); !acked[1].Equal(want) {
		t.Fatalf("second run acknowledged %s, want %s", acked[1], want)
	}
	var rows int64
	if err := adminClient(t, p).DB().QueryRowContext(context.Background(), "SELECT COUNT(*) FROM bloodraven_writeload.writes").Scan(&rows); err != nil || rows != 8 {
		t.Fatalf("rows written = %d (%v), want 8: one per acknowledged write", rows, err)
	}
}

func TestConfigErrors(t *testing.T) {
	if _, err := writeload.New(writeload.Config{Endpoint: mysql.Options{Addr: "127.0.0.1:1", User: "u"}, WriterUUID: "nope"}); err == nil {
		t.Fatal("bad WriterUUID accepted")
	}
	if _, err := writeload.New(writeload.Config{Endpoint: mysql.Options{User: "u"}}); err == nil {
		t.Fatal("missing Addr accepted")
	}
}
