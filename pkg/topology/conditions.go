package topology

import (
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(conds, typ)
}

// degradedPrecedence orders Degraded reasons: the first present is the
// condition's reason; the message lists every cause. SiteUnhealthy comes
// before DivergentTransactions so that a replica's divergence report, which
// the deployment API tolerates, never hides an outage.
var degradedPrecedence = []string{
	v1alpha1.ReasonBootstrapFailed,
	v1alpha1.ReasonIncomparableGTIDSets,
	v1alpha1.ReasonActiveSiteLostOwnTransactions,
	v1alpha1.ReasonSplitBrain,
	v1alpha1.ReasonNoEligibleCandidate,
	v1alpha1.ReasonCatchUpTimedOut,
	v1alpha1.ReasonFailoverRefused,
	v1alpha1.ReasonSiteUnhealthy,
	v1alpha1.ReasonDivergentTransactions,
}

// conditions computes Ready, Degraded and Bootstrapping from the sites'
// entries, the observations and the causes the decision collected. Readers
// never change a group condition.
func (d *decider) conditions() {
	d.out.Status.ObservedGeneration = d.in.Generation
	d.bootstrapping()
	d.recoveryPending()
	d.siteHealth()
	d.ready()
	var msgs []string
	reason := ""
	for _, r := range degradedPrecedence {
		if causes := d.degraded[r]; len(causes) > 0 {
			if reason == "" {
				reason = r
			}
			msgs = append(msgs, causes...)
		}
	}
	if reason == "" {
		d.set(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonNotDegraded, "no site is unhealthy")
		return
	}
	d.set(v1alpha1.ConditionDegraded, metav1.ConditionTrue, reason, strings.Join(msgs, "; "))
}

func (d *decider) set(typ string, status metav1.ConditionStatus, reason, msg string) {
	if len(msg) > 4096 {
		msg = msg[:4093] + "..."
	}
	apimeta.SetStatusCondition(&d.out.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: d.in.Generation, LastTransitionTime: metav1.NewTime(d.in.Now),
	})
}

func (d *decider) isReader(site string) bool { return d.role(site) == v1alpha1.SiteRoleReadOnly }

// siteHealth collects the per-site causes of Degraded.
func (d *decider) siteHealth() {
	active := d.out.Status.ActiveSite
	var writable []string
	for _, s := range d.in.Sites {
		st := d.sites[s.Name]
		if st.State == v1alpha1.SiteWritable {
			writable = append(writable, s.Name)
		}
		if d.isReader(s.Name) {
			continue
		}
		if st.State == v1alpha1.SiteUnreachable {
			d.degrade(v1alpha1.ReasonSiteUnhealthy, "site %s is unreachable", s.Name)
			continue
		}
		if st.SourceConvergenceReason == "GTIDDiverged" {
			// Blocked by its own divergence: that is the cause to report.
			d.degrade(v1alpha1.ReasonDivergentTransactions, "%s", st.Message)
			continue
		}
		if st.DivergenceDetectedBy != "" && st.DivergentGTID != "" {
			who := "site"
			if st.DivergenceDetectedBy == v1alpha1.DivergenceByOldPrimaryRecovery {
				who = "old primary"
			}
			d.degrade(v1alpha1.ReasonDivergentTransactions, "%s %s holds %d transactions site %s lacks: %s",
				who, s.Name, st.DivergentTransactionCount, st.DivergenceComparedTo, GTIDPhrase(st.DivergentGTID))
		}
		if active == "" || s.Name == active || d.out.Status.Transition != nil {
			continue
		}
		o := d.view(s.Name)
		if o == nil {
			continue
		}
		switch st.SourceConvergenceState {
		case "Pending", "Blocked":
			d.degrade(v1alpha1.ReasonSiteUnhealthy, "site %s does not replicate from site %s (%s)", s.Name, active, st.SourceConvergenceReason)
			continue
		}
		if rs := ReplicationState(o.Replica); rs != v1alpha1.ReplicationRunning && !(rs == v1alpha1.ReplicationConnecting && o.Replica.LastIOErrno == 0) {
			msg := fmt.Sprintf("site %s replication is %s", s.Name, rs)
			if st.Message != "" {
				msg += ": " + st.Message
			}
			d.degrade(v1alpha1.ReasonSiteUnhealthy, "%s", msg)
			continue
		}
		if lag := o.Replica.SecondsBehindSource; lag != nil && *lag > d.in.MaxLagSeconds {
			// No current figure in the message: it would rewrite the status on
			// every poll; secondsBehindSource has it.
			d.degrade(v1alpha1.ReasonSiteUnhealthy, "site %s lags more than maxLagSeconds (%ds) behind site %s", s.Name, d.in.MaxLagSeconds, active)
		}
	}
	if len(writable) > 1 {
		d.degrade(v1alpha1.ReasonSplitBrain, "sites %s are all writable", strings.Join(writable, ", "))
	}
}

// ready: exactly one confirmed writable site, the active one, and every
// non-reader follower replicating directly from it.
func (d *decider) ready() {
	active := d.out.Status.ActiveSite
	var writable []string
	for _, s := range d.in.Sites {
		if d.sites[s.Name].State == v1alpha1.SiteWritable {
			writable = append(writable, s.Name)
		}
	}
	switch {
	case active == "":
		msg := "no active site yet"
		if d.waiting != "" {
			msg += ": " + d.waiting
		}
		d.set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNoWritablePrimary, msg)
		return
	case d.sites[active] == nil || d.sites[active].State != v1alpha1.SiteWritable:
		state := v1alpha1.SiteUnknown
		if st := d.sites[active]; st != nil {
			state = st.State
		}
		d.set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNoWritablePrimary, fmt.Sprintf("active site %s is %s", active, state))
		return
	case len(writable) > 1:
		d.set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNoWritablePrimary,
			fmt.Sprintf("sites %s are all writable: there is no single confirmed primary", strings.Join(writable, ", ")))
		return
	}
	var bad []string
	for _, s := range d.in.Sites {
		st := d.sites[s.Name]
		if s.Name == active || d.isReader(s.Name) {
			continue
		}
		if st.Replication != v1alpha1.ReplicationRunning || st.SourceConvergenceState != "Converged" {
			bad = append(bad, fmt.Sprintf("%s (replication %s, source %s)", s.Name, orUnknown(string(st.Replication)), orUnknown(string(st.SourceConvergenceReason))))
		}
	}
	if len(bad) > 0 {
		d.set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonReplicationUnhealthy,
			fmt.Sprintf("site %s is writable; followers not replicating directly from it: %s", active, strings.Join(bad, ", ")))
		return
	}
	d.set(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy,
		fmt.Sprintf("site %s is the only writable site and every follower replicates directly from it", active))
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// bootstrapping: True while a clone runs; False/BootstrapFailed while a
// failed clone's target does not replicate (with Degraded=True for the same
// reason); False/NotBootstrapping otherwise. After an operator restart the
// failure record is gone from memory; a stored BootstrapFailed is then kept
// until every non-reader follower replicates.
func (d *decider) bootstrapping() {
	var running, failed []string
	for _, s := range d.in.Sites {
		c := d.in.Observed[s.Name].Clone
		switch {
		case c.Running:
			running = append(running, fmt.Sprintf("site %s from site %s", s.Name, c.Donor))
		case !c.FailedAt.IsZero() && d.awaitsClone(s.Name):
			failed = append(failed, fmt.Sprintf("clone of site %s failed: %s", s.Name, c.Error))
		}
	}
	if len(running) > 0 {
		d.set(v1alpha1.ConditionBootstrapping, metav1.ConditionTrue, v1alpha1.ReasonCloning, "cloning "+strings.Join(running, ", "))
		return
	}
	if len(failed) == 0 {
		if prev := findCondition(d.in.Status.Conditions, v1alpha1.ConditionBootstrapping); prev != nil && prev.Reason == v1alpha1.ReasonBootstrapFailed && d.someFollowerAwaitsClone() {
			failed = append(failed, prev.Message)
		}
	}
	if len(failed) > 0 {
		msg := strings.Join(failed, "; ")
		d.set(v1alpha1.ConditionBootstrapping, metav1.ConditionFalse, v1alpha1.ReasonBootstrapFailed, msg)
		d.degrade(v1alpha1.ReasonBootstrapFailed, "%s", msg)
		return
	}
	d.set(v1alpha1.ConditionBootstrapping, metav1.ConditionFalse, v1alpha1.ReasonNotBootstrapping, "no clone is running")
}

func (d *decider) someFollowerAwaitsClone() bool {
	for _, s := range d.in.Sites {
		if s.Name != d.out.Status.ActiveSite && d.awaitsClone(s.Name) {
			return true
		}
	}
	return false
}

// awaitsClone: a non-reader site that does not replicate and is not
// refused a clone for holding transactions the active site lacks. A clone
// that failed before the divergence was seen (planned on a poll from just
// before the site restarted with them) is no bootstrap failure any more:
// DivergentTransactions says what is wrong, and BootstrapFailed, which
// takes precedence, would hide it for as long as the site is refused.
func (d *decider) awaitsClone(site string) bool {
	st := d.sites[site]
	return st.Replication != v1alpha1.ReplicationRunning && st.SourceConvergenceReason != "GTIDDiverged" && !d.isReader(site)
}

// recoveryPending: True/DivergentTransactions while an old primary holds
// transactions the active site lacks (reclone it with the interlock
// annotation once reviewed); False otherwise.
func (d *decider) recoveryPending() {
	var blocked []string
	for _, s := range d.in.Sites {
		if st := d.sites[s.Name]; st.RecoveryState == v1alpha1.RecoveryBlocked {
			blocked = append(blocked, fmt.Sprintf("old primary %s holds %d transactions site %s lacks (%s)", s.Name, st.DivergentTransactionCount, st.DivergenceComparedTo, GTIDPhrase(st.DivergentGTID)))
		}
	}
	if len(blocked) > 0 {
		d.set(v1alpha1.ConditionRecoveryPending, metav1.ConditionTrue, v1alpha1.ReasonDivergentTransactions, strings.Join(blocked, "; ")+": review them, then reclone with the interlock annotation")
		return
	}
	var rejoining []string
	for _, s := range d.in.Sites {
		if d.sites[s.Name].RecoveryState == v1alpha1.RecoveryInProgress {
			rejoining = append(rejoining, s.Name)
		}
	}
	if len(rejoining) > 0 {
		d.set(v1alpha1.ConditionRecoveryPending, metav1.ConditionTrue, v1alpha1.ReasonRecoveryInProgress,
			fmt.Sprintf("old primary %s is rejoining as a follower of site %s", strings.Join(rejoining, ", "), d.out.Status.ActiveSite))
		return
	}
	d.set(v1alpha1.ConditionRecoveryPending, metav1.ConditionFalse, v1alpha1.ReasonNoRecoveryPending, "no old primary awaits recovery")
}
