package playground

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// plannedDrill asks for a planned failover to the next PrimaryCandidate
// site as a user would (docs/planned-failover.md, Asking for one): the
// annotation, which the operator turns into a claim. There is no fault, so
// nothing to undo: the operator repoints the former source itself. A
// planned failover is admitted only a cooldown after the last failover of
// any kind (onCooldown: Reject by default), hence anyCooldown.
var plannedDrill = drill{
	kind:        DrillPlanned,
	anyCooldown: true,
	inject: func(ctx context.Context, p *Playground, g *v1alpha1.MysqlFailoverGroup) error {
		to, err := nextCandidate(g)
		if err != nil {
			return err
		}
		return p.RequestPlannedFailover(ctx, to)
	},
	failed: plannedFailed,
}

// RequestPlannedFailover sets the planned-failover annotation to site, the
// same merge patch as `kubectl annotate mfg <group>
// bloodraven.shipstream.io/planned-failover=<site>`.
func (p *Playground) RequestPlannedFailover(ctx context.Context, site string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{topology.AnnotationPlannedFailover: site}}})
	if err != nil {
		return err
	}
	_, err = p.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.Namespace).Patch(ctx, p.Group, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("planned failover to %s: %w", site, err)
	}
	return nil
}

// nextCandidate is the first PrimaryCandidate site after the active one in
// spec.sites, wrapping around, so repeated drills move the role round.
func nextCandidate(g *v1alpha1.MysqlFailoverGroup) (string, error) {
	sites := g.Spec.Sites
	at := -1
	for i, s := range sites {
		if s.Name == g.Status.ActiveSite {
			at = i
		}
	}
	for i := 1; i < len(sites); i++ {
		s := sites[(at+i+len(sites))%len(sites)]
		if s.Name != g.Status.ActiveSite && (s.Role == "" || s.Role == v1alpha1.SiteRolePrimaryCandidate) {
			return s.Name, nil
		}
	}
	return "", fmt.Errorf("no PrimaryCandidate site other than the active %s", g.Status.ActiveSite)
}

// plannedFailed reports a run requested at or after at that ended without
// the handoff: refused, timed out or rolled back. Earlier runs are at least
// a cooldown older, and requestTime is stored to the second, hence the
// truncation.
func plannedFailed(g *v1alpha1.MysqlFailoverGroup, at time.Time) error {
	pf := g.Status.PlannedFailover
	if pf == nil || pf.Phase != v1alpha1.PlannedFailoverFailed || pf.RequestTime == nil || pf.RequestTime.Time.Before(at.Truncate(time.Second)) {
		return nil
	}
	if pf.Result == nil {
		return fmt.Errorf("planned failover to %s failed", pf.TargetSite)
	}
	return fmt.Errorf("planned failover to %s failed: %s %s: %s", pf.TargetSite, pf.Result.Outcome, pf.Result.Reason, pf.Result.Message)
}
