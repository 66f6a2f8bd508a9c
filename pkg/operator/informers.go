package operator

import (
	"context"
	"sort"
	"time"

	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	shipinformers "github.com/shipstream/bloodraven/generated/informers/externalversions"
)

// AllNamespaces is the Informers key of the factories that watch every namespace.
const AllNamespaces = ""

// Informers holds the shared informer factories: one generated (Bloodraven
// kinds) and one core factory per watched namespace, or a single pair for all
// namespaces. Controllers request informers from them before Start.
type Informers struct {
	Shipstream map[string]shipinformers.SharedInformerFactory
	Kube       map[string]kubeinformers.SharedInformerFactory
}

// resync is zero: controllers poll with AddAfter where they need periodic
// work instead of relisting every object.
const resync time.Duration = 0

func newInformers(kube kubernetes.Interface, ship versioned.Interface, namespaces []string) *Informers {
	inf := &Informers{Shipstream: map[string]shipinformers.SharedInformerFactory{}, Kube: map[string]kubeinformers.SharedInformerFactory{}}
	if len(namespaces) == 0 {
		namespaces = []string{AllNamespaces}
	}
	for _, ns := range namespaces {
		inf.Shipstream[ns] = shipinformers.NewSharedInformerFactoryWithOptions(ship, resync, shipinformers.WithNamespace(ns))
		inf.Kube[ns] = kubeinformers.NewSharedInformerFactoryWithOptions(kube, resync, kubeinformers.WithNamespace(ns))
	}
	return inf
}

// ShipstreamFor returns the generated factory that covers namespace ns, or
// nil when ns is not watched.
func (i *Informers) ShipstreamFor(ns string) shipinformers.SharedInformerFactory {
	if f, ok := i.Shipstream[ns]; ok {
		return f
	}
	return i.Shipstream[AllNamespaces]
}

// KubeFor returns the core factory that covers namespace ns, or nil.
func (i *Informers) KubeFor(ns string) kubeinformers.SharedInformerFactory {
	if f, ok := i.Kube[ns]; ok {
		return f
	}
	return i.Kube[AllNamespaces]
}

// Start starts every informer requested so far.
func (i *Informers) Start(stop <-chan struct{}) {
	for _, f := range i.Shipstream {
		f.Start(stop)
	}
	for _, f := range i.Kube {
		f.Start(stop)
	}
}

// WaitForSync blocks until every started informer has synced; false means
// ctx ended first.
func (i *Informers) WaitForSync(ctx context.Context) bool {
	var synced []cache.InformerSynced
	for _, f := range i.Shipstream {
		for _, ok := range f.WaitForCacheSync(ctx.Done()) {
			synced = append(synced, func() bool { return ok })
		}
	}
	for _, f := range i.Kube {
		for _, ok := range f.WaitForCacheSync(ctx.Done()) {
			synced = append(synced, func() bool { return ok })
		}
	}
	for _, s := range synced {
		if !s() {
			return false
		}
	}
	return ctx.Err() == nil
}

// Shutdown stops the informers and waits for their goroutines.
func (i *Informers) Shutdown() {
	for _, f := range i.Shipstream {
		f.Shutdown()
	}
	for _, f := range i.Kube {
		f.Shutdown()
	}
}

// Namespaces are the watched namespaces in a fixed order ("" alone when
// the operator watches all), so controllers register their handlers in the
// same order on every start.
func (i *Informers) Namespaces() []string {
	out := make([]string, 0, len(i.Shipstream))
	for ns := range i.Shipstream {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}
