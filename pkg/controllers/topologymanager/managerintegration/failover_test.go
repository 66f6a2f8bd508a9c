package managerintegration

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/render"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

func withFailover(o *topologymanager.Options) { o.AutomaticFailover = true }

// failoverGroup: sidecar timers at their minimum, so the self-fence wait
// before a promotion is protocol.SelfFenceBound(2s, 500ms) = 6.25s from the
// intent; failoverCooldown at its minimum, 30s.
func (e *env) failoverGroup(sites []siteDef) *v1alpha1.MysqlFailoverGroup {
	g := e.group(sites)
	g.Spec.Sidecar = &v1alpha1.SidecarSpec{LeaseTimeout: &metav1.Duration{Duration: 2 * time.Second}, PeerCheckInterval: &metav1.Duration{Duration: 500 * time.Millisecond}}
	g.Spec.FailoverCooldown = &metav1.Duration{Duration: 30 * time.Second}
	g.Spec.ConnectionDrainTimeout = &metav1.Duration{Duration: 2 * time.Minute}
	return g
}

// waitFenceDeadline waits for the failover intent and the pass that sets
// its self-fence deadline.
func (e *env) waitFenceDeadline() *v1alpha1.Transition {
	e.t.Helper()
	var tr *v1alpha1.Transition
	eventually(e.t, waitFor, "failover intent recorded and its self-fence deadline set", func() error {
		tr = e.get().Status.Transition
		if tr == nil || tr.SourceFenceDeadline == nil {
			return fmt.Errorf("transition %+v", tr)
		}
		return nil
	})
	return tr
}

func (e *env) waitActive(site string, gen int64) *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	var g *v1alpha1.MysqlFailoverGroup
	eventually(e.t, waitFor, fmt.Sprintf("site %s active at generation %d", site, gen), func() error {
		g = e.get()
		if g.Status.ActiveSite != site || g.Status.TopologyGeneration != gen || g.Status.Transition != nil {
			return fmt.Errorf("active %q generation %d transition %+v", g.Status.ActiveSite, g.Status.TopologyGeneration, g.Status.Transition)
		}
		return nil
	})
	return g
}

// The active site crashes: after failureThreshold polls the intent is
// recorded (visible as status.transition, what the deploy API answers 423
// on), the candidate is promoted only after the old primary's self-fence
// deadline, and the new topology is published with the next generation.
// A second crash inside failoverCooldown is not failed over; the old
// primary coming back writable is fenced at once and follows the new one.
func TestFailoverOnPrimaryCrash(t *testing.T) {
	e := newEnv(t, threeSites)
	op := e.startOperator(withFailover)
	e.create(e.failoverGroup(threeSites))
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.waitContact("iad")
	e.exec("iad", "CREATE DATABASE orders", "CREATE DATABASE billing")
	committed := e.sites["iad"].Snapshot().Executed
	eventually(t, waitFor, "pdx applied iad's writes", func() error {
		if !committed.IsSubsetOf(e.sites["pdx"].Snapshot().Executed) {
			return fmt.Errorf("pdx behind")
		}
		return nil
	})

	crashed := time.Now()
	e.sites["iad"].Crash()
	tr := e.waitFenceDeadline()
	if tr.Kind != v1alpha1.TransitionAutomatic || tr.SourceSite != "iad" || tr.TargetSite != "pdx" || tr.TopologyGeneration != 2 {
		t.Fatalf("transition %+v", tr)
	}
	// The deadline counts from a pass that found the stored intent, never
	// from before the intent was recorded (its start kept to the second, the
	// deadline to the microsecond).
	if bound := protocol.SelfFenceBound(2*time.Second, 500*time.Millisecond); tr.SourceFenceDeadline.Time.Before(tr.StartTime.Add(bound)) {
		t.Fatalf("self-fence deadline %s earlier than the intent (%s) + %s", tr.SourceFenceDeadline, tr.StartTime, bound)
	}
	if s := e.sites["pdx"].Snapshot(); !s.ReadOnly {
		t.Fatal("pdx writable as soon as the intent was recorded, before iad's self-fence deadline")
	}
	// Judged by the simulated server, close to the deadline as stored: pdx
	// takes no writes until then (these sites have no sidecar to prove a
	// fence, so only the deadline holds the promotion back).
	before := tr.SourceFenceDeadline.Add(-200 * time.Millisecond)
	if time.Now().After(before) {
		t.Fatalf("the self-fence deadline %s was read too late to check pdx before it", tr.SourceFenceDeadline)
	}
	time.Sleep(time.Until(before))
	if s := e.sites["pdx"].Snapshot(); !s.ReadOnly {
		t.Fatalf("pdx writable at %s, before iad's self-fence deadline %s", before, tr.SourceFenceDeadline)
	}
	g := e.waitActive("pdx", 2)
	promotedAfter := time.Since(crashed)
	published := time.Now()
	if s := e.sites["pdx"].Snapshot(); s.ReadOnly || !committed.IsSubsetOf(s.Executed) {
		t.Fatalf("pdx after promotion: %+v", s)
	}
	lf := g.Status.LastFailover
	if lf == nil || lf.Target != "pdx" || lf.Source != "iad" || lf.Kind != v1alpha1.TransitionAutomatic || lf.PromotionGTIDExecuted == "" || lf.PossiblyLostGTID != "" {
		t.Fatalf("lastFailover %+v", lf)
	}
	t.Logf("crash to new primary published: %s", promotedAfter.Round(100*time.Millisecond))
	if v := metricValue(t, op.metrics, "bloodraven_topology_transitions_total", "kind", "Automatic", "result", "succeeded"); v != 1 {
		t.Errorf("transitions_total{Automatic,succeeded} = %v", v)
	}
	e.waitEvent(v1alpha1.EventFailoverSucceeded, corev1.EventTypeNormal)
	// Every reachable sidecar was told a transition is in flight, before the
	// promotion (the announcements stop once the candidate is promoted).
	for _, name := range []string{"pdx", "reader"} {
		got := e.sidecars[name].announcements()
		if len(got) == 0 {
			t.Fatalf("sidecar of %s was never told about the failover", name)
		}
		a := got[0]
		if tn := a.doc.Transition; tn == nil || tn.ID != tr.ID || tn.TargetSite != "pdx" || tn.SourceSite != "iad" ||
			a.doc.Namespace != e.ns || a.doc.Group != groupName || a.doc.ActiveSite != "iad" || !a.at.Before(published) {
			t.Fatalf("announcement to %s: %+v (transition %+v)", name, a.doc, a.doc.Transition)
		}
		for _, later := range got {
			if later.doc.Transition == nil || later.doc.Transition.Step == string(v1alpha1.StepPromoting) {
				t.Fatalf("announcement after the promotion step: %+v", later.doc)
			}
		}
	}
	eventually(t, waitFor, "reader follows pdx; annotations written", func() error {
		g := e.get()
		if st := site(g, "reader"); st.SourceHost != e.fqdn("pdx") || st.Replication != v1alpha1.ReplicationRunning {
			return fmt.Errorf("reader %s %s", st.SourceHost, st.Replication)
		}
		if g.Annotations[topologymanager.AnnotationLastFailoverTarget] != "pdx" || g.Annotations[topologymanager.AnnotationLastFailover] == "" {
			return fmt.Errorf("annotations %v", g.Annotations)
		}
		return nil
	})

	// pdx crashes inside the cooldown: no second failover (iad is down too,
	// but the cooldown is what refuses first).
	e.sites["pdx"].Crash()
	g = e.waitCondition(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonFailoverRefused)
	if msg := condition(g, v1alpha1.ConditionDegraded).Message; !contains(msg, "failoverCooldown") {
		t.Fatalf("Degraded message %q", msg)
	}
	time.Sleep(time.Second)
	if g := e.get(); g.Status.ActiveSite != "pdx" || g.Status.TopologyGeneration != 2 || g.Status.Transition != nil {
		t.Fatalf("failed over inside the cooldown: %+v", g.Status)
	}
	// pdx comes back (read-only, as mysqld starts): it is the active site
	// and is made writable again.
	if err := e.sites["pdx"].Restart(); err != nil {
		t.Fatal(err)
	}
	e.waitEvent(v1alpha1.EventActiveSiteReasserted, corev1.EventTypeNormal)

	// The old primary returns writable: fenced at once, then it follows pdx.
	if err := e.sites["iad"].Restart(); err != nil {
		t.Fatal(err)
	}
	e.exec("iad", "SET GLOBAL read_only = OFF")
	eventually(t, waitFor, "returning old primary fenced and following pdx", func() error {
		s := e.sites["iad"].Snapshot()
		st := site(e.get(), "iad")
		if !s.SuperReadOnly || st.SourceHost != e.fqdn("pdx") || st.Replication != v1alpha1.ReplicationRunning {
			return fmt.Errorf("iad super_read_only=%v source %s %s", s.SuperReadOnly, st.SourceHost, st.Replication)
		}
		return nil
	})
	e.waitEvent(v1alpha1.EventSiteFenced, corev1.EventTypeWarning)
	// It held nothing pdx lacks: its recovery (RecoveryInProgress while it
	// was fenced and repointed) ends once it replicates.
	if ev := e.waitEvent(v1alpha1.EventOldPrimaryRejoined, corev1.EventTypeNormal); !contains(ev.Message, "iad", "pdx") {
		t.Fatalf("OldPrimaryRejoined message %q", ev.Message)
	}
	g = e.waitCondition(v1alpha1.ConditionRecoveryPending, metav1.ConditionFalse, v1alpha1.ReasonNoRecoveryPending)
	if st := site(g, "iad"); st.RecoveryState != "" || st.DivergentGTID != "" {
		t.Fatalf("iad after rejoining %+v", st)
	}
	if g := e.get(); g.Status.ActiveSite != "pdx" || g.Status.TopologyGeneration != 2 {
		t.Fatalf("status %+v", g.Status)
	}

	// Inside connectionDrainTimeout, an application session on the former
	// primary is evicted.
	app, err := sql.Open("mysql", simtest.AppUser+":"+simtest.AppPass+"@tcp("+e.sites["iad"].Addr()+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	conn, err := app.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	eventually(t, waitFor, "stale application session evicted from iad", func() error {
		if err := conn.PingContext(context.Background()); err == nil {
			return fmt.Errorf("session still alive")
		}
		return nil
	})
	e.waitEvent(v1alpha1.EventClientSessionsEvicted, corev1.EventTypeNormal)
}

// The most advanced candidate wins, counting what it received but had not
// applied, and it applies that before it is made writable.
func TestMostAdvancedCandidateWins(t *testing.T) {
	sites := []siteDef{{"iad", v1alpha1.SiteRolePrimaryCandidate}, {"pdx", v1alpha1.SiteRolePrimaryCandidate}, {"sfo", v1alpha1.SiteRolePrimaryCandidate}}
	e := newEnv(t, sites)
	e.startOperator(withFailover)
	e.create(e.failoverGroup(sites))
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.waitContact("iad")

	// pdx stops receiving; sfo receives but applies 3s late.
	mysqlsim.PartitionPeers(e.sites["iad"], e.sites["pdx"])
	if err := e.sites["sfo"].InjectApplyLag(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	e.exec("iad", "CREATE DATABASE late1", "CREATE DATABASE late2")
	committed := e.sites["iad"].Snapshot().Executed
	eventually(t, waitFor, "sfo received (not applied) iad's writes", func() error {
		s := e.sites["sfo"].Snapshot()
		if !committed.IsSubsetOf(s.Executed.Union(s.Retrieved)) {
			return fmt.Errorf("sfo retrieved %s", s.Retrieved.OneLine())
		}
		if committed.IsSubsetOf(s.Executed) {
			return fmt.Errorf("sfo already applied everything; the test needs it behind")
		}
		return nil
	})
	// Let the operator poll everyone once more (pollInterval is 200ms), so
	// its last view of iad holds the late writes and its view of sfo what
	// sfo received: the choice is then made on them, not on a view taken
	// just before them (seen in CI under load: pdx and sfo tied, pdx won).
	time.Sleep(time.Second)
	e.sites["iad"].Crash()
	g := e.waitActive("sfo", 2)
	if s := e.sites["sfo"].Snapshot(); !committed.IsSubsetOf(s.Executed) {
		t.Fatalf("sfo promoted without applying what it received: %s", s.Executed.OneLine())
	}
	if lf := g.Status.LastFailover; lf.PossiblyLostGTID != "" {
		t.Fatalf("lastFailover %+v", lf)
	}
}

// A candidate that was far behind when the primary died is not promoted
// automatically; the override annotation promotes it.
func TestLagGuardRefusesAndOverrideWorks(t *testing.T) {
	sites := threeSites[:2]
	e := newEnv(t, sites)
	e.startOperator(withFailover)
	g := e.failoverGroup(sites)
	g.Spec.Replication = &v1alpha1.ReplicationSpec{MaxLagSeconds: ptr.To(int32(0))}
	e.create(g)
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.waitContact("iad")
	if err := e.sites["pdx"].InjectApplyLag(8 * time.Second); err != nil {
		t.Fatal(err)
	}
	// Writes for about 2.5s: pdx applies each 8s after it was committed, so
	// it is at least 2s behind when iad dies (maxLagSeconds 0).
	for i := range 25 {
		e.exec("iad", fmt.Sprintf("CREATE DATABASE w%d", i))
		time.Sleep(100 * time.Millisecond)
	}
	e.sites["iad"].Crash()
	g = e.waitCondition(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonFailoverRefused)
	if msg := condition(g, v1alpha1.ConditionDegraded).Message; !contains(msg, "pdx", "behind", "failover-override") {
		t.Fatalf("Degraded message %q", msg)
	}
	e.waitEvent(v1alpha1.EventFailoverRefused, corev1.EventTypeWarning)
	time.Sleep(time.Second)
	if g := e.get(); g.Status.ActiveSite != "iad" || g.Status.Transition != nil {
		t.Fatalf("refused candidate promoted: %+v", g.Status)
	}

	api := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"pdx:confirm=%s"}}}`, topologymanager.AnnotationFailoverOverride, groupName)
	if _, err := api.Patch(context.Background(), groupName, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitActive("pdx", 2)
}

// The operator dies right after it recorded each step of a failover, before
// acting on it; a new operator finishes the same transition, exactly once.
func TestFailoverResumesAfterOperatorCrash(t *testing.T) {
	for _, step := range []v1alpha1.TransitionStep{v1alpha1.StepRecorded, v1alpha1.StepAwaitingSelfFence, v1alpha1.StepCatchingUp, v1alpha1.StepPromoting} {
		t.Run(string(step), func(t *testing.T) {
			e := newEnv(t, threeSites)
			killed := make(chan string, 1)
			var first *operatorRun
			first = e.startOperator(withFailover, func(o *topologymanager.Options) {
				o.AfterIntentWrite = func(g *v1alpha1.MysqlFailoverGroup) {
					if tr := g.Status.Transition; tr != nil && tr.Kind == v1alpha1.TransitionAutomatic && tr.Step == step {
						first.kill()
						select {
						case killed <- tr.ID:
						default:
						}
					}
				}
			})
			e.create(e.failoverGroup(threeSites))
			e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
			e.waitContact("iad")
			if step == v1alpha1.StepCatchingUp {
				// Something to catch up on, so the step is not over at once.
				if err := e.sites["pdx"].InjectApplyLag(time.Second); err != nil {
					t.Fatal(err)
				}
				e.exec("iad", "CREATE DATABASE in_flight")
			}
			e.sites["iad"].Crash()
			var id string
			select {
			case id = <-killed:
			case <-time.After(waitFor):
				t.Fatalf("step %s never recorded; Degraded: %s", step, condition(e.get(), v1alpha1.ConditionDegraded).Message)
			}
			first.stop()
			stored := e.get()
			if tr := stored.Status.Transition; tr == nil || tr.ID != id || tr.Step != step {
				t.Fatalf("after the crash: transition %+v, want %s at %s", tr, id, step)
			}
			if step == v1alpha1.StepPromoting {
				if s := e.sites["pdx"].Snapshot(); !s.ReadOnly {
					t.Fatal("pdx made writable although the operator died before acting")
				}
			}

			// A new process dials every site afresh; at the 200 ms poll
			// deadline a loaded machine can fail three polls of pdx in a
			// row, and an unreachable target rightly abandons the
			// failover (a clean-clone CI run), which is not what is tested.
			e.startOperator(withFailover, func(o *topologymanager.Options) { o.PollTimeout = time.Second })
			g := e.waitActive("pdx", 2)
			if lf := g.Status.LastFailover; lf == nil || lf.Target != "pdx" || lf.Source != "iad" {
				t.Fatalf("lastFailover %+v", g.Status.LastFailover)
			}
			if s := e.sites["pdx"].Snapshot(); s.ReadOnly {
				t.Fatal("pdx not writable")
			}
			time.Sleep(time.Second)
			if g := e.get(); g.Status.TopologyGeneration != 2 || g.Status.Transition != nil {
				t.Fatalf("a second change followed: %+v", g.Status)
			}
			e.waitEvent(v1alpha1.EventFailoverSucceeded, corev1.EventTypeNormal)
			// The dead operator may not have delivered its Event (as a real
			// crash would lose it); the new one must not start another.
			if evs := e.eventsOf(v1alpha1.EventFailoverStarted); len(evs) > 1 {
				t.Fatalf("%d FailoverStarted events: the restarted operator started a new failover instead of resuming; %s",
					len(evs), eventMessages(append(evs, e.eventsOf(v1alpha1.EventFailoverAborted)...)))
			}
			if n := len(e.eventsOf(v1alpha1.EventFailoverSucceeded)); n != 1 {
				t.Fatalf("%d FailoverSucceeded events", n)
			}
		})
	}
}

// The old primary took writes the operator never saw replicated, then came
// back after the failover: it stays fenced and is not repointed, its
// transactions are recorded, recovery is Blocked and the group Degraded.
func TestReturningOldPrimaryWithLostWritesIsBlocked(t *testing.T) {
	e := newEnv(t, threeSites)
	e.startOperator(withFailover)
	e.create(e.failoverGroup(threeSites))
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.waitContact("iad")
	e.sites["iad"].Crash()
	lost := e.sites["iad"].InjectErrantTransactions(3) // on its disk, never replicated
	e.waitActive("pdx", 2)
	if err := e.sites["iad"].Restart(); err != nil {
		t.Fatal(err)
	}
	g := e.waitCondition(v1alpha1.ConditionRecoveryPending, metav1.ConditionTrue, v1alpha1.ReasonDivergentTransactions)
	st := site(g, "iad")
	if st.RecoveryState != v1alpha1.RecoveryBlocked || st.DivergenceDetectedBy != v1alpha1.DivergenceByOldPrimaryRecovery || st.DivergentGTID != lost.OneLine() {
		t.Fatalf("iad %+v", st)
	}
	e.waitCondition(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonDivergentTransactions)
	time.Sleep(time.Second)
	s := e.sites["iad"].Snapshot()
	if !s.ReadOnly || !lost.IsSubsetOf(s.Executed) || s.IORunning == "Yes" {
		t.Fatalf("iad touched: %+v", s)
	}

	// A human reviewed the writes and reclones iad with the interlock: the
	// set is recorded, iad gets pdx's data and rejoins, recovery clears.
	e.annotateReclone("iad:confirm=" + groupName + ":uid=" + string(g.UID) + ":gtidPrefix=" + e.sites["iad"].ServerUUID()[:10])
	if ev := e.waitEvent(v1alpha1.EventRecloneRequested, corev1.EventTypeWarning); !contains(ev.Message, "iad", lost.OneLine()) {
		t.Fatalf("RecloneRequested %q", ev.Message)
	}
	e.waitEvent(v1alpha1.EventOldPrimaryRecovered, corev1.EventTypeNormal)
	g = e.waitCondition(v1alpha1.ConditionRecoveryPending, metav1.ConditionFalse, v1alpha1.ReasonNoRecoveryPending)
	if h := g.Status.RecloneHistory; len(h) != 1 || h[0].DiscardedGTID != lost.OneLine() || h[0].DivergenceDetectedBy != v1alpha1.DivergenceByOldPrimaryRecovery || h[0].Donor != "pdx" {
		t.Fatalf("recloneHistory %+v", h)
	}
	e.waitRecloneCleared()
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	if got := e.sites["iad"].Snapshot().Executed; !got.Intersect(lost).IsEmpty() {
		t.Fatalf("iad still holds %s", got.Intersect(lost).OneLine())
	}
}

// While a change of spec.sidecar rolls out, a pod created before it still
// runs its sidecar with the old, longer lease: the self-fence wait before a
// promotion covers the longest lease any site's pod runs with, not only the
// spec's.
func TestSelfFenceWaitCoversARunningPodsLongerLease(t *testing.T) {
	e := newEnv(t, threeSites)
	ctx := context.Background()
	// No controller manager here: the namespace's default ServiceAccount,
	// which pod admission looks up, is created by hand.
	if _, err := e.kube.CoreV1().ServiceAccounts(e.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	oldLease := 30 * time.Second
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: render.PodName(groupName, "iad")}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: render.ContainerMySQL, Image: "mysql:9.7"},
		{Name: render.ContainerSidecar, Image: "bloodraven-sidecar:old", Env: []corev1.EnvVar{{Name: protocol.EnvLeaseTimeout, Value: oldLease.String()}}},
	}}}
	if _, err := e.kube.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startOperator(withFailover)
	e.create(e.failoverGroup(threeSites)) // spec: leaseTimeout 2s, peerCheckInterval 500ms
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.waitContact("iad")

	e.sites["iad"].Crash()
	tr := e.waitFenceDeadline()
	// The pod's peerCheckInterval is the sidecar default (2s), longer than
	// the spec's 500ms too.
	want := protocol.SelfFenceBound(oldLease, protocol.DefaultPeerCheckInterval)
	if got := tr.SourceFenceDeadline.Sub(tr.StartTime.Time); got < want {
		t.Fatalf("self-fence deadline %s after the intent, want at least %s (the running pod's lease)", got, want)
	}
	if s := e.sites["pdx"].Snapshot(); !s.ReadOnly {
		t.Fatal("pdx promoted before the old lease ran out")
	}
}

// eventMessages lists Events' reasons and messages for a failure message.
func eventMessages(evs []corev1.Event) string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Reason+": "+ev.Message)
	}
	return strings.Join(out, "; ")
}
