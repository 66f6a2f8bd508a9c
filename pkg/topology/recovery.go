package topology

import (
	"fmt"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// isOldPrimary: the site was the source of the last failover to active.
func (d *decider) isOldPrimary(site, active string) bool {
	lf := d.out.Status.LastFailover
	return lf != nil && lf.Source == site && lf.Target == active
}

// trackRecovery keeps the recovery state of a returning old primary that
// holds nothing the active site lacks (the follower logic fenced and
// repointed it): RecoveryInProgress from the first poll that finds it back
// until it replicates from the active site, then cleared with an Event. A
// recovery starts only when the site comes back as the former writer (the
// stored entry is the active site's, unreachable, unknown or writable), so
// a later replication problem of the same site is reported as what it is,
// not as a recovery.
func (d *decider) trackRecovery(s SiteSpec, st *v1alpha1.SiteStatus, active string) {
	if st.RecoveryState == v1alpha1.RecoveryBlocked || !d.isOldPrimary(s.Name, active) {
		return
	}
	o := d.view(s.Name)
	if o == nil {
		return
	}
	rejoined := st.SourceConvergenceState == "Converged" && ReplicationState(o.Replica) == v1alpha1.ReplicationRunning
	p := d.prevSite(s.Name)
	returning := p == nil || p.RecoveryState == v1alpha1.RecoveryInProgress || p.SourceConvergenceState == "" ||
		p.State == v1alpha1.SiteUnreachable || p.State == v1alpha1.SiteUnknown || p.State == v1alpha1.SiteWritable
	switch {
	case rejoined && p != nil && p.RecoveryState == v1alpha1.RecoveryInProgress:
		st.RecoveryState = ""
		d.event(false, v1alpha1.EventOldPrimaryRejoined, "old primary %s held nothing site %s lacks and replicates from it again", s.Name, active)
	case rejoined:
		st.RecoveryState = ""
	case returning:
		st.RecoveryState = v1alpha1.RecoveryInProgress
		if st.Message == "" {
			st.Message = fmt.Sprintf("old primary rejoining as a follower of site %s", active)
		}
	}
}
