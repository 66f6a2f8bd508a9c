package topology

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
)

// A primary that lost its own tail (docs/safety.md, "The active site's own
// transactions"). A mysqld running with sync_binlog != 1 or
// innodb_flush_log_at_trx_commit != 1 acknowledges commits before they are
// on disk; killed, it restarts without the last of them while its replicas
// may already hold them. Made writable again it would issue the same GTIDs
// for other transactions, which the replicas skip as executed, and a
// replica refused by it ("replica has more") holds the only copy. Such a
// site is never reasserted and never kept as the source: the group fails
// over to the site holding more, under the normal candidate rules, or
// stays without a writer with a reason that names the site and the range.

// SourceReadError is why a replica's receiver stopped on its source's fatal
// binary-log read error (13114, carrying the source's 1236), as pkg/mysql
// classifies Last_IO_Error (ClassifySourceReadError).
type SourceReadError string

const (
	// ReadErrorNone: no fatal read error.
	ReadErrorNone SourceReadError = ""
	// ReadErrorPurged: the source purged binary logs the replica needs;
	// only this may lead to an automatic clone.
	ReadErrorPurged SourceReadError = "SourcePurged"
	// ReadErrorReplicaHasMore: the replica holds GTIDs of the source's own
	// server UUID the source lacks; the replica is never cloned for it.
	ReadErrorReplicaHasMore SourceReadError = "ReplicaHasMore"
	// ReadErrorOther: another fatal read error; never taken for "purged".
	ReadErrorOther SourceReadError = "Other"
)

// ownTailLost returns the GTIDs of the active site's own server UUID that
// other sites hold (executed or received, as last known: lastHeld) and the
// active site lacks, and which sites hold some. It judges only an active site observed
// fenced (super_read_only=ON): the poll reads super_read_only before
// gtid_executed in one statement (pkg/mysql, StmtObserve), and only
// Bloodraven clears it, so nothing was committed there after that set was
// read and a follower polled later cannot hold newer transactions of it.
// A writable active site's own GTIDs on a follower may just be newer than
// its poll (Divergent), so nothing is concluded from them.
func (d *decider) ownTailLost(active string, av *Observed) (gtid.Set, []string) {
	var lost gtid.Set
	var holders []string
	if av == nil || av.Writable || av.ServerUUID == "" {
		return lost, nil
	}
	for _, s := range d.in.Sites {
		if s.Name == active {
			continue
		}
		if own := ownMissing(d.lastHeld(s.Name), av); !own.IsEmpty() {
			lost = lost.Union(own)
			holders = append(holders, fmt.Sprintf("%s (%s)", s.Name, own.OneLine()))
		}
	}
	return lost, holders
}

// lastHeld is the latest set known of a site, executed or received: its
// current observation, else its last one in this process, else the set
// status recorded. A server's set only grows (but by a clone, which the
// operator sees), so an unreachable site still holds what it was last seen
// with: a tail the active site lost and only such a site holds still
// exists, and is still forked by a reassertion.
func (d *decider) lastHeld(site string) gtid.Set {
	if o := d.in.Observed[site].Last; o != nil {
		return withRetrieved(o)
	}
	if p := d.prevSite(site); p != nil {
		if set, err := gtid.Parse(p.GTIDExecuted); err == nil {
			return set
		}
	}
	return gtid.Set{}
}

// ownMissing is what held contains of av's own server UUID (any tag) that
// av has not executed.
func ownMissing(held gtid.Set, av *Observed) gtid.Set {
	extra := held.Subtract(av.Executed)
	return extra.Subtract(Divergent(held, av.Executed, av.ServerUUID))
}

// startOwnTailFailover fails over from an active site that came back
// without transactions of its own that another site holds; it reports
// whether it recorded the failover. When the failover may not start or no
// candidate qualifies, the group is Degraded with the reason and the site
// stays fenced (reassert refuses it on the same finding).
func (d *decider) startOwnTailFailover(active string) bool {
	av := d.view(active)
	lost, holders := d.ownTailLost(active, av)
	if lost.IsEmpty() {
		return false
	}
	why := d.ownTailFailoverHeld()
	var choice FailoverChoice
	if why == "" {
		choice = ChooseFailoverCandidate(d.failoverCandidates(active), d.ownTailGuards(active, av, lost))
		if choice.Site == "" {
			why = choice.Message + " (" + choice.Refusal + ")"
		}
	}
	if why != "" {
		d.blockOwnTail(active, lost, holders, "it is not failed over: "+why)
		return false
	}
	now := metav1.NewTime(d.in.Now)
	msg := fmt.Sprintf("active site %s came back without %d transactions of its own server UUID that other sites hold (%s): %s",
		active, lost.Count(), strings.Join(holders, "; "), choice.Message)
	if !choice.MayLose.IsEmpty() {
		msg += fmt.Sprintf("; it lacks %d transactions seen on %s or held by another site: %s", choice.MayLose.Count(), active, GTIDPhrase(choice.MayLose.OneLine()))
	}
	d.out.Status.Transition = &v1alpha1.Transition{
		ID: d.in.NewTransitionID, Kind: v1alpha1.TransitionAutomatic, SourceSite: active, TargetSite: choice.Site,
		TopologyGeneration: d.in.Status.TopologyGeneration + 1, Step: v1alpha1.StepRecorded,
		StartTime: now, StepTime: &now, Message: truncate(msg, 1024), CandidateGTIDSet: choice.Held.OneLine(),
	}
	d.out.WriteFirst = true
	d.act(Action{Kind: NotifySidecars, Why: fmt.Sprintf("failover from %s to %s", active, choice.Site)})
	d.waiting = fmt.Sprintf("failover from %s to %s recorded", active, choice.Site)
	d.event(true, v1alpha1.EventFailoverStarted, "%s: failing over to site %s; %s stays fenced", msg, choice.Site, active)
	return true
}

// ownTailFailoverHeld is why an automatic failover may not start now ("" if
// it may): the same switch, hold and cooldown as an unreachable active
// site's (startFailover).
func (d *decider) ownTailFailoverHeld() string {
	switch lf := d.in.Status.LastFailover; {
	case !d.in.Failover.Enabled:
		return "automatic failover is disabled (spec.automaticFailover)"
	case d.in.Status.AutomaticFailoverHold != nil:
		return "automatic failover is held (status.automaticFailoverHold)"
	case lf != nil && startsCooldown(lf.Kind) && d.in.Now.Sub(lf.Time.Time) < d.in.Failover.Cooldown:
		return fmt.Sprintf("failoverCooldown %s has not passed since the last failover at %s (until %s)",
			d.in.Failover.Cooldown, lf.Time.UTC().Format(time.RFC3339), lf.Time.Add(d.in.Failover.Cooldown).UTC().Format(time.RFC3339))
	}
	return ""
}

// ownTailGuards are the usual guards with two changes. What counts as seen
// on the old primary is what it holds now plus the tail other sites hold:
// the tail it lost exists nowhere else, and there is nothing to wait for on
// a site that answers and shows its set. And the lag guard does not count
// the channels' silence since the crash (SourceAlive unknown): the old
// primary is reachable, and the sets say exactly what a candidate lacks of
// it (MayLose, bounded by MaxMissing). The applier backlog and stale
// evidence are judged as always.
func (d *decider) ownTailGuards(active string, av *Observed, lost gtid.Set) FailoverGuards {
	g := d.failoverGuards(active)
	g.SeenOnSource = av.Executed.Union(lost)
	g.SourceUUID = av.ServerUUID
	g.SourceAlive = time.Time{}
	return g
}

// blockOwnTail reports an active site that lost its own tail and is not
// failed over: Degraded with the site and the range, and a Warning when the
// condition first shows.
func (d *decider) blockOwnTail(active string, lost gtid.Set, holders []string, why string) {
	msg := fmt.Sprintf("site %s came back without %d transactions of its own server UUID that other sites hold (%s; missing %s): it lost the tail of what it committed (sync_binlog or innodb_flush_log_at_trx_commit other than 1), so it stays fenced and is not made writable again, which would issue those GTIDs for other transactions; %s (what to do: docs/runbooks/failover-refused-or-held.md, %s)",
		active, lost.Count(), strings.Join(holders, "; "), lost.OneLine(), why, v1alpha1.ReasonActiveSiteLostOwnTransactions)
	d.degrade(v1alpha1.ReasonActiveSiteLostOwnTransactions, "%s", msg)
	if prev := findCondition(d.in.Status.Conditions, v1alpha1.ConditionDegraded); prev == nil || prev.Reason != v1alpha1.ReasonActiveSiteLostOwnTransactions {
		d.event(true, v1alpha1.EventActiveSiteLostOwnTransactions, "%s", msg)
	}
}

// reassertRefusedForOwnTail: the active site is not made writable again
// while other sites hold transactions of its own it lacks.
func (d *decider) reassertRefusedForOwnTail(active string, av *Observed) bool {
	lost, _ := d.ownTailLost(active, av)
	return !lost.IsEmpty()
}

// refuseWritableForOwnTail is the guard on every MakeWritable (decider.act):
// whatever step asks for it (a reassertion, a failover's or a planned
// handoff's target that restarted after its promotion, a bootstrap), a site
// found fenced without transactions of its own that other sites hold is not
// made writable. The step waits with the reason; a person decides.
func (d *decider) refuseWritableForOwnTail(site string) bool {
	lost, holders := d.ownTailLost(site, d.view(site))
	if lost.IsEmpty() {
		return false
	}
	if len(d.degraded[v1alpha1.ReasonActiveSiteLostOwnTransactions]) == 0 {
		d.blockOwnTail(site, lost, holders, "a step that would make it writable (a failover or handoff to it, a bootstrap) waits")
	}
	return true
}

// replicaHasMore handles a follower whose receiver the active site refused
// because the follower holds GTIDs of the active site's own server UUID
// that the active site lacks: it may hold the only copy of them, so it is
// neither cloned nor restarted, only reported. The range is what its sets
// show beyond the active site's; a writable active site may have issued
// those GTIDs again, for other transactions, so its set may show nothing.
func (d *decider) replicaHasMore(s SiteSpec, st *v1alpha1.SiteStatus, o, av *Observed, active string) {
	st.SourceConvergenceState, st.SourceConvergenceReason = "Blocked", "GTIDDiverged"
	what := "GTIDs of its server UUID"
	if own := ownMissing(withRetrieved(o), av); !own.IsEmpty() {
		what = own.OneLine()
	}
	msg := fmt.Sprintf("site %s holds transactions of the active site %s's own server UUID that %s lacks (%s; its receiver reports: the replica has more GTIDs than the source): it is not cloned, which would destroy what may be their only copy; see docs/runbooks/failover-refused-or-held.md (%s)",
		s.Name, active, active, what, v1alpha1.ReasonActiveSiteLostOwnTransactions)
	st.Message = msg
	// The site's entry says it all (siteHealth lists it); the group's
	// reason says which kind of problem it is.
	d.degrade(v1alpha1.ReasonActiveSiteLostOwnTransactions, "site %s is refused by the active site %s for holding more of its own GTIDs (%s): not cloned", s.Name, active, what)
	if p := d.prevSite(s.Name); p == nil || p.SourceConvergenceReason != "GTIDDiverged" {
		d.event(true, v1alpha1.EventCloneRefusedReplicaHasMore, "%s", msg)
	}
}

// plannedTargetLacksOwnTail: a planned handoff from a source that lost its
// own tail waits while other sites hold some of it that the target lacks
// (it would be left only there, reported as divergence instead of kept);
// "" when the target holds all of it or nothing was lost. The target
// replicates from the source, so it can only hold what the source has: in
// practice the run waits until its bound and rolls back, and the own-tail
// failover (or a person) moves the group to the site holding the tail.
func (d *decider) plannedTargetLacksOwnTail(c *v1alpha1.PlannedFailoverStatus, tv, sv *Observed) string {
	lost, holders := d.ownTailLost(c.SourceSite, sv)
	if short := lost.Subtract(withRetrieved(tv)); !short.IsEmpty() {
		return fmt.Sprintf("source site %s lost transactions of its own that other sites hold (%s) and target site %s lacks %s", c.SourceSite, strings.Join(holders, "; "), c.TargetSite, short.OneLine())
	}
	return ""
}

// refusalResolved: a follower's "replica has more" error is from before the
// active site got back what it lacked (a person made it replicate the tail
// from the follower, docs/runbooks/failover-refused-or-held.md): the active
// site is fenced, so its set is complete, and it holds every GTID of its
// own the follower has. The receiver is then started as any stopped one. A
// writable active site's set may hold those GTIDs issued again for other
// transactions, so the refusal stands.
func refusalResolved(o, av *Observed) bool {
	return !av.Writable && ownMissing(withRetrieved(o), av).IsEmpty()
}
