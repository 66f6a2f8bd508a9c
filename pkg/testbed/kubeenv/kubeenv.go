// Package kubeenv builds the integration-test environment every
// controller's tests share: a namespace of its own on the test control plane
// (package framework), the clients, and operator instances, each with its own
// informers limited to that namespace, an Event recorder, a metrics registry
// and the controllers under test, built through the same New(operator.Deps,
// Options) the operator process uses and stopped when the test ends.
package kubeenv

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	shipinformers "github.com/shipstream/bloodraven/generated/informers/externalversions"
	"github.com/shipstream/bloodraven/pkg/eventrecorder"
	"github.com/shipstream/bloodraven/pkg/logschema"
	"github.com/shipstream/bloodraven/pkg/messagecheck"
	"github.com/shipstream/bloodraven/pkg/metrics"
	"github.com/shipstream/bloodraven/pkg/operator"
)

// Env is one test's namespace and clients.
type Env struct {
	T         testing.TB
	CP        *framework.ControlPlane
	Namespace string
	Kube      kubernetes.Interface
	Ship      versioned.Interface
	Dyn       dynamic.Interface
}

// New creates a fresh namespace on cp and the clients to reach it.
func New(t testing.TB, cp *framework.ControlPlane) *Env {
	t.Helper()
	return InNamespace(t, cp, cp.NewNamespace(t))
}

// InNamespace is New for a namespace the test already made.
func InNamespace(t testing.TB, cp *framework.ControlPlane, namespace string) *Env {
	t.Helper()
	ship, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &Env{T: t, CP: cp, Namespace: namespace, Kube: cp.Client(), Ship: ship, Dyn: dyn}
}

// Instance stands for one operator process: its own informers, recorder,
// metrics and controllers. Build the controllers from Deps, then Start.
type Instance struct {
	env  *Env
	Deps operator.Deps
	// Logs records what the instance's controllers log (Deps.Log, also
	// passed on to slog's default); every record is checked against
	// docs/logs.md when the test ends.
	Logs *logschema.Recorder

	ctx        context.Context
	cancel     context.CancelFunc
	stopEvents func()
	running    sync.WaitGroup
	startOnce  sync.Once
	stopOnce   sync.Once
}

// NewInstance prepares an operator instance on informers limited to the
// env's namespace and those of others (nodes are cluster-wide). Nothing
// runs until Start.
func (e *Env) NewInstance(others ...*Env) *Instance {
	ctx, cancel := context.WithCancel(context.Background())
	recorder, stopEvents := eventrecorder.NewRecorder(ctx, e.Kube)
	inf := &operator.Informers{Shipstream: map[string]shipinformers.SharedInformerFactory{}, Kube: map[string]kubeinformers.SharedInformerFactory{}}
	for _, ns := range append([]*Env{e}, others...) {
		inf.Shipstream[ns.Namespace] = shipinformers.NewSharedInformerFactoryWithOptions(e.Ship, 0, shipinformers.WithNamespace(ns.Namespace))
		inf.Kube[ns.Namespace] = kubeinformers.NewSharedInformerFactoryWithOptions(e.Kube, 0, kubeinformers.WithNamespace(ns.Namespace))
	}
	logs := logschema.NewRecorder(logschema.Operator)
	// Registered before Start's cleanup, so it runs after the instance
	// stopped and sees every record.
	e.T.Cleanup(func() { logs.Check(e.T) })
	return &Instance{
		env: e, ctx: ctx, cancel: cancel, stopEvents: stopEvents, Logs: logs,
		Deps: operator.Deps{Kube: e.Kube, Shipstream: e.Ship, Dynamic: e.Dyn, Informers: inf, Recorder: recorder, Metrics: metrics.NewRegistry(),
			Log: logs.Logger(slog.Default().Handler())},
	}
}

// Start runs each controller with workers workers, and starts the
// informers, until Stop, Kill or the end of the test. Controllers must have
// been built from i.Deps before, so their handlers see the informers' first
// lists. Start may be called again for controllers that need another
// worker count.
func (i *Instance) Start(workers int, cs ...operator.Controller) {
	i.env.T.Helper()
	for _, c := range cs {
		i.running.Go(func() {
			if err := c.Run(i.ctx, workers); err != nil {
				i.env.T.Errorf("controller %s: %v", c.Name(), err)
			}
		})
	}
	i.startOnce.Do(func() {
		i.Deps.Informers.Start(i.ctx.Done())
		i.env.T.Cleanup(i.Stop)
	})
}

// Stop ends the instance and waits until every controller returned.
func (i *Instance) Stop() {
	i.stopOnce.Do(func() {
		i.cancel()
		i.running.Wait()
		i.Deps.Informers.Shutdown()
		i.stopEvents()
	})
}

// Kill only cancels the instance's context, as a process dying mid-step;
// it is safe from inside a reconcile. Stop (or the test's end) waits.
func (i *Instance) Kill() { i.cancel() }

// messagesChecked holds the namespaces already checked: several cleanups of
// one test would repeat the same findings.
var messagesChecked sync.Map

// CheckMessages fails the test on every condition message of the groups in
// the namespace and every operator Event there that reads badly
// (pkg/messagecheck): a dangling "at", an empty quoted value, a double
// space. Call it once the test's own work is done, before its groups go.
func (e *Env) CheckMessages() {
	if _, done := messagesChecked.LoadOrStore(e.Namespace, true); done {
		return
	}
	ctx := context.Background()
	gs, err := e.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Errorf("message check: list groups: %v", err)
	} else {
		for _, g := range gs.Items {
			for _, c := range g.Status.Conditions {
				for _, p := range messagecheck.Problems(c.Message) {
					e.T.Errorf("condition %s (%s) of MysqlFailoverGroup %s reads badly: %s: %q", c.Type, c.Reason, g.Name, p, c.Message)
				}
			}
		}
	}
	evs, err := e.Kube.CoreV1().Events(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Errorf("message check: list events: %v", err)
		return
	}
	for _, ev := range evs.Items {
		if ev.Source.Component != eventrecorder.Component {
			continue // not a message the operator wrote
		}
		for _, p := range messagecheck.Problems(ev.Message) {
			e.T.Errorf("Event %s on %s %s reads badly: %s: %q", ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, p, ev.Message)
		}
	}
}
