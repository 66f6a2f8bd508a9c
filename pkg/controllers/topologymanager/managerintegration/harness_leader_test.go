package managerintegration

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// The leader faults of issue 21 in the real-level harness: two operator
// instances during one failover. The checks are the harness's own (at most
// one site takes writes, by the simulated servers and the clients pinned to
// every site; invariant 3 at each promotion).
const (
	// The leader stalls mid-transition (before its next MySQL mutation),
	// its renewals stop, a second instance takes the Lease once it expired
	// and carries on; then the first one's stalled pass resumes (its guard
	// must refuse what it had pending) and the process exits.
	faultLeaderDeposed = "leader-deposed-mid-transition"
	// The instance that takes over while the old primary's self-fence
	// deadline runs has a clock up to the assumed skew
	// (leasestore.DefaultMaxClockSkew) ahead of the one that wrote it.
	faultClockSkew = "clock-skew-between-operator-instances"
)

// injectLeaderFault runs one of them; it returns a note for the log.
func (h *harnessRun) injectLeaderFault(kind, a string, r *rand.Rand) string {
	f := h.f
	switch kind {
	case faultLeaderDeposed:
		// The current process gets an election of its own first (a leader
		// change in itself), so that it can be deposed.
		lease := &leaseHolder{}
		var stalled atomic.Bool
		release := make(chan struct{})
		f.stopOperator()
		f.startOperator(func(o *topologymanager.Options) {
			o.StatementTimeout = testElection.StatementTimeout()
			o.Leadership = lease.mayMutate
			o.BeforeMutation = func(topology.Action) {
				if stalled.Load() {
					<-release
				}
			}
		})
		old := f.op
		// It must have reached the active site and its sidecar before the
		// cut (an operator process that never did refuses to fail over).
		time.Sleep(2 * time.Second)
		f.isolate(a, r.IntN(2) == 0)
		note := "no transition reached"
		if tr := h.waitStep("", waitFor); tr != nil {
			note = "deposed at " + string(tr.Step)
		}
		stalled.Store(true)
		deposedAt := lease.depose()
		time.Sleep(time.Until(deposedAt.Add(testElection.LeaseDuration)))
		f.startOperator()
		resume := time.Duration(1000+r.IntN(6000)) * time.Millisecond
		time.Sleep(resume)
		close(release)
		time.Sleep(time.Second)
		old.kill()
		old.stop()
		time.Sleep(time.Duration(8000+r.IntN(4000)) * time.Millisecond)
		return fmt.Sprintf("%s; the new leader from %s, the stalled pass resumed %s later", note, testElection.LeaseDuration, resume)
	case faultClockSkew:
		// Half of the time a long write holds the isolated primary's fence
		// off, so its sidecar needs most of its budget: then a wait short
		// by the skew meets a primary still taking writes.
		var x *heldTxn
		held := r.IntN(2) == 0
		if held {
			f.sites[a].sim.SetRollbackTime(time.Duration(3000+r.IntN(5000)) * time.Millisecond)
			if x = h.openTxn(a); x != nil {
				x.longWrite(30 * time.Second)
			}
		}
		f.isolate(a, true)
		defer func() {
			if held {
				h.endTxn(x, false)
			}
		}()
		tr := h.waitStep(v1alpha1.StepAwaitingSelfFence, 2*waitFor)
		skew := time.Duration(2000+r.IntN(int(leasestore.DefaultMaxClockSkew/time.Millisecond)-2000)) * time.Millisecond
		f.stopOperator()
		f.startOperator(func(o *topologymanager.Options) {
			o.Now = func() time.Time { return time.Now().Add(skew) }
		})
		// The skewed instance carries the failover to its end (or gives
		// up), then a clock that agrees again for the faults that follow.
		h.waitPublished(a, 30*time.Second)
		time.Sleep(time.Duration(r.IntN(2000)) * time.Millisecond)
		f.stopOperator()
		f.startOperator()
		if tr == nil {
			return fmt.Sprintf("no self-fence wait reached; the new leader %s ahead; fence held off %v", skew, held)
		}
		return fmt.Sprintf("the new leader %s ahead during the self-fence wait; fence held off by a long write %v", skew, held)
	}
	return ""
}
