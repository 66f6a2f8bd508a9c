package managerintegration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/stability"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// annotate sets the reclone-site annotation as a human (or kubectl) would.
func (e *env) annotateReclone(value string) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g := e.get()
		if g.Annotations == nil {
			g.Annotations = map[string]string{}
		}
		g.Annotations[topology.AnnotationRecloneSite] = value
		_, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Update(context.Background(), g, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) waitRecloneCleared() {
	e.t.Helper()
	eventually(e.t, waitFor, "reclone annotation cleared", func() error {
		if v, ok := e.get().Annotations[topology.AnnotationRecloneSite]; ok {
			return fmt.Errorf("annotation still %q", v)
		}
		return nil
	})
}

// A replica with errant transactions is reported (ReplicaAudit), a reclone
// request without the right gtidPrefix is refused and cleared with its data
// intact, and a valid one records the divergent set (Event and
// status.recloneHistory) before the clone replaces the replica's data; the
// group then returns to Ready.
func TestRecloneAnnotation(t *testing.T) {
	sites := threeSites[:2]
	e := newEnv(t, sites)
	e.startOperator()
	e.create(e.group(sites))
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.exec("iad", "CREATE DATABASE a")

	errant := e.sites["pdx"].InjectErrantTransactions(2)
	g := e.waitCondition(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonDivergentTransactions)
	if st := site(g, "pdx"); st.DivergentGTID != errant.OneLine() || st.DivergenceDetectedBy != v1alpha1.DivergenceByReplicaAudit || st.RecoveryState != "" {
		t.Fatalf("pdx %+v", st)
	}
	// A replica's report is not a blocked recovery, and the deployment API
	// does not call the group unstable for it.
	if c := condition(g, v1alpha1.ConditionRecoveryPending); c != nil && c.Status == metav1.ConditionTrue {
		t.Fatalf("RecoveryPending %+v for a replica's divergence", c)
	}
	if v := stability.Evaluate(g); !v.Stable {
		t.Fatalf("deployment API stability %+v for a replica's divergence report", v)
	}
	uid := string(g.UID)
	pdxUUID := e.sites["pdx"].ServerUUID()

	// Refused: the cold-reclone form for a diverged site.
	e.annotateReclone("pdx:confirm=" + groupName + ":uid=" + uid)
	ev := e.waitEvent(v1alpha1.EventRecloneRejected, corev1.EventTypeWarning)
	if !contains(ev.Message, "gtidPrefix", errant.OneLine()) {
		t.Fatalf("RecloneRejected message %q", ev.Message)
	}
	e.waitRecloneCleared()
	// Refused: the wrong uid (a value built for another incarnation).
	e.annotateReclone("pdx:confirm=" + groupName + ":uid=00000000-0000-0000-0000-000000000000:gtidPrefix=" + pdxUUID[:8])
	eventually(t, waitFor, "second RecloneRejected", func() error {
		for _, ev := range e.eventsOf(v1alpha1.EventRecloneRejected) {
			if strings.Contains(ev.Message, "uid") && strings.Contains(ev.Message, "not this group's uid") {
				return nil
			}
		}
		return fmt.Errorf("no rejection naming the uid")
	})
	e.waitRecloneCleared()
	if got := e.sites["pdx"].Snapshot().Executed; !errant.IsSubsetOf(got) {
		t.Fatalf("a refused reclone destroyed pdx's transactions: %s", got.OneLine())
	}
	if n := len(e.eventsOf(v1alpha1.EventCloneStarted)); n != 0 {
		t.Fatalf("%d clones started by refused requests", n)
	}

	// Accepted.
	e.annotateReclone("pdx:confirm=" + groupName + ":uid=" + uid + ":gtidPrefix=" + pdxUUID[:8])
	req := e.waitEvent(v1alpha1.EventRecloneRequested, corev1.EventTypeWarning)
	if !contains(req.Message, "pdx", errant.OneLine()) {
		t.Fatalf("RecloneRequested message %q does not carry the discarded set", req.Message)
	}
	e.waitEvent(v1alpha1.EventCloneSucceeded, corev1.EventTypeNormal)
	e.waitRecloneCleared()
	iad := e.sites["iad"].Snapshot().Executed
	eventually(t, waitFor, "pdx holds the active site's data", func() error {
		got := e.sites["pdx"].Snapshot().Executed
		if !got.Equal(iad) && !iad.IsSubsetOf(got) || !got.Intersect(errant).IsEmpty() {
			return fmt.Errorf("pdx has %s, iad %s", got.OneLine(), iad.OneLine())
		}
		return nil
	})
	g = e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	h := g.Status.RecloneHistory
	if len(h) != 1 || h[0].Site != "pdx" || h[0].Donor != "iad" || h[0].DiscardedGTID != errant.OneLine() ||
		h[0].DiscardedTransactionCount != 2 || h[0].DivergenceDetectedBy != v1alpha1.DivergenceByReplicaAudit {
		t.Fatalf("recloneHistory %+v", h)
	}
	if st := site(g, "pdx"); st.DivergentGTID != "" {
		t.Fatalf("pdx still reported divergent: %+v", st)
	}
	if c := condition(g, v1alpha1.ConditionBootstrapping); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNotBootstrapping {
		t.Fatalf("Bootstrapping %+v", c)
	}
	// Replication works again after the clone.
	e.exec("iad", "CREATE DATABASE b")
	want := e.sites["iad"].Snapshot().Executed
	eventually(t, waitFor, "pdx replicates after the reclone", func() error {
		if got := e.sites["pdx"].Snapshot().Executed; !want.IsSubsetOf(got) {
			return fmt.Errorf("pdx has %s", got.OneLine())
		}
		return nil
	})
}
