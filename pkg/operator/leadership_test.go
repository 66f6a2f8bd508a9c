package operator

import (
	"strings"
	"testing"
	"time"
)

// Issue 21, hole 3: with the default timings (15 s, 10 s, 2 s) a leader
// may act until 12 s after its last renewal and another process may take
// the Lease 15 s after it; a statement may start only while it ends before
// then.
func TestMutationAllowedEndsBeforeAnotherProcessCanLead(t *testing.T) {
	cfg := LeaderElectionConfig{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	if m, st := cfg.SafetyMargin(), cfg.StatementTimeout(); m != 3*time.Second || st != 2400*time.Millisecond {
		t.Fatalf("margin %s, statement timeout %s; want 3s and 2.4s", m, st)
	}
	t0 := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	if err := MutationAllowed(cfg, time.Time{}, t0); err == nil {
		t.Fatal("a process that never acquired the Lease may mutate")
	}
	// The last moment a statement may start: it ends exactly when another
	// process may first take the Lease.
	last := t0.Add(cfg.LeaseDuration - cfg.StatementTimeout())
	if err := MutationAllowed(cfg, t0, last); err != nil {
		t.Fatalf("refused at the last safe start: %v", err)
	}
	if err := MutationAllowed(cfg, t0, last.Add(time.Millisecond)); err == nil || !strings.Contains(err.Error(), "leadership not assured") {
		t.Fatalf("a statement started %s after the last renewal could outlast the Lease: %v", last.Add(time.Millisecond).Sub(t0), err)
	}
	// Every start the guard allows ends before the Lease can change hands.
	for d := time.Duration(0); d < 20*time.Second; d += 100 * time.Millisecond {
		if MutationAllowed(cfg, t0, t0.Add(d)) == nil && t0.Add(d+cfg.StatementTimeout()).After(t0.Add(cfg.LeaseDuration)) {
			t.Fatalf("allowed at +%s: ends after another process may lead", d)
		}
	}
}

// A release (empty holder) is not a renewal; an acquire and a renewal are.
func TestLeadershipRecordsRenewalsOnly(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	l := NewLeadership(LeaderElectionConfig{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}, func() time.Time { return now })
	if l.MayMutate() == nil {
		t.Fatal("may mutate before any renewal")
	}
	l.Renewed(now)
	if err := l.MayMutate(); err != nil {
		t.Fatal(err)
	}
	now = now.Add(13 * time.Second)
	if l.MayMutate() == nil {
		t.Fatal("may mutate 13 s after the last renewal")
	}
}
