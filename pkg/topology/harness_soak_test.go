package topology

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// harnessSeedBase is HARNESS_SEED_BASE: TestInvariantHarness runs seeds
// base+1 … base+n (0 in CI, so CI's seeds never change). "clock" takes a
// fresh base from the clock, for make soak; the base is logged, and a
// failing seed is replayed from its printed value alone (HARNESS_SEED).
func harnessSeedBase(t testing.TB) uint64 {
	v := os.Getenv("HARNESS_SEED_BASE")
	switch v {
	case "":
		return 0
	case "clock":
		base := uint64(time.Now().UnixMicro())
		t.Logf("HARNESS_SEED_BASE=%d (from the clock): seeds %d and up", base, base+1)
		return base
	}
	base, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("HARNESS_SEED_BASE=%q: %v", v, err)
	}
	t.Logf("HARNESS_SEED_BASE=%d: seeds %d and up", base, base+1)
	return base
}
