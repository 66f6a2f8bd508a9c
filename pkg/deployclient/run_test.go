package deployclient_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/deployclient"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/testbed/faultproxy"
)

// checkInsideDeadline judges by the command's own exit (cmd.Wait returned
// at Command.FinishedAt, so it was dead by then): it must end before the
// runner's last confirmed deadline and before the operator's stored expiry.
// It logs the margins.
func checkInsideDeadline(t *testing.T, e *env, s *started, res deployclient.Result) {
	t.Helper()
	rec := e.readRecord(s)
	stored := e.lease(leasestore.KindMigration, s.op).ExpiresAt
	dead := res.Command.FinishedAt
	t.Logf("margins: confirmed deadline - exit %s; operator expiresAt - exit %s; deadline - last sign of life %s; SIGTERM at deadline - %s",
		res.Deadline.Sub(dead), stored.Sub(dead), res.Deadline.Sub(rec.LastAlive), sinceOrZero(res.Deadline, rec.TermAt))
	if !dead.Before(res.Deadline) {
		t.Errorf("the command ended at %s, not before the confirmed deadline %s", dead, res.Deadline)
	}
	if !dead.Before(stored) {
		t.Errorf("the command ended at %s, not before the operator's expiresAt %s", dead, stored)
	}
	// 500 ms of slack for the signal's delivery and the reaping on a busy
	// machine; the SIGKILL itself is due at deadline - margin.
	if m := res.Deadline.Sub(dead); m < testPolicy.KillMargin-500*time.Millisecond {
		t.Errorf("the command ended only %s before the deadline; the kill margin is %s", m, testPolicy.KillMargin)
	}
	if m := stored.Sub(dead); m < testPolicy.KillMargin-500*time.Millisecond {
		t.Errorf("the command ended only %s before the operator's expiresAt; the kill margin is %s", m, testPolicy.KillMargin)
	}
}

func sinceOrZero(deadline, t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return deadline.Sub(t)
}

func readOutcome(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no outcome file: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// indexOf is the position of the first client record with msg and kind.
func indexOf(recs []map[string]any, msg, kind string) int {
	for i, r := range recs {
		if r["msg"] == msg && (kind == "" || r["kind"] == kind) {
			return i
		}
	}
	return -1
}

// TestMigrationThatFinishes: two renewal rounds, the command's identity in
// its environment, its own outcome file kept, the hold released, the mutex
// released after the outcome was recorded.
func TestMigrationThatFinishes(t *testing.T) {
	e := newEnv(t)
	tok, _ := e.mintBound()
	e.writeToken(tok)
	s := e.start(runOpts{sleep: 9 * time.Second, writeOutcome: true})
	res := e.wait(s, time.Now().Add(20*time.Second), "happy path")
	if res.Cause != deployclient.CauseSuccess || res.ExitCode() != 0 {
		t.Fatalf("cause %s (exit %d)", res.Cause, res.ExitCode())
	}
	if !res.HoldReleased || !res.MutexReleased || !res.OutcomeRecorded {
		t.Fatalf("result %+v", res)
	}
	rec := e.readRecord(s)
	want := map[string]string{
		deployclient.EnvGroup: "orders", deployclient.EnvNamespace: e.ns, deployclient.EnvOperationID: s.op,
		deployclient.EnvInstance: "orders-app", deployclient.EnvKind: "migration",
		deployclient.EnvTopologyGeneration: "3", deployclient.EnvTTLSeconds: "12", deployclient.EnvOutcomeFile: s.outcome,
	}
	for k, v := range want {
		if rec.Env[k] != v {
			t.Errorf("command env %s=%q, want %q", k, rec.Env[k], v)
		}
	}
	if rec.Env[deployclient.EnvExpiresAt] == "" {
		t.Errorf("command env lacks %s", deployclient.EnvExpiresAt)
	}
	if got := readOutcome(t, s.outcome); got["writtenBy"] != "command" {
		t.Fatalf("the command's outcome file was replaced: %v", got)
	}
	if n := len(e.clientRecords("lease renewed")); n < 4 {
		t.Fatalf("%d renewals, want two rounds of both leases", n)
	}
	recs := e.clientRecords("")
	if o, m := indexOf(recs, "outcome recorded", ""), indexOf(recs, "lease released", "migration"); o < 0 || m < o {
		t.Fatalf("mutex released at record %d, outcome recorded at %d", m, o)
	}
	if h, o := indexOf(recs, "lease released", "failover-hold"), indexOf(recs, "outcome recorded", ""); h < 0 || h > o {
		t.Fatalf("hold released at record %d, outcome recorded at %d", h, o)
	}
	for _, k := range []leasestore.Kind{leasestore.KindMigration, leasestore.KindFailoverHold} {
		if st := e.lease(k, s.op).State; st != leasestore.StateReleased {
			t.Errorf("%s state %s after the run", k, st)
		}
	}
}

// TestTopologyChangeStopsTheCommand: a generation change mid-run answers
// the next renewal 409 revoked; the command is stopped within that renewal
// period (before the next renewal deadline) and the exit code says
// TopologyChanged.
func TestTopologyChangeStopsTheCommand(t *testing.T) {
	e := newEnv(t)
	tok, _ := e.mintBound()
	e.writeToken(tok)
	s := e.start(runOpts{sleep: time.Minute})
	e.waitLog("lease renewed", 2, 10*time.Second)
	changed := time.Now()
	e.editStatus(func(st *v1alpha1.MysqlFailoverGroupStatus) { st.TopologyGeneration = 4; st.ActiveSite = "pdx" })
	bound := changed.Add(testPolicy.RenewEvery() + testPolicy.RequestTimeout + testPolicy.TermGrace)
	res := e.wait(s, bound.Add(5*time.Second), "topology change")
	if res.Cause != deployclient.CauseTopologyChanged || res.ExitCode() != 4 {
		t.Fatalf("cause %s (exit %d)", res.Cause, res.ExitCode())
	}
	rec := e.readRecord(s)
	if rec.TermAt.IsZero() {
		t.Fatalf("the command saw no SIGTERM")
	}
	dead := res.Command.FinishedAt
	t.Logf("stopped %s after the generation change; renewal period %s; confirmed deadline - exit %s",
		dead.Sub(changed), testPolicy.RenewEvery(), res.Deadline.Sub(dead))
	if dead.After(bound) {
		t.Errorf("the command ended %s after the change, later than one renewal period + request timeout + grace (%s)", dead.Sub(changed), bound.Sub(changed))
	}
	checkInsideDeadline(t, e, s, res)
	if got := readOutcome(t, s.outcome); got["cause"] != "TopologyChanged" {
		t.Fatalf("outcome %v", got)
	}
	if !res.HoldReleased {
		t.Errorf("the hold was not released")
	}
}

// TestOperatorUnreachableStopsAtTheDeadline: the link to the operator is
// blackholed after two renewal rounds, longer than the TTL. The command
// ignores SIGTERM, so only the SIGKILL at deadline - margin ends it: it
// must be dead before the confirmed deadline, never later.
func TestOperatorUnreachableStopsAtTheDeadline(t *testing.T) {
	e := newEnv(t)
	tok, _ := e.mintBound()
	e.writeToken(tok)
	p, err := faultproxy.New("operator", "127.0.0.1:0", e.server.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	s := e.start(runOpts{sleep: time.Minute, ignoreTerm: true, baseURL: "https://" + p.Addr()})
	e.waitLog("lease renewed", 2, 10*time.Second)
	cut := time.Now()
	p.Set(faultproxy.Blackhole)
	res := e.wait(s, cut.Add(testPolicy.TTL+5*time.Second), "operator unreachable")
	if res.Cause != deployclient.CauseDeadlineReached || res.ExitCode() != 7 {
		t.Fatalf("cause %s (exit %d)", res.Cause, res.ExitCode())
	}
	if res.Command.Signal != "killed" {
		t.Fatalf("the command ended by %q, want SIGKILL", res.Command.Signal)
	}
	if rec := e.readRecord(s); rec.TermAt.IsZero() {
		t.Fatalf("no SIGTERM preceded the SIGKILL")
	}
	t.Logf("cut %s before the command ended", res.Command.FinishedAt.Sub(cut))
	checkInsideDeadline(t, e, s, res)
	if got := readOutcome(t, s.outcome); got["cause"] != "DeadlineReached" {
		t.Fatalf("outcome %v", got)
	}
}

// TestRotatedTokenFile: the token file is replaced mid-run and the old
// token invalidated; renewals go on with the new one and the run succeeds.
func TestRotatedTokenFile(t *testing.T) {
	e := newEnv(t)
	oldTok, oldSecret := e.mintBound()
	e.writeToken(oldTok)
	s := e.start(runOpts{sleep: 26 * time.Second})
	e.waitLog("lease renewed", 2, 10*time.Second)
	newTok, _ := e.mintBound()
	e.writeToken(newTok)
	rotated := time.Now()
	if err := e.kube.CoreV1().Secrets(e.appNS).Delete(e.ctx, oldSecret, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The old token dies once the API server's own authentication cache
	// (10 s) and the handler's (100 ms) let go of it.
	deadline := time.Now().Add(15 * time.Second)
	for e.status(oldTok) != 401 {
		if time.Now().After(deadline) {
			t.Fatalf("the old token still works after its Secret was deleted")
		}
		time.Sleep(50 * time.Millisecond)
	}
	died := time.Now()
	renewedBefore := len(e.clientRecords("lease renewed"))
	res := e.wait(s, time.Now().Add(30*time.Second), "rotated token")
	if res.Cause != deployclient.CauseSuccess || !res.MutexReleased || !res.HoldReleased {
		t.Fatalf("result %+v", res)
	}
	n := len(e.clientRecords("lease renewed")) - renewedBefore
	t.Logf("the old token was refused %s after rotation; %d renewals succeeded after that with the rotated file", time.Since(rotated).Round(time.Millisecond)-time.Since(died).Round(time.Millisecond), n)
	if n < 2 {
		t.Fatalf("%d renewals after the old token died, want a full round", n)
	}
	if n := len(e.clientRecords("renewal not confirmed")); n != 0 {
		t.Fatalf("%d unconfirmed renewals", n)
	}
}

// TestUnstableNeverExtendsTheDeadline: an unconfirmed topology transition
// makes every renewal answer 423. The deadline stays at the last 200's send
// time + ttl, so the command is stopped before it, and before the operator's
// stored expiry (which a 423 never moves).
func TestUnstableNeverExtendsTheDeadline(t *testing.T) {
	e := newEnv(t)
	tok, _ := e.mintBound()
	e.writeToken(tok)
	s := e.start(runOpts{sleep: time.Minute})
	e.waitLog("lease renewed", 2, 10*time.Second)
	e.editStatus(func(st *v1alpha1.MysqlFailoverGroupStatus) {
		st.Transition = &v1alpha1.Transition{ID: "t-1", Kind: v1alpha1.TransitionAutomatic, SourceSite: "iad", TargetSite: "pdx",
			TopologyGeneration: 4, Step: v1alpha1.StepFencingSource, StartTime: metav1.Now()}
	})
	set := time.Now()
	stored := e.lease(leasestore.KindMigration, s.op).ExpiresAt
	res := e.wait(s, stored.Add(3*time.Second), "423 transition")
	t.Logf("stopped %s after the transition appeared", res.Command.FinishedAt.Sub(set))
	// Judge the time first: a client that extended on 423 also reports an
	// extended deadline, but the operator's stored expiry did not move.
	checkInsideDeadline(t, e, s, res)
	if res.Cause != deployclient.CauseDeadlineReached || res.ExitCode() != 7 {
		t.Fatalf("cause %s (exit %d)", res.Cause, res.ExitCode())
	}
	if n := len(e.clientRecords("renewal not confirmed")); n == 0 {
		t.Fatalf("no 423 renewal was seen")
	}
	if !res.HoldReleased {
		t.Errorf("the hold was not released") // a release is served during a transition
	}
}
