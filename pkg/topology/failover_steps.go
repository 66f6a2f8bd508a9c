package topology

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// FailoverSettings are the inputs of automatic failover.
type FailoverSettings struct {
	// Enabled turns automatic failover on. Off, an unreachable active site
	// only degrades the group (a transition already recorded still runs).
	Enabled bool
	// Cooldown is spec.failoverCooldown (default 5m).
	Cooldown time.Duration
	// SelfFenceBound is how long after the operator stops confirming an
	// unreachable primary it has surely fenced itself
	// (protocol.SelfFenceBound). Promotion waits for it.
	SelfFenceBound time.Duration
	// MaxClockSkew is how far operator processes' clocks may disagree
	// (leasestore.DefaultMaxClockSkew): a self-fence deadline written by
	// another process is trusted only that much after it (deadline.go).
	MaxClockSkew time.Duration
	// MaxMissing bounds how many transactions seen committed on the old
	// primary the candidate may lack and still be promoted automatically.
	MaxMissing uint64
	// Priorities is spec.splitBrainPolicy.sitePriorities.
	Priorities []string
	// Override is a site named by a human to promote despite the lag and
	// loss guards (the failover-override annotation, validated by the caller).
	Override string
	// DrainTimeout is spec.connectionDrainTimeout: for this long after a
	// failover, client sessions on the fenced former primary are evicted.
	DrainTimeout time.Duration
	// PollInterval is spec.pollInterval: the lag evidence's staleness bound
	// (StaleEvidencePolls) and the catch-up bound (CatchUpTimeout) count in it.
	PollInterval time.Duration
}

// CatchUpTimeout bounds CatchingUp: maxLagSeconds, because a candidate is
// promoted only when its applier is at most that far behind and an applier
// replays at least as fast as its source committed, plus CatchUpPolls
// pollIntervals for the poll-and-act cycle (docs/topology.md).
func (d *decider) catchUpTimeout() time.Duration {
	return time.Duration(d.in.MaxLagSeconds)*time.Second + CatchUpPolls*d.in.Failover.PollInterval
}

// NotifySidecars tells every reachable sidecar of the group that an
// active-site change is in flight, so no sidecar keeps confirming the old
// primary to its peers (best effort: a sidecar that cannot be reached is
// covered by the self-fence deadline).
const NotifySidecars ActionKind = "NotifySidecars"

// EvictSessions kills the client sessions on a fenced former primary
// (never the operator's or the replication account's).
const EvictSessions ActionKind = "EvictSessions"

// drainFormerPrimary evicts stale client sessions from the former primary
// of the last failover while it is reachable, fenced, and the drain window
// (connectionDrainTimeout after the failover) is open.
func (d *decider) drainFormerPrimary(active string) {
	lf := d.in.Status.LastFailover
	if lf == nil || lf.Source == "" || lf.Source == active || !d.in.Now.Before(lf.Time.Add(d.in.Failover.DrainTimeout)) {
		return
	}
	if o := d.view(lf.Source); o != nil && !o.Writable {
		d.act(Action{Kind: EvictSessions, Site: lf.Source, Why: fmt.Sprintf("former primary fenced by the failover to %s at %s", lf.Target, lf.Time.UTC().Format(time.RFC3339))})
	}
}

// CatchUp is the promotion's first MySQL step on the candidate: stop the
// receiver and wait (bounded) until the applier executed everything
// received. On timeout nothing is reset: the next decision waits again.
const CatchUp ActionKind = "CatchUp"

// promoted reports whether a failover reached the point of no return: from
// Promoting on, the target may have been made writable, so the change must
// be finished, never abandoned.
func promoted(s v1alpha1.TransitionStep) bool {
	switch s {
	case v1alpha1.StepPromoting, v1alpha1.StepRepointingFollowers, v1alpha1.StepDrainingSessions, v1alpha1.StepPublishing:
		return true
	}
	return false
}

// seenOn is the last GTID set the operator saw on a site (memory first).
func (d *decider) seenOn(site string) gtid.Set {
	if o := d.in.Observed[site].Last; o != nil {
		return o.Executed
	}
	if p := d.prevSite(site); p != nil {
		if s, err := gtid.Parse(p.GTIDExecuted); err == nil {
			return s
		}
	}
	return gtid.Set{}
}

// startFailover records the intent of an automatic failover when the
// active site is unreachable; it reports whether it did.
func (d *decider) startFailover(active string) bool {
	if !d.in.Failover.Enabled {
		return false
	}
	var last time.Time
	if lf := d.in.Status.LastFailover; lf != nil && startsCooldown(lf.Kind) {
		last = lf.Time.Time
	}
	due, why := FailoverDue(FailoverTrigger{Now: d.in.Now, ActiveReach: d.in.Observed[active].Reach, LastFailover: last,
		Cooldown: d.in.Failover.Cooldown, Held: d.in.Status.AutomaticFailoverHold != nil})
	if due && d.in.Observed[active].SidecarHealthy {
		// The second source: mysqld answers its sidecar, which the operator
		// reaches. Clients may well reach it too; promoting another site
		// would only be safe after its sidecar fenced it, which it does not
		// while the operator confirms it. Should the sidecar lose the
		// operator as well, it is no longer heard and this no longer holds.
		due, why = false, "its sidecar answers and reports mysqld healthy: the operator is cut off from mysqld by the network, the site is not dead (fix the network path between the operator and the site's mysqld port)"
	}
	if due && !d.in.Observed[active].SidecarSeen && d.in.Failover.Override == "" {
		// Nothing but its sidecar fences an isolated primary: promoting on
		// the self-fence bound alone would leave two writers if clients
		// still reach it. A human who knows it is gone (or fenced it by
		// hand) names the site to promote with the failover-override.
		due, why = false, "its sidecar did not answer when the operator last reached the site (or this operator process never reached it), so nothing is known to fence it if clients still reach it: make sure it is stopped or fenced (SET GLOBAL super_read_only = ON), then set the failover-override annotation; see docs/safety.md"
	}
	if h := d.in.Status.AutomaticFailoverHold; !due && h != nil && h.Reason == HoldReasonCatchUpTimedOut && d.in.Observed[active].Reach == observe.Unreachable {
		// Reported as what it is until a person clears the hold; the Event
		// was recorded when the catch-up timed out.
		d.degrade(v1alpha1.ReasonCatchUpTimedOut, "active site %s is unreachable and is not failed over: %s", active, h.Message)
		return false
	}
	if !due {
		if why != "" {
			d.refuseFailover(active, why)
		}
		return false
	}
	choice := ChooseFailoverCandidate(d.failoverCandidates(active), d.failoverGuards(active))
	if choice.Site == "" {
		d.refuseFailover(active, choice.Message+" (to promote the site anyway, set the failover-override annotation; what to do: docs/runbooks/failover-refused-or-held.md, "+choice.Refusal+")")
		return false
	}
	now := metav1.NewTime(d.in.Now)
	msg := choice.Message
	if !choice.MayLose.IsEmpty() {
		msg += fmt.Sprintf("; it lacks %d transactions seen on %s: %s", choice.MayLose.Count(), active, GTIDPhrase(choice.MayLose.OneLine()))
	}
	// No self-fence deadline yet: the old primary's sidecar keeps its lease
	// for as long as the operator's /active-site confirms it, which it does
	// until this intent reaches the informer cache it answers from, however
	// long this write takes. The pass that finds the intent in that cache
	// sets the deadline (recordFenceDeadline).
	d.out.Status.Transition = &v1alpha1.Transition{
		ID: d.in.NewTransitionID, Kind: v1alpha1.TransitionAutomatic, SourceSite: active, TargetSite: choice.Site,
		TopologyGeneration: d.in.Status.TopologyGeneration + 1, Step: v1alpha1.StepRecorded,
		StartTime: now, StepTime: &now, Message: truncate(msg, 1024), CandidateGTIDSet: choice.Held.OneLine(),
	}
	d.out.WriteFirst = true
	d.act(Action{Kind: NotifySidecars, Why: fmt.Sprintf("failover from %s to %s", active, choice.Site)})
	d.waiting = fmt.Sprintf("failover from %s to %s recorded", active, choice.Site)
	d.event(true, v1alpha1.EventFailoverStarted, "active site %s is unreachable: failing over to site %s (%s); promotion waits up to %s, counted from when sidecars are told, for %s to fence itself",
		active, choice.Site, msg, d.in.Failover.SelfFenceBound, active)
	return true
}

// recordFenceDeadline starts the wait for an unreachable old primary to
// fence itself. The transition is in this decision's input, so it is in the
// cache /active-site answers from (Input.Now): from now on no confirmation
// of the old primary is handed out, and every one it holds runs out within
// SelfFenceBound.
func (d *decider) recordFenceDeadline(t *v1alpha1.Transition) {
	deadline := v1alpha1.NewPreciseTime(ceilMicrosecond(d.in.Now.Add(d.in.Failover.SelfFenceBound)))
	nt := d.step(t, v1alpha1.StepAwaitingSelfFence)
	nt.SourceFenceDeadline = &deadline
	d.waiting = fmt.Sprintf("failover to %s: waiting until %s for %s to have fenced itself", t.TargetSite, deadline.UTC().Format(time.RFC3339), t.SourceSite)
}

// ceilMicrosecond rounds up to a whole microsecond: the deadline is stored
// to the microsecond (metav1.MicroTime), and it must never come out earlier
// than it was computed.
func ceilMicrosecond(t time.Time) time.Time {
	if r := t.Truncate(time.Microsecond); !r.Equal(t) {
		return r.Add(time.Microsecond)
	}
	return t
}

func (d *decider) refuseFailover(active, why string) {
	msg := fmt.Sprintf("active site %s is unreachable and is not failed over: %s", active, why)
	d.degrade(v1alpha1.ReasonFailoverRefused, "%s", msg)
	if prev := findCondition(d.in.Status.Conditions, v1alpha1.ConditionDegraded); prev == nil || prev.Reason != v1alpha1.ReasonFailoverRefused {
		d.event(true, v1alpha1.EventFailoverRefused, "%s", msg)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// step records the next step of a transition; the write comes before the
// step's actions.
func (d *decider) step(t *v1alpha1.Transition, s v1alpha1.TransitionStep) *v1alpha1.Transition {
	nt := t.DeepCopy()
	now := metav1.NewTime(d.in.Now)
	nt.Step, nt.StepTime = s, &now
	d.out.Status.Transition = nt
	d.out.WriteFirst = true
	return nt
}

// continueFailover advances a recorded automatic failover by one step.
// Never two writers: an old primary whose latest answer says it takes
// writes, trusted or not, is fenced at every step and the step waits for
// an observation taken after the fence; the candidate is made writable only
// after the old primary was observed fenced or its self-fence deadline
// passed, and never while it answers writable.
func (d *decider) continueFailover(t *v1alpha1.Transition) {
	src, target := t.SourceSite, t.TargetSite
	sa, tv := d.answer(src), d.view(target)
	if !promoted(t.Step) && d.oldPrimaryBackWithMore(t, tv) {
		return
	}
	// Every other site that answers writable is fenced too (the target as
	// well before Promoting: it must not take writes before it holds
	// everything), and the step waits for an observation after the fence.
	keep := ""
	if promoted(t.Step) {
		keep = target
	}
	if w := d.writersBesides(keep); len(w) > 0 {
		d.fenceWritable(keep, fmt.Sprintf("failover from %s to %s in progress: only the promoted target may take writes", src, target))
		d.waiting = fmt.Sprintf("failover to %s: fencing %s first", target, strings.Join(w, ", "))
		return
	}
	if tv == nil {
		if !promoted(t.Step) && d.in.Observed[target].Reach == observe.Unreachable {
			d.out.Status.Transition = nil
			d.out.WriteFirst = true
			d.event(true, v1alpha1.EventFailoverAborted, "failover from %s to %s abandoned before promotion: %s became unreachable", src, target, target)
			return
		}
		d.waiting = fmt.Sprintf("failover to %s: waiting for a current observation of it", target)
		return
	}
	switch {
	case promoted(t.Step):
		d.finishFailover(t, tv)
	case t.Step == v1alpha1.StepCatchingUp:
		d.catchUp(t, tv)
	default: // Recorded, NotifyingSidecars, FencingSource, AwaitingSelfFence
		// Announced again on every poll until promotion: idempotent, and a
		// restarted operator or a sidecar that came back hears it too.
		d.act(Action{Kind: NotifySidecars, Why: fmt.Sprintf("failover from %s to %s", src, target)})
		// Only Bloodraven clears super_read_only, and it does not while the
		// old primary is a failover's source: an answer that shows it
		// fenced proves it, trusted or not.
		fenced := sa != nil && !sa.Writable
		if !fenced && !d.in.TransitionUnserved {
			fenced = d.provenFenced(t)
		}
		if !fenced && t.SourceFenceDeadline == nil {
			if d.in.TransitionUnserved {
				d.waiting = fmt.Sprintf("failover to %s: waiting for the intent to reach the cache sidecars are answered from", target)
				return
			}
			d.recordFenceDeadline(t)
			return
		}
		if over, until := d.selfFenceWaitOver(t); !fenced && !over {
			d.waiting = fmt.Sprintf("failover to %s: waiting until %s for %s to have fenced itself", target, until.UTC().Format(time.RFC3339), src)
			return
		}
		d.step(t, v1alpha1.StepCatchingUp)
		d.act(Action{Kind: CatchUp, Site: target, Why: "apply everything received before promotion"})
	}
}

// provenFenced reports whether the source's sidecar proved, in this pass,
// that the source cannot take writes (CheckFenceProof). Only once the
// intent is served: from then on /active-site no longer confirms the
// source, so nothing the sidecar hears afterwards lets it stop fencing.
func (d *decider) provenFenced(t *v1alpha1.Transition) bool {
	si := d.in.Observed[t.SourceSite]
	if si.FenceProof == nil {
		return false
	}
	ok, why := CheckFenceProof(*si.FenceProof, FenceProofCheck{TransitionID: t.ID, Source: t.SourceSite, LastWritable: si.LastWritable, Now: d.in.Now})
	if !ok {
		d.waiting = fmt.Sprintf("failover to %s: the fence proof of %s does not hold (%s)", t.TargetSite, t.SourceSite, why)
		return false
	}
	d.event(false, v1alpha1.EventFailoverSourceFenceConfirmed, "site %s cannot take writes: %s; promoting %s without waiting out the self-fence bound", t.SourceSite, why, t.TargetSite)
	return true
}

// StopReceiver stops a follower's receiver (its applier goes on), so that
// it takes nothing more from a source that is being replaced.
const StopReceiver ActionKind = "StopReceiver"

// stopReceiversFrom stops, from the promotion until publication, the
// receivers of the other followers that still replicate from the old
// primary: should it come back before they are repointed, they would fetch
// writes the new primary never had and turn divergent. It is idempotent (a
// stopped receiver is skipped), so every promoted step repeats it.
func (d *decider) stopReceiversFrom(src, target string) {
	host := SourceHost(d.in.Namespace, d.in.Group, src)
	for _, s := range d.in.Sites {
		if s.Name == src || s.Name == target {
			continue
		}
		if o := d.view(s.Name); o != nil && o.Replica != nil && o.Replica.IORunning != "No" && SameHost(o.Replica.SourceHost, host) {
			d.act(Action{Kind: StopReceiver, Site: s.Name, Why: fmt.Sprintf("%s replaces %s as the source", target, src)})
		}
	}
}

// finishFailover makes sure the promoted candidate is writable, then
// publishes it with the new generation and clears the intent in one write.
func (d *decider) finishFailover(t *v1alpha1.Transition, tv *Observed) {
	src, target := t.SourceSite, t.TargetSite
	// Part of every step from Promoting until published, not only of the
	// decision that recorded it: an operator that crashed after the
	// promotion's MakeWritable (or whose StopReceiver failed) would
	// otherwise leave followers fetching from the old primary.
	d.stopReceiversFrom(src, target)
	if !tv.serving() {
		d.act(Action{Kind: MakeWritable, Site: target, ResetReplication: tv.Replica != nil, Why: fmt.Sprintf("failover from unreachable %s", src)})
		d.waiting = fmt.Sprintf("failover to %s: making it writable", target)
		return
	}
	lf := d.publish(t)
	d.event(false, v1alpha1.EventFailoverSucceeded, "site %s is the active site (was %s); topologyGeneration is %d; promoted at %s",
		target, src, t.TopologyGeneration, GTIDPhrase(lf.PromotionGTIDExecuted))
	if lf.PossiblyLostGTID != "" {
		d.event(true, v1alpha1.EventTransactionsPossiblyLost, "site %s lacks transactions the operator saw committed on %s before it failed: %s",
			target, src, GTIDPhrase(lf.PossiblyLostGTID))
	}
	d.steady(target)
}

// publish completes a promoted transition in one write-first status:
// lastFailover stamped with the publication time, the target as the active
// site, the transition's generation, and the intent cleared.
func (d *decider) publish(t *v1alpha1.Transition) *v1alpha1.LastFailover {
	lf := d.out.Status.LastFailover
	if lf == nil || lf.Target != t.TargetSite {
		lf = &v1alpha1.LastFailover{Target: t.TargetSite, Source: t.SourceSite, Kind: t.Kind}
	}
	lf = lf.DeepCopy()
	lf.Time = metav1.NewTime(d.in.Now)
	d.out.Status.LastFailover = lf
	d.out.Status.ActiveSite = t.TargetSite
	d.out.Status.TopologyGeneration = t.TopologyGeneration
	d.out.Status.Transition = nil
	d.out.WriteFirst = true
	return lf
}

// oldPrimaryBackWithMore abandons a failover not yet promoted when the old
// primary answers again holding transactions the candidate has neither
// applied nor received: promoting now would drop writes that sit on a
// reachable site. Its latest answer counts even before recoveryThreshold
// makes it trusted again: abandoning promotes nothing, and nothing is
// made writable on that answer (the old primary stays the active site and
// is reasserted only once trusted, under the usual rule). A writable old
// primary is not fenced here for the same reason; it is the active site.
// It reports whether it abandoned.
func (d *decider) oldPrimaryBackWithMore(t *v1alpha1.Transition, tv *Observed) bool {
	si := d.in.Observed[t.SourceSite]
	if !si.Fresh || si.Last == nil || tv == nil {
		return false
	}
	lost := si.Last.Executed.Subtract(withRetrieved(tv))
	if lost.IsEmpty() {
		return false
	}
	d.abandonFailover(t, fmt.Sprintf("%s answers again and holds %d transactions %s lacks (%s); it stays the active site",
		t.SourceSite, lost.Count(), t.TargetSite, GTIDPhrase(lost.OneLine())))
	return true
}

// overtaken reports (and abandons the failover for) another reachable
// PrimaryCandidate that now holds transactions the candidate lacks, for
// example fetched from the old primary after the candidate stopped its
// receiver: promoting the candidate would drop them. The next decision
// chooses again.
func (d *decider) overtaken(t *v1alpha1.Transition, tv *Observed) bool {
	have := withRetrieved(tv)
	g := d.failoverGuards(t.SourceSite)
	for _, c := range d.failoverCandidates(t.SourceSite) {
		if c.Name == t.TargetSite || c.Role != v1alpha1.SiteRolePrimaryCandidate || !c.Trusted {
			continue
		}
		// What it holds that the old primary lacks (errant) does not
		// count: it is excluded from promotion for it, and would
		// "overtake" every candidate at every catch-up.
		if more := rank(c).Subtract(errant(c, g)).Subtract(have); !more.IsEmpty() {
			s := c
			d.abandonFailover(t, fmt.Sprintf("site %s now holds %d transactions %s lacks (%s); the candidate is chosen again",
				s.Name, more.Count(), t.TargetSite, GTIDPhrase(more.OneLine())))
			return true
		}
	}
	return false
}

func withRetrieved(o *Observed) gtid.Set {
	if o.Replica != nil {
		return o.Executed.Union(o.Replica.Retrieved)
	}
	return o.Executed
}

func (d *decider) abandonFailover(t *v1alpha1.Transition, why string) {
	d.out.Status.Transition = nil
	d.out.WriteFirst = true
	d.waiting = fmt.Sprintf("failover to %s abandoned", t.TargetSite)
	d.event(true, v1alpha1.EventFailoverAborted, "failover from %s to %s abandoned before promotion: %s", t.SourceSite, t.TargetSite, why)
}
