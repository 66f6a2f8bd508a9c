package operator

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/e2e/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	framework.Main(m, framework.Options{}, &cp)
}

// stuckController ignores its context until release is closed, like a
// reconcile blocked in a call without a deadline.
type stuckController struct {
	started chan struct{}
	release chan struct{}
}

func (s *stuckController) Name() string { return "stuck" }
func (s *stuckController) Run(ctx context.Context, _ int) error {
	close(s.started)
	<-s.release
	return nil
}

// A leader whose controllers do not stop within their share of the
// shutdown grace period exits still holding the Lease: releasing it would
// let a successor start while this process's work still runs.
func TestShutdownKeepsTheLeaseWhileControllersRun(t *testing.T) {
	if cp == nil {
		t.Skip("integration test: needs the control plane (not run with -short)")
	}
	ns := cp.NewNamespace(t)
	cfg := testConfig(t)
	cfg.Kubeconfig = cp.KubeconfigPath
	cfg.LeaderElection = LeaderElectionConfig{Namespace: ns, Name: "leader", Identity: "stuck-leader",
		LeaseDuration: 10 * time.Second, RenewDeadline: 7 * time.Second, RetryPeriod: time.Second}
	cfg.ShutdownGracePeriod = 2 * time.Second
	p, err := New(cfg, slog.New(slog.DiscardHandler))
	must(t, err)
	exited := make(chan int, 4)
	resume := make(chan struct{})
	// Like os.Exit, the hook does not return while the test inspects the
	// Lease; afterwards Run may finish so its goroutines end.
	p.Exit = func(code int) { exited <- code; <-resume }
	ctrl := &stuckController{started: make(chan struct{}), release: make(chan struct{})}
	p.AddController(ctrl)

	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- p.Run(ctx) }()
	t.Cleanup(func() {
		close(ctrl.release)
		close(resume)
		cancel()
		<-runDone
	})
	select {
	case <-ctrl.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the process never led")
	}
	cancel() // SIGTERM
	select {
	case code := <-exited:
		if code != 1 {
			t.Fatalf("exit code %d, want 1", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not exit while its controller was stuck")
	}
	l, err := cp.Client().CoordinationV1().Leases(ns).Get(context.Background(), "leader", metav1.GetOptions{})
	must(t, err)
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "stuck-leader" {
		t.Fatalf("Lease holder = %v: released while a controller still ran", l.Spec.HolderIdentity)
	}
}
