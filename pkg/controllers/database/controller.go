package database

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controller"
	"github.com/shipstream/bloodraven/pkg/operator"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// QueueName names the controller's workqueue (metrics label, logs).
const QueueName = "database"

// Indexes of the MysqlDatabase informer: "<namespace>/<failoverGroupRef>"
// (a group event wakes exactly its databases) and "<namespace>/<owner
// Secret>" (a password change wakes the databases whose owner it is).
const (
	byGroupIndex  = "failoverGroup"
	bySecretIndex = "ownerSecret"
)

// Defaults of Options.
const (
	DefaultStatementTimeout = 2400 * time.Millisecond
	DefaultResync           = 5 * time.Minute
	DefaultProgram          = "bloodraven-operator"
)

// Controller applies each MysqlDatabase on its group's active site and
// keeps its status true to what it finds there.
type Controller struct {
	*controller.Loop
	client    versioned.Interface
	kube      kubernetes.Interface
	informers *operator.Informers
	recorder  record.EventRecorder
	opts      Options

	mu sync.Mutex
	// created are the schemas this process created, by object UID: a
	// schema it created and then found before its status said so is not
	// adopted (a restart in between errs on the side of adopted, which
	// only refuses a drop).
	created map[types.UID]bool
}

// Options configure the controller.
type Options struct {
	// Resolver gives each site's mysqld address (siteaddr.Cluster in a
	// cluster, a development map in the playground and tests). Without it
	// the controller only reports status and applies nothing.
	Resolver siteaddr.Resolver
	// StatementTimeout bounds every MySQL call; zero:
	// DefaultStatementTimeout.
	StatementTimeout time.Duration
	// DropWait: how long deletionPolicy Drop waits for a writable active
	// site; zero: DefaultDropWait.
	DropWait time.Duration
	// RotationOverlap: how long both owner passwords work; zero:
	// accounts.DefaultOverlap.
	RotationOverlap time.Duration
	// Resync: how often a database is checked again with no event; zero:
	// DefaultResync.
	Resync time.Duration
	// Program is the MySQL program_name connection attribute.
	Program string
	// Leadership, if set, must return nil before any MySQL statement that
	// changes something (operator.Process.MayMutate).
	Leadership func() error
	// Now replaces the clock in tests.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.StatementTimeout <= 0 {
		o.StatementTimeout = DefaultStatementTimeout
	}
	if o.DropWait <= 0 {
		o.DropWait = DefaultDropWait
	}
	if o.RotationOverlap <= 0 {
		o.RotationOverlap = accounts.DefaultOverlap
	}
	if o.Resync <= 0 {
		o.Resync = DefaultResync
	}
	if o.Program == "" {
		o.Program = DefaultProgram
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// New builds the controller on d's clients and informers and registers its
// event handlers; start the informers after it, then Run.
func New(d operator.Deps, opts Options) (*Controller, error) {
	if d.Shipstream == nil || d.Kube == nil || d.Informers == nil || d.Recorder == nil {
		return nil, errors.New("database controller: Kube, Shipstream, Informers and Recorder are required")
	}
	c := &Controller{client: d.Shipstream, kube: d.Kube, informers: d.Informers, recorder: d.Recorder,
		opts: opts.withDefaults(), created: map[types.UID]bool{}}
	loop, err := controller.New(controller.Options{
		Name: QueueName, Reconcile: c.reconcile, MetricsProvider: d.WorkqueueMetrics(), Logger: d.Logger(),
	})
	if err != nil {
		return nil, err
	}
	c.Loop = loop
	for ns, f := range d.Informers.Shipstream {
		dbs := f.Shipstream().V1alpha1().MysqlDatabases().Informer()
		if err := dbs.AddIndexers(cache.Indexers{byGroupIndex: indexByGroup, bySecretIndex: indexBySecret}); err != nil {
			return nil, fmt.Errorf("database controller: %w", err)
		}
		if err := loop.Watch(dbs, loop.EnqueueSelf()); err != nil {
			return nil, err
		}
		// A database appearing or going changes its siblings' verdicts
		// (duplicate names, shared owners): wake them too.
		if err := loop.Watch(dbs, loop.EnqueueMapped(siblings(dbs.GetIndexer()))); err != nil {
			return nil, err
		}
		groups := f.Shipstream().V1alpha1().MysqlFailoverGroups().Informer()
		if err := loop.Watch(groups, loop.EnqueueMapped(mapIndex(dbs.GetIndexer(), byGroupIndex))); err != nil {
			return nil, err
		}
		if k := d.Informers.Kube[ns]; k != nil {
			secrets := k.Core().V1().Secrets().Informer()
			if err := loop.Watch(secrets, loop.EnqueueMapped(mapIndex(dbs.GetIndexer(), bySecretIndex))); err != nil {
				return nil, err
			}
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

func indexBySecret(obj any) ([]string, error) {
	db, ok := obj.(*v1alpha1.MysqlDatabase)
	if !ok || db.Spec.Owner == nil {
		return nil, nil
	}
	return []string{db.Namespace + "/" + db.Spec.Owner.PasswordSecretKeyRef.Name}, nil
}

// siblings maps a MysqlDatabase to every MysqlDatabase of its group.
func siblings(idx cache.Indexer) controller.MapFunc {
	byGroup := mapIndex(idx, byGroupIndex)
	return func(o metav1.Object) []controller.Key {
		db, ok := o.(*v1alpha1.MysqlDatabase)
		if !ok {
			return nil
		}
		return byGroup(&metav1.ObjectMeta{Namespace: db.Namespace, Name: db.Spec.FailoverGroupRef.Name})
	}
}

// mapIndex maps an object to the MysqlDatabases indexed under its
// namespace/name.
func mapIndex(idx cache.Indexer, index string) controller.MapFunc {
	return func(o metav1.Object) []controller.Key {
		objs, err := idx.ByIndex(index, o.GetNamespace()+"/"+o.GetName())
		if err != nil {
			return nil
		}
		keys := make([]controller.Key, 0, len(objs))
		for _, x := range objs {
			if k, ok := controller.KeyOf(x); ok {
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
	in, pw, err := c.input(db)
	if err != nil {
		return controller.Result{}, err
	}
	if db.DeletionTimestamp != nil {
		return c.finalize(ctx, in)
	}
	if !hasFinalizer(db) {
		cp := db.DeepCopy()
		cp.Finalizers = append(cp.Finalizers, Finalizer)
		_, err := c.client.ShipstreamV1alpha1().MysqlDatabases(db.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
		return controller.Result{}, err // the update wakes the controller again
	}
	gate := Decide(in)
	if gate.Keep {
		return controller.Result{RequeueAfter: c.opts.Resync}, nil
	}
	if !gate.Apply || c.opts.Resolver == nil {
		st, evs := GateStatus(db, gate)
		if gate.Apply { // no resolver: a status-only controller
			st, evs = GateStatus(db, wait(PhaseApplying, v1alpha1.ReasonApplying, "the operator runs without a site resolver; schemas are not applied"))
		}
		return c.publish(ctx, db, st, evs, c.opts.Resync)
	}
	a, requeue := c.apply(ctx, in, gate, pw)
	st, evs := Outcome(db, gate.Site, a)
	if requeue <= 0 || requeue > c.opts.Resync {
		requeue = c.opts.Resync
	}
	return c.publish(ctx, db, st, evs, requeue)
}

// input reads what the decisions need from the listers; pw is the owner's
// password ("" when unread).
func (c *Controller) input(db *v1alpha1.MysqlDatabase) (Input, string, error) {
	lister := c.informers.ShipstreamFor(db.Namespace).Shipstream().V1alpha1()
	in := Input{DB: db}
	g, err := lister.MysqlFailoverGroups().Lister().MysqlFailoverGroups(db.Namespace).Get(db.Spec.FailoverGroupRef.Name)
	switch {
	case err == nil:
		in.Group = g
	case !apierrors.IsNotFound(err):
		return in, "", err
	}
	objs, err := lister.MysqlDatabases().Informer().GetIndexer().ByIndex(byGroupIndex, db.Namespace+"/"+db.Spec.FailoverGroupRef.Name)
	if err != nil {
		return in, "", err
	}
	for _, o := range objs {
		if x, ok := o.(*v1alpha1.MysqlDatabase); ok && x.UID != db.UID {
			in.Others = append(in.Others, x)
		}
	}
	get := c.secretData(db.Namespace)
	if in.Group != nil {
		in.ManagedUsers = accounts.ManagedUsers(in.Group.Spec.Credentials, get)
	}
	var pw string
	if ow := db.Spec.Owner; ow != nil {
		pw, in.OwnerSecretErr = ownerPassword(get, ow.PasswordSecretKeyRef)
	}
	return in, pw, nil
}

func ownerPassword(get accounts.SecretGetter, ref v1alpha1.PasswordSecretKeySelector) (string, error) {
	key := ref.Key
	if key == "" {
		key = accounts.SecretKeyPassword
	}
	data, err := get(ref.Name)
	if err != nil {
		return "", fmt.Errorf("Secret %s: %v", ref.Name, err)
	}
	if len(data[key]) == 0 {
		return "", fmt.Errorf("Secret %s has no key %s (or it is empty)", ref.Name, key)
	}
	return string(data[key]), nil
}

// secretData reads Secrets through the informer of ns.
func (c *Controller) secretData(ns string) accounts.SecretGetter {
	return func(name string) (map[string][]byte, error) {
		k := c.informers.KubeFor(ns)
		if k == nil {
			return nil, fmt.Errorf("namespace %s is not watched", ns)
		}
		sec, err := k.Core().V1().Secrets().Lister().Secrets(ns).Get(name)
		if err != nil {
			return nil, err
		}
		return sec.Data, nil
	}
}

// publish writes st when it changed and records evs if it did.
func (c *Controller) publish(ctx context.Context, db *v1alpha1.MysqlDatabase, st v1alpha1.MysqlDatabaseStatus, evs []Event, requeue time.Duration) (controller.Result, error) {
	status := func(o *v1alpha1.MysqlDatabase) any { return o.Status }
	update := c.client.ShipstreamV1alpha1().MysqlDatabases(db.Namespace).UpdateStatus
	_, wrote, err := controller.UpdateStatusIfChanged(ctx, db, status, func(o *v1alpha1.MysqlDatabase) { o.Status = st }, update)
	if err != nil {
		return controller.Result{}, fmt.Errorf("update status of MysqlDatabase %s/%s: %w", db.Namespace, db.Name, err)
	}
	if wrote {
		c.record(db, evs)
	}
	return controller.Result{RequeueAfter: requeue}, nil
}

func (c *Controller) record(db *v1alpha1.MysqlDatabase, evs []Event) {
	for _, e := range evs {
		typ := corev1.EventTypeNormal
		if e.Type == "Warning" {
			typ = corev1.EventTypeWarning
		}
		c.recorder.Event(db, typ, e.Reason, e.Message)
	}
}

func hasFinalizer(db *v1alpha1.MysqlDatabase) bool {
	for _, f := range db.Finalizers {
		if f == Finalizer {
			return true
		}
	}
	return false
}
