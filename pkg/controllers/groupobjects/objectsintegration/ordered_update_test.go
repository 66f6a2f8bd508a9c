package objectsintegration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/render"
)

// The ordered update as the resource side runs it: followers first, each
// Ready for 30 s before the next; a refused handoff while the only
// candidate holds divergent transactions; the handoff claim written once;
// a failed handoff retried a minute after it ended; and, once the
// (simulated) planned failover moved the active site, the former primary
// rolled and the phase cleared. The handoff itself is the topology
// manager's, which does not run here: the test writes its outcome.
func TestOrderedUpdateRollsFollowersThenHandsOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := sample(t) // iad, pdx PrimaryCandidate; reader ReadOnly; sitePriorities [iad, pdx]; maxLagWait 2m
	g.Spec.Backup = nil
	g = e.createGroup(g)
	sites := []string{"iad", "pdx", "reader"}
	e.waitPods(g.Name, sites)
	e.setStatus(g.Name, func(st *v1alpha1.MysqlFailoverGroupStatus) {
		st.ActiveSite = "iad"
		st.Sites = []v1alpha1.SiteStatus{
			{Name: "iad", Replication: v1alpha1.ReplicationNotReplicating},
			{Name: "pdx", Replication: v1alpha1.ReplicationRunning},
			{Name: "reader", Replication: v1alpha1.ReplicationRunning},
		}
	})
	for _, s := range sites {
		e.markReadySince(g.Name, s, time.Now().Add(-time.Minute))
	}
	e.waitCondition(g.Name, "Updating", metav1.ConditionFalse, v1alpha1.ReasonUpToDate)
	before := e.snapshot(g.Name, sites)

	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) { g.Spec.MySQLConf["max_connections"] = "700" })
	e.waitRolled(g.Name, "pdx", before["pdx"])
	e.waitPhase(g.Name, v1alpha1.UpdateRollingFollowers)
	unchanged(t, e, g.Name, before, "iad", "reader")

	// pdx Ready for 31 s already: the reader goes next, iad stays.
	e.markReadySince(g.Name, "pdx", time.Now().Add(-31*time.Second))
	e.waitRolled(g.Name, "reader", before["reader"])
	unchanged(t, e, g.Name, before, "iad")

	// The only candidate holds transactions the active site lacks: once the
	// reader has been Ready for 30 s (a real wait, so the controller's own
	// requeue ends it) the rollout stalls instead of handing off.
	e.setStatus(g.Name, func(st *v1alpha1.MysqlFailoverGroupStatus) {
		siteStatus(st, "pdx").DivergentGTID = "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-2"
	})
	readerReady := time.Now()
	e.markReadySince(g.Name, "reader", readerReady)
	stalled := e.waitCondition(g.Name, "Updating", metav1.ConditionTrue, v1alpha1.ReasonOrderedUpdateStalled)
	if !strings.Contains(stalled.Message, "pdx holds transactions the active site lacks") {
		t.Errorf("stall message %q does not name the divergent candidate", stalled.Message)
	}
	if got := e.group(g.Name); got.Status.PlannedFailover != nil || got.Status.UpdatePhase != v1alpha1.UpdateRollingFollowers {
		t.Fatalf("handoff started despite the divergent candidate: phase %q, claim %+v", got.Status.UpdatePhase, got.Status.PlannedFailover)
	}
	unchanged(t, e, g.Name, before, "iad")

	// Divergence resolved: the handoff claim and the phase, in one write.
	e.setStatus(g.Name, func(st *v1alpha1.MysqlFailoverGroupStatus) { siteStatus(st, "pdx").DivergentGTID = "" })
	first := e.waitClaim(g.Name, "")
	if first.TargetSite != "pdx" || first.SourceSite != "iad" || first.Phase != v1alpha1.PlannedFailoverAdmitting ||
		first.MaxLagWait == nil || first.MaxLagWait.Duration != 2*time.Minute {
		t.Errorf("claim %+v: want pdx from iad, Admitting, maxLagWait 2m (spec.plannedFailover)", first)
	}
	if first.RequestTime == nil || first.RequestTime.Time.Before(readerReady.Add(30*time.Second).Truncate(time.Second)) {
		t.Errorf("handoff requested at %v, before the reader had been Ready 30 s (since %v)", first.RequestTime, readerReady)
	}
	e.waitEvent(v1alpha1.EventOrderedUpdateHandoffStarted, corev1.EventTypeNormal)
	time.Sleep(2 * time.Second) // more passes: the claim must not be rewritten
	if c := e.group(g.Name).Status.PlannedFailover; c == nil || c.RunID != first.RunID || c.Phase != v1alpha1.PlannedFailoverAdmitting {
		t.Fatalf("claim changed without the manager: %+v", c)
	}
	if n := e.eventCount(v1alpha1.EventOrderedUpdateHandoffStarted); n != 1 {
		t.Errorf("%d %s Events, want 1", n, v1alpha1.EventOrderedUpdateHandoffStarted)
	}
	unchanged(t, e, g.Name, before, "iad")

	// The planned failover fails (as the manager would record it), 50 s
	// ago: the phase goes back to RollingFollowers and the handoff is
	// retried once the minute since its end is over, not earlier.
	failedAt := time.Now().Add(-50 * time.Second).Truncate(time.Second) // as stored
	e.endClaim(g.Name, v1alpha1.PlannedFailoverFailed, failedAt)
	e.waitPhase(g.Name, v1alpha1.UpdateRollingFollowers)
	e.waitEvent(v1alpha1.EventOrderedUpdateHandoffFailed, corev1.EventTypeWarning)
	if c := e.group(g.Name).Status.PlannedFailover; c.RunID != first.RunID {
		t.Fatalf("handoff retried at once: claim %+v", c)
	}
	second := e.waitClaim(g.Name, first.RunID)
	if d := second.RequestTime.Sub(failedAt); d < time.Minute {
		t.Errorf("handoff retried %s after the failed run ended, want at least 1m", d)
	}
	unchanged(t, e, g.Name, before, "iad")

	// The manager hands over: pdx active. The former primary rolls.
	e.endClaim(g.Name, v1alpha1.PlannedFailoverSucceeded, time.Now())
	e.waitRolled(g.Name, "iad", before["iad"])
	e.waitPhase(g.Name, v1alpha1.UpdateRollingFormerPrimary)
	e.markReadySince(g.Name, "iad", time.Now().Add(-31*time.Second))
	e.waitPhase(g.Name, "")
	e.waitCondition(g.Name, "Updating", metav1.ConditionFalse, v1alpha1.ReasonUpToDate)
	if c := e.group(g.Name).Status.PlannedFailover; c.RunID != second.RunID {
		t.Errorf("a new claim after the update finished: %+v", c)
	}
}

// A rolled follower that never becomes Ready stalls the update: Updating
// says so (naming the site), a Warning Event records it, nothing else rolls
// and the active site is untouched; once the pod is Ready and stays so the
// update moves on.
func TestOrderedUpdateStallsOnAPodThatIsNotReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := sample(t)
	g.Spec.Backup = nil
	g = e.createGroup(g)
	sites := []string{"iad", "pdx", "reader"}
	e.waitPods(g.Name, sites)
	e.setStatus(g.Name, func(st *v1alpha1.MysqlFailoverGroupStatus) { st.ActiveSite = "iad" })
	for _, s := range sites {
		e.markReadySince(g.Name, s, time.Now().Add(-time.Minute))
	}
	e.waitCondition(g.Name, "Updating", metav1.ConditionFalse, v1alpha1.ReasonUpToDate)
	before := e.snapshot(g.Name, sites)

	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) { g.Spec.MySQLConf["max_connections"] = "800" })
	e.waitRolled(g.Name, "pdx", before["pdx"])
	// No kubelet: the new pod never becomes Ready.
	stalled := e.waitCondition(g.Name, "Updating", metav1.ConditionTrue, v1alpha1.ReasonOrderedUpdateStalled)
	for _, want := range []string{"site pdx", "has not been Ready since", "the active site iad keeps serving"} {
		if !strings.Contains(stalled.Message, want) {
			t.Errorf("stall message %q lacks %q", stalled.Message, want)
		}
	}
	ev := e.waitEvent(v1alpha1.EventOrderedUpdateStalled, corev1.EventTypeWarning)
	if !strings.Contains(ev.Message, "site pdx") {
		t.Errorf("stall Event %q does not name the site", ev.Message)
	}
	got := e.group(g.Name)
	if got.Status.UpdatePhase != v1alpha1.UpdateRollingFollowers || got.Status.PlannedFailover != nil {
		t.Errorf("stalled update: phase %q, claim %+v", got.Status.UpdatePhase, got.Status.PlannedFailover)
	}
	unchanged(t, e, g.Name, before, "iad", "reader")

	e.markReadySince(g.Name, "pdx", time.Now().Add(-31*time.Second))
	e.waitRolled(g.Name, "reader", before["reader"])
	unchanged(t, e, g.Name, before, "iad")
	if c := condition(e.group(g.Name), "Updating"); c == nil || c.Reason == v1alpha1.ReasonOrderedUpdateStalled {
		t.Errorf("Updating still stalled after pdx became Ready: %+v", c)
	}
}

// setStatus applies mutate to the stored status, as the topology manager
// would, retrying on conflicts.
func (e *env) setStatus(name string, mutate func(*v1alpha1.MysqlFailoverGroupStatus)) {
	e.t.Helper()
	api := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g, err := api.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(&g.Status)
		_, err = api.UpdateStatus(context.Background(), g, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("update status of %s: %v", name, err)
	}
}

func siteStatus(st *v1alpha1.MysqlFailoverGroupStatus, site string) *v1alpha1.SiteStatus {
	for i := range st.Sites {
		if st.Sites[i].Name == site {
			return &st.Sites[i]
		}
	}
	st.Sites = append(st.Sites, v1alpha1.SiteStatus{Name: site})
	return &st.Sites[len(st.Sites)-1]
}

// endClaim ends the stored planned-failover claim as the manager would: a
// Succeeded run also moves the active site to its target.
func (e *env) endClaim(name string, phase v1alpha1.PlannedFailoverPhase, at time.Time) {
	e.t.Helper()
	e.setStatus(name, func(st *v1alpha1.MysqlFailoverGroupStatus) {
		c := st.PlannedFailover
		if c == nil {
			e.t.Fatalf("no claim to end")
		}
		done := metav1.NewTime(at)
		c.Phase, c.PhaseTime, c.CompletionTime, c.Admission = phase, &done, &done, nil
		c.Result = &v1alpha1.PlannedFailoverResult{Outcome: "RolledBack", Reason: "CatchUpTimedOut", Message: "test"}
		if phase == v1alpha1.PlannedFailoverSucceeded {
			c.Result = &v1alpha1.PlannedFailoverResult{Outcome: "Succeeded", Reason: "Completed"}
			st.ActiveSite = c.TargetSite
			st.TopologyGeneration++
		}
	})
}

// waitClaim waits for a stored claim whose run id is not notRun.
func (e *env) waitClaim(name, notRun string) *v1alpha1.PlannedFailoverStatus {
	e.t.Helper()
	var c *v1alpha1.PlannedFailoverStatus
	eventually(e.t, waitFor, "handoff claim", func() error {
		g := e.group(name)
		c = g.Status.PlannedFailover
		if c == nil || c.RunID == notRun {
			return fmt.Errorf("claim %+v, phase %q", c, g.Status.UpdatePhase)
		}
		if g.Status.UpdatePhase != v1alpha1.UpdateHandingOff {
			return fmt.Errorf("claim %s stored with updatePhase %q", c.RunID, g.Status.UpdatePhase)
		}
		return nil
	})
	return c
}

func (e *env) waitPhase(name string, want v1alpha1.UpdatePhase) {
	e.t.Helper()
	eventually(e.t, waitFor, fmt.Sprintf("updatePhase %q", want), func() error {
		if got := e.group(name).Status.UpdatePhase; got != want {
			return fmt.Errorf("updatePhase %q", got)
		}
		return nil
	})
}

// markReadySince sets the site's pod Ready with the given last transition,
// as a kubelet whose probes passed then would.
func (e *env) markReadySince(group, site string, since time.Time) {
	e.t.Helper()
	e.setPodReady(render.PodName(group, site), since)
}

// eventCount is how many times Events with reason were recorded on groups.
func (e *env) eventCount(reason string) int32 {
	e.t.Helper()
	list, err := e.kube.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var n int32
	for _, ev := range list.Items {
		if ev.Reason == reason && ev.InvolvedObject.Kind == "MysqlFailoverGroup" {
			n += max(ev.Count, 1)
		}
	}
	return n
}
