package groupobjects

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/render"
)

// ReaderLagLimit is the lag, in seconds, up to which a reader stays in its
// read pool (seed 004, spec.replication.readOnlyMaxLagSeconds): the field
// when set, an explicit 0 included (only zero reported lag); omitted, it
// inherits maxLagSeconds, and that omitted too its 300-second default.
func ReaderLagLimit(r *v1alpha1.ReplicationSpec) int64 {
	switch {
	case r != nil && r.ReadOnlyMaxLagSeconds != nil:
		return int64(*r.ReadOnlyMaxLagSeconds)
	case r != nil && r.MaxLagSeconds != nil:
		return int64(*r.MaxLagSeconds)
	}
	return int64(v1alpha1.DefaultMaxLagSeconds)
}

// InReadPool reports whether a reader whose stored observation is st
// serves reads: it is read-only, replicates with both threads running and
// reports a lag no greater than limit. The pool is health-gated: an
// unknown lag (no observation yet, not replicating, unreachable) keeps the
// reader out until the topology manager reports one.
func InReadPool(st *v1alpha1.SiteStatus, limit int64) bool {
	return st != nil && st.State == v1alpha1.SiteReadOnly && st.Replication == v1alpha1.ReplicationRunning &&
		st.SecondsBehindSource != nil && *st.SecondsBehindSource <= limit
}

// readPool keeps LabelReadPool on each reader's pod true to InReadPool over
// the stored status; the reader's site Service selects on it, so a lagging
// reader leaves its endpoints and returns once caught up. Other sites'
// pods carry no such label.
func (p *pass) readPool(ctx context.Context) {
	limit := ReaderLagLimit(p.g.Spec.Replication)
	for _, s := range p.g.Spec.Sites {
		pod := p.pods[s.Name]
		if s.Role != v1alpha1.SiteRoleReadOnly || pod == nil || pod.DeletionTimestamp != nil {
			continue
		}
		st := siteStatus(p.g, s.Name)
		in := InReadPool(st, limit)
		want := fmt.Sprint(in)
		if pod.Labels[render.LabelReadPool] == want {
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, render.LabelReadPool, want)
		_, err := p.c.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			if !apierrors.IsNotFound(err) {
				p.fail(fmt.Errorf("label pod %s %s=%s: %w", pod.Name, render.LabelReadPool, want, err))
			}
			continue
		}
		attrs := []any{"namespace", p.g.Namespace, "group", p.g.Name, "site", s.Name, "inReadPool", in, "limitSeconds", limit}
		if st != nil && st.SecondsBehindSource != nil {
			attrs = append(attrs, "lagSeconds", *st.SecondsBehindSource)
		}
		p.c.log.Info("reader read pool changed", attrs...)
	}
}

func siteStatus(g *v1alpha1.MysqlFailoverGroup, site string) *v1alpha1.SiteStatus {
	for i := range g.Status.Sites {
		if g.Status.Sites[i].Name == site {
			return &g.Status.Sites[i]
		}
	}
	return nil
}
