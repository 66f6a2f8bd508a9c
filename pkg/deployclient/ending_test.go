package deployclient_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/deployclient"
	"github.com/shipstream/bloodraven/pkg/leasestore"
)

// TestInterruptedRunReleasesBoth: the runner's own stop request stops the
// command, records the outcome and releases both leases.
func TestInterruptedRunReleasesBoth(t *testing.T) {
	e := newEnv(t)
	tok, _ := e.mintBound()
	e.writeToken(tok)
	s := e.start(runOpts{sleep: time.Minute})
	e.waitLog("command started", 1, 10*time.Second)
	time.Sleep(200 * time.Millisecond)
	s.cancel()
	res := e.wait(s, time.Now().Add(10*time.Second), "interrupted")
	if res.Cause != deployclient.CauseInterrupted || res.ExitCode() != 9 || !res.HoldReleased || !res.MutexReleased {
		t.Fatalf("result %+v", res)
	}
	if rec := e.readRecord(s); rec.TermAt.IsZero() {
		t.Fatalf("the command saw no SIGTERM")
	}
	if got := readOutcome(t, s.outcome); got["cause"] != "Interrupted" {
		t.Fatalf("outcome %v", got)
	}
}

// TestUnrecordedOutcomeKeepsTheMutex: when the outcome cannot be written,
// the hold is released but the migration lease is not (client rule 6).
func TestUnrecordedOutcomeKeepsTheMutex(t *testing.T) {
	e := newEnv(t)
	tok, _ := e.mintBound()
	e.writeToken(tok)
	dir := filepath.Join(e.dir, "outcomes")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	s := e.startWith(runOpts{sleep: time.Second}, filepath.Join(dir, "outcome.json"))
	e.waitLog("command started", 1, 10*time.Second)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	res := e.wait(s, time.Now().Add(10*time.Second), "unrecorded outcome")
	if res.Cause != deployclient.CauseOutcomeNotRecorded || res.ExitCode() != 8 || res.MutexReleased || !res.HoldReleased {
		t.Fatalf("result %+v", res)
	}
	if st := e.lease(leasestore.KindMigration, s.op).State; st != leasestore.StateActive {
		t.Fatalf("migration lease %s, want it kept Active until it expires", st)
	}
	if st := e.lease(leasestore.KindFailoverHold, s.op).State; st != leasestore.StateReleased {
		t.Fatalf("hold %s, want Released", st)
	}
}
