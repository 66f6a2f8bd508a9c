package groupobjects

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	shipfake "github.com/shipstream/bloodraven/generated/clientset/versioned/fake"
	shipinformers "github.com/shipstream/bloodraven/generated/informers/externalversions"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/operator"
	"github.com/shipstream/bloodraven/pkg/render"
)

// steady is a controller on fake clients (pure logic only: the real API
// server is exercised by the integration package) with the sample group
// reconciled until nothing changes.
type steady struct {
	c    *Controller
	kube *kubefake.Clientset
	key  cache.ObjectName
}

func newSteady(tb testing.TB) *steady {
	tb.Helper()
	b, err := os.ReadFile("../../../deploy/samples/mysqlfailovergroup.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	var g v1alpha1.MysqlFailoverGroup
	if err := yaml.Unmarshal(b, &g); err != nil {
		tb.Fatal(err)
	}
	g.Namespace, g.UID, g.Generation = "shop", types.UID("uid-1"), 1
	g.Status.ActiveSite = "iad"
	nodes := []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-iad", Labels: map[string]string{"bloodraven.shipstream.io/site": "iad"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-pdx", Labels: map[string]string{"bloodraven.shipstream.io/site": "pdx"}}},
	}
	kube := kubefake.NewClientset(nodes...)
	ship := shipfake.NewSimpleClientset(&g)
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	inf := &operator.Informers{
		Shipstream: map[string]shipinformers.SharedInformerFactory{"shop": shipinformers.NewSharedInformerFactoryWithOptions(ship, 0, shipinformers.WithNamespace("shop"))},
		Kube:       map[string]kubeinformers.SharedInformerFactory{"shop": kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace("shop"))},
	}
	d := operator.Deps{Kube: kube, Shipstream: ship, Dynamic: dyn, Informers: inf, Recorder: &record.FakeRecorder{}}
	c, err := New(d, Options{SidecarImage: "sidecar:1", DNSCRDRecheck: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	inf.Start(ctx.Done())
	if !inf.WaitForSync(ctx) {
		tb.Fatal("informers did not sync")
	}
	s := &steady{c: c, kube: kube, key: cache.NewObjectName("shop", g.Name)}
	// Reconcile until a pass writes nothing (each pass waits for the
	// informers to see the previous pass's writes).
	for i := 0; ; i++ {
		if i == 10 {
			tb.Fatal("no steady state after 10 passes")
		}
		if s.writes(tb) == 0 {
			return s
		}
	}
}

// writes runs one reconcile and counts the API writes it made.
func (s *steady) writes(tb testing.TB) int {
	tb.Helper()
	before := len(s.kube.Actions())
	if _, err := s.c.reconcile(context.Background(), s.key); err != nil {
		tb.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // let the fake watches deliver
	n := 0
	for _, a := range s.kube.Actions()[before:] {
		switch a.(type) {
		case k8stesting.CreateAction, k8stesting.UpdateAction, k8stesting.PatchAction, k8stesting.DeleteAction:
			n++
		}
	}
	return n
}

// A group whose objects match its spec is reconciled without a single
// write: a pass must not mistake its own output for drift.
func TestSteadyStateWritesNothing(t *testing.T) {
	s := newSteady(t)
	if n := s.writes(t); n != 0 {
		t.Fatalf("a pass over a settled group made %d writes", n)
	}
	n, _ := s.kube.CoreV1().Nodes().Get(context.Background(), "n-pdx", metav1.GetOptions{})
	if !render.HasTaint(n, render.TaintKey("shop", "orders")) {
		t.Errorf("pdx's node not tainted: %+v", n.Spec.Taints)
	}
}

// BenchmarkReconcileSteadyState is the CPU cost of one pass over a settled
// three-site group (render, compare, no writes): what a periodic
// re-reconcile costs per group.
func BenchmarkReconcileSteadyState(b *testing.B) {
	s := newSteady(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.c.reconcile(ctx, s.key); err != nil {
			b.Fatal(err)
		}
	}
}
