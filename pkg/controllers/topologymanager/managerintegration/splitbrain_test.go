package managerintegration

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// splitBrainEnv: iad and pdx both writable, each with writes of its own,
// before the group exists (no active site on record).
func splitBrainEnv(t *testing.T) (*env, []siteDef) {
	sites := threeSites[:2]
	e := newEnv(t, sites)
	for _, s := range []string{"iad", "pdx"} {
		e.exec(s, "SET GLOBAL super_read_only = OFF", "SET GLOBAL read_only = OFF", "CREATE DATABASE own_"+s)
	}
	return e, sites
}

// Without sitePriorities the operator does not guess: nothing is fenced,
// Degraded=True/SplitBrain names the sites, one Warning is recorded.
func TestSplitBrainWithoutPrioritiesIsReportedNotResolved(t *testing.T) {
	e, sites := splitBrainEnv(t)
	e.startOperator()
	e.create(e.group(sites))
	g := e.waitCondition(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonSplitBrain)
	if msg := condition(g, v1alpha1.ConditionDegraded).Message; !contains(msg, "iad", "pdx", "sitePriorities") {
		t.Fatalf("Degraded message %q", msg)
	}
	e.waitEvent(v1alpha1.EventSplitBrainDetected, corev1.EventTypeWarning)
	time.Sleep(2 * time.Second) // ten more polls
	g = e.get()
	if g.Status.ActiveSite != "" || g.Status.Transition != nil || g.Status.TopologyGeneration != 0 {
		t.Fatalf("status %+v", g.Status)
	}
	for name, s := range e.sites {
		if snap := s.Snapshot(); snap.ReadOnly || snap.SuperReadOnly {
			t.Fatalf("%s was fenced without sitePriorities", name)
		}
	}
	if n := len(e.eventsOf(v1alpha1.EventSplitBrainDetected)); n != 1 {
		t.Errorf("%d SplitBrainDetected events, want 1", n)
	}
	if n := len(e.eventsOf(v1alpha1.EventSiteFenced)); n != 0 {
		t.Errorf("%d sites fenced", n)
	}
}

// With sitePriorities the first writable entry is kept and published; the
// other is fenced and its own writes are kept as a divergence record, not
// replicated over.
func TestSplitBrainWithPrioritiesKeepsTheFirstWritableEntry(t *testing.T) {
	e, sites := splitBrainEnv(t)
	e.startOperator()
	g := e.group(sites)
	g.Spec.SplitBrainPolicy = &v1alpha1.SplitBrainPolicySpec{SitePriorities: []string{"pdx", "iad"}}
	e.create(g)
	g = e.waitActive("pdx", 1)
	if s := e.sites["iad"].Snapshot(); !s.SuperReadOnly {
		t.Fatal("iad is still writable")
	}
	if s := e.sites["pdx"].Snapshot(); s.ReadOnly {
		t.Fatal("pdx, the kept site, is read-only")
	}
	e.waitEvent(v1alpha1.EventSplitBrainResolutionStarted, corev1.EventTypeWarning)
	e.waitEvent(v1alpha1.EventSplitBrainResolved, corev1.EventTypeNormal)
	iadOwn := e.sites["iad"].Snapshot().Executed.Subtract(e.sites["pdx"].Snapshot().Executed)
	if iadOwn.IsEmpty() {
		t.Fatal("test setup: iad has no writes of its own")
	}
	eventually(t, waitFor, "iad's own writes recorded as divergence", func() error {
		st := site(e.get(), "iad")
		if st.DivergentGTID != iadOwn.OneLine() || st.DivergenceComparedTo != "pdx" {
			return fmt.Errorf("iad %+v", st)
		}
		return nil
	})
	if got := e.sites["iad"].Snapshot().Executed; !iadOwn.IsSubsetOf(got) {
		t.Fatalf("iad lost its own writes: %s", got.OneLine())
	}
}
