package observe

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// run feeds a sequence of poll outcomes ('+' success, '-' failure) to a new
// site and returns the reachability after each poll.
func run(seq string, t Thresholds) []Reachability {
	var h Health
	var out []Reachability
	for _, c := range seq {
		h = h.Next(c == '+', t)
		out = append(out, h.Reach)
	}
	return out
}

func TestHealthNext(t *testing.T) {
	const (
		U = Unobserved
		R = Reachable
		S = Suspect
		X = Unreachable
	)
	cases := []struct {
		name string
		th   Thresholds
		seq  string
		want []Reachability
	}{
		{"first success trusts a never-seen site", Thresholds{3, 2}, "+", []Reachability{R}},
		{"a never-seen site failing stays unobserved until the threshold", Thresholds{3, 2}, "---", []Reachability{U, U, X}},
		{"a reachable site is suspect below the threshold", Thresholds{3, 2}, "+--", []Reachability{R, S, S}},
		{"the threshold-th consecutive failure makes it unreachable", Thresholds{3, 2}, "+---", []Reachability{R, S, S, X}},
		{"a success resets the failure count", Thresholds{3, 2}, "+--+--", []Reachability{R, S, S, R, S, S}},
		{"recovery needs recoveryThreshold successes in a row", Thresholds{3, 2}, "+---++", []Reachability{R, S, S, X, X, R}},
		{"a failure during recovery restarts it", Thresholds{3, 2}, "+---+-++", []Reachability{R, S, S, X, X, X, X, R}},
		{"failureThreshold 1: one failure is enough", Thresholds{1, 1}, "+-+", []Reachability{R, X, R}},
		{"recoveryThreshold 3", Thresholds{2, 3}, "--+++", []Reachability{U, X, X, X, R}},
		{"zero thresholds mean the defaults 3 and 2", Thresholds{}, "+---++", []Reachability{R, S, S, X, X, R}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := run(c.seq, c.th)
			if len(got) != len(c.want) {
				t.Fatalf("got %v", got)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("after %q: %v, want %v", c.seq[:i+1], got, c.want)
				}
			}
		})
	}
}

func TestHealthCounts(t *testing.T) {
	h := Health{}
	for range 5 {
		h = h.Next(false, Thresholds{3, 2})
	}
	if h.Failures != 5 || h.Successes != 0 {
		t.Fatalf("after 5 failures: %+v", h)
	}
	h = h.Next(true, Thresholds{3, 2})
	if h.Failures != 0 || h.Successes != 1 || h.Reach != Unreachable {
		t.Fatalf("after one success: %+v", h)
	}
}

func TestCadence(t *testing.T) {
	th := Thresholds{Failure: 3, Recovery: 2}
	failing := func(n int) Health { return Health{Reach: Unreachable, Failures: n} }
	ok := Health{Reach: Reachable, Successes: 4}
	cases := []struct {
		name  string
		base  time.Duration
		sites []Health
		want  time.Duration
	}{
		{"all healthy: the poll interval", 2 * time.Second, []Health{ok, ok}, 2 * time.Second},
		{"failing below the threshold: no backoff", 2 * time.Second, []Health{ok, failing(2)}, 2 * time.Second},
		{"at the threshold: still the base", 2 * time.Second, []Health{ok, failing(3)}, 2 * time.Second},
		{"one failure beyond: doubled", 2 * time.Second, []Health{ok, failing(4)}, 4 * time.Second},
		{"three beyond: 8x", 2 * time.Second, []Health{failing(6), ok}, 16 * time.Second},
		{"capped at 30s", 2 * time.Second, []Health{failing(9)}, 30 * time.Second},
		{"the worst site decides", time.Second, []Health{failing(4), failing(5)}, 4 * time.Second},
		{"a base above the cap is kept", 45 * time.Second, []Health{failing(10)}, 45 * time.Second},
		{"a huge failure count does not overflow", time.Second, []Health{failing(1 << 30)}, 30 * time.Second},
		{"no sites: the base", 500 * time.Millisecond, nil, 500 * time.Millisecond},
		{"unset base: 2s", 0, nil, 2 * time.Second},
		{"recovered site: back to the base", 2 * time.Second, []Health{{Reach: Unreachable, Successes: 1}}, 2 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Cadence(c.base, th, c.sites...); got != c.want {
				t.Fatalf("Cadence = %s, want %s", got, c.want)
			}
		})
	}
}

func TestGroupCadence(t *testing.T) {
	th := Thresholds{Failure: 3, Recovery: 2}
	dead := Health{Reach: Unreachable, Failures: 9}
	ok := Health{Reach: Reachable}
	if got := GroupCadence(2*time.Second, th, ok, dead); got != 2*time.Second {
		t.Fatalf("one live site: %s, want the base interval", got)
	}
	if got := GroupCadence(2*time.Second, th, dead, Health{Reach: Unreachable, Failures: 5}); got != 8*time.Second {
		t.Fatalf("every site failing: %s, want the soonest backoff (8s)", got)
	}
	if got := GroupCadence(2*time.Second, th, dead); got != 30*time.Second {
		t.Fatalf("one dead site: %s", got)
	}
	if got := GroupCadence(time.Second, th); got != time.Second {
		t.Fatalf("no sites: %s", got)
	}
}

// A site backing off is skipped by rounds until it is due; the others are
// polled every round.
func TestRoundBackoffPerSite(t *testing.T) {
	calls := map[string]int{}
	var mu sync.Mutex // probes of one round run concurrently
	probe := func(ctx context.Context, site string) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[site]++
		if site == "dead" {
			return 0, errors.New("refused")
		}
		return 1, nil
	}
	tr := NewTracker[int](nil)
	clock := time.Unix(0, 0)
	tr.now = func() time.Time { return clock }
	th := Thresholds{Failure: 1, Recovery: 1}
	opts := RoundOptions{Sites: []string{"live", "dead"}, Timeout: time.Second, Thresholds: th,
		Backoff: func(h Health) time.Duration { return SiteCadence(time.Second, th, h) - time.Second/2 }}
	// Rounds one second apart: the dead site fails at 0s and 1s (then its
	// cadence is 2s), is skipped at 2s, polled again at 3s.
	for range 4 {
		if _, err := tr.Round(context.Background(), "g", probe, opts); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(time.Second)
	}
	if calls["live"] != 4 || calls["dead"] != 3 {
		t.Fatalf("polls %v: want live 4, dead 3", calls)
	}
}
