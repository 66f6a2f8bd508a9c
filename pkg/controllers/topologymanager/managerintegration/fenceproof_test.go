package managerintegration

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/protocol"
)

// The fence proof with real sidecars (docs/safety.md, "Proof from the old
// primary's sidecar"). A crash with the sidecar alive is promoted on its
// proof; a proof from a replacement pod, or one observed before it was
// asked for, is refused, and the promotion waits for the old primary to
// have fenced itself. Each is judged by what the simulated servers held:
// the old primary was not writable any more when the new one became so.

// writerWatch records when each site's simulated mysqld was first seen
// fenced (super_read_only=ON, or not running) and first seen writable,
// polling every few milliseconds from the moment it starts.
type writerWatch struct {
	mu       sync.Mutex
	fenced   map[string]time.Time
	writable map[string]time.Time
	stop     chan struct{}
	done     chan struct{}
}

func watchWriters(f *fabric) *writerWatch {
	w := &writerWatch{fenced: map[string]time.Time{}, writable: map[string]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			now := time.Now()
			for name, hs := range f.sites {
				snap := hs.sim.Snapshot()
				off := !hs.sim.Running() || snap.SuperReadOnly
				w.mu.Lock()
				if _, ok := w.fenced[name]; off && !ok {
					w.fenced[name] = now
				}
				if _, ok := w.writable[name]; !off && !ok {
					w.writable[name] = now
				}
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f.e.t.Cleanup(w.halt)
	return w
}

func (w *writerWatch) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// failedOverFrom waits until a site other than from is active and no
// transition is in flight.
func failedOverFrom(t *testing.T, f *fabric, from string) *v1alpha1.MysqlFailoverGroup {
	t.Helper()
	var g *v1alpha1.MysqlFailoverGroup
	eventually(t, 60*time.Second, "failover away from "+from, func() error {
		if g = f.e.get(); g.Status.ActiveSite == from || g.Status.ActiveSite == "" || g.Status.Transition != nil {
			return fmt.Errorf("active %s, transition %+v, conditions %+v", g.Status.ActiveSite, g.Status.Transition, g.Status.Conditions)
		}
		return nil
	})
	return g
}

// readyFabric is a three-site group with real sidecars, iad active, and
// the operator having seen iad writable with its sidecar's instance.
func readyFabric(t *testing.T) *fabric {
	f := newFabric(t, harnessSites, harnessLease, harnessInterval)
	f.startOperator()
	f.e.create(f.e.failoverGroup(harnessSites))
	f.e.waitActive("iad", 1)
	f.e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	f.e.waitContact("iad")
	return f
}

func TestCrashWithTheSidecarAliveIsPromotedOnItsProof(t *testing.T) {
	t.Parallel()
	f := readyFabric(t)
	w := watchWriters(f)
	f.crash("iad")
	g := failedOverFrom(t, f, "iad")
	w.halt()
	if len(f.e.eventsOf(v1alpha1.EventFailoverSourceFenceConfirmed)) == 0 {
		t.Fatalf("no %s Event: the promotion waited out the bound although iad's sidecar saw mysqld exit", v1alpha1.EventFailoverSourceFenceConfirmed)
	}
	to := g.Status.ActiveSite
	if !w.fenced["iad"].Before(w.writable[to]) {
		t.Fatalf("iad was still writable (fenced/stopped first seen %v) when %s became writable (%v)", w.fenced["iad"], to, w.writable[to])
	}
}

// lyingSidecar answers iad's sidecar address: /fence-proof with what
// answer returns, /status as the real sidecar's but with mysqld not
// answering (as a replacement pod's, whose mysqld never started),
// everything else from the real sidecar.
func lyingSidecar(hs *harnessSite, answer func(real protocol.SiteStatus) protocol.FenceProof) {
	real := hs.sc
	h := http.Handler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case protocol.PathSidecarStatus:
			st := real.Status()
			st.MySQL = &protocol.MySQLStatus{Reachable: false, Error: "dial tcp: connection refused", Role: protocol.RoleUnknown}
			protocol.WriteJSON(rw, http.StatusOK, st)
			return
		case protocol.PathFenceProof:
		default:
			real.Handler().ServeHTTP(rw, r)
			return
		}
		var req protocol.FenceProofRequest
		if err := protocol.Decode(r.Body, &req); err != nil || req.Announcement.Transition == nil {
			protocol.WriteError(rw, http.StatusBadRequest, protocol.ErrorBadRequest, "body")
			return
		}
		p := answer(real.Status())
		p.Site, p.TransitionID = hs.name, req.Announcement.Transition.ID
		protocol.WriteJSON(rw, http.StatusOK, p)
	}))
	hs.handler.Store(&h)
}

// refusedProof cuts iad's mysqld off from the operator, and its sidecar
// from the operator and the peers (so nothing confirms it and it fences
// itself by its lease), while a liar answers at its sidecar's address; the
// failover must wait for the self-fence, never act on the lie.
func refusedProof(t *testing.T, answer func(real protocol.SiteStatus) protocol.FenceProof) {
	f := readyFabric(t)
	iad := f.sites["iad"]
	w := watchWriters(f)
	lyingSidecar(iad, answer)
	f.net.Sever("iad", append([]string{operatorName}, f.order...)...)
	iad.sim.Partition(topologymanager.DefaultProgram) // the operator loses iad's mysqld
	t.Cleanup(func() { iad.sim.Heal(); f.net.Heal() })
	g := failedOverFrom(t, f, "iad")
	w.halt()
	if evs := f.e.eventsOf(v1alpha1.EventFailoverSourceFenceConfirmed); len(evs) > 0 {
		t.Fatalf("the lie was acted on: %s", evs[0].Message)
	}
	to := g.Status.ActiveSite
	if !w.fenced["iad"].Before(w.writable[to]) {
		t.Fatalf("iad was still writable (fenced first seen %v) when %s became writable (%v)", w.fenced["iad"], to, w.writable[to])
	}
}

func TestAProofFromAReplacementPodIsRefused(t *testing.T) {
	t.Parallel()
	// A new pod of the site, whose mysqld cannot start while the old pod
	// holds the volume: whatever it says about the server it proves
	// nothing about the old pod. Fenced, which does not name the
	// container: only the pod tells the two apart.
	refusedProof(t, func(real protocol.SiteStatus) protocol.FenceProof {
		inst := real.Process.Instance
		inst.PodUID = "replacement-pod"
		return protocol.FenceProof{Verdict: protocol.ProofFenced, Instance: inst}
	})
}

func TestAStaleProofIsRefused(t *testing.T) {
	t.Parallel()
	// The right instance, but an observation from before the request.
	refusedProof(t, func(real protocol.SiteStatus) protocol.FenceProof {
		return protocol.FenceProof{Verdict: protocol.ProofExited, Instance: real.Process.Instance, AckAgeMillis: 60_000, ObservedAgeMillis: 30_000}
	})
}
