package groupobjects

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/render"
)

// finalize runs while a deleted group still exists: it removes the group's
// taint from every node and deletes its DNSEndpoint, then removes the
// finalizer. Only then does the API server delete the group, and only then
// does the garbage collector delete the owned StatefulSets, Services and
// ConfigMaps — so no node stays tainted and no DNS record points at a site
// whose pods are gone.
func (c *Controller) finalize(ctx context.Context, g *v1alpha1.MysqlFailoverGroup) error {
	if !hasFinalizer(g) {
		return nil
	}
	key := render.TaintKey(g.Namespace, g.Name)
	// The API, not the cache: a taint added a moment ago must not be missed.
	nodes, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	var errs []error
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !render.HasTaint(n, key) {
			continue
		}
		changed, err := c.setTaint(ctx, n.Name, corev1.Taint{Key: key}, false)
		if err != nil {
			errs = append(errs, err)
		} else if changed {
			c.recorder.Eventf(g, corev1.EventTypeNormal, v1alpha1.EventNodeUntainted, "node %s: removed %s (group deleted)", n.Name, key)
		}
	}
	// Ask discovery afresh: a CRD installed since the last check must not
	// let the record outlive the group.
	c.forgetDNSCRD()
	deleted, err := c.deleteDNSEndpoint(ctx, g.Namespace, render.DNSEndpointName(g.Name), g)
	if err != nil {
		errs = append(errs, err)
	} else if deleted {
		c.recorder.Eventf(g, corev1.EventTypeNormal, v1alpha1.EventDNSEndpointDeleted, "DNSEndpoint %s deleted (group deleted)", render.DNSEndpointName(g.Name))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	out := g.DeepCopy()
	kept := out.Finalizers[:0]
	for _, f := range out.Finalizers {
		if f != render.Finalizer {
			kept = append(kept, f)
		}
	}
	out.Finalizers = kept
	_, err = c.ship.ShipstreamV1alpha1().MysqlFailoverGroups(g.Namespace).Update(ctx, out, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil // a stale cache read: the finalizer was already removed and the group is gone
	}
	if err != nil {
		return fmt.Errorf("remove finalizer %s: %w", render.Finalizer, err)
	}
	return nil
}
