package managerintegration

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/operator"
	"github.com/shipstream/bloodraven/pkg/topology"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testElection is the leader-election timing of these tests: a margin of
// 4 s − 2 s − 0.5 s = 1.5 s, statements bounded by 1.2 s.
var testElection = operator.LeaderElectionConfig{LeaseDuration: 4 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}

// leaseHolder stands for one process's side of the election: it renews
// until deposed, then its renewals stop (another process takes the Lease
// once LeaseDuration has passed since the last one).
type leaseHolder struct {
	mu       sync.Mutex
	deposed  bool
	lastSent time.Time
}

func (l *leaseHolder) depose() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deposed, l.lastSent = true, time.Now()
	return l.lastSent
}

// mayMutate is what operator.Process.MayMutate answers for it.
func (l *leaseHolder) mayMutate() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.deposed {
		l.lastSent = time.Now() // renewing every moment
	}
	return operator.MutationAllowed(testElection, l.lastSent, time.Now())
}

// unreachableFor is a copy of the env's address map in which site's mysqld
// is a port nothing listens on: that process cannot reach it.
func (e *env) unreachableFor(site string) *devsitemap.Map {
	e.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	var entries []devsitemap.Entry
	for _, en := range e.addrs.Entries() {
		if en.Site.Site == site {
			en.MySQL = dead
		}
		entries = append(entries, en)
	}
	m, err := devsitemap.New(entries...)
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// Issue 21, hole 3: a leader decides to make the active site iad writable
// again (a person set super_read_only=ON on it) and stalls before sending
// it; its renewals stop and a second operator instance takes the Lease.
// The second one cannot reach iad, fails over to pdx (override) and
// promotes it. When the first one's pending unfence finally comes due, it
// must not run: judged by iad's super_read_only on the simulated server,
// with pdx writable.
func TestDeposedLeadersPendingUnfenceDoesNotRun(t *testing.T) {
	sites := threeSites[:2]
	e := newEnv(t, sites)
	t.Logf("%s: start", stamp(time.Now()))
	lease := &leaseHolder{}
	var armed atomic.Bool
	stalled, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	first := e.startOperator(withFailover, func(o *topologymanager.Options) {
		o.StatementTimeout = testElection.StatementTimeout()
		o.Leadership = lease.mayMutate
		o.BeforeMutation = func(a topology.Action) {
			if armed.Load() && a.Kind == topology.MakeWritable && a.Site == "iad" {
				once.Do(func() { close(stalled) })
				select {
				case <-release:
				case <-time.After(2 * waitFor):
				}
			}
		}
	})
	defer first.stop()
	e.create(e.failoverGroup(sites))
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.waitContact("iad")
	t.Logf("%s: group ready", stamp(time.Now()))
	armed.Store(true)
	e.exec("iad", "SET GLOBAL super_read_only = ON")
	select {
	case <-stalled:
	case <-time.After(waitFor):
		t.Fatal("the first leader never decided to make iad writable again")
	}
	deposedAt := lease.depose()
	t.Logf("%s: the first leader stalled before making iad writable; deposed", stamp(deposedAt))

	// The Lease is taken once it expired; the second instance cannot reach
	// iad and fails over to pdx.
	time.Sleep(time.Until(deposedAt.Add(testElection.LeaseDuration)))
	unreach := e.unreachableFor("iad")
	e.annotateOverride("pdx")
	second := e.startOperator(withFailover, func(o *topologymanager.Options) {
		o.Resolver = unreach
		o.StatementTimeout = testElection.StatementTimeout()
	})
	e.waitActive("pdx", 2)
	t.Logf("%s: the second leader published pdx", stamp(time.Now()))
	second.stop() // nothing fences iad again but its own state

	if s := e.sites["iad"].Snapshot(); !s.SuperReadOnly {
		t.Fatalf("iad writable before the deposed leader resumed: %s", s)
	}
	close(release)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		iad, pdx := e.sites["iad"].Snapshot(), e.sites["pdx"].Snapshot()
		if !iad.SuperReadOnly {
			t.Fatalf("the deposed leader's late statement unfenced iad while pdx is the active site (pdx %s): two writable sites", pdx)
		}
		if pdx.SuperReadOnly {
			t.Fatalf("pdx fenced: %s", pdx)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if g := e.get(); g.Status.ActiveSite != "pdx" || g.Status.TopologyGeneration != 2 {
		t.Fatalf("the deposed leader changed the status: active %q generation %d", g.Status.ActiveSite, g.Status.TopologyGeneration)
	}
	// The deposed process exits, as client-go's OnStoppedLeading makes it;
	// a leader runs again (it releases the group's finalizer at cleanup).
	first.stop()
	e.startOperator(withFailover)
}
