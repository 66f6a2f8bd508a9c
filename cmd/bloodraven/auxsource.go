package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"

	shipv1alpha1 "github.com/shipstream/bloodraven/generated/informers/externalversions/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/auxiliary"
	"github.com/shipstream/bloodraven/pkg/operator"
)

// groupSource is the auxiliary handler's view of the groups: the shared
// informers of every watched-namespace factory (one when all namespaces are
// watched).
type groupSource struct {
	p      *operator.Process
	groups []shipv1alpha1.MysqlFailoverGroupInformer
}

func (s groupSource) Groups() ([]*v1alpha1.MysqlFailoverGroup, error) {
	var out []*v1alpha1.MysqlFailoverGroup
	for _, g := range s.groups {
		gs, err := g.Lister().List(labels.Everything())
		if err != nil {
			return nil, err
		}
		out = append(out, gs...)
	}
	return out, nil
}

func (s groupSource) Group(namespace, name string) (*v1alpha1.MysqlFailoverGroup, error) {
	f := s.p.Informers.ShipstreamFor(namespace)
	if f == nil {
		return nil, fmt.Errorf("namespace %s is not watched: %w", namespace, auxiliary.ErrGroupNotFound)
	}
	return f.Shipstream().V1alpha1().MysqlFailoverGroups().Lister().MysqlFailoverGroups(namespace).Get(name)
}

func (s groupSource) Synced() bool {
	for _, g := range s.groups {
		if !g.Informer().HasSynced() {
			return false
		}
	}
	return true
}
