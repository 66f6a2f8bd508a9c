package pluginview

import (
	"fmt"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// PlannedFailoverValue builds the planned-failover annotation value for a
// run to site, refusing what the operator would refuse for good or at once
// (docs/planned-failover.md, Asking for one and Admission). maxLagWait 0
// leaves spec.plannedFailover.maxLagWait in effect.
func PlannedFailoverValue(g *v1alpha1.MysqlFailoverGroup, site string, maxLagWait time.Duration) (string, error) {
	if err := plannedRefusal(g, site); err != nil {
		return "", err
	}
	v := site
	if maxLagWait != 0 {
		v += ":maxLagWait=" + maxLagWait.String()
	}
	// The operator's parser is the authority on the format and the bounds.
	if _, err := topology.ParsePlannedFailoverValue(v); err != nil {
		return "", fmt.Errorf("--max-lag-wait: %v", err)
	}
	return v, nil
}

func plannedRefusal(g *v1alpha1.MysqlFailoverGroup, site string) error {
	sp := specSite(g, site)
	pf := g.Status.PlannedFailover
	switch {
	case sp == nil:
		return fmt.Errorf("site %q is not in spec.sites of group %s (sites: %s)", site, g.Name, joinSites(g))
	case sp.Role != v1alpha1.SiteRolePrimaryCandidate:
		return fmt.Errorf("site %s is a %s site; only PrimaryCandidate sites can become active", site, sp.Role)
	case site == g.Status.ActiveSite:
		return fmt.Errorf("site %s is already the active site of group %s; nothing to do", site, g.Name)
	case pf != nil && !pf.Phase.IsTerminal():
		return fmt.Errorf("a planned failover to %s is in flight (phase %s, run %s); wait for it to end (kubectl bloodraven status %s)", pf.TargetSite, pf.Phase, pf.RunID, g.Name)
	}
	if v, ok := g.Annotations[topology.AnnotationPlannedFailover]; ok {
		return fmt.Errorf("a planned-failover request (%s) is waiting for the operator; wait until it turns into status.plannedFailover (kubectl bloodraven status %s)", v, g.Name)
	}
	return nil
}

// ClearHoldValue is the clear-automatic-failover-hold value (the group's
// name), refused when there is no hold to clear.
func ClearHoldValue(g *v1alpha1.MysqlFailoverGroup) (string, error) {
	if g.Status.AutomaticFailoverHold == nil {
		return "", fmt.Errorf("group %s has no automatic-failover hold (status.automaticFailoverHold is not set); nothing to clear", g.Name)
	}
	return g.Name, nil
}

// HoldWarning is the reminder printed before clearing a hold: the hold
// exists because the operator could not tell whether a failover is safe.
func HoldWarning(h *v1alpha1.AutomaticFailoverHold) string {
	return fmt.Sprintf("Clearing hold %s (placed %s): %s\nAutomatic failover may act again once the operator handles this; check the sites first (docs/runbooks/planned-failover.md).\n",
		h.Reason, h.Since.UTC().Format(time.RFC3339), h.Message)
}

func joinSites(g *v1alpha1.MysqlFailoverGroup) string {
	return strings.Join(specSites(g), ", ")
}
