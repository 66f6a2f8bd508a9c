//go:build e2e

package scenarios

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/e2e/framework"
)

// deployRun is one bloodraven-deploy process against the playground.
type deployRun struct {
	cmd       *exec.Cmd
	tokenFile string
	out       bytes.Buffer
	mu        sync.Mutex
	done      chan struct{}
	code      int
	waited    error
}

// startDeployClient runs bin/bloodraven-deploy with a fresh ServiceAccount
// token file, as a deploy job would, around command.
func startDeployClient(t *testing.T, ttl time.Duration, command ...string) *deployRun {
	t.Helper()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--url", pg.DeployURL, "--ca-file", pg.CAFile, "--token-file", tokenFile,
		"--group", pg.Group, "--instance", pg.Database, "--ttl", ttl.String(),
		"--outcome-file", filepath.Join(dir, "outcome.json"), "--"}
	r := &deployRun{done: make(chan struct{}), tokenFile: tokenFile}
	r.cmd = exec.Command(filepath.Join(framework.BinDir(), "bloodraven-deploy"), append(args, command...)...)
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		err := r.cmd.Wait()
		r.mu.Lock()
		defer r.mu.Unlock()
		r.waited, r.code = err, r.cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill() // this test's own child, by PID
			<-r.done
		}
		if t.Failed() {
			t.Logf("bloodraven-deploy output:\n%s", r.out.String())
		}
	})
	return r
}

// wait returns the client's exit code once it ended, failing after timeout.
func (r *deployRun) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(timeout):
		t.Fatalf("bloodraven-deploy still running after %s:\n%s", timeout, r.out.String())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var exit *exec.ExitError
	if r.waited != nil && !errors.As(r.waited, &exit) {
		t.Fatalf("bloodraven-deploy: %v", r.waited)
	}
	return r.code
}

// records are the client's JSON log lines with the given message.
func (r *deployRun) records(msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.out.String()))
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// recordTime reads a record's time (or a timestamp field of it).
func recordTime(t *testing.T, rec map[string]any, key string) time.Time {
	t.Helper()
	s, _ := rec[key].(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("record %v: %s is not a time: %v", rec, key, err)
	}
	return at
}

// lastConfirmedExpiry is the earliest, over both leases, of the last
// expiry the operator stored and confirmed to the client: past it the
// command has no authority, by the operator's own clock.
func (r *deployRun) lastConfirmedExpiry(t *testing.T) time.Time {
	t.Helper()
	last := map[string]time.Time{}
	for _, msg := range []string{"lease granted", "lease renewed"} {
		for _, rec := range r.records(msg) {
			kind, _ := rec["kind"].(string)
			if at := recordTime(t, rec, "expiresAt"); at.After(last[kind]) {
				last[kind] = at
			}
		}
	}
	if len(last) != 2 {
		t.Fatalf("expected grants of both leases, got %v:\n%s", last, r.out.String())
	}
	var earliest time.Time
	for _, at := range last {
		if earliest.IsZero() || at.Before(earliest) {
			earliest = at
		}
	}
	return earliest
}

// A migration under the client runs to its end: exit 0, the outcome is
// recorded, and both leases are released (a second run gets the mutex at
// once).
func TestDeployClientRunsAMigrationToTheEnd(t *testing.T) {
	requireReady(t)
	for i := range 2 {
		r := startDeployClient(t, 24*time.Second, "sh", "-c", "sleep 1")
		if code := r.wait(t, time.Minute); code != 0 {
			t.Fatalf("run %d: exit %d, want 0:\n%s", i, code, r.out.String())
		}
		if len(r.records("outcome recorded")) != 1 || len(r.records("lease released")) != 2 {
			t.Fatalf("run %d: want one outcome recorded and two releases:\n%s", i, r.out.String())
		}
	}
}

// checkStoppedInTime: the client ended for lost authority or a deadline,
// and its command was gone before the operator's last confirmed expiry.
func (r *deployRun) checkStoppedInTime(t *testing.T, code int) {
	t.Helper()
	const topologyChanged, deadlineReached = 4, 7
	if code != topologyChanged && code != deadlineReached {
		t.Fatalf("exit %d, want %d (TopologyChanged) or %d (DeadlineReached):\n%s", code, topologyChanged, deadlineReached, r.out.String())
	}
	exited := r.records("command exited")
	if len(exited) != 1 {
		t.Fatalf("want one command exit record:\n%s", r.out.String())
	}
	end, expiry := recordTime(t, exited[0], "time"), r.lastConfirmedExpiry(t)
	if !end.Before(expiry) {
		t.Fatalf("the command ended at %s, after the last confirmed expiry %s", end, expiry)
	}
	t.Logf("bloodraven-deploy exit %d; the command ended %s before the last confirmed expiry",
		code, expiry.Sub(end).Round(time.Millisecond))
}

// The operator is killed and started again in the middle of a migration,
// within the lease's TTL, and the token file is replaced by a fresh token
// meanwhile: renewals resume with the new token and the migration runs to
// its end.
func TestDeployClientSurvivesAnOperatorRestartAndATokenRotation(t *testing.T) {
	requireReady(t)
	r := startDeployClient(t, 45*time.Second, "sleep", "25")
	eventually(t, 30*time.Second, func() string {
		if len(r.records("command started")) == 0 {
			return "the migration command has not started"
		}
		return ""
	})
	if err := os.WriteFile(r.tokenFile+".new", []byte(token(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(r.tokenFile+".new", r.tokenFile); err != nil { // atomic, as the kubelet swaps it
		t.Fatal(err)
	}
	if err := pg.KillOperator(); err != nil {
		t.Fatal(err)
	}
	if err := pg.StartOperator(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d, want 0 (the restart and the rotation stayed within the TTL):\n%s", code, r.out.String())
	}
	renewedAfterRestart := 0
	for _, rec := range r.records("lease renewed") {
		if recordTime(t, rec, "time").After(recordTime(t, r.records("command started")[0], "time").Add(5 * time.Second)) {
			renewedAfterRestart++
		}
	}
	if renewedAfterRestart == 0 {
		t.Fatalf("no renewal confirmed after the restart:\n%s", r.out.String())
	}
	waitLeading(t)
}

// The operator stays away longer than the TTL: no renewal is confirmed, so
// the client stops the command before the last confirmed expiry and exits
// DeadlineReached.
func TestDeployClientStopsTheCommandWhenTheOperatorStaysAway(t *testing.T) {
	requireReady(t)
	r := startDeployClient(t, 24*time.Second, "sleep", "600")
	eventually(t, 30*time.Second, func() string {
		if len(r.records("command started")) == 0 {
			return "the migration command has not started"
		}
		return ""
	})
	if err := pg.KillOperator(); err != nil {
		t.Fatal(err)
	}
	code := r.wait(t, time.Minute)
	if err := pg.StartOperator(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitLeading(t)
	r.checkStoppedInTime(t, code)
	requireReady(t)
	// The client could not release its migration lease while the operator
	// was gone, so the group's migration mutex stays taken until the lease
	// expires plus the deploy API's 5 s clock-skew grace: wait that out, so
	// the next scenario's migration is not refused with lease_held.
	time.Sleep(time.Until(r.lastConfirmedExpiry(t).Add(6 * time.Second)))
}

// waitLeading waits until the restarted operator holds the Lease and serves
// /deploy/v1 (before that it answers 503 not_leader), so the next scenario
// starts on a leading operator.
func waitLeading(t *testing.T) {
	t.Helper()
	eventually(t, time.Minute, func() string {
		if r := call(t, token(t), http.MethodGet, "/groups/"+pg.Group, nil); r.code != http.StatusOK {
			return fmt.Sprintf("GET group: %d %s", r.code, r.raw)
		}
		return ""
	})
}
