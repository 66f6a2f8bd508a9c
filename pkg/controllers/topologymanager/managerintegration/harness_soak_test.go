package managerintegration

import (
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// realSeedBase is HARNESS_REAL_SEED_BASE: TestRealInvariantHarness runs
// seeds base+1 … base+n (0 in CI, so CI's seeds never change). "clock"
// takes a fresh base from the clock, for make soak. A failing sequence is
// named by its seed, and HARNESS_REAL_SEED_BASE=<seed-1>
// HARNESS_REAL_SEQUENCES=1 -run 'TestRealInvariantHarness/seed=<seed>$'
// replays it alone.
func realSeedBase(t *testing.T) int {
	realBase.once.Do(func() {
		v := os.Getenv("HARNESS_REAL_SEED_BASE")
		switch v {
		case "":
			return
		case "clock":
			// Whole seconds: the seed is the subtest's name, and -run
			// must be able to spell it.
			realBase.n = int(time.Now().Unix())
		default:
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				realBase.err = v
				return
			}
			realBase.n = n
		}
		t.Logf("HARNESS_REAL_SEED_BASE=%d: seeds %d and up (replay one: HARNESS_REAL_SEED_BASE=<seed-1> HARNESS_REAL_SEQUENCES=1 -run 'TestRealInvariantHarness/seed=<seed>$')", realBase.n, realBase.n+1)
	})
	if realBase.err != "" {
		t.Fatalf("HARNESS_REAL_SEED_BASE=%q: want a number or clock", realBase.err)
	}
	return realBase.n
}

// realBase is read once per test binary, so the loop's two reads agree.
var realBase struct {
	once sync.Once
	n    int
	err  string
}
