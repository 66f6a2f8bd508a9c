package groupobjects

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/render"
)

func siteIdx(g *v1alpha1.MysqlFailoverGroup, name string) int {
	for i, s := range g.Spec.Sites {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// taints puts the group's db-readonly taint on the nodes of non-active
// sites and takes it off every other node (render.DesiredTaints decides).
func (p *pass) taints(ctx context.Context) {
	if p.c.nodes == nil {
		return
	}
	nodes, err := p.c.nodes.List(labels.Everything())
	if err != nil {
		p.fail(err)
		return
	}
	ch := render.DesiredTaints(p.g, nodes)
	taint := render.Taint(p.g)
	for _, n := range ch.Add {
		if changed, err := p.c.setTaint(ctx, n, taint, true); err != nil {
			p.fail(err)
		} else if changed {
			p.c.recorder.Eventf(p.g, corev1.EventTypeNormal, v1alpha1.EventNodeTainted, "node %s: added %s:%s (its site is not active)", n, taint.Key, taint.Effect)
		}
	}
	for _, n := range ch.Remove {
		if changed, err := p.c.setTaint(ctx, n, taint, false); err != nil {
			p.fail(err)
		} else if changed {
			p.c.recorder.Eventf(p.g, corev1.EventTypeNormal, v1alpha1.EventNodeUntainted, "node %s: removed %s", n, taint.Key)
		}
	}
}

// setTaint adds (on) or removes the taint's key on a node, reading the node
// afresh on every attempt so taints written by others are kept.
func (c *Controller) setTaint(ctx context.Context, node string, taint corev1.Taint, on bool) (bool, error) {
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		has := render.HasTaint(n, taint.Key)
		if has == on {
			changed = false
			return nil
		}
		if on {
			n.Spec.Taints = append(n.Spec.Taints, taint)
		} else {
			kept := n.Spec.Taints[:0]
			for _, t := range n.Spec.Taints {
				if t.Key != taint.Key {
					kept = append(kept, t)
				}
			}
			n.Spec.Taints = kept
		}
		_, err = c.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		changed = err == nil
		return err
	})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("node %s: set taint %s=%v: %w", node, taint.Key, on, err)
	}
	return changed, nil
}
