package topology

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
)

// The candidates and guards of an automatic failover, and its catch-up
// (docs/safety.md, rule 3; issue 20).

// StartApplier starts a candidate's stopped applier (START REPLICA
// SQL_THREAD): a server restarted with skip-replica-start, or whose applier
// stopped on an error, applies nothing by itself.
const StartApplier ActionKind = "StartApplier"

// HoldReasonCatchUpTimedOut is the automatic failover hold placed when a
// candidate did not catch up within the bound.
const HoldReasonCatchUpTimedOut = "FailoverCatchUpTimedOut"

// failoverCandidates lists every site but the active one for
// ChooseFailoverCandidate.
func (d *decider) failoverCandidates(active string) []FailoverCandidate {
	host := SourceHost(d.in.Namespace, d.in.Group, active)
	var cands []FailoverCandidate
	for _, s := range d.in.Sites {
		if s.Name == active {
			continue
		}
		c := FailoverCandidate{Name: s.Name, Role: s.Role}
		if o := d.view(s.Name); o != nil {
			c.Trusted, c.Executed, c.Evidence = true, o.Executed, d.in.Observed[s.Name].Evidence
			if r := o.Replica; r != nil {
				c.Retrieved, c.FromSource = r.Retrieved, SameHost(r.SourceHost, host) && r.SourcePort == SourcePort
			}
		}
		if p := d.prevSite(s.Name); p != nil && p.DivergentGTID != "" {
			if rec, err := gtid.Parse(p.DivergentGTID); err == nil {
				c.Recorded = rec
			}
		}
		cands = append(cands, c)
	}
	return cands
}

// failoverGuards gathers what the guards need of the old primary.
func (d *decider) failoverGuards(active string) FailoverGuards {
	g := FailoverGuards{MaxLagSeconds: d.in.MaxLagSeconds, SeenOnSource: d.seenOn(active), MaxMissing: d.in.Failover.MaxMissing,
		Priorities: d.in.Failover.Priorities, Override: d.in.Failover.Override,
		StaleAfter: StaleEvidencePolls * max(d.in.Failover.PollInterval, HeartbeatPeriod), SourceAlive: d.sourceAlive(active), Now: d.in.Now}
	if o := d.in.Observed[active].Last; o != nil {
		g.SourceUUID = o.ServerUUID
	} else if p := d.prevSite(active); p != nil {
		g.SourceUUID = p.ServerUUID
	}
	return g
}

// sourceAlive is the latest moment the old primary is known to have been
// alive: the operator's last good poll of it (memory, else
// status.sites[].lastSeenTime, up to statusRefresh old after a leader
// change), or the latest contact any site's channel from it reports.
func (d *decider) sourceAlive(active string) time.Time {
	var at time.Time
	if o := d.in.Observed[active].Last; o != nil {
		at = o.At
	} else if p := d.prevSite(active); p != nil && p.LastSeenTime != nil {
		at = p.LastSeenTime.Time
	}
	host := SourceHost(d.in.Namespace, d.in.Group, active)
	for _, s := range d.in.Sites {
		o, e := d.view(s.Name), d.in.Observed[s.Name].Evidence
		if o == nil || e == nil || o.Replica == nil || !SameHost(o.Replica.SourceHost, host) {
			continue
		}
		if c := e.contact(); c.After(at) {
			at = c
		}
	}
	return at
}

// chosenSet is what the target held when it was chosen.
func chosenSet(t *v1alpha1.Transition) gtid.Set {
	s, err := gtid.Parse(t.CandidateGTIDSet)
	if err != nil {
		return gtid.Set{} // written by this package from a valid set
	}
	return s
}

// catchUp waits for the candidate to apply what it received and what it
// held when chosen, starting its applier when it is stopped, then records
// Promoting (and lastFailover with the promotion GTID set) before making it
// writable: from here on the failover is finished, never abandoned. The wait
// is bounded (catchUpTimeout); at the bound the failover ends unpromoted
// for a person to decide, unless the failover-override names the target.
func (d *decider) catchUp(t *v1alpha1.Transition, tv *Observed) {
	src, target := t.SourceSite, t.TargetSite
	r := tv.Replica
	want := chosenSet(t)
	if r != nil {
		want = want.Union(r.Retrieved)
	}
	caught := (r == nil || r.IORunning == "No") && want.IsSubsetOf(tv.Executed)
	since := t.StartTime.Time
	if t.StepTime != nil {
		since = t.StepTime.Time
	}
	bound := since.Add(d.catchUpTimeout())
	timedOut := !d.in.Now.Before(bound)
	if !caught && d.overtaken(t, tv) {
		return
	}
	if !caught && !(timedOut && d.in.Failover.Override == target) {
		if timedOut {
			d.catchUpTimedOut(t, tv, want.Subtract(tv.Executed))
			return
		}
		if r != nil && !r.SQLRunning {
			d.act(Action{Kind: StartApplier, Site: target, Why: "the candidate's applier is stopped: it must apply what it received before promotion"})
		}
		d.act(Action{Kind: CatchUp, Site: target, Why: "apply everything received before promotion"})
		d.waiting = fmt.Sprintf("failover to %s: waiting for it to apply what it received (until %s)", target, bound.UTC().Format(time.RFC3339))
		return
	}
	// The deadline was checked before CatchingUp was recorded; checked again
	// so that no recorded state (or clock step) can shortcut it. An old
	// primary answering writable never gets here (continueFailover fences
	// it and waits); checked again all the same.
	sa := d.answer(src)
	if sa != nil && sa.Writable {
		d.waiting = fmt.Sprintf("failover to %s: %s answers writable", target, src)
		return
	}
	if over, _ := d.selfFenceWaitOver(t); sa == nil && t.SourceFenceDeadline != nil && !over {
		d.waiting = fmt.Sprintf("failover to %s: waiting for %s's self-fence deadline", target, src)
		return
	}
	if d.overtaken(t, tv) {
		return
	}
	nt := d.step(t, v1alpha1.StepPromoting)
	// What it held when chosen and no longer has is lost as well as what
	// the old primary was seen to commit (a relay log lost in a restart).
	lost := d.seenOn(src).Union(want).Subtract(tv.Executed)
	d.out.Status.LastFailover = &v1alpha1.LastFailover{Time: *nt.StepTime, Target: target, Source: src, Kind: t.Kind,
		PromotionGTIDExecuted: tv.Executed.OneLine(), PossiblyLostGTID: lost.OneLine()}
	d.act(Action{Kind: MakeWritable, Site: target, ResetReplication: r != nil, Why: fmt.Sprintf("failover from unreachable %s", src)})
	d.stopReceiversFrom(src, target)
}

// catchUpTimedOut ends a failover whose candidate did not execute what it
// held when chosen (or received since) within the bound: promoting it would
// lose short, the old primary is fenced, and no writer is left, so a person
// decides. The transition is cleared and automatic failover held, so the
// same choice is not made again at once; the message says what a
// promotion would lose and what to do (docs/runbooks/failover-refused-or-held.md).
func (d *decider) catchUpTimedOut(t *v1alpha1.Transition, tv *Observed, short gtid.Set) {
	lose := d.seenOn(t.SourceSite).Union(chosenSet(t)).Subtract(tv.Executed)
	msg := fmt.Sprintf("failover from %s to %s ended unpromoted: %s did not apply what it held when chosen within %s (it lacks %s; promoting it now would lose %s). Fix its replication applier, or accept the loss with the failover-override annotation naming %s, then clear the hold (docs/runbooks/failover-refused-or-held.md)",
		t.SourceSite, t.TargetSite, t.TargetSite, d.catchUpTimeout(), GTIDPhrase(short.OneLine()), GTIDPhrase(lose.OneLine()), t.TargetSite)
	d.out.Status.Transition = nil
	d.out.WriteFirst = true
	if d.out.Status.AutomaticFailoverHold == nil {
		d.out.Status.AutomaticFailoverHold = &v1alpha1.AutomaticFailoverHold{Reason: HoldReasonCatchUpTimedOut, Since: metav1.NewTime(d.in.Now),
			Message: truncate(fmt.Sprintf("%s; clear it with the annotation %s=%s", msg, AnnotationClearAutomaticFailoverHold, d.in.Group), 1024)}
	}
	d.degrade(v1alpha1.ReasonCatchUpTimedOut, "%s", msg)
	d.waiting = fmt.Sprintf("failover to %s ended: catch-up timed out", t.TargetSite)
	d.event(true, v1alpha1.EventFailoverCatchUpTimedOut, "%s", msg)
}
