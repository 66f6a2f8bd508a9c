// Package leaserevocation is the deploy-lease controller: it revokes a group's
// deployment leases when the group's status.topologyGeneration moves past
// the generation they were granted at (TopologyChanged) and when an
// administrator sets the revoke annotation (OperatorRevoked, after which the
// annotation is cleared), and it records expiry. Each revocation emits the
// Event DeploymentLeaseRevoked on the group and counts in
// bloodraven_deploy_lease_revocations_total{reason}.
package leaserevocation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	shiplisters "github.com/shipstream/bloodraven/generated/listers/shipstream/v1alpha1"
	v1alpha1 "github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controller"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/metrics"
	"github.com/shipstream/bloodraven/pkg/operator"
)

// RevokeAnnotation: see leasestore.RevokeAnnotation.
const RevokeAnnotation = leasestore.RevokeAnnotation

// QueueName is the workqueue's name.
const QueueName = "deploy-lease"

// Options configure the controller.
type Options struct {
	// Store is the lease store shared with the deployment API.
	Store *leasestore.Store
	// Now replaces the clock in tests.
	Now func() time.Time
}

// Controller is the deploy-lease controller.
type Controller struct {
	*controller.Loop
	store       *leasestore.Store
	ship        versioned.Interface
	recorder    record.EventRecorder
	groups      []shiplisters.MysqlFailoverGroupLister
	revocations *prometheus.CounterVec
	log         *slog.Logger
	now         func() time.Time
}

// New builds the controller on d's clients and informers and registers its
// event handlers: every watched namespace's MysqlFailoverGroups, and its
// coordination.k8s.io Leases, so a new or renewed deployment lease wakes its
// group and expiry is recorded on time. Start the informers after it, then Run.
func New(d operator.Deps, opts Options) (*Controller, error) {
	if opts.Store == nil || d.Shipstream == nil || d.Informers == nil || d.Recorder == nil {
		return nil, errors.New("leaserevocation controller: Options.Store, Shipstream, Informers and Recorder are required")
	}
	c := &Controller{store: opts.Store, ship: d.Shipstream, recorder: d.Recorder, log: d.Logger(), now: opts.Now}
	var groups []cache.SharedIndexInformer
	for _, ns := range d.Informers.Namespaces() {
		inf := d.Informers.Shipstream[ns].Shipstream().V1alpha1().MysqlFailoverGroups()
		c.groups = append(c.groups, inf.Lister())
		groups = append(groups, inf.Informer())
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.revocations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace,
		Name:      "deploy_lease_revocations_total",
		Help:      "Deployment leases revoked, by reason (TopologyChanged, OperatorRevoked).",
	}, []string{"reason"})
	for _, r := range []leasestore.Reason{leasestore.ReasonTopologyChanged, leasestore.ReasonOperatorRevoked} {
		c.revocations.WithLabelValues(string(r))
	}
	if reg := d.Registerer(); reg != nil {
		if err := reg.Register(c.revocations); err != nil {
			return nil, fmt.Errorf("leaserevocation controller: register metrics: %w", err)
		}
	}
	loop, err := controller.New(controller.Options{
		Name: QueueName, Reconcile: c.Reconcile, MetricsProvider: d.WorkqueueMetrics(), Logger: c.log,
	})
	if err != nil {
		return nil, err
	}
	c.Loop = loop
	for _, g := range groups {
		if err := loop.Watch(g, loop.EnqueueSelf()); err != nil {
			return nil, err
		}
	}
	for _, ns := range d.Informers.Namespaces() {
		leases := d.Informers.KubeFor(ns).Coordination().V1().Leases().Informer()
		if err := loop.Watch(leases, loop.EnqueueMapped(groupOfLease)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Revocations is the counter (tests read it).
func (c *Controller) Revocations() *prometheus.CounterVec { return c.revocations }

// groupOfLease maps a deployment lease record or mutex to its group.
func groupOfLease(o metav1.Object) []controller.Key {
	l := o.GetLabels()
	for _, k := range []string{leasestore.LabelGroup, leasestore.LabelMutexGroup} {
		if g := l[k]; g != "" {
			return []controller.Key{cache.NewObjectName(o.GetNamespace(), g)}
		}
	}
	return nil
}

// Reconcile revokes, clears the annotation and records expiry for one group.
func (c *Controller) Reconcile(ctx context.Context, key controller.Key) (controller.Result, error) {
	g, err := c.group(key)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil // its Leases are owned by it and go with it
	}
	if err != nil {
		return controller.Result{}, err
	}
	ref := leasestore.GroupRef{Namespace: g.Namespace, Name: g.Name, UID: g.UID}
	if _, ok := g.Annotations[RevokeAnnotation]; ok {
		if err := c.revokeByAnnotation(ctx, ref); err != nil {
			return controller.Result{}, err
		}
	}
	// Only leases granted at an older generation: a lister that lags the
	// API server must never revoke a lease granted at a newer one.
	gen := g.Status.TopologyGeneration
	revoked, err := c.store.Revoke(ctx, ref, leasestore.ReasonTopologyChanged, func(r leasestore.Record) bool {
		return r.TopologyGeneration < gen
	})
	c.report(g, revoked, leasestore.ReasonTopologyChanged, gen)
	if err != nil {
		return controller.Result{}, err
	}
	next, err := c.store.Expire(ctx, ref)
	if err != nil {
		return controller.Result{}, err
	}
	if next.IsZero() {
		return controller.Result{}, nil
	}
	return controller.Result{RequeueAfter: max(next.Sub(c.now()), 0) + 100*time.Millisecond}, nil
}

// group finds the group in whichever namespace lister holds it.
func (c *Controller) group(key controller.Key) (*v1alpha1.MysqlFailoverGroup, error) {
	var err error
	for _, l := range c.groups {
		var g *v1alpha1.MysqlFailoverGroup
		if g, err = l.MysqlFailoverGroups(key.Namespace).Get(key.Name); err == nil {
			return g, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return nil, err
}

// revokeByAnnotation rereads the group from the API server (the lister may
// still show an annotation already handled), revokes every lease, and only
// then removes the annotation, under a resourceVersion precondition.
func (c *Controller) revokeByAnnotation(ctx context.Context, ref leasestore.GroupRef) error {
	fresh, err := c.ship.ShipstreamV1alpha1().MysqlFailoverGroups(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return client404ToNil(err)
	}
	if _, ok := fresh.Annotations[RevokeAnnotation]; !ok {
		return nil
	}
	revoked, err := c.store.Revoke(ctx, ref, leasestore.ReasonOperatorRevoked, func(leasestore.Record) bool { return true })
	c.report(fresh, revoked, leasestore.ReasonOperatorRevoked, fresh.Status.TopologyGeneration)
	if err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": fresh.ResourceVersion,
		"annotations":     map[string]any{RevokeAnnotation: nil},
	}})
	_, err = c.ship.ShipstreamV1alpha1().MysqlFailoverGroups(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err == nil {
		c.log.Info("deployment lease revoke annotation cleared", "namespace", ref.Namespace, "group", ref.Name, "revoked", len(revoked))
	}
	return client404ToNil(err)
}

func client404ToNil(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// report emits one Event and one count per revoked lease. Messages name the
// kind, operation, instance and reason; never a token or hash.
func (c *Controller) report(g *v1alpha1.MysqlFailoverGroup, revoked []leasestore.Record, reason leasestore.Reason, gen int64) {
	for _, r := range revoked {
		c.revocations.WithLabelValues(string(reason)).Inc()
		msg := fmt.Sprintf("Deployment lease %s of operation %s (instance %s) revoked: %s", r.Kind, r.OperationID, r.Instance, reason)
		if reason == leasestore.ReasonTopologyChanged {
			msg += fmt.Sprintf(" (granted at topologyGeneration %d, now %d)", r.TopologyGeneration, gen)
		}
		c.recorder.Event(g, corev1.EventTypeNormal, v1alpha1.EventDeploymentLeaseRevoked, msg)
		c.log.Info("deployment lease revoked", "namespace", g.Namespace, "group", g.Name, "kind", string(r.Kind),
			"operationId", r.OperationID, "instance", r.Instance, "reason", string(reason))
	}
}
