// Package groupobjects is the MysqlFailoverGroup controller's resource side: it
// keeps every object a group owns in Kubernetes true to the group's spec and
// to status.activeSite — per site a StatefulSet (updateStrategy OnDelete, so
// this controller alone decides when a pod is recreated) and its my.cnf
// ConfigMap; the internal, site, primary and replicas Services; the
// external-dns DNSEndpoint; the db-readonly taint on the nodes of non-active
// sites; the active label on each site's pod; and the finalizer that removes
// taints and DNS records before the children are garbage-collected.
//
// Rendering is pure (package render); the rollout decision is pure
// (PlanRollout). Observing MySQL and changing the active site belong to the
// topology manager, not here.
package groupobjects

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controller"
	"github.com/shipstream/bloodraven/pkg/operator"
	"github.com/shipstream/bloodraven/pkg/render"
)

// QueueName names the controller's workqueue (metrics label, logs).
const QueueName = "group-objects"

// DefaultDNSCRDRecheck is how long a missing DNSEndpoint CRD is believed
// missing before discovery is asked again.
const DefaultDNSCRDRecheck = time.Minute

// Options configure the controller.
type Options struct {
	// SidecarImage is BLOODRAVEN_SIDECAR_IMAGE, the sidecar of groups that do
	// not pin spec.sidecar.image.
	SidecarImage string
	// OperatorEndpoint is where sidecars reach the operator's auxiliary
	// listener when a group does not set spec.sidecar.operatorEndpoint.
	OperatorEndpoint string
	// DNSCRDRecheck: see DefaultDNSCRDRecheck; zero uses it.
	DNSCRDRecheck time.Duration
	// Now and NewID replace the ordered update's clock and its
	// planned-failover run ids in tests.
	Now   func() time.Time
	NewID func() string
}

// Controller reconciles each MysqlFailoverGroup's Kubernetes objects.
type Controller struct {
	*controller.Loop
	kube      kubernetes.Interface
	ship      versioned.Interface
	dyn       dynamic.Interface
	informers *operator.Informers
	recorder  record.EventRecorder
	render    render.Config
	log       *slog.Logger
	nodes     corelisters.NodeLister
	now       func() time.Time
	newID     func() string

	dnsRecheck time.Duration
	crdMu      sync.Mutex
	crdChecked time.Time
	crdPresent bool

	skew skewWarnings
}

// New builds the controller on d's clients and informers and registers its
// event handlers; the caller starts the informers and runs it
// (operator.Process.AddController does both for the operator).
func New(d operator.Deps, opts Options) (*Controller, error) {
	if d.Kube == nil || d.Shipstream == nil || d.Dynamic == nil || d.Informers == nil || d.Recorder == nil {
		return nil, errors.New("group objects controller: Kube, Shipstream, Dynamic, Informers and Recorder are required")
	}
	if opts.SidecarImage == "" {
		return nil, errors.New("group objects controller: SidecarImage (BLOODRAVEN_SIDECAR_IMAGE) is required")
	}
	log := d.Logger()
	c := &Controller{
		kube: d.Kube, ship: d.Shipstream, dyn: d.Dynamic, informers: d.Informers,
		recorder: d.Recorder, render: render.Config{SidecarImage: opts.SidecarImage, OperatorEndpoint: opts.OperatorEndpoint},
		log: log.With("controller", QueueName), dnsRecheck: opts.DNSCRDRecheck, now: opts.Now, newID: opts.NewID,
	}
	if c.dnsRecheck <= 0 {
		c.dnsRecheck = DefaultDNSCRDRecheck
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.newID == nil {
		c.newID = newRunID
	}
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
	return c, nil
}

var groupKind = v1alpha1.Kind("MysqlFailoverGroup")

func (c *Controller) watch() error {
	owner := controller.OwnerGetter(c.getGroup)
	// Namespaces in a fixed order, so the one node informer comes from the
	// same factory every time.
	namespaces := make([]string, 0, len(c.informers.Kube))
	for ns := range c.informers.Kube {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, f := range c.informers.Shipstream {
		if err := c.Watch(f.Shipstream().V1alpha1().MysqlFailoverGroups().Informer(), c.EnqueueSelf()); err != nil {
			return err
		}
	}
	for i, ns := range namespaces {
		f := c.informers.Kube[ns]
		for _, inf := range []cache.SharedIndexInformer{
			f.Apps().V1().StatefulSets().Informer(),
			f.Core().V1().Services().Informer(),
			f.Core().V1().ConfigMaps().Informer(),
		} {
			if err := c.Watch(inf, c.EnqueueOwner(groupKind, owner)); err != nil {
				return err
			}
		}
		// The first-boot init script Secret and the credential Secrets it
		// is rendered from (initdb.go).
		if err := c.Watch(f.Core().V1().Secrets().Informer(), c.EnqueueMapped(c.groupsOfSecret)); err != nil {
			return err
		}
		// A pod's controller is its StatefulSet; its labels name the group.
		if err := c.Watch(f.Core().V1().Pods().Informer(), c.EnqueueMapped(groupOfPod)); err != nil {
			return err
		}
		if i == 0 {
			if err := c.watchNodes(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// watchNodes wakes every group when a node's labels or taints change (a
// node joining a site's selector, or someone removing a taint).
func (c *Controller) watchNodes(f kubeinformers.SharedInformerFactory) error {
	inf := f.Core().V1().Nodes()
	c.nodes = inf.Lister()
	all := func() {
		for _, g := range c.allGroups() {
			c.Enqueue(cache.NewObjectName(g.Namespace, g.Name))
		}
	}
	return c.Watch(inf.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { all() },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			n, ok2 := cur.(*corev1.Node)
			if !ok1 || !ok2 || !labels.Equals(o.Labels, n.Labels) || !taintsEqual(o.Spec.Taints, n.Spec.Taints) {
				all()
			}
		},
		DeleteFunc: func(any) {},
	})
}

func taintsEqual(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Effect != b[i].Effect || a[i].Value != b[i].Value {
			return false
		}
	}
	return true
}

func groupOfPod(pod metav1.Object) []controller.Key {
	l := pod.GetLabels()
	if l[render.LabelManagedBy] != render.ManagedBy || l[render.LabelGroup] == "" {
		return nil
	}
	return []controller.Key{cache.NewObjectName(pod.GetNamespace(), l[render.LabelGroup])}
}

func (c *Controller) getGroup(namespace, name string) (metav1.Object, error) {
	f := c.informers.ShipstreamFor(namespace)
	if f == nil {
		return nil, fmt.Errorf("namespace %s is not watched", namespace)
	}
	return f.Shipstream().V1alpha1().MysqlFailoverGroups().Lister().MysqlFailoverGroups(namespace).Get(name)
}

func (c *Controller) allGroups() []*v1alpha1.MysqlFailoverGroup {
	var out []*v1alpha1.MysqlFailoverGroup
	for _, f := range c.informers.Shipstream {
		gs, err := f.Shipstream().V1alpha1().MysqlFailoverGroups().Lister().List(labels.Everything())
		if err == nil {
			out = append(out, gs...)
		}
	}
	return out
}

// sooner returns the shorter positive delay (0 means none).
func sooner(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	default:
		return min(a, b)
	}
}

// newRunID is a fresh random (version 4) UUID for a transition or run id.
func newRunID() string { return string(uuid.NewUUID()) }
