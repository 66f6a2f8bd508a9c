package topologymanager

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Out-of-band copies of status.lastFailover on the group's metadata
// (docs/api.md): written and cleared as a pair, so the last failover survives a
// status that was lost (a restore of the object, a status wipe).
const (
	AnnotationLastFailover       = "bloodraven.shipstream.io/last-failover"
	AnnotationLastFailoverTarget = "bloodraven.shipstream.io/last-failover-target"
)

// rehydrate returns g with status.lastFailover rebuilt from the annotations
// when the status has none (time and target only: the annotations carry
// nothing else). g itself is not modified.
func rehydrate(g *v1alpha1.MysqlFailoverGroup) *v1alpha1.MysqlFailoverGroup {
	if g.Status.LastFailover != nil {
		return g
	}
	ts, target := g.Annotations[AnnotationLastFailover], g.Annotations[AnnotationLastFailoverTarget]
	if ts == "" || target == "" {
		return g
	}
	t, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return g // an unreadable copy is not evidence of anything
	}
	out := g.DeepCopy()
	out.Status.LastFailover = &v1alpha1.LastFailover{Time: metav1.NewTime(t.UTC()), Target: target}
	return out
}

// lastFailoverAnnotations are the annotation values status.lastFailover
// calls for (both empty when there is none).
func lastFailoverAnnotations(lf *v1alpha1.LastFailover) (ts, target string) {
	if lf == nil {
		return "", ""
	}
	return lf.Time.UTC().Truncate(time.Second).Format(time.RFC3339), lf.Target
}

// syncLastFailoverAnnotations writes the pair when it differs from status.
// A status without lastFailover leaves existing annotations alone: they may
// be the only record left.
func (p *mpass) syncLastFailoverAnnotations(ctx context.Context) error {
	ts, target := lastFailoverAnnotations(p.g.Status.LastFailover)
	if ts == "" || (p.g.Annotations[AnnotationLastFailover] == ts && p.g.Annotations[AnnotationLastFailoverTarget] == target) {
		return nil
	}
	// An update carrying the read resourceVersion: a stale copy fails with
	// a Conflict instead of overwriting a newer pair.
	out := p.g.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[AnnotationLastFailover], out.Annotations[AnnotationLastFailoverTarget] = ts, target
	g, err := p.m.ctrl.ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.g.Namespace).Update(ctx, out, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("write %s annotations: %w", AnnotationLastFailover, err)
	}
	p.g = g
	return nil
}
