package database

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controller"
	"github.com/shipstream/bloodraven/pkg/operator"
)

// QueueName names the controller's workqueue (metrics label, logs).
const QueueName = "database"

// byGroupIndex indexes MysqlDatabases by "<namespace>/<failoverGroupRef.name>",
// so a group event wakes exactly the databases that reference it.
const byGroupIndex = "failoverGroup"

// Controller keeps each MysqlDatabase's observedGeneration, phase and Ready
// condition true to what it finds in the API server.
type Controller struct {
	*controller.Loop
	client    versioned.Interface
	informers *operator.Informers
	recorder  record.EventRecorder
	now       func() metav1.Time
}

// Options configure the controller.
type Options struct {
	// Now replaces the clock in tests.
	Now func() metav1.Time
}

// New builds the controller on d's clients and informers and registers its
// event handlers; start the informers after it, then Run.
func New(d operator.Deps, opts Options) (*Controller, error) {
	if d.Shipstream == nil || d.Informers == nil || d.Recorder == nil {
		return nil, errors.New("database controller: Shipstream, Informers and Recorder are required")
	}
	c := &Controller{client: d.Shipstream, informers: d.Informers, recorder: d.Recorder, now: opts.Now}
	if c.now == nil {
		c.now = metav1.Now
	}
	loop, err := controller.New(controller.Options{
		Name: QueueName, Reconcile: c.reconcile, MetricsProvider: d.WorkqueueMetrics(), Logger: d.Logger(),
	})
	if err != nil {
		return nil, err
	}
	c.Loop = loop
	for _, f := range d.Informers.Shipstream {
		dbs := f.Shipstream().V1alpha1().MysqlDatabases().Informer()
		if err := dbs.AddIndexers(cache.Indexers{byGroupIndex: indexByGroup}); err != nil {
			return nil, fmt.Errorf("database controller: %w", err)
		}
		if err := loop.Watch(dbs, loop.EnqueueSelf()); err != nil {
			return nil, err
		}
		groups := f.Shipstream().V1alpha1().MysqlFailoverGroups().Informer()
		if err := loop.Watch(groups, loop.EnqueueMapped(databasesOf(dbs.GetIndexer()))); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func indexByGroup(obj any) ([]string, error) {
	db, ok := obj.(*v1alpha1.MysqlDatabase)
	if !ok {
		return nil, nil
	}
	return []string{db.Namespace + "/" + db.Spec.FailoverGroupRef.Name}, nil
}

// databasesOf maps a MysqlFailoverGroup to the MysqlDatabases referencing it.
func databasesOf(idx cache.Indexer) controller.MapFunc {
	return func(group metav1.Object) []controller.Key {
		objs, err := idx.ByIndex(byGroupIndex, group.GetNamespace()+"/"+group.GetName())
		if err != nil {
			return nil
		}
		keys := make([]controller.Key, 0, len(objs))
		for _, o := range objs {
			if k, ok := controller.KeyOf(o); ok {
				keys = append(keys, k)
			}
		}
		return keys
	}
}

func (c *Controller) reconcile(ctx context.Context, key controller.Key) (controller.Result, error) {
	f := c.informers.ShipstreamFor(key.Namespace)
	if f == nil {
		return controller.Result{}, nil
	}
	lister := f.Shipstream().V1alpha1()
	db, err := lister.MysqlDatabases().Lister().MysqlDatabases(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	group, err := lister.MysqlFailoverGroups().Lister().MysqlFailoverGroups(key.Namespace).Get(db.Spec.FailoverGroupRef.Name)
	if apierrors.IsNotFound(err) {
		group, err = nil, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	d := Decide(db, group, c.now())
	status := func(o *v1alpha1.MysqlDatabase) any { return o.Status }
	update := c.client.ShipstreamV1alpha1().MysqlDatabases(key.Namespace).UpdateStatus
	_, wrote, err := controller.UpdateStatusIfChanged(ctx, db, status, func(o *v1alpha1.MysqlDatabase) { o.Status = d.Status }, update)
	if err != nil {
		return controller.Result{}, fmt.Errorf("update status of MysqlDatabase %s: %w", key, err)
	}
	if wrote && d.EventReason != "" {
		c.recorder.Event(db, d.EventType, d.EventReason, d.EventMessage)
	}
	return controller.Result{}, nil
}
