//go:build e2e

package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// fault posts to a site's simulator fault API, as the printed playground
// commands do.
func fault(t *testing.T, site, what string) {
	t.Helper()
	s, ok := pg.Site(site)
	if !ok {
		t.Fatalf("no site %s", site)
	}
	resp, err := http.Post(s.ControlURL()+"/"+what, "", nil)
	if err != nil {
		t.Fatalf("%s %s: %v", what, site, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s", what, site, resp.Status)
	}
}

func siteStatus(g *v1alpha1.MysqlFailoverGroup, name string) v1alpha1.SiteStatus {
	for _, s := range g.Status.Sites {
		if s.Name == name {
			return s
		}
	}
	return v1alpha1.SiteStatus{}
}

// restartIfDown restarts a crashed simulator, so a failed test does not
// leave its site down for the next one.
func restartIfDown(site string) {
	s, ok := pg.Site(site)
	if !ok {
		return
	}
	resp, err := http.Get(s.ControlURL() + "/state")
	if err != nil {
		return
	}
	var st struct{ Running bool }
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err == nil && !st.Running {
		if resp, err := http.Post(s.ControlURL()+"/restart", "", nil); err == nil {
			resp.Body.Close()
		}
	}
}

// waitCooldown waits until a new automatic failover is allowed.
func waitCooldown(t *testing.T) {
	t.Helper()
	g := group(t)
	if g.Status.LastFailover == nil || g.Spec.FailoverCooldown == nil {
		return
	}
	until := g.Status.LastFailover.Time.Add(g.Spec.FailoverCooldown.Duration + 2*time.Second)
	if d := time.Until(until); d > 0 {
		t.Logf("waiting %s for failoverCooldown", d.Round(time.Second))
		time.Sleep(d)
	}
}

// failedOver waits until the active site is no longer from, DNS and the
// primary pod label follow it, and returns it.
func failedOver(t *testing.T, from string, timeout time.Duration) string {
	t.Helper()
	var to string
	eventually(t, timeout, func() string {
		g := group(t)
		to = g.Status.ActiveSite
		if to == from || to == "" {
			return "active site still " + from
		}
		if dns, err := pg.DNSSite(context.Background()); err != nil || dns != to {
			return fmt.Sprintf("DNS points at %q (%v), want %s", dns, err, to)
		}
		pods, err := pg.CP.Client().CoreV1().Pods(pg.Namespace).List(context.Background(),
			metav1.ListOptions{LabelSelector: "bloodraven.shipstream.io/active=true"})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].Labels["bloodraven.shipstream.io/site"] != to {
			return fmt.Sprintf("primary Service selector matches %d pods, want only %s's", len(pods.Items), to)
		}
		return ""
	})
	return to
}

// rejoined waits until site is a healthy follower of the active site, or
// reports it blocked with the transactions it holds that the active site
// lacks.
func rejoined(t *testing.T, site string) v1alpha1.SiteStatus {
	t.Helper()
	var st v1alpha1.SiteStatus
	eventually(t, 90*time.Second, func() string {
		g := group(t)
		st = siteStatus(g, site)
		if st.DivergentGTID != "" {
			return ""
		}
		ready := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
		if st.State == "ReadOnly" && st.Replication == "Running" && ready != nil && ready.Status == metav1.ConditionTrue {
			return ""
		}
		return fmt.Sprintf("site %s: state %s replication %s source %s", site, st.State, st.Replication, st.SourceHost)
	})
	return st
}

// The primary's mysqld crashes under write load: the group fails over to
// the other PrimaryCandidate, DNS and the primary Service follow, the
// migration lease and failover hold of a migration running under
// bloodraven-deploy are revoked with TopologyChanged (the client stops the
// command and exits TopologyChanged), and the old primary
// comes back fenced and rejoins (or is blocked, never silently rejoined,
// if it holds acknowledged writes the new primary lacks).
func TestPrimaryCrashFailsOver(t *testing.T) {
	requireReady(t)
	waitCooldown(t)
	from := group(t).Status.ActiveSite
	gen := group(t).Status.TopologyGeneration
	l := startLoad(t)
	// A migration with its failover hold, under the deploy-lease client,
	// with a TTL long enough to outlast the failover: its first renewal
	// after the publication finds both leases revoked (409 TopologyChanged).
	migration := startDeployClient(t, 120*time.Second, "sleep", "600")
	eventually(t, 30*time.Second, func() string {
		if len(migration.records("command started")) == 0 {
			return "the migration command has not started"
		}
		return ""
	})

	crashAt := time.Now()
	fault(t, from, "crash")
	t.Cleanup(func() { restartIfDown(from) })
	to := failedOver(t, from, 90*time.Second)
	t.Logf("failover %s -> %s observed %s after the crash", from, to, time.Since(crashAt).Round(100*time.Millisecond))
	if g := group(t); g.Status.TopologyGeneration != gen+1 || g.Status.LastFailover == nil || g.Status.LastFailover.Target != to {
		t.Fatalf("after failover: topologyGeneration %d (was %d), lastFailover %+v", g.Status.TopologyGeneration, gen, g.Status.LastFailover)
	}

	const topologyChanged = 4
	code := migration.wait(t, 90*time.Second)
	if code != topologyChanged {
		t.Fatalf("bloodraven-deploy exit %d, want %d (TopologyChanged):\n%s", code, topologyChanged, migration.out.String())
	}
	migration.checkStoppedInTime(t, code)

	l.reachedNewPrimary(t, crashAt, to)
	l.bringBack(t, from, to, func() { fault(t, from, "restart") })
}

// The operator is SIGKILLed while a failover is in flight and started
// again: the recorded intent is finished exactly once (one generation step,
// one lastFailover), and a migration running under bloodraven-deploy is
// stopped before its last confirmed lease expiry. The primary is isolated
// rather than crashed: a crash is proven by its sidecar and the whole
// failover takes under a second, too short to kill the operator inside it,
// while an isolated primary holds the transition for the self-fence bound.
func TestOperatorKilledMidFailoverCompletesOnce(t *testing.T) {
	requireReady(t)
	waitCooldown(t)
	g := group(t)
	from, gen := g.Status.ActiveSite, g.Status.TopologyGeneration
	l := startLoad(t)
	// A migration runs under the deploy-lease client through all of it.
	migration := startDeployClient(t, 24*time.Second, "sleep", "600")
	eventually(t, 30*time.Second, func() string {
		if len(migration.records("command started")) == 0 {
			return "the migration command has not started"
		}
		return ""
	})
	cutAt := time.Now()
	heal := isolate(t, g, from)
	defer heal()
	eventually(t, 60*time.Second, func() string {
		if group(t).Status.Transition == nil {
			return "no transition recorded yet"
		}
		return ""
	})
	if err := pg.KillOperator(); err != nil {
		t.Fatal(err)
	}
	// Judged from the API server, not from the operator's log: the kill
	// landed while the transition was still recorded, unfinished.
	if g := group(t); g.Status.Transition == nil || g.Status.TopologyGeneration != gen {
		t.Fatalf("after the kill: transition %+v, generation %d (was %d): the failover was not in flight",
			g.Status.Transition, g.Status.TopologyGeneration, gen)
	}
	t.Logf("operator killed %s after the cut, mid-failover", time.Since(cutAt).Round(100*time.Millisecond))
	if err := pg.StartOperator(context.Background()); err != nil {
		t.Fatal(err)
	}
	to := failedOver(t, from, 120*time.Second)
	g = group(t)
	if g.Status.TopologyGeneration != gen+1 || g.Status.Transition != nil {
		t.Fatalf("after the resumed failover: topologyGeneration %d (was %d), transition %+v", g.Status.TopologyGeneration, gen, g.Status.Transition)
	}
	// The migration lost its authority (the topology changed, or renewals
	// went unconfirmed while the operator was down or the group unstable)
	// and its command was stopped in time.
	migration.checkStoppedInTime(t, migration.wait(t, 90*time.Second))
	l.reachedNewPrimary(t, cutAt, to)
	l.bringBack(t, from, to, heal)
	// Settled: nothing moves any more.
	time.Sleep(5 * time.Second)
	if g := group(t); g.Status.TopologyGeneration != gen+1 || g.Status.ActiveSite != to {
		t.Fatalf("later: active %s generation %d; want %s and %d", g.Status.ActiveSite, g.Status.TopologyGeneration, to, gen+1)
	}
}

// isolate cuts a site off (playground.CutOffSite) while it keeps running.
// The returned heal undoes it once; callers defer it.
func isolate(t *testing.T, g *v1alpha1.MysqlFailoverGroup, site string) (heal func()) {
	t.Helper()
	if err := pg.CutOffSite(g, site); err != nil {
		t.Fatal(err)
	}
	healed := false
	return func() {
		if !healed {
			healed = true
			if err := pg.ReconnectSite(site); err != nil {
				t.Error(err)
			}
		}
	}
}

// simFenced reads a simulator's super_read_only through its fault API.
func simFenced(t *testing.T, site string) bool {
	t.Helper()
	s, _ := pg.Site(site)
	resp, err := http.Get(s.ControlURL() + "/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct{ SuperReadOnly bool }
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.SuperReadOnly
}

// The primary is cut off from the operator and from its peers (isolate),
// while it keeps running: its sidecar fences it, the group fails over, and once the
// network heals the old primary rejoins as a follower.
func TestPrimaryPartitionedFencesItselfAndFailsOver(t *testing.T) {
	requireReady(t)
	waitCooldown(t)
	g := group(t)
	from, gen := g.Status.ActiveSite, g.Status.TopologyGeneration
	l := startLoad(t)
	cutAt := time.Now()
	heal := isolate(t, g, from)
	defer heal()
	eventually(t, 60*time.Second, func() string {
		if !simFenced(t, from) {
			return "the isolated primary " + from + " is still writable"
		}
		return ""
	})
	t.Logf("isolated primary fenced itself %s after the cut", time.Since(cutAt).Round(100*time.Millisecond))
	to := failedOver(t, from, 90*time.Second)
	t.Logf("failover %s -> %s published %s after the cut", from, to, time.Since(cutAt).Round(100*time.Millisecond))
	if g := group(t); g.Status.TopologyGeneration != gen+1 {
		t.Fatalf("topologyGeneration %d, want %d", g.Status.TopologyGeneration, gen+1)
	}
	l.reachedNewPrimary(t, cutAt, to)
	l.bringBack(t, from, to, heal)
}
