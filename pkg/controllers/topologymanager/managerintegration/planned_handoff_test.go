package managerintegration

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
	"github.com/shipstream/bloodraven/pkg/testbed/writeload"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// activeRouter stands for the group's published endpoint (the Service or
// DNS name applications use): each new connection goes to the site
// status.activeSite names at that moment. Connections already open stay
// where they are, as TCP connections through a Service do; the operator's
// session eviction on the former primary is what moves them.
type activeRouter struct {
	e  *env
	ln net.Listener

	mu     sync.Mutex
	active string
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newActiveRouter(t testing.TB, e *env) *activeRouter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &activeRouter{e: e, ln: ln, active: e.get().Status.ActiveSite}
	ctx, cancel := context.WithCancel(context.Background())
	r.wg.Go(func() { r.follow(ctx) })
	r.wg.Go(r.accept)
	t.Cleanup(func() {
		cancel()
		_ = ln.Close()
		r.mu.Lock()
		for _, c := range r.conns {
			_ = c.Close()
		}
		r.mu.Unlock()
		r.wg.Wait()
	})
	return r
}

func (r *activeRouter) addr() string { return r.ln.Addr().String() }

// follow tracks status.activeSite as a DNS record or Service would.
func (r *activeRouter) follow(ctx context.Context) {
	for ctx.Err() == nil {
		g, err := r.e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(r.e.ns).Get(ctx, groupName, metav1.GetOptions{})
		if err == nil && g.Status.ActiveSite != "" {
			r.mu.Lock()
			r.active = g.Status.ActiveSite
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (r *activeRouter) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		target := r.e.sites[r.active].Addr()
		r.mu.Unlock()
		s, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, c, s)
		r.mu.Unlock()
		r.wg.Go(func() { pipe(c, s) })
		r.wg.Go(func() { pipe(s, c) })
	}
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

// load is a write-load client writing through the router with an account
// that is neither the operator's nor the replication one, so the handoff's
// session eviction applies to it as to an application.
type load struct {
	l      *writeload.Loader
	cancel context.CancelFunc
	done   chan struct{}
}

func startLoad(t *testing.T, addr string) *load {
	l, err := writeload.New(writeload.Config{Endpoint: mysql.Options{Addr: addr, User: simtest.NativeUser, Password: simtest.NativePass,
		DialTimeout: time.Second, StatementTimeout: 2 * time.Second}, Interval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &load{l: l, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		if err := l.Run(ctx); err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
			t.Errorf("write load: %v", err)
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *load) stop() {
	w.cancel()
	<-w.done
	_ = w.l.Close()
}

// ackedMoreThan waits until the load has n more acknowledged writes than it
// had when called.
func (w *load) ackedMoreThan(t *testing.T, n uint64) gtid.Set {
	t.Helper()
	base := w.l.Acknowledged().Count()
	var acked gtid.Set
	eventually(t, waitFor, "the write load makes progress", func() error {
		acked = w.l.Acknowledged()
		if acked.Count() < base+n {
			return errors.New(w.l.Stats().LastError)
		}
		return nil
	})
	return acked
}

// handoffEnv: three sites with iad active and healthy, an operator with
// automatic failover on, and the write load running through the router.
func handoffEnv(t *testing.T, tweak ...func(*topologymanager.Options)) (*env, *operatorRun, *load) {
	t.Parallel()
	e := newEnv(t, threeSites)
	op := e.startOperator(append([]func(*topologymanager.Options){withFailover}, tweak...)...)
	e.create(e.failoverGroup(threeSites))
	e.waitActive("iad", 1)
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	w := startLoad(t, newActiveRouter(t, e).addr())
	w.ackedMoreThan(t, 20)
	return e, op, w
}

func (e *env) waitClaim(what string, ok func(*v1alpha1.PlannedFailoverStatus) bool) *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	var g *v1alpha1.MysqlFailoverGroup
	eventually(e.t, waitFor, what, func() error {
		g = e.get()
		if pf := g.Status.PlannedFailover; pf == nil || !ok(pf) {
			return errors.New(describeClaim(g.Status.PlannedFailover))
		}
		return nil
	})
	return g
}

func describeClaim(pf *v1alpha1.PlannedFailoverStatus) string {
	if pf == nil {
		return "no claim"
	}
	s := "phase " + string(pf.Phase)
	if pf.Admission != nil {
		s += " admission " + pf.Admission.Message
	}
	if pf.Result != nil {
		s += " result " + string(pf.Result.Outcome) + "/" + string(pf.Result.Reason) + ": " + pf.Result.Message
	}
	return s
}

func ended(pf *v1alpha1.PlannedFailoverStatus) bool { return pf.Phase.IsTerminal() }

// Under a continuous write load, a planned failover hands the primary role
// to pdx without losing any acknowledged write, the client goes on writing
// on pdx, and the run is counted, logged through Events and recorded.
func TestPlannedFailoverUnderWriteLoadLosesNothing(t *testing.T) {
	e, op, w := handoffEnv(t)
	e.annotatePlanned("pdx:maxLagWait=30s")
	g := e.waitClaim("the planned failover ended", ended)
	pf := g.Status.PlannedFailover
	if pf.Result.Outcome != topology.PlannedOutcomeSucceeded || pf.Result.Reason != topology.PlannedReasonCompleted || pf.Result.TransactionsLost == nil || *pf.Result.TransactionsLost != 0 {
		t.Fatalf("claim ended %s", describeClaim(pf))
	}
	if g.Status.ActiveSite != "pdx" || g.Status.TopologyGeneration != 2 || g.Status.Transition != nil {
		t.Fatalf("active %s generation %d transition %+v", g.Status.ActiveSite, g.Status.TopologyGeneration, g.Status.Transition)
	}
	if lf := g.Status.LastFailover; lf == nil || lf.Kind != v1alpha1.TransitionPlanned || lf.Source != "iad" || lf.PossiblyLostGTID != "" {
		t.Fatalf("lastFailover %+v", g.Status.LastFailover)
	}
	before := w.l.Acknowledged()
	after := w.ackedMoreThan(t, 20) // the client writes on the new primary
	w.stop()
	final := e.sites["pdx"].Snapshot().Executed
	if missing := writeload.Missing(w.l.Acknowledged(), final); !missing.IsEmpty() {
		t.Fatalf("acknowledged writes missing on the new primary: %s", missing.OneLine())
	}
	if newer := after.Subtract(before); newer.IsEmpty() || !newer.IsSubsetOf(final) {
		t.Fatalf("no acknowledged write landed on the new primary after the handoff")
	}
	if snap := e.sites["iad"].Snapshot(); !snap.ReadOnly && !snap.SuperReadOnly {
		t.Fatal("the former primary is writable")
	}
	for _, reason := range []string{v1alpha1.EventPlannedFailoverStarted, v1alpha1.EventPlannedFailoverTargetCaughtUp, v1alpha1.EventPlannedFailoverDrainStarted, v1alpha1.EventPlannedFailoverSucceeded} {
		e.waitEvent(reason, corev1.EventTypeNormal)
	}
	if v := metricValue(t, op.metrics, "bloodraven_planned_failovers_total", "result", "succeeded"); v != 1 {
		t.Fatalf("planned_failovers_total{succeeded} = %v", v)
	}
	t.Logf("write load: %+v", w.l.Stats())
}

// The target stops receiving once the source is fenced: it cannot hold the
// source's transactions within 30 s, so the run rolls back, the source is
// writable again and takes the client's writes, and nothing is lost.
func TestPlannedFailoverRollsBackWhenTheTargetCannotCatchUp(t *testing.T) {
	var e *env
	var once sync.Once
	e, _, w := handoffEnv(t, func(o *topologymanager.Options) {
		o.AfterIntentWrite = func(g *v1alpha1.MysqlFailoverGroup) {
			if pf := g.Status.PlannedFailover; pf != nil && pf.Phase == v1alpha1.PlannedFailoverFencing {
				once.Do(func() {
					// Before the fence: pdx stops receiving and cannot reach
					// iad any more (the operator restarting its receiver must
					// not fetch it either), and iad commits one more
					// transaction pdx will never get.
					mysqlsim.PartitionPeers(e.sites["iad"], e.sites["pdx"])
					if err := e.sites["pdx"].StopReceiver(2013, "Lost connection to MySQL server during query"); err != nil {
						t.Error(err)
					}
					e.exec("iad", "CREATE DATABASE after_receiver_stopped")
				})
			}
		}
	})
	e.annotatePlanned("pdx")
	g := e.waitClaim("the planned failover ended", ended)
	pf := g.Status.PlannedFailover
	if pf.Result.Outcome != topology.PlannedOutcomeRolledBack || pf.Result.Reason != topology.PlannedReasonCatchUpTimedOut {
		t.Fatalf("claim ended %s", describeClaim(pf))
	}
	if g.Status.ActiveSite != "iad" || g.Status.TopologyGeneration != 1 || g.Status.Transition != nil || g.Status.AutomaticFailoverHold != nil {
		t.Fatalf("active %s generation %d transition %+v hold %+v", g.Status.ActiveSite, g.Status.TopologyGeneration, g.Status.Transition, g.Status.AutomaticFailoverHold)
	}
	if snap := e.sites["iad"].Snapshot(); snap.ReadOnly || snap.SuperReadOnly {
		t.Fatal("the source was not made writable again")
	}
	before := w.l.Acknowledged()
	after := w.ackedMoreThan(t, 20)
	w.stop()
	final := e.sites["iad"].Snapshot().Executed
	if missing := writeload.Missing(w.l.Acknowledged(), final); !missing.IsEmpty() {
		t.Fatalf("acknowledged writes missing on the source: %s", missing.OneLine())
	}
	if after.Subtract(before).IsEmpty() {
		t.Fatal("the source did not take writes again")
	}
	ev := e.waitEvent(v1alpha1.EventPlannedFailoverFailed, corev1.EventTypeWarning)
	if !strings.Contains(ev.Message, "RolledBack") {
		t.Fatalf("Failed Event %q", ev.Message)
	}
	e.waitEvent(v1alpha1.EventPlannedFailoverRollbackStarted, corev1.EventTypeWarning)
	// Once the network heals, the follower whose receiver was stopped is
	// started again and catches up.
	e.sites["iad"].Heal()
	e.sites["pdx"].Heal()
	eventually(t, waitFor, "pdx replicates iad again", func() error {
		if !final.IsSubsetOf(e.sites["pdx"].Snapshot().Executed) {
			return errors.New("pdx behind")
		}
		return nil
	})
}

// A deployment failover hold defers the run (phase Deferred, reason
// DeploymentHold); once the hold expires the run is revalidated and
// completes.
func TestPlannedFailoverDefersBehindAHoldAndRunsAfterExpiry(t *testing.T) {
	e, _, w := handoffEnv(t)
	g := e.get()
	store := leasestore.New(e.kube, leasestore.Options{})
	ref := leasestore.GroupRef{Namespace: e.ns, Name: g.Name, UID: g.UID}
	for _, k := range []leasestore.Kind{leasestore.KindMigration, leasestore.KindFailoverHold} {
		if _, err := store.Grant(context.Background(), leasestore.GrantRequest{Group: ref, Kind: k, OperationID: "op-42", Instance: "orders-app",
			Holder: "ci", TTL: 6 * time.Second, TopologyGeneration: 1}); err != nil {
			t.Fatalf("grant %s: %v", k, err)
		}
	}
	e.annotatePlanned("pdx")
	g = e.waitClaim("the run deferred", func(pf *v1alpha1.PlannedFailoverStatus) bool { return pf.Phase == v1alpha1.PlannedFailoverDeferred })
	adm := g.Status.PlannedFailover.Admission
	if adm.DeferReason != topology.PlannedDeferDeploymentHold || adm.BlockingOperationID != "op-42" || adm.BlockingInstance != "orders-app" || adm.RetryAfter == nil {
		t.Fatalf("admission %+v", adm)
	}
	if g.Status.ActiveSite != "iad" || g.Status.Transition != nil {
		t.Fatal("a deferred run touched the topology")
	}
	g = e.waitClaim("the planned failover ended", ended)
	if pf := g.Status.PlannedFailover; pf.Result.Outcome != topology.PlannedOutcomeSucceeded || g.Status.ActiveSite != "pdx" {
		t.Fatalf("claim ended %s, active %s", describeClaim(pf), g.Status.ActiveSite)
	}
	if g.Status.PlannedFailover.CompletionTime.Time.Before(adm.RetryAfter.Time) {
		t.Fatalf("the run completed at %s, before the hold expired at %s", g.Status.PlannedFailover.CompletionTime, adm.RetryAfter)
	}
	w.stop()
	if missing := writeload.Missing(w.l.Acknowledged(), e.sites["pdx"].Snapshot().Executed); !missing.IsEmpty() {
		t.Fatalf("acknowledged writes missing: %s", missing.OneLine())
	}
}

// The operator dies right after recording each step of the handoff (before
// acting on it); a new operator finishes the run exactly once, without loss.
func TestPlannedFailoverResumesAfterOperatorCrash(t *testing.T) {
	for _, phase := range []v1alpha1.PlannedFailoverPhase{v1alpha1.PlannedFailoverFencing, v1alpha1.PlannedFailoverDraining, v1alpha1.PlannedFailoverPromoting} {
		t.Run(string(phase), func(t *testing.T) {
			killed := make(chan struct{})
			var first *operatorRun
			var once sync.Once
			e, op, w := handoffEnv(t, func(o *topologymanager.Options) {
				o.AfterIntentWrite = func(g *v1alpha1.MysqlFailoverGroup) {
					if pf := g.Status.PlannedFailover; pf != nil && pf.Phase == phase {
						once.Do(func() {
							first.kill()
							close(killed)
						})
					}
				}
			})
			first = op
			e.annotatePlanned("pdx")
			select {
			case <-killed:
			case <-time.After(waitFor):
				t.Fatalf("phase %s never recorded", phase)
			}
			first.stop()
			if pf := e.get().Status.PlannedFailover; pf.Phase != phase {
				t.Fatalf("stored phase %s after the crash, want %s", pf.Phase, phase)
			}
			second := e.startOperator(withFailover)
			g := e.waitClaim("the planned failover ended", ended)
			if pf := g.Status.PlannedFailover; pf.Result.Outcome != topology.PlannedOutcomeSucceeded || g.Status.ActiveSite != "pdx" || g.Status.TopologyGeneration != 2 {
				t.Fatalf("claim ended %s, active %s generation %d", describeClaim(pf), g.Status.ActiveSite, g.Status.TopologyGeneration)
			}
			w.ackedMoreThan(t, 10)
			w.stop()
			if missing := writeload.Missing(w.l.Acknowledged(), e.sites["pdx"].Snapshot().Executed); !missing.IsEmpty() {
				t.Fatalf("acknowledged writes missing: %s", missing.OneLine())
			}
			// Exactly once: one success, one published generation.
			time.Sleep(time.Second)
			if n := len(e.eventsOf(v1alpha1.EventPlannedFailoverSucceeded)); n != 1 {
				t.Fatalf("%d PlannedFailoverSucceeded Events", n)
			}
			if n := len(e.eventsOf(v1alpha1.EventFailoverSucceeded)); n != 1 {
				t.Fatalf("%d FailoverSucceeded Events", n)
			}
			if g := e.get(); g.Status.TopologyGeneration != 2 {
				t.Fatalf("generation %d", g.Status.TopologyGeneration)
			}
			if v := metricValue(t, second.metrics, "bloodraven_planned_failovers_total", "result", "succeeded"); v != 1 {
				t.Fatalf("planned_failovers_total{succeeded} = %v on the second operator", v)
			}
		})
	}
}

// An application holds a write transaction open on the source and goes
// idle. MySQL turns read_only on only once it ends, so the fence would wait
// forever; the operator kills the client sessions (the open transaction is
// rolled back, it was never acknowledged) and the handoff completes.
func TestPlannedFailoverKillsAnIdleTransactionThatBlocksTheFence(t *testing.T) {
	t.Parallel()
	e := newEnv(t, threeSites)
	e.startOperator(withFailover)
	e.create(e.failoverGroup(threeSites))
	e.waitActive("iad", 1)
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.exec("iad", "CREATE DATABASE shop", "CREATE TABLE shop.orders (id BIGINT)")

	app, err := sql.Open("mysql", simtest.AppUser+":"+simtest.AppPass+"@tcp("+e.sites["iad"].Addr()+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	ctx := context.Background()
	tx, err := app.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO shop.orders VALUES (?)", 1); err != nil {
		t.Fatal(err)
	}
	uncommitted := e.sites["iad"].Snapshot().Executed

	e.annotatePlanned("pdx:maxLagWait=30s")
	g := e.waitClaim("the planned failover ended", ended)
	if pf := g.Status.PlannedFailover; pf.Result == nil || pf.Result.Outcome != topology.PlannedOutcomeSucceeded || g.Status.ActiveSite != "pdx" {
		t.Fatalf("claim ended %s, active %s", describeClaim(pf), g.Status.ActiveSite)
	}
	if err := tx.Commit(); err == nil {
		t.Fatal("the idle transaction committed on the former primary after the handoff")
	}
	if got := e.sites["iad"].Snapshot().Executed; !got.Equal(uncommitted) {
		t.Fatalf("the former primary's set changed from %s to %s: the open transaction was not rolled back", uncommitted.OneLine(), got.OneLine())
	}
	ev := e.waitEvent(v1alpha1.EventClientSessionsEvicted, corev1.EventTypeWarning)
	if !strings.Contains(ev.Message, "kept it from being fenced") {
		t.Fatalf("ClientSessionsEvicted Warning %q", ev.Message)
	}
}
