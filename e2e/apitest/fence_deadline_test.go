package apitest

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// TestSelfFenceDeadlineThroughTheAPIServer: status.transition.sourceFenceDeadline
// keeps its microseconds through the API server, and a transition in
// flight written by an operator build that stored the deadline to the
// second ("...:20Z") still decodes in this build's typed client, the path
// its informers read (an upgrade may meet such a transition).
func TestSelfFenceDeadlineThroughTheAPIServer(t *testing.T) {
	ns := cp.NewNamespace(t)
	cs := clientset(t).ShipstreamV1alpha1().MysqlFailoverGroups(ns)
	dc := dynamicClient(t).Resource(resources["MysqlFailoverGroup"]).Namespace(ns)
	if _, err := create(t, dynamicClient(t), ns, object(t, minimalGroup)); err != nil {
		t.Fatal(err)
	}
	g, err := cs.Get(ctx(t), "orders", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := metav1.NewTime(time.Now().Truncate(time.Second))
	precise := v1alpha1.NewPreciseTime(start.Add(20*time.Second + 123456*time.Microsecond))
	g.Status = v1alpha1.MysqlFailoverGroupStatus{ObservedGeneration: g.Generation, ActiveSite: "iad", TopologyGeneration: 3,
		Transition: &v1alpha1.Transition{ID: "0b0d5a52-6f4f-4b8e-9a53-5f0d4e0f2a11", Kind: v1alpha1.TransitionAutomatic, SourceSite: "iad",
			TargetSite: "pdx", TopologyGeneration: 4, Step: v1alpha1.StepAwaitingSelfFence, StartTime: start, SourceFenceDeadline: &precise}}
	if _, err := cs.UpdateStatus(ctx(t), g, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	if back := deadline(t, cs.Get); !back.Equal(precise.Time) {
		t.Fatalf("stored deadline %s, written %s", back, precise.Time)
	}

	// As an older build rewrites it: the same field, whole seconds.
	u, err := dc.Get(ctx(t), "orders", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	whole := start.Add(20 * time.Second).UTC()
	if err := unstructured.SetNestedField(u.Object, whole.Format(time.RFC3339), "status", "transition", "sourceFenceDeadline"); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.UpdateStatus(ctx(t), u, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("UpdateStatus with a whole-second deadline: %v", err)
	}
	if back := deadline(t, cs.Get); !back.Equal(whole) {
		t.Fatalf("deadline written as %s read back as %s", whole.Format(time.RFC3339), back)
	}
	if l, err := cs.List(ctx(t), metav1.ListOptions{}); err != nil || len(l.Items) != 1 {
		t.Fatalf("list with a whole-second deadline: %d items, %v", len(l.Items), err)
	}
}

// deadline reads the group back through the typed client.
func deadline(t *testing.T, get func(ctx context.Context, name string, o metav1.GetOptions) (*v1alpha1.MysqlFailoverGroup, error)) time.Time {
	t.Helper()
	g, err := get(ctx(t), "orders", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("typed read: %v", err)
	}
	if g.Status.Transition == nil || g.Status.Transition.SourceFenceDeadline == nil {
		t.Fatalf("transition %+v: no deadline", g.Status.Transition)
	}
	return g.Status.Transition.SourceFenceDeadline.Time
}
