package database_test

import (
	"context"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controller"
	"github.com/shipstream/bloodraven/pkg/controllers/database"
	"github.com/shipstream/bloodraven/pkg/logging"
	"github.com/shipstream/bloodraven/pkg/operator"
)

var cp *framework.ControlPlane

// TestMain starts a control plane for the integration tests; with -short
// only the pure tests run.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	framework.Main(m, framework.Options{CRDDir: "deploy/crds"}, &cp)
}

func needControlPlane(t *testing.T) {
	if cp == nil {
		t.Skip("integration test: needs the control plane (not run with -short)")
	}
}

// startOperator runs an in-process operator (leader election, informers,
// the database controller) watching ns, and stops it when the test ends.
func startOperator(t *testing.T, ns string, before ...func(*operator.Process)) *operator.Process {
	t.Helper()
	cfg := operator.Config{
		Kubeconfig: cp.KubeconfigPath,
		Namespaces: []string{ns},
		LeaderElection: operator.LeaderElectionConfig{Namespace: ns, Name: "bloodraven-leader", Identity: "test",
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: time.Second},
		MetricsAddr: "127.0.0.1:0", ProbeAddr: "127.0.0.1:0", AuxiliaryAddr: "127.0.0.1:0",
		SidecarImage: "sidecar:test", LogLevel: "info", Workers: 2, TopologyWorkers: 2, ShutdownGracePeriod: 10 * time.Second,
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	log := logging.New(testWriter{t}, slog.LevelInfo)
	logging.Install(log) // client-go's klog lines too
	p, err := operator.New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	p.Exit = func(code int) { t.Errorf("operator exited with %d", code) }
	for _, f := range before {
		f(p)
	}
	c, err := database.New(p.Deps(), database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.AddController(c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator Run: %v", err)
		}
	})
	return p
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	if testing.Verbose() {
		os.Stderr.Write(b)
	}
	return len(b), nil
}

func client(t *testing.T) versioned.Interface {
	c, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newDatabase(ns, name, group string) *v1alpha1.MysqlDatabase {
	return &v1alpha1.MysqlDatabase{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MysqlDatabaseSpec{
			FailoverGroupRef: v1alpha1.FailoverGroupReference{Name: group},
			DatabaseName:     "orders",
		},
	}
}

func newGroup(ns, name string) *v1alpha1.MysqlFailoverGroup {
	return &v1alpha1.MysqlFailoverGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MysqlFailoverGroupSpec{
			Sites:       []v1alpha1.SiteSpec{site("iad", 101, "10.0.1.1"), site("pdx", 102, "10.0.2.1")},
			Credentials: v1alpha1.CredentialsSpec{OperatorSecretName: name + "-operator"},
			DNS:         v1alpha1.DNSSpec{Hostname: name + ".db.example.com"},
		},
	}
}

func site(name string, id int64, ip string) v1alpha1.SiteSpec {
	return v1alpha1.SiteSpec{
		Name: name, Role: "PrimaryCandidate", ServerID: id, Zone: "zone-" + name, LoadBalancerIP: ip,
		TaintNodeSelector: map[string]string{"bloodraven.shipstream.io/site": name},
		Storage:           v1alpha1.StorageSpec{StorageClassName: "fast", Size: "10Gi"},
	}
}

// waitReady polls until the database's Ready condition has reason and its
// status has phase and the current generation.
func waitReady(t *testing.T, c versioned.Interface, ns, name, reason string, phase v1alpha1.DatabasePhase) *v1alpha1.MysqlDatabase {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last *v1alpha1.MysqlDatabase
	for time.Now().Before(deadline) {
		db, err := c.ShipstreamV1alpha1().MysqlDatabases(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		last = db
		ready := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionReady)
		if ready != nil && ready.Reason == reason && db.Status.Phase == phase && db.Status.ObservedGeneration == db.Generation {
			if ready.Status != metav1.ConditionFalse {
				t.Fatalf("Ready = %s with reason %s, want False", ready.Status, reason)
			}
			if ready.ObservedGeneration != db.Generation {
				t.Fatalf("Ready.observedGeneration = %d, want %d", ready.ObservedGeneration, db.Generation)
			}
			return db
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("MysqlDatabase %s/%s never reached %s/%s; last status %+v", ns, name, phase, reason, last.Status)
	return nil
}

func eventReasons(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	list, err := cp.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range list.Items {
		out[e.Reason] = e.Type
	}
	return out
}

func waitEvent(t *testing.T, ns, name, reason, typ string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if got, ok := eventReasons(t, ns, name)[reason]; ok {
			if got != typ {
				t.Fatalf("Event %s has type %s, want %s", reason, got, typ)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no Event %s on %s/%s; have %v", reason, ns, name, eventReasons(t, ns, name))
}

func TestReadyFollowsTheGroup(t *testing.T) {
	needControlPlane(t)
	ns := cp.NewNamespace(t)
	startOperator(t, ns)
	c := client(t)
	ctx := context.Background()

	// The group does not exist yet.
	if _, err := c.ShipstreamV1alpha1().MysqlDatabases(ns).Create(ctx, newDatabase(ns, "orders-app", "orders"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	db := waitReady(t, c, ns, "orders-app", v1alpha1.ReasonGroupNotYetCreated, database.PhasePending)
	if msg := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionReady).Message; !strings.Contains(msg, `"orders"`) {
		t.Errorf("message %q does not name the group", msg)
	}
	if _, ok := eventReasons(t, ns, "orders-app")[v1alpha1.EventDatabaseGroupResolved]; ok {
		t.Fatal("DatabaseGroupResolved recorded while the group is missing")
	}

	// The group is created: found, but not Ready yet.
	group, err := c.ShipstreamV1alpha1().MysqlFailoverGroups(ns).Create(ctx, newGroup(ns, "orders"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, ns, "orders-app", v1alpha1.ReasonGroupNotReady, database.PhasePending)
	waitEvent(t, ns, "orders-app", v1alpha1.EventDatabaseGroupResolved, corev1.EventTypeNormal)

	// The group reports Ready: the schema can be applied.
	meta.SetStatusCondition(&group.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonHealthy, Message: "test"})
	if _, err := c.ShipstreamV1alpha1().MysqlFailoverGroups(ns).UpdateStatus(ctx, group, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, ns, "orders-app", v1alpha1.ReasonApplying, database.PhaseApplying)

	// The group is deleted: back to waiting for it, with a Warning.
	if err := c.ShipstreamV1alpha1().MysqlFailoverGroups(ns).Delete(ctx, "orders", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, ns, "orders-app", v1alpha1.ReasonGroupNotYetCreated, database.PhasePending)
	waitEvent(t, ns, "orders-app", v1alpha1.EventDatabaseGroupLost, corev1.EventTypeWarning)
}

func TestObservedGenerationFollowsSpecEdits(t *testing.T) {
	needControlPlane(t)
	ns := cp.NewNamespace(t)
	startOperator(t, ns)
	c := client(t)
	ctx := context.Background()
	if _, err := c.ShipstreamV1alpha1().MysqlDatabases(ns).Create(ctx, newDatabase(ns, "app", "orders"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	db := waitReady(t, c, ns, "app", v1alpha1.ReasonGroupNotYetCreated, database.PhasePending)
	db.Spec.DeploymentClients = []v1alpha1.DeploymentClient{{Namespace: "application", ServiceAccount: "deployer"}}
	db, err := c.ShipstreamV1alpha1().MysqlDatabases(ns).Update(ctx, db, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if db.Generation < 2 {
		t.Fatalf("generation = %d after a spec edit", db.Generation)
	}
	waitReady(t, c, ns, "app", v1alpha1.ReasonGroupNotYetCreated, database.PhasePending) // checks observedGeneration == generation
}

// A reconcile that finds nothing new writes nothing: the database's
// resourceVersion stays put while group events keep waking the controller.
func TestUnchangedStatusIsNotWritten(t *testing.T) {
	needControlPlane(t)
	ns := cp.NewNamespace(t)
	var writes statusWrites
	p := startOperator(t, ns, writes.count)
	c := client(t)
	ctx := context.Background()
	if _, err := c.ShipstreamV1alpha1().MysqlDatabases(ns).Create(ctx, newDatabase(ns, "app", "orders"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	group, err := c.ShipstreamV1alpha1().MysqlFailoverGroups(ns).Create(ctx, newGroup(ns, "orders"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := waitReady(t, c, ns, "app", v1alpha1.ReasonGroupNotReady, database.PhasePending)
	writesBefore := writes.n.Load()
	for i := range 3 {
		// Each group update wakes the database: wait until the queue has
		// processed one more key than before the update.
		before := processed(t, p)
		group.Labels = map[string]string{"touch": string(rune('a' + i))}
		if group, err = c.ShipstreamV1alpha1().MysqlFailoverGroups(ns).Update(ctx, group, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for processed(t, p) <= before {
			if time.Now().After(deadline) {
				t.Fatalf("group update %d did not wake the database controller", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	time.Sleep(500 * time.Millisecond) // let the reconciles finish
	after, err := c.ShipstreamV1alpha1().MysqlDatabases(ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("status rewritten without a change: resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
	}
	// The API server ignores a no-op update, so count the requests too.
	if n := writes.n.Load() - writesBefore; n != 0 {
		t.Fatalf("%d status writes while nothing changed, want 0", n)
	}
}

// statusWrites counts PUTs to mysqldatabases/status sent by the controller.
type statusWrites struct{ n atomic.Int32 }

func (w *statusWrites) count(p *operator.Process) {
	cfg := rest.CopyConfig(cp.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/status") && strings.Contains(r.URL.Path, "/mysqldatabases/") {
				w.n.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	p.Shipstream = versioned.NewForConfigOrDie(cfg)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// processed is how many keys the database queue has finished
// (workqueue_work_duration_seconds_count).
func processed(t *testing.T, p *operator.Process) uint64 {
	t.Helper()
	mfs, err := p.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "workqueue_work_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == database.QueueName {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// A status write carries the resourceVersion it was computed from, so a
// write based on a stale read (a deposed leader's late write) is refused.
func TestStaleStatusWriteIsRefused(t *testing.T) {
	needControlPlane(t)
	ns := cp.NewNamespace(t)
	c := client(t)
	ctx := context.Background()
	db, err := c.ShipstreamV1alpha1().MysqlDatabases(ns).Create(ctx, newDatabase(ns, "app", "orders"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := func(o *v1alpha1.MysqlDatabase) any { return o.Status }
	update := c.ShipstreamV1alpha1().MysqlDatabases(ns).UpdateStatus
	fresh, wrote, err := controller.UpdateStatusIfChanged(ctx, db, status, func(o *v1alpha1.MysqlDatabase) { o.Status.Phase = database.PhaseApplying }, update)
	if err != nil || !wrote {
		t.Fatalf("first write: wrote=%v err=%v", wrote, err)
	}
	// db is now stale: a writer still holding it must lose.
	_, wrote, err = controller.UpdateStatusIfChanged(ctx, db, status, func(o *v1alpha1.MysqlDatabase) { o.Status.Phase = database.PhaseFailed }, update)
	if !apierrors.IsConflict(err) || wrote {
		t.Fatalf("stale write: wrote=%v err=%v, want a Conflict", wrote, err)
	}
	got, _ := c.ShipstreamV1alpha1().MysqlDatabases(ns).Get(ctx, "app", metav1.GetOptions{})
	if got.Status.Phase != database.PhaseApplying || got.ResourceVersion != fresh.ResourceVersion {
		t.Fatalf("stored phase %s rv %s, want Applying rv %s", got.Status.Phase, got.ResourceVersion, fresh.ResourceVersion)
	}
}
