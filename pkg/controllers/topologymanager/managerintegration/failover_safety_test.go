package managerintegration

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
)

// waitContact commits a transaction on the active site and waits until
// every replica applied it and its channel heard from its source (a
// heartbeat or the queued transaction in
// performance_schema.replication_connection_status, as the simulated
// server reports it). Before that a candidate's lag is unknown (nothing
// heard, nothing applied since its channel started) and the operator
// refuses to promote it automatically (docs/topology.md).
func (e *env) waitContact(active string) {
	e.t.Helper()
	e.exec(active, "CREATE DATABASE IF NOT EXISTS channel_contact")
	want := e.sites[active].Snapshot().Executed
	for name, s := range e.sites {
		if name == active {
			continue
		}
		db := adminDB(e.t, s)
		eventually(e.t, waitFor, "site "+name+" applied the contact transaction and heard from its source", func() error {
			if got := s.Snapshot().Executed; !want.IsSubsetOf(got) {
				return fmt.Errorf("executed %s, want %s", got, want)
			}
			var hb, queued string
			err := db.QueryRow("SELECT LAST_HEARTBEAT_TIMESTAMP, LAST_QUEUED_TRANSACTION FROM performance_schema.replication_connection_status").Scan(&hb, &queued)
			switch {
			case err == sql.ErrNoRows:
				return fmt.Errorf("no channel")
			case err != nil:
				return err
			case strings.HasPrefix(hb, "0000-00-00") && queued == "":
				return fmt.Errorf("no heartbeat, nothing queued")
			}
			return nil
		})
	}
}

func (e *env) annotateOverride(site string) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"%s:confirm=%s"}}}`, topologymanager.AnnotationFailoverOverride, site, groupName)
	if _, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Patch(context.Background(), groupName, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// A zone loss takes the primary and the leader together: the new leader
// starts with nothing in memory, and the candidate's applier had stopped
// on an error while the primary kept committing (Seconds_Behind_Source is
// NULL). The lag is judged from what the candidate's own server holds
// (performance_schema: what it queued against what it applied), so the
// new leader refuses to promote it; with the override it is promoted after
// its applier was started again and applied everything it received.
func TestNewLeaderJudgesLagFromTheCandidate(t *testing.T) {
	sites := threeSites[:2]
	e := newEnv(t, sites)
	first := e.startOperator(withFailover)
	g := e.failoverGroup(sites)
	g.Spec.Replication = &v1alpha1.ReplicationSpec{MaxLagSeconds: ptr.To(int32(2))}
	e.create(g)
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.waitContact("iad")
	if err := e.sites["pdx"].StopApplier(1062, "Duplicate entry '1' for key 'PRIMARY'"); err != nil {
		t.Fatal(err)
	}
	for i := range 40 { // 4 s of commits pdx receives and does not apply
		e.exec("iad", fmt.Sprintf("CREATE DATABASE w%d", i))
		time.Sleep(100 * time.Millisecond)
	}
	eventually(t, waitFor, "pdx received iad's writes", func() error {
		if want := e.sites["iad"].Snapshot().Executed; !want.IsSubsetOf(e.sites["pdx"].Snapshot().Retrieved) {
			return fmt.Errorf("pdx retrieved %s, iad has %s", e.sites["pdx"].Snapshot().Retrieved, want)
		}
		return nil
	})
	first.stop()
	e.sites["iad"].Crash()
	e.startOperator(withFailover) // the new leader: empty memory
	g = e.waitCondition(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonFailoverRefused)
	if msg := condition(g, v1alpha1.ConditionDegraded).Message; !contains(msg, "pdx", "far behind", "failover-override", "CandidateLagging") {
		t.Fatalf("Degraded message %q", msg)
	}
	e.waitEvent(v1alpha1.EventFailoverRefused, corev1.EventTypeWarning)
	time.Sleep(time.Second)
	if g := e.get(); g.Status.ActiveSite != "iad" || g.Status.Transition != nil {
		t.Fatalf("a candidate far behind was promoted by the new leader: %+v", g.Status)
	}
	e.annotateOverride("pdx")
	e.waitActive("pdx", 2)
	// Promoted only after it applied everything it had received: its
	// applier was started again (START REPLICA SQL_THREAD).
	want := e.sites["iad"].Snapshot().Executed
	if got := e.sites["pdx"].Snapshot().Executed; !want.IsSubsetOf(got) {
		t.Fatalf("pdx promoted at %s, lacking %s it had received", got, want.Subtract(got))
	}
}

// A candidate that loses its relay log during the catch-up holds less
// than when it was chosen: it is not promoted, and at the catch-up bound
// (maxLagSeconds + 5 pollIntervals) the failover ends CatchUpTimedOut with
// what it would lose, automatic failover held, and no writer made.
func TestCatchUpTimesOutWhenTheCandidateLostItsRelayLog(t *testing.T) {
	sites := threeSites[:2]
	e := newEnv(t, sites)
	lost := make(chan string, 1)
	e.startOperator(withFailover, func(o *topologymanager.Options) {
		o.AfterIntentWrite = func(g *v1alpha1.MysqlFailoverGroup) {
			if tr := g.Status.Transition; tr != nil && tr.Kind == v1alpha1.TransitionAutomatic && tr.Step == v1alpha1.StepCatchingUp {
				set, err := e.sites["pdx"].DropRelayLog()
				msg := set.String()
				if err != nil {
					msg = err.Error()
				}
				select {
				case lost <- msg:
				default:
				}
			}
		}
	})
	g := e.failoverGroup(sites)
	g.Spec.Replication = &v1alpha1.ReplicationSpec{MaxLagSeconds: ptr.To(int32(10))}
	e.create(g)
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.waitContact("iad")
	if err := e.sites["pdx"].InjectApplyLag(time.Hour); err != nil { // received, never applied in time
		t.Fatal(err)
	}
	e.exec("iad", "CREATE DATABASE received_only")
	eventually(t, waitFor, "pdx received iad's write", func() error {
		if want := e.sites["iad"].Snapshot().Executed; !want.IsSubsetOf(e.sites["pdx"].Snapshot().Retrieved) {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	e.sites["iad"].Crash()
	var dropped string
	select {
	case dropped = <-lost:
	case <-time.After(waitFor):
		t.Fatalf("CatchingUp never recorded; Degraded: %s", condition(e.get(), v1alpha1.ConditionDegraded).Message)
	}
	if dropped == "" {
		t.Fatal("the relay log held nothing to lose")
	}
	g = e.waitCondition(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonCatchUpTimedOut)
	if h := g.Status.AutomaticFailoverHold; h == nil || h.Reason != "FailoverCatchUpTimedOut" {
		t.Fatalf("hold %+v", h)
	}
	if g.Status.ActiveSite != "iad" || g.Status.Transition != nil || g.Status.LastFailover != nil {
		t.Fatalf("status %+v", g.Status)
	}
	e.waitEvent(v1alpha1.EventFailoverCatchUpTimedOut, corev1.EventTypeWarning)
	if s := e.sites["pdx"].Snapshot(); !s.SuperReadOnly {
		t.Fatal("pdx was made writable short of what it held when chosen")
	}
}
