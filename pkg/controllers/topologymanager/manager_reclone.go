package topologymanager

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// recloneInput is the group's reclone-site annotation for the decision.
func recloneInput(g *v1alpha1.MysqlFailoverGroup) *topology.RecloneInput {
	v, ok := g.Annotations[topology.AnnotationRecloneSite]
	if !ok {
		return nil
	}
	return &topology.RecloneInput{Value: v, GroupUID: string(g.UID)}
}

// clearReclone removes the reclone-site annotation the decision handled.
// The update carries the resourceVersion read after this pass's status
// write, and only a value equal to the handled one is removed: a request
// written meanwhile fails the update with a Conflict and is read by the next
// pass instead of being dropped unread. (An update, not a patch: the
// operator's role grants update on groups.)
func (p *mpass) clearReclone(ctx context.Context, handled string) error {
	if v, ok := p.g.Annotations[topology.AnnotationRecloneSite]; !ok || v != handled {
		return nil
	}
	out := p.g.DeepCopy()
	delete(out.Annotations, topology.AnnotationRecloneSite)
	g, err := p.m.ctrl.ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.g.Namespace).Update(ctx, out, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("clear annotation %s: %w", topology.AnnotationRecloneSite, err)
	}
	p.g = g
	return nil
}
