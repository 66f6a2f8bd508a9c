// Package topologymanager is the MysqlFailoverGroup's topology manager: on
// its own queue, each reconcile of a group polls its sites' mysqld and
// sidecars (package observe), decides what to do (package topology, pure)
// and executes the decision against MySQL, writing status.transition and the
// published topology with resourceVersion preconditions. It hands off to the
// group's Kubernetes objects (package groupobjects) only through the
// group's status: the objects follow status.activeSite.
//
// A poll round holds one worker of this queue for at most the group's poll
// deadline, so a hung site delays its own group only; the objects queue is
// never held by MySQL.
package topologymanager

import (
	"context"
	"errors"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/controller"
	"github.com/shipstream/bloodraven/pkg/operator"
)

// QueueName names the manager's workqueue (metrics label, logs).
const QueueName = "topology"

// Controller runs the topology manager of every watched group.
type Controller struct {
	*controller.Loop
	kube      kubernetes.Interface
	ship      versioned.Interface
	informers *operator.Informers
	recorder  record.EventRecorder
	log       *slog.Logger
	manager   *Manager
}

// New builds the manager on d's clients and informers and registers its
// event handlers; the caller starts the informers and runs it
// (operator.Process.AddController does both for the operator).
// Options.Resolver is required: without a way to reach the sites there is
// nothing to manage.
func New(d operator.Deps, opts Options) (*Controller, error) {
	if d.Kube == nil || d.Shipstream == nil || d.Informers == nil || d.Recorder == nil {
		return nil, errors.New("topology manager: Kube, Shipstream, Informers and Recorder are required")
	}
	if opts.Resolver == nil {
		return nil, errors.New("topology manager: Options.Resolver is required")
	}
	log := d.Logger()
	c := &Controller{kube: d.Kube, ship: d.Shipstream, informers: d.Informers, recorder: d.Recorder, log: log.With("controller", QueueName)}
	loop, err := controller.New(controller.Options{
		Name: QueueName, Reconcile: c.reconcile, MetricsProvider: d.WorkqueueMetrics(), Logger: log,
	})
	if err != nil {
		return nil, err
	}
	c.Loop = loop
	if err := c.watch(); err != nil {
		return nil, err
	}
	if c.manager, err = newManager(c, opts); err != nil {
		return nil, err
	}
	return c, nil
}

// NudgeSite polls a site of a group at the next pass, which it queues now:
// a sidecar pushed that its mysqld exited (protocol.PathSiteEvent). The
// poll, and the sidecar's answer to it, decide; the push itself counts
// for nothing (docs/topology.md, cadence).
func (c *Controller) NudgeSite(namespace, group, site string) {
	c.manager.tracker.Invalidate(namespace+"/"+group, site)
	c.Enqueue(cache.NewObjectName(namespace, group))
}

// watch wakes a group on its own changes (spec edits, annotations, the
// other controllers' status writes). Pods are read for the sidecars' timers
// and only need a synced cache.
func (c *Controller) watch() error {
	for _, f := range c.informers.Shipstream {
		if err := c.Watch(f.Shipstream().V1alpha1().MysqlFailoverGroups().Informer(), c.EnqueueSelf()); err != nil {
			return err
		}
	}
	for _, f := range c.informers.Kube {
		if err := c.Watch(f.Core().V1().Pods().Informer(), cache.ResourceEventHandlerFuncs{}); err != nil {
			return err
		}
	}
	return nil
}

// Run runs the workers until ctx ends (shutdown, or leadership lost), then
// closes every MySQL connection pool.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.manager.closeAll()
	return c.Loop.Run(ctx, workers)
}

func (c *Controller) reconcile(ctx context.Context, key controller.Key) (controller.Result, error) {
	f := c.informers.ShipstreamFor(key.Namespace)
	if f == nil {
		return controller.Result{}, nil
	}
	g, err := f.Shipstream().V1alpha1().MysqlFailoverGroups().Lister().MysqlFailoverGroups(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.manager.forget(key.String())
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if g.DeletionTimestamp != nil {
		// The objects controller finalizes the group; nothing is polled or
		// changed in MySQL while it is deleted.
		c.manager.forget(key.String())
		return controller.Result{}, nil
	}
	_, poll, err := c.manager.Reconcile(ctx, g)
	return controller.Result{RequeueAfter: poll}, err
}

// closeAll closes every group's connection pools.
func (m *Manager) closeAll() {
	m.mu.Lock()
	groups := m.groups
	m.groups = map[string]*groupState{}
	m.mu.Unlock()
	for _, s := range groups {
		for _, c := range s.clients {
			_ = c.client.Close()
		}
	}
}
