package topologymanager

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// PlannedClaimHeldError: another planned-failover run still holds the
// group's claim (its phase is not terminal), so a new run may not replace it.
type PlannedClaimHeldError struct {
	RunID, TargetSite string
	Phase             v1alpha1.PlannedFailoverPhase
}

func (e *PlannedClaimHeldError) Error() string {
	return fmt.Sprintf("status.plannedFailover is held by run %s to site %s in phase %s", e.RunID, e.TargetSite, e.Phase)
}

// StorePlannedClaim writes claim into status.plannedFailover of g and
// nothing else. The write carries g's resourceVersion, so it fails with a
// Conflict if the group changed since it was read: a claim is never stored
// on top of a state the caller did not see. A claim of another run that is
// not finished is never replaced. Planned admission must call this before
// it asks leasestore.Store.Holds: a hold granted concurrently then either
// is seen by that query or sees this claim and withdraws itself.
func StorePlannedClaim(ctx context.Context, ship versioned.Interface, g *v1alpha1.MysqlFailoverGroup, claim v1alpha1.PlannedFailoverStatus) (*v1alpha1.MysqlFailoverGroup, error) {
	if cur := g.Status.PlannedFailover; cur != nil && cur.RunID != claim.RunID && !cur.Phase.IsTerminal() {
		return g, &PlannedClaimHeldError{RunID: cur.RunID, TargetSite: cur.TargetSite, Phase: cur.Phase}
	}
	out := g.DeepCopy()
	out.Status.PlannedFailover = claim.DeepCopy()
	stored, err := ship.ShipstreamV1alpha1().MysqlFailoverGroups(g.Namespace).UpdateStatus(ctx, out, metav1.UpdateOptions{})
	if err != nil {
		return g, fmt.Errorf("store planned-failover claim of run %s: %w", claim.RunID, err)
	}
	return stored, nil
}
