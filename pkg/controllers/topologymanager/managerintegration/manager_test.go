package managerintegration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// A new group of empty sites bootstraps: the first PrimaryCandidate becomes
// the only writable site, topologyGeneration becomes 1, every follower
// replicates from the active site's internal Service, and the group is Ready.
func TestBootstrapToReady(t *testing.T) {
	e := newEnv(t, threeSites)
	op := e.startOperator()
	e.create(e.group(threeSites))

	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	// A reader's replication does not count for Ready, so its receiver may
	// still be connecting when Ready turns True: wait until both followers
	// report Running, then check everything on that one status.
	var g *v1alpha1.MysqlFailoverGroup
	eventually(t, waitFor, "both followers replicating", func() error {
		g = e.get()
		for _, name := range []string{"pdx", "reader"} {
			if st := site(g, name); st == nil || st.Replication != v1alpha1.ReplicationRunning {
				return fmt.Errorf("site %s: %+v", name, st)
			}
		}
		return nil
	})
	if c := condition(g, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready %+v once the followers replicate", c)
	}
	if g.Status.ActiveSite != "iad" || g.Status.TopologyGeneration != 1 || g.Status.Transition != nil {
		t.Fatalf("status: active %q generation %d transition %+v", g.Status.ActiveSite, g.Status.TopologyGeneration, g.Status.Transition)
	}
	if g.Status.ObservedGeneration != g.Generation {
		t.Errorf("observedGeneration %d, generation %d", g.Status.ObservedGeneration, g.Generation)
	}
	for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionDegraded, v1alpha1.ConditionBootstrapping} {
		if c := condition(g, typ); c == nil || c.ObservedGeneration != g.Generation {
			t.Errorf("condition %s: %+v", typ, c)
		}
	}
	if c := condition(g, v1alpha1.ConditionDegraded); c.Status != metav1.ConditionFalse {
		t.Errorf("Degraded %+v", c)
	}
	if c := condition(g, v1alpha1.ConditionBootstrapping); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNotBootstrapping {
		t.Errorf("Bootstrapping %+v", c)
	}
	if s := e.sites["iad"].Snapshot(); s.ReadOnly || s.SuperReadOnly {
		t.Fatalf("iad is not writable: %+v", s)
	}
	for _, name := range []string{"pdx", "reader"} {
		if s := e.sites[name].Snapshot(); !s.SuperReadOnly {
			t.Errorf("%s is not fenced", name)
		}
		st := site(g, name)
		if st.State != v1alpha1.SiteReadOnly || st.Replication != v1alpha1.ReplicationRunning || st.SourceHost != e.fqdn("iad") ||
			st.SourceConvergenceState != "Converged" || st.SourceConvergenceReason != "DirectSource" || st.LastSeenTime == nil {
			t.Errorf("site %s: %+v", name, st)
		}
	}
	if st := site(g, "iad"); st.State != v1alpha1.SiteWritable || st.ServerUUID != e.sites["iad"].ServerUUID() {
		t.Errorf("site iad: %+v", st)
	}
	e.waitEvent(v1alpha1.EventBootstrapStarted, corev1.EventTypeNormal)
	e.waitEvent(v1alpha1.EventBootstrapSucceeded, corev1.EventTypeNormal)

	// Writes on the active site reach both followers.
	e.exec("iad", "CREATE DATABASE shop", "CREATE DATABASE billing")
	want := e.sites["iad"].Snapshot().Executed
	eventually(t, waitFor, "followers applied the writes", func() error {
		for _, name := range []string{"pdx", "reader"} {
			if got := e.sites[name].Snapshot().Executed; !want.IsSubsetOf(got) {
				return fmt.Errorf("%s has %s, want %s", name, got.OneLine(), want.OneLine())
			}
		}
		return nil
	})
	if v := gauge(t, op.metrics, "bloodraven_topology_generation"); v != 1 {
		t.Errorf("bloodraven_topology_generation = %v", v)
	}
	if v := gauge(t, op.metrics, "bloodraven_site_state", "site", "iad", "state", "writable"); v != 1 {
		t.Errorf("bloodraven_site_state{site=iad,state=writable} = %v", v)
	}
}

// A follower that lacks transactions the active site already purged from
// its binary logs cannot catch up by replication: it is cloned, then
// replicates.
func TestFarBehindFollowerIsCloned(t *testing.T) {
	sites := threeSites[:2]
	e := newEnv(t, sites)
	// iad has history whose binary logs are gone; pdx is empty.
	e.exec("iad", "SET GLOBAL read_only = OFF", "CREATE DATABASE a", "CREATE DATABASE b", "CREATE DATABASE c", "SET GLOBAL super_read_only = ON")
	e.sites["iad"].PurgeBinaryLogs()
	history := e.sites["iad"].Snapshot().Executed

	e.startOperator()
	e.create(e.group(sites))
	e.waitEvent(v1alpha1.EventCloneStarted, corev1.EventTypeNormal)
	e.waitEvent(v1alpha1.EventCloneSucceeded, corev1.EventTypeNormal)
	g := e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	if g.Status.ActiveSite != "iad" {
		t.Fatalf("active site %q: iad holds every transaction", g.Status.ActiveSite)
	}
	if got := e.sites["pdx"].Snapshot().Executed; !history.IsSubsetOf(got) {
		t.Fatalf("pdx has %s after the clone, want %s", got.OneLine(), history.OneLine())
	}
	if c := condition(g, v1alpha1.ConditionBootstrapping); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNotBootstrapping {
		t.Errorf("Bootstrapping %+v", c)
	}
	e.exec("iad", "CREATE DATABASE d")
	want := e.sites["iad"].Snapshot().Executed
	eventually(t, waitFor, "pdx replicates after the clone", func() error {
		if got := e.sites["pdx"].Snapshot().Executed; !want.IsSubsetOf(got) {
			return fmt.Errorf("pdx has %s", got.OneLine())
		}
		return nil
	})
}

// A follower that cannot catch up and holds transactions the active site
// lacks is not cloned (that would destroy them): Degraded says which site,
// which transactions and why, and its data stays.
func TestDivergentFollowerIsNotCloned(t *testing.T) {
	sites := threeSites[:2]
	e := newEnv(t, sites)
	e.startOperator()
	e.create(e.group(sites))
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)

	// pdx is down while iad takes writes and purges them; pdx comes back
	// with transactions of its own.
	e.sites["pdx"].Crash()
	e.exec("iad", "CREATE DATABASE a", "CREATE DATABASE b")
	e.sites["iad"].PurgeBinaryLogs()
	errant := e.sites["pdx"].InjectErrantTransactions(2)
	if err := e.sites["pdx"].Restart(); err != nil {
		t.Fatal(err)
	}

	g := e.waitCondition(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonDivergentTransactions)
	msg := condition(g, v1alpha1.ConditionDegraded).Message
	if !contains(msg, "pdx", "not cloned", errant.OneLine()) {
		t.Fatalf("Degraded message does not say why: %q", msg)
	}
	st := site(g, "pdx")
	if st.DivergentGTID != errant.OneLine() || st.DivergentTransactionCount != 2 || st.DivergenceDetectedBy != v1alpha1.DivergenceByReplicaAudit ||
		st.DivergenceComparedTo != "iad" || st.SourceConvergenceState != "Blocked" || st.SourceConvergenceReason != "GTIDDiverged" {
		t.Fatalf("pdx status %+v", st)
	}
	ev := e.waitEvent(v1alpha1.EventCloneRefusedDivergentTransactions, corev1.EventTypeWarning)
	if !contains(ev.Message, "pdx", errant.OneLine()) {
		t.Errorf("event message %q", ev.Message)
	}
	// Give the manager several more polls: still no clone, data intact.
	time.Sleep(2 * time.Second)
	if n := len(e.eventsOf(v1alpha1.EventCloneStarted)); n != 0 {
		t.Fatalf("%d clones started", n)
	}
	if got := e.sites["pdx"].Snapshot().Executed; !errant.IsSubsetOf(got) {
		t.Fatalf("pdx lost its transactions: %s", got.OneLine())
	}
	if c := condition(e.get(), v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonReplicationUnhealthy {
		t.Errorf("Ready %+v", c)
	}
}

// A follower pointed at another source by hand is pointed back at the
// active site.
func TestRepointedFollowerConverges(t *testing.T) {
	e := newEnv(t, threeSites)
	e.startOperator()
	e.create(e.group(threeSites))
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	before := len(e.eventsOf(v1alpha1.EventFollowerRepointed))

	e.exec("pdx", "STOP REPLICA",
		fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST = '%s', SOURCE_PORT = 3306, SOURCE_USER = 'repl', SOURCE_PASSWORD = 'repl-secret', SOURCE_AUTO_POSITION = 1, GET_SOURCE_PUBLIC_KEY = 1", e.fqdn("reader")),
		"START REPLICA")
	eventually(t, waitFor, "pdx repointed to iad", func() error {
		if n := len(e.eventsOf(v1alpha1.EventFollowerRepointed)); n <= before {
			return fmt.Errorf("%d FollowerRepointed events, %d before", n, before)
		}
		st := site(e.get(), "pdx")
		if st.SourceHost != e.fqdn("iad") || st.SourceConvergenceState != "Converged" || st.Replication != v1alpha1.ReplicationRunning {
			return fmt.Errorf("pdx %s %s/%s %s", st.SourceHost, st.SourceConvergenceState, st.SourceConvergenceReason, st.Replication)
		}
		return nil
	})
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.exec("iad", "CREATE DATABASE after_repoint")
	want := e.sites["iad"].Snapshot().Executed
	eventually(t, waitFor, "pdx replicates from iad", func() error {
		if got := e.sites["pdx"].Snapshot().Executed; !want.IsSubsetOf(got) {
			return fmt.Errorf("pdx has %s", got.OneLine())
		}
		return nil
	})
}

// An operator restart keeps the topology: same active site, same
// topologyGeneration, no second bootstrap.
func TestStatusSurvivesOperatorRestart(t *testing.T) {
	e := newEnv(t, threeSites)
	first := e.startOperator()
	e.create(e.group(threeSites))
	g := e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	if g.Status.TopologyGeneration != 1 {
		t.Fatalf("generation %d", g.Status.TopologyGeneration)
	}
	first.stop()

	second := e.startOperator()
	// Enough polls for the new process to settle every site and act if it
	// wanted to; the stored status must still be the first one's topology.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		g = e.get()
		if g.Status.TopologyGeneration != 1 || g.Status.ActiveSite != "iad" || g.Status.Transition != nil {
			t.Fatalf("after restart: generation %d active %q transition %+v", g.Status.TopologyGeneration, g.Status.ActiveSite, g.Status.Transition)
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	if n := len(e.eventsOf(v1alpha1.EventBootstrapStarted)); n != 1 {
		t.Fatalf("%d BootstrapStarted events, want 1", n)
	}
	if v := gauge(t, second.metrics, "bloodraven_topology_generation"); v != 1 {
		t.Fatalf("the restarted operator reports generation %v", v)
	}
	if s := e.sites["iad"].Snapshot(); s.ReadOnly {
		t.Fatal("iad was fenced across the restart")
	}
}

// A bootstrap intent recorded by a previous operator is finished as
// recorded: the recorded target becomes active, with the recorded generation.
func TestRecordedBootstrapIsResumed(t *testing.T) {
	sites := threeSites[:2]
	e := newEnv(t, sites)
	e.create(e.group(sites))
	g := e.get()
	now := metav1.Now()
	g.Status.Transition = &v1alpha1.Transition{ID: "crashed-operator", Kind: v1alpha1.TransitionBootstrap, TargetSite: "pdx",
		TopologyGeneration: 1, Step: v1alpha1.StepPromoting, StartTime: now}
	if _, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).UpdateStatus(context.Background(), g, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startOperator()
	g = e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	if g.Status.ActiveSite != "pdx" || g.Status.TopologyGeneration != 1 || g.Status.Transition != nil {
		t.Fatalf("active %q generation %d transition %+v", g.Status.ActiveSite, g.Status.TopologyGeneration, g.Status.Transition)
	}
	if n := len(e.eventsOf(v1alpha1.EventBootstrapStarted)); n != 0 {
		t.Fatalf("a new bootstrap was started instead of resuming the recorded one")
	}
}

// Sites whose sets are incomparable: nothing becomes writable, Degraded
// names both sites, a Warning is recorded.
func TestIncomparableSitesAreNotBootstrapped(t *testing.T) {
	sites := threeSites[:2]
	e := newEnv(t, sites)
	iadOwn := e.sites["iad"].InjectErrantTransactions(1)
	pdxOwn := e.sites["pdx"].InjectErrantTransactions(2)
	e.startOperator()
	e.create(e.group(sites))
	g := e.waitCondition(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonIncomparableGTIDSets)
	if msg := condition(g, v1alpha1.ConditionDegraded).Message; !contains(msg, "iad", "pdx", iadOwn.OneLine(), pdxOwn.OneLine()) {
		t.Fatalf("Degraded message %q", msg)
	}
	e.waitEvent(v1alpha1.EventBootstrapRefusedIncomparableGTIDSets, corev1.EventTypeWarning)
	time.Sleep(time.Second)
	g = e.get()
	if g.Status.ActiveSite != "" || g.Status.Transition != nil || g.Status.TopologyGeneration != 0 {
		t.Fatalf("status %+v", g.Status)
	}
	for name, s := range e.sites {
		if snap := s.Snapshot(); !snap.ReadOnly {
			t.Fatalf("%s is writable", name)
		}
	}
	if c := condition(g, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNoWritablePrimary {
		t.Fatalf("Ready %+v", c)
	}
	if n := len(e.eventsOf(v1alpha1.EventBootstrapRefusedIncomparableGTIDSets)); n != 1 {
		t.Errorf("%d refusal events, want 1", n)
	}
}

// gauge reads a gauge from reg, matching label pairs.
func gauge(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	return metricValue(t, reg, name, labels...)
}

// metricValue reads a gauge or counter from reg, matching label pairs.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if matches(m, labels) {
				if c := m.GetCounter(); c != nil {
					return c.GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("metric %s%v not found", name, labels)
	return 0
}

func matches(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// A clone that fails (the donor refuses the replication account) reports
// Bootstrapping=False/BootstrapFailed and Degraded=True/BootstrapFailed, and
// is retried; once the Secret is fixed the retry succeeds and both clear.
func TestFailedCloneIsReportedAndRetried(t *testing.T) {
	sites := threeSites[:2]
	e := newEnv(t, sites)
	e.exec("iad", "SET GLOBAL read_only = OFF", "CREATE DATABASE a", "SET GLOBAL super_read_only = ON")
	e.sites["iad"].PurgeBinaryLogs()
	setReplPassword := func(pw string) {
		s, err := e.kube.CoreV1().Secrets(e.ns).Get(context.Background(), secretName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Data["MYSQL_REPLICATION_PASSWORD"] = []byte(pw)
		if _, err := e.kube.CoreV1().Secrets(e.ns).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setReplPassword("wrong")
	e.startOperator()
	e.create(e.group(sites))

	g := e.waitCondition(v1alpha1.ConditionBootstrapping, metav1.ConditionFalse, v1alpha1.ReasonBootstrapFailed)
	if c := condition(g, v1alpha1.ConditionDegraded); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonBootstrapFailed || !contains(c.Message, "pdx") {
		t.Fatalf("Degraded %+v", c)
	}
	if ev := e.waitEvent(v1alpha1.EventCloneFailed, corev1.EventTypeWarning); contains(ev.Message, "wrong") {
		t.Fatalf("the Event carries the password: %q", ev.Message)
	}
	if c := condition(g, v1alpha1.ConditionBootstrapping); contains(c.Message, "wrong") {
		t.Fatalf("the condition carries the password: %q", c.Message)
	}

	setReplPassword(simtest.ReplPass)
	e.waitEvent(v1alpha1.EventCloneSucceeded, corev1.EventTypeNormal)
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.waitCondition(v1alpha1.ConditionBootstrapping, metav1.ConditionFalse, v1alpha1.ReasonNotBootstrapping)
	e.waitCondition(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonNotDegraded)
}
