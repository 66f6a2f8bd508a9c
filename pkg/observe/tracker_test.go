package observe

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// probeMySQL observes a simulated server through the product's site client.
func probeMySQL(t *testing.T, addrs map[string]string) ProbeFunc[mysql.Observation] {
	clients := map[string]*mysql.Client{}
	for site, addr := range addrs {
		c, err := mysql.Open(mysql.Options{Addr: addr, User: simtest.AdminUser, Password: simtest.AdminPass, DialTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		clients[site] = c
	}
	return func(ctx context.Context, site string) (mysql.Observation, error) {
		return clients[site].Observe(ctx)
	}
}

// A frozen site (accepts, never answers) and a crashed site (refuses) fail
// their polls at the deadline, while the live site's poll in the same round
// succeeds; thresholds turn the failures into Unreachable.
func TestRoundIsolatesDeadSites(t *testing.T) {
	live := simtest.Start(t, mysqlsim.Config{})
	frozen := simtest.Start(t, mysqlsim.Config{})
	crashed := simtest.Start(t, mysqlsim.Config{})
	probe := probeMySQL(t, map[string]string{"live": live.Addr(), "frozen": frozen.Addr(), "crashed": crashed.Addr()})
	frozen.Freeze()
	t.Cleanup(frozen.Thaw)
	crashed.Crash()

	var polls []string
	tr := NewTracker[mysql.Observation](func(group, site string, _ time.Duration, err error) {
		polls = append(polls, site)
	})
	opts := RoundOptions{Sites: []string{"live", "frozen", "crashed"}, Timeout: 300 * time.Millisecond, Thresholds: Thresholds{Failure: 2, Recovery: 2}}
	var res map[string]Result[mysql.Observation]
	for i := range 2 {
		var err error
		res, err = tr.Round(context.Background(), "ns/g", probe, opts)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if r := res["frozen"]; r.Fresh || r.Health.Reach != Unobserved || !errors.Is(r.Err, context.DeadlineExceeded) {
				t.Fatalf("frozen after one round: %+v", r)
			}
		}
	}
	if r := res["live"]; !r.Fresh || r.Health.Reach != Reachable || r.Last == nil || r.Last.Value.ServerUUID != live.ServerUUID() {
		t.Fatalf("live site: %+v", r)
	}
	for _, s := range []string{"frozen", "crashed"} {
		if r := res[s]; r.Fresh || r.Health.Reach != Unreachable || r.Err == nil || r.Last != nil {
			t.Fatalf("%s site after two failed rounds: %+v", s, r)
		}
	}
	if len(polls) != 6 {
		t.Fatalf("%d polls reported, want 6", len(polls))
	}

	// Recovery: the crashed site comes back and needs two good polls.
	if err := crashed.Restart(); err != nil {
		t.Fatal(err)
	}
	res, _ = tr.Round(context.Background(), "ns/g", probe, opts)
	if r := res["crashed"]; !r.Fresh || r.Health.Reach != Unreachable {
		t.Fatalf("crashed site after one good poll: %+v", r)
	}
	res, _ = tr.Round(context.Background(), "ns/g", probe, opts)
	if r := res["crashed"]; r.Health.Reach != Reachable {
		t.Fatalf("crashed site after two good polls: %+v", r)
	}
}

// MinInterval keeps a round from polling a site polled moments ago, and a
// site dropped from the list is forgotten.
func TestRoundMinIntervalAndForget(t *testing.T) {
	calls := map[string]int{}
	var mu sync.Mutex // probes of one round run concurrently
	probe := func(ctx context.Context, site string) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[site]++
		return calls[site], nil
	}
	tr := NewTracker[int](nil)
	opts := RoundOptions{Sites: []string{"a", "b"}, Timeout: time.Second, MinInterval: time.Hour}
	if _, err := tr.Round(context.Background(), "g", probe, opts); err != nil {
		t.Fatal(err)
	}
	res, _ := tr.Round(context.Background(), "g", probe, opts)
	if calls["a"] != 1 || res["a"].Last.Value != 1 || !res["a"].Fresh {
		t.Fatalf("second round inside MinInterval polled again: calls %v, result %+v", calls, res["a"])
	}
	opts.Sites = []string{"a"}
	if _, err := tr.Round(context.Background(), "g", probe, opts); err != nil {
		t.Fatal(err)
	}
	if h := tr.Health("g"); len(h) != 1 {
		t.Fatalf("health after dropping b: %v", h)
	}
	tr.Forget("g")
	if h := tr.Health("g"); len(h) != 0 {
		t.Fatalf("health after Forget: %v", h)
	}
	if _, err := tr.Round(context.Background(), "g", probe, RoundOptions{Sites: []string{"a"}}); err == nil {
		t.Fatal("a round without a timeout was accepted")
	}
}

// A probe that ignores its deadline and returns late with no error does not
// count as an answer.
func TestRoundLateAnswerIsAFailure(t *testing.T) {
	probe := func(ctx context.Context, site string) (int, error) {
		<-ctx.Done()
		time.Sleep(10 * time.Millisecond)
		return 1, nil
	}
	tr := NewTracker[int](nil)
	res, _ := tr.Round(context.Background(), "g", probe, RoundOptions{Sites: []string{"a"}, Timeout: 20 * time.Millisecond})
	if r := res["a"]; r.Fresh || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("late answer: %+v", r)
	}
}

// Invalidate makes a site due again inside MinInterval.
func TestInvalidate(t *testing.T) {
	calls := 0
	probe := func(ctx context.Context, site string) (int, error) { calls++; return calls, nil }
	tr := NewTracker[int](nil)
	opts := RoundOptions{Sites: []string{"a"}, Timeout: time.Second, MinInterval: time.Hour}
	_, _ = tr.Round(context.Background(), "g", probe, opts)
	tr.Invalidate("g", "a")
	tr.Invalidate("g", "unknown")
	res, _ := tr.Round(context.Background(), "g", probe, opts)
	if calls != 2 || res["a"].Last.Value != 2 {
		t.Fatalf("calls %d", calls)
	}
}

// SiteTimeout shortens one site's deadline, given its health before the
// round, and never lengthens any.
func TestRoundSiteTimeout(t *testing.T) {
	var mu sync.Mutex
	budget := map[string]time.Duration{}
	probe := func(ctx context.Context, site string) (int, error) {
		dl, _ := ctx.Deadline()
		mu.Lock()
		budget[site] = time.Until(dl)
		mu.Unlock()
		if site == "down" {
			return 0, errors.New("connection refused")
		}
		return 1, nil
	}
	tr := NewTracker[int](nil)
	var seen []Reachability
	opts := RoundOptions{Sites: []string{"up", "down"}, Timeout: time.Hour, Thresholds: Thresholds{Failure: 1, Recovery: 1},
		SiteTimeout: func(site string, h Health) time.Duration {
			if site != "down" {
				return 2 * time.Hour // longer than Timeout: ignored
			}
			seen = append(seen, h.Reach)
			if h.Reach == Unreachable {
				return time.Minute
			}
			return 0
		}}
	for range 2 {
		tr.Invalidate("ns/g", "up")
		tr.Invalidate("ns/g", "down")
		if _, err := tr.Round(context.Background(), "ns/g", probe, opts); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 2 || seen[0] != Unobserved || seen[1] != Unreachable {
		t.Fatalf("SiteTimeout saw %v, want the health before each round", seen)
	}
	if budget["down"] > time.Minute || budget["up"] < 59*time.Minute {
		t.Fatalf("deadlines %v: want a minute for the unreachable site, the hour for the other", budget)
	}
}
