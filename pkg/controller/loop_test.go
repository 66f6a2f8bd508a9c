package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

func fastLimiter() workqueue.TypedRateLimiter[Key] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[Key](time.Millisecond, 20*time.Millisecond)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func runLoop(t *testing.T, l *Loop) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, 2) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func TestNewRequiresNameAndReconcile(t *testing.T) {
	if _, err := New(Options{Reconcile: func(context.Context, Key) (Result, error) { return Result{}, nil }}); err == nil {
		t.Error("New without Name must fail")
	}
	if _, err := New(Options{Name: "x"}); err == nil {
		t.Error("New without Reconcile must fail")
	}
}

func TestErrorsRequeueWithBackoffUntilSuccess(t *testing.T) {
	var mu sync.Mutex
	var calls []time.Time
	l, err := New(Options{Name: "t-errors", RateLimiter: fastLimiter(), Reconcile: func(ctx context.Context, k Key) (Result, error) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, time.Now())
		if len(calls) < 4 {
			return Result{}, errors.New("not yet")
		}
		return Result{}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	runLoop(t, l)
	l.Enqueue(cache.NewObjectName("ns", "a"))
	waitFor(t, "four reconciles", func() bool { mu.Lock(); defer mu.Unlock(); return len(calls) >= 4 })
	time.Sleep(100 * time.Millisecond) // a fifth call would show a missing Forget
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 4 {
		t.Fatalf("reconciled %d times, want 4 (3 failures then success)", len(calls))
	}
	// Exponential backoff: 1ms, 2ms, 4ms between the attempts.
	if gap := calls[3].Sub(calls[2]); gap < 4*time.Millisecond {
		t.Errorf("third retry after %v, want >= 4ms", gap)
	}
}

// A reconcile that fails yet asks to be polled again is polled at that
// cadence, not only at the failure backoff (which here grows to a minute).
func TestFailingReconcileKeepsItsPollCadence(t *testing.T) {
	var n atomic.Int32
	slow := workqueue.NewTypedItemExponentialFailureRateLimiter[Key](time.Minute, time.Hour)
	l, _ := New(Options{Name: "t-fail-poll", RateLimiter: slow, Reconcile: func(ctx context.Context, k Key) (Result, error) {
		n.Add(1)
		return Result{RequeueAfter: 20 * time.Millisecond}, errors.New("a Service could not be created")
	}})
	runLoop(t, l)
	l.Enqueue(cache.NewObjectName("ns", "a"))
	waitFor(t, "five polls despite the errors", func() bool { return n.Load() >= 5 })
}

func TestRequeueAfterPolls(t *testing.T) {
	var n atomic.Int32
	l, _ := New(Options{Name: "t-poll", RateLimiter: fastLimiter(), Reconcile: func(ctx context.Context, k Key) (Result, error) {
		if n.Add(1) < 3 {
			return Result{RequeueAfter: 30 * time.Millisecond}, nil
		}
		return Result{}, nil
	}})
	runLoop(t, l)
	start := time.Now()
	l.Enqueue(cache.NewObjectName("ns", "a"))
	waitFor(t, "three polls", func() bool { return n.Load() >= 3 })
	if el := time.Since(start); el < 60*time.Millisecond {
		t.Errorf("three polls took %v, want >= 2 x 30ms", el)
	}
	time.Sleep(80 * time.Millisecond)
	if got := n.Load(); got != 3 {
		t.Errorf("reconciled %d times, want 3", got)
	}
}

func TestRunWaitsForCacheSyncThenReconcilesExistingObjects(t *testing.T) {
	client := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}},
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	var mu sync.Mutex
	seen := map[string]bool{}
	l, _ := New(Options{Name: "t-sync", Reconcile: func(ctx context.Context, k Key) (Result, error) {
		mu.Lock()
		seen[k.String()] = true
		mu.Unlock()
		return Result{}, nil
	}})
	if err := l.Watch(factory.Core().V1().ConfigMaps().Informer(), l.EnqueueSelf()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, 1) }()
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	if len(seen) != 0 {
		t.Fatalf("reconciled %v before the informer started", seen)
	}
	mu.Unlock()
	factory.Start(ctx.Done())
	waitFor(t, "both objects", func() bool { mu.Lock(); defer mu.Unlock(); return seen["ns/a"] && seen["ns/b"] })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	factory.Shutdown()
}

func TestRunFailsWhenStoppedBeforeSync(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	l, _ := New(Options{Name: "t-nosync", Reconcile: func(context.Context, Key) (Result, error) { return Result{}, nil }})
	if err := l.Watch(factory.Core().V1().ConfigMaps().Informer(), l.EnqueueSelf()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Run(ctx, 1); err == nil {
		t.Fatal("Run must report caches that never synced")
	}
}

func TestOwnerMapperChecksKindGroupAndUID(t *testing.T) {
	gk := schema.GroupKind{Group: "shipstream.io", Kind: "MysqlFailoverGroup"}
	owners := map[string]types.UID{"orders": "uid-1"}
	get := func(ns, name string) (metav1.Object, error) {
		uid, ok := owners[name]
		if !ok {
			return nil, errors.New("not found")
		}
		return &metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}, nil
	}
	m := OwnerMapper(gk, get)
	yes := true
	child := func(apiVersion, kind, name string, uid types.UID, controller bool) metav1.Object {
		ref := metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid}
		if controller {
			ref.Controller = &yes
		}
		return &metav1.ObjectMeta{Namespace: "shop", Name: "child", OwnerReferences: []metav1.OwnerReference{ref}}
	}
	cases := []struct {
		name  string
		child metav1.Object
		want  int
	}{
		{"matching owner", child("shipstream.io/v1alpha1", "MysqlFailoverGroup", "orders", "uid-1", true), 1},
		{"owner recreated with another UID", child("shipstream.io/v1alpha1", "MysqlFailoverGroup", "orders", "uid-0", true), 0},
		{"owner gone", child("shipstream.io/v1alpha1", "MysqlFailoverGroup", "billing", "uid-1", true), 0},
		{"not the controller", child("shipstream.io/v1alpha1", "MysqlFailoverGroup", "orders", "uid-1", false), 0},
		{"other group", child("example.com/v1", "MysqlFailoverGroup", "orders", "uid-1", true), 0},
		{"other kind", child("shipstream.io/v1alpha1", "MysqlBackup", "orders", "uid-1", true), 0},
		{"no owner", &metav1.ObjectMeta{Namespace: "shop", Name: "x"}, 0},
	}
	for _, c := range cases {
		got := m(c.child)
		if len(got) != c.want {
			t.Errorf("%s: keys %v, want %d", c.name, got, c.want)
		}
		if c.want == 1 && got[0] != cache.NewObjectName("shop", "orders") {
			t.Errorf("%s: key %v", c.name, got[0])
		}
	}
}

func TestKeyOfTombstone(t *testing.T) {
	k, ok := KeyOf(cache.DeletedFinalStateUnknown{Key: "shop/orders"})
	if !ok || k != cache.NewObjectName("shop", "orders") {
		t.Fatalf("KeyOf(tombstone) = %v, %v", k, ok)
	}
	if _, ok := KeyOf("not an object"); ok {
		t.Fatal("KeyOf(string) must fail")
	}
}

func TestUpdateStatusIfChangedWritesOnlyChanges(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "7"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	client := fake.NewClientset(pod)
	pods := client.CoreV1().Pods("ns")
	status := func(p *corev1.Pod) any { return p.Status }
	ctx := context.Background()

	_, wrote, err := UpdateStatusIfChanged(ctx, pod, status, func(p *corev1.Pod) { p.Labels = map[string]string{"x": "y"} }, pods.UpdateStatus)
	if err != nil || wrote {
		t.Fatalf("metadata-only change: wrote=%v err=%v, want no write", wrote, err)
	}
	if n := len(client.Actions()); n != 0 {
		t.Fatalf("%d API calls for an unchanged status", n)
	}
	out, wrote, err := UpdateStatusIfChanged(ctx, pod, status, func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, pods.UpdateStatus)
	if err != nil || !wrote || out.Status.Phase != corev1.PodRunning {
		t.Fatalf("status change: wrote=%v err=%v out=%v", wrote, err, out.Status.Phase)
	}
	if pod.Status.Phase != corev1.PodPending {
		t.Fatal("the lister's object was modified in place")
	}
	acts := client.Actions()
	if len(acts) != 1 || acts[0].GetVerb() != "update" || acts[0].GetSubresource() != "status" {
		t.Fatalf("actions = %v, want one status update", acts)
	}
}

// A panicking reconcile fails its key, which is retried with backoff, and
// the workers go on serving the other keys.
func TestPanickingReconcileIsRetriedAndOthersContinue(t *testing.T) {
	var panics, others atomic.Int32
	l, _ := New(Options{Name: "t-panic", RateLimiter: fastLimiter(), Reconcile: func(ctx context.Context, k Key) (Result, error) {
		if k.Name == "bad" {
			if panics.Add(1) < 3 {
				panic("nil map in a decision")
			}
			return Result{}, nil
		}
		others.Add(1)
		return Result{}, nil
	}})
	runLoop(t, l)
	l.Enqueue(cache.NewObjectName("ns", "bad"))
	l.Enqueue(cache.NewObjectName("ns", "good"))
	waitFor(t, "the panicking key retried until it succeeds", func() bool { return panics.Load() >= 3 })
	waitFor(t, "the other key reconciled", func() bool { return others.Load() >= 1 })
}

func TestStaleReadsAreConflictsAndAlreadyExists(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "statefulsets"}
	conflict := apierrors.NewConflict(gr, "orders-iad", errors.New("the object has been modified"))
	exists := apierrors.NewAlreadyExists(gr, "orders-iad")
	other := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "orders-iad", nil)
	for _, c := range []struct {
		err  error
		want bool
	}{
		{conflict, true},
		{exists, true},
		{fmt.Errorf("create StatefulSet orders-iad: %w", exists), true},
		{errors.Join(conflict, fmt.Errorf("site iad: %w", exists)), true},
		{errors.Join(conflict, other), false},
		{other, false},
		{errors.New("dial tcp: i/o timeout"), false},
	} {
		if got := IsStaleRead(c.err); got != c.want {
			t.Errorf("IsStaleRead(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// A reconcile failing with AlreadyExists (a create after a stale cache
// read) is logged at DEBUG, not ERROR, and retried.
func TestAlreadyExistsIsRetriedWithoutAnError(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var n atomic.Int32
	l, _ := New(Options{Name: "t-exists", RateLimiter: fastLimiter(), Logger: log, Reconcile: func(ctx context.Context, k Key) (Result, error) {
		if n.Add(1) == 1 {
			return Result{}, fmt.Errorf("create ConfigMap x: %w", apierrors.NewAlreadyExists(schema.GroupResource{Resource: "configmaps"}, "x"))
		}
		return Result{}, nil
	}})
	runLoop(t, l)
	l.Enqueue(cache.NewObjectName("ns", "a"))
	waitFor(t, "the retry", func() bool { return n.Load() >= 2 })
	out := buf.String()
	if !strings.Contains(out, `"msg":"reconcile failed"`) || !strings.Contains(out, `"level":"DEBUG"`) || strings.Contains(out, `"level":"ERROR"`) {
		t.Fatalf("want one DEBUG reconcile failure and no ERROR, got:\n%s", out)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
