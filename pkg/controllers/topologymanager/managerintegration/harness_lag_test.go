package managerintegration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// The faults of issue 20 in the real-level harness: a candidate in
// trouble when the active site is lost (an errant transaction, an applier
// error, a relay log lost during the catch-up) and a leader change in the
// middle of the failover. The checks are the harness's own, by what the
// simulated servers hold and the clients saw acknowledged (invariant 3 at
// each promotion, acknowledged writes missing from the final primary
// reported as lost).
const (
	faultErrantCandidate = "errant-transaction-on-a-candidate-then-active-lost"
	faultApplierError    = "applier-error-on-a-candidate-then-active-lost"
	faultRelayLogLoss    = "candidate-loses-its-relay-log-during-catch-up"
	faultLeaderChange    = "leader-change-during-the-failover"
)

// injectCandidateFault runs one of them; it returns a note for the log.
func (h *harnessRun) injectCandidateFault(kind, a string, followers []string, r *rand.Rand) string {
	f := h.f
	x := followers[r.IntN(len(followers))]
	note := ""
	switch kind {
	case faultErrantCandidate:
		set := f.sites[x].sim.InjectErrantTransactions(1)
		h.mu.Lock()
		h.errant = h.errant.Union(set)
		h.mu.Unlock()
		note = fmt.Sprintf("%s commits %s of its own", x, set.OneLine())
		f.crash(a)
	case faultApplierError:
		if err := f.sites[x].sim.StopApplier(1062, "Duplicate entry '1' for key 'PRIMARY' (injected)"); err != nil {
			h.t.Fatalf("seed %d: applier error on %s: %v", h.seed, x, err)
		}
		note = x + "'s applier stopped on an error"
		time.Sleep(time.Duration(300+r.IntN(700)) * time.Millisecond) // it receives and does not apply
		f.crash(a)
	case faultRelayLogLoss:
		x = followers[0] // the one a tie promotes
		if err := f.sites[x].sim.InjectApplyLag(time.Minute); err != nil {
			h.t.Fatalf("seed %d: lag on %s: %v", h.seed, x, err)
		}
		time.Sleep(time.Duration(500+r.IntN(1000)) * time.Millisecond)
		f.crash(a)
		tr := h.waitStep(v1alpha1.StepCatchingUp, 3*waitFor)
		note = "no CatchingUp reached"
		if tr != nil {
			lost, err := f.sites[tr.TargetSite].sim.DropRelayLog()
			note = fmt.Sprintf("%s lost %s from its relay log at CatchingUp (%v)", tr.TargetSite, lost.OneLine(), err)
		}
		_ = f.sites[x].sim.InjectApplyLag(0)
	case faultLeaderChange:
		f.crash(a)
		if tr := h.waitStep("", 2*waitFor); tr != nil {
			note = "the operator restarts at " + string(tr.Step)
		}
		f.stopOperator()
		time.Sleep(time.Duration(r.IntN(2000)) * time.Millisecond)
		f.startOperator()
	}
	// Past the promotion (the intent about 1 s after the crash, then the
	// 6.25 s self-fence wait): these faults are about the choice and the
	// catch-up, not a primary that comes back in time.
	time.Sleep(time.Duration(12000+r.IntN(4000)) * time.Millisecond)
	if kind == faultApplierError {
		// A person fixes the applier of a site that stayed a follower: the
		// operator starts a failover candidate's applier, never a
		// follower's that stopped on an error (docs/topology.md).
		if snap := f.sites[x].sim.Snapshot(); snap.Running && !snap.SQLRunning {
			if _, err := adminDB(h.t, f.sites[x].sim).Exec("START REPLICA SQL_THREAD"); err != nil {
				h.t.Logf("seed %d: START REPLICA SQL_THREAD on %s: %v", h.seed, x, err)
			}
		}
	}
	return note
}

// waitStep waits for an automatic failover at step (any step when "").
func (h *harnessRun) waitStep(step v1alpha1.TransitionStep, limit time.Duration) *v1alpha1.Transition {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if tr := h.f.e.get().Status.Transition; tr != nil && tr.Kind == v1alpha1.TransitionAutomatic && (step == "" || tr.Step == step) {
			return tr
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// clearCatchUpHold: a person who fixed the candidate clears the hold a
// timed-out catch-up placed, so later faults fail over again.
func (h *harnessRun) clearCatchUpHold() {
	hd := h.f.e.get().Status.AutomaticFailoverHold
	if hd == nil || hd.Reason != topology.HoldReasonCatchUpTimedOut {
		return
	}
	h.t.Logf("seed %d: catch-up timed out (%s); clearing the hold", h.seed, hd.Message)
	h.mu.Lock()
	h.catchUpTimeouts++
	h.mu.Unlock()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, topology.AnnotationClearAutomaticFailoverHold, groupName)
	if _, err := h.f.e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(h.f.e.ns).Patch(context.Background(), groupName, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		h.t.Fatalf("seed %d: clear the hold: %v", h.seed, err)
	}
}
