package topology

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// decider carries one Decide call.
type decider struct {
	in    Input
	out   Decision
	sites map[string]*v1alpha1.SiteStatus // the status entries being built
	// degraded collects causes by reason; conditions() picks by precedence.
	degraded map[string][]string
	// notes are the Ready=False details of a bootstrap in progress.
	waiting string
}

// Decide turns observations and the stored status into the status to publish
// and the actions to take. It is deterministic and does no I/O.
func Decide(in Input) Decision {
	d := &decider{in: in, sites: map[string]*v1alpha1.SiteStatus{}, degraded: map[string][]string{}}
	d.out.Status = *in.Status.DeepCopy()
	d.observeSites()
	t := in.Status.Transition
	switch {
	case t != nil && t.Kind == v1alpha1.TransitionBootstrap:
		d.continueBootstrap(t)
	case t != nil && t.Kind == v1alpha1.TransitionAutomatic:
		d.continueFailover(t)
	case t != nil && t.Kind == v1alpha1.TransitionSplitBrainResolution:
		d.continueSplitBrain(t)
	case t != nil && IsPlannedKind(t.Kind):
		d.continuePlanned(t)
	case t != nil:
		// Another kind of active-site change is in flight; it owns every
		// mutation until it completes. Only observe.
		d.waiting = fmt.Sprintf("%s transition to site %s is at step %s", t.Kind, t.TargetSite, t.Step)
	case in.Status.ActiveSite == "":
		if !d.splitBrain() {
			d.bootstrap()
		}
	default:
		if d.startFailover(in.Status.ActiveSite) || d.startOwnTailFailover(in.Status.ActiveSite) {
			d.fenceWritable(in.Status.ActiveSite, fmt.Sprintf("site %s is the active site", in.Status.ActiveSite))
			d.supersedePlanned(in.Status.ActiveSite)
		} else {
			d.steady(in.Status.ActiveSite)
			d.plannedSteady(in.Status.ActiveSite)
		}
	}
	d.clearHold()
	if d.in.Reclone != nil && !d.out.ClearRecloneAnnotation {
		d.out.ClearRecloneAnnotation = true
		d.event(true, v1alpha1.EventRecloneRejected, "annotation %s=%q refused and cleared: the group has no settled active site (a bootstrap or an active-site change is in progress); request it again later",
			AnnotationRecloneSite, d.in.Reclone.Value)
	}
	d.finishSites()
	d.conditions()
	return d.out
}

// view is the trusted current observation of a site, or nil: a site is
// trusted when its latest poll succeeded and it is Reachable (an Unreachable
// site answering again is not trusted before recoveryThreshold polls).
func (d *decider) view(site string) *Observed {
	si, ok := d.in.Observed[site]
	if !ok || !si.Fresh || si.Reach != observe.Reachable || si.Last == nil {
		return nil
	}
	return si.Last
}

// answer is the site's observation from the latest poll, trusted or not: a
// site that answers again after being Unreachable is not trusted before
// recoveryThreshold polls, but what it answered is true now. Nothing is
// made writable or rejoined on it; it is enough to fence the site, and
// enough to hold a promotion back (docs/safety.md, rule 1).
func (d *decider) answer(site string) *Observed {
	si, ok := d.in.Observed[site]
	if !ok || !si.Fresh || si.Last == nil {
		return nil
	}
	return si.Last
}

// writersBesides lists the sites other than keep whose latest answer says
// they take writes (super_read_only OFF), trusted or not.
func (d *decider) writersBesides(keep string) []string {
	var out []string
	for _, s := range d.in.Sites {
		if o := d.answer(s.Name); s.Name != keep && o != nil && o.Writable {
			out = append(out, s.Name)
		}
	}
	return out
}

func (d *decider) role(site string) v1alpha1.SiteRole {
	for _, s := range d.in.Sites {
		if s.Name == site {
			return s.Role
		}
	}
	return ""
}

func (d *decider) inSpec(site string) bool { return d.role(site) != "" }

func (d *decider) prevSite(site string) *v1alpha1.SiteStatus {
	for i := range d.in.Status.Sites {
		if d.in.Status.Sites[i].Name == site {
			return &d.in.Status.Sites[i]
		}
	}
	return nil
}

func (d *decider) act(a Action) {
	if a.Kind == MakeWritable && d.refuseWritableForOwnTail(a.Site) {
		return // it lost its own tail (owntail.go): never writable again
	}
	d.out.Actions = append(d.out.Actions, a)
}

func (d *decider) event(warning bool, reason, format string, args ...any) {
	d.out.Events = append(d.out.Events, Event{Warning: warning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func (d *decider) degrade(reason, format string, args ...any) {
	d.degraded[reason] = append(d.degraded[reason], fmt.Sprintf(format, args...))
}

// undecided lists sites whose reachability is not settled yet: never
// answered in this process and not yet failureThreshold failures, or
// reachable with a failing latest poll. Nothing authoritative is decided
// while one exists.
func (d *decider) undecided() []string {
	var out []string
	for _, s := range d.in.Sites {
		switch d.in.Observed[s.Name].Reach {
		case observe.Reachable, observe.Unreachable:
		default:
			out = append(out, s.Name)
		}
	}
	return out
}

// fenceWritable fences every site except keep whose latest answer says it
// takes writes, at once: a site answering again after being Unreachable
// is fenced on its first answer, not recoveryThreshold polls later, while
// clients behind a stale DNS answer may still write there.
func (d *decider) fenceWritable(keep, why string) {
	for _, s := range d.writersBesides(keep) {
		d.act(Action{Kind: Fence, Site: s, Why: why})
	}
}

// candidates are the sites for a bootstrap choice: trusted ones with their
// current set, unreachable ones with the last set status recorded.
func (d *decider) candidates() []Candidate {
	var out []Candidate
	for _, s := range d.in.Sites {
		c := Candidate{Name: s.Name, Role: s.Role}
		if o := d.view(s.Name); o != nil {
			c.Executed, c.Reachable = o.Executed, true
		} else if p := d.prevSite(s.Name); p != nil && p.GTIDExecuted != "" {
			set, err := gtid.Parse(p.GTIDExecuted)
			if err != nil {
				// An unreadable record must not be read as "empty".
				d.degrade(v1alpha1.ReasonNoEligibleCandidate, "site %s: recorded gtidExecuted is unreadable: %v", s.Name, err)
				continue
			}
			c.Executed = set
		}
		out = append(out, c)
	}
	return out
}

// bootstrap chooses the first active site and records the intent.
func (d *decider) bootstrap() {
	if u := d.undecided(); len(u) > 0 {
		d.waiting = "waiting for the first observation of sites " + strings.Join(u, ", ")
		return
	}
	cands := d.candidates()
	if r := d.degraded[v1alpha1.ReasonNoEligibleCandidate]; len(r) > 0 {
		d.waiting = "bootstrap refused"
		return
	}
	v := ChooseBootstrapSite(cands)
	if v.Site == "" {
		// Nothing may be writable while the sets disagree: fence every writer.
		d.fenceWritable("", "bootstrap refused: "+v.Message)
		d.degrade(v.Reason, "%s", v.Message)
		d.waiting = "bootstrap refused"
		if prev := findCondition(d.in.Status.Conditions, v1alpha1.ConditionDegraded); prev == nil || prev.Reason != v.Reason {
			reason := v1alpha1.EventBootstrapRefusedNoEligibleCandidate
			if v.Reason == v1alpha1.ReasonIncomparableGTIDSets {
				reason = v1alpha1.EventBootstrapRefusedIncomparableGTIDSets
			}
			d.event(true, reason, "%s", v.Message)
		}
		return
	}
	now := metav1.NewTime(d.in.Now)
	d.out.Status.Transition = &v1alpha1.Transition{
		ID: d.in.NewTransitionID, Kind: v1alpha1.TransitionBootstrap, TargetSite: v.Site,
		TopologyGeneration: d.in.Status.TopologyGeneration + 1, Step: v1alpha1.StepPromoting,
		StartTime: now, StepTime: &now, Message: v.Message,
	}
	d.out.WriteFirst = true
	d.fenceWritable(v.Site, fmt.Sprintf("bootstrap: site %s becomes the only writable site", v.Site))
	d.waiting = fmt.Sprintf("bootstrap: making site %s writable", v.Site)
	d.event(false, v1alpha1.EventBootstrapStarted, "site %s chosen as the first active site: %s", v.Site, v.Message)
}

// continueBootstrap re-checks a recorded bootstrap on current observations,
// makes its target writable, and completes it once the target is observed
// writable and alone.
func (d *decider) continueBootstrap(t *v1alpha1.Transition) {
	target := t.TargetSite
	if !d.inSpec(target) {
		d.abortBootstrap(t, fmt.Sprintf("site %s is not in spec.sites", target))
		return
	}
	// Any other site that answers writable is fenced at once, even while
	// others are still being observed.
	d.fenceWritable(target, fmt.Sprintf("bootstrap: site %s is the only writable site", target))
	if d.in.Observed[target].Reach == observe.Unreachable {
		// An earlier pass may have made the target writable, and an
		// unreachable site cannot be seen to be fenced: choosing another
		// site now could give the group two writers. Wait for it to answer.
		d.waiting = fmt.Sprintf("bootstrap of site %s: waiting for it to answer; it may already be writable, so no other site is chosen while it cannot be seen (remove it from spec.sites to choose another)", target)
		return
	}
	if u := d.undecided(); len(u) > 0 {
		d.waiting = fmt.Sprintf("bootstrap of site %s: waiting for a current observation of sites %s", target, strings.Join(u, ", "))
		return
	}
	tv := d.view(target)
	if tv == nil {
		d.waiting = fmt.Sprintf("bootstrap of site %s: waiting for a current observation of it", target)
		return
	}
	var others gtid.Set
	for _, c := range d.candidates() {
		if c.Name != target {
			others = others.Union(c.Executed)
		}
	}
	if !others.IsSubsetOf(tv.Executed) {
		if tv.Writable {
			d.act(Action{Kind: Fence, Site: target, Why: "bootstrap target no longer holds every transaction"})
		}
		d.abortBootstrap(t, fmt.Sprintf("site %s no longer holds every transaction: other sites have %s it lacks",
			target, GTIDPhrase(others.Subtract(tv.Executed).OneLine())))
		return
	}
	if w := d.writersBesides(target); len(w) > 0 {
		d.waiting = fmt.Sprintf("bootstrap of site %s: fencing site %s first", target, w[0])
		return
	}
	if !tv.serving() {
		d.act(Action{Kind: MakeWritable, Site: target, ResetReplication: tv.Replica != nil,
			Why: fmt.Sprintf("bootstrap: %s", t.Message)})
		d.waiting = fmt.Sprintf("bootstrap: making site %s writable", target)
		return
	}
	// Complete: publish the site and the new generation in one write.
	d.out.Status.ActiveSite = target
	d.out.Status.TopologyGeneration = t.TopologyGeneration
	d.out.Status.Transition = nil
	d.out.WriteFirst = true
	d.event(false, v1alpha1.EventBootstrapSucceeded, "site %s is the active site; topologyGeneration is %d", target, t.TopologyGeneration)
	d.steady(target)
}

func (d *decider) abortBootstrap(t *v1alpha1.Transition, why string) {
	d.out.Status.Transition = nil
	d.out.WriteFirst = true
	d.waiting = "bootstrap aborted: " + why
	d.event(true, v1alpha1.EventBootstrapAborted, "bootstrap of site %s abandoned: %s; the first active site will be chosen again", t.TargetSite, why)
}

// steady keeps the known active site the only writable one and converges
// every follower onto it.
func (d *decider) steady(active string) {
	av := d.view(active)
	d.fenceWritable(active, fmt.Sprintf("site %s is the active site", active))
	if av != nil && !av.serving() {
		d.reassert(active, av)
	}
	d.drainFormerPrimary(active)
	recloning := d.reclone(active, av)
	for _, s := range d.in.Sites {
		if s.Name != active && s.Name != recloning {
			d.follower(s, active, av)
			d.trackRecovery(s, d.sites[s.Name], active)
		}
	}
}

// reassert makes the known active site writable again after it came back
// read-only, if nothing another site holds would be lost or forked: every
// other trusted site's set, minus divergence already recorded for it, must be
// contained in the active site's, and no other site may be writable.
func (d *decider) reassert(active string, av *Observed) {
	if len(d.writersBesides(active)) > 0 || d.reassertRefusedForOwnTail(active, av) {
		return // fenced first in this decision, or it lost its own tail (owntail.go)
	}
	var missing []string
	for _, s := range d.in.Sites {
		o := d.view(s.Name)
		if s.Name == active || o == nil {
			continue
		}
		if o.Writable {
			return // fenced first in this decision; reassert on a later one
		}
		extra := d.divergentFrom(o, av, active)
		if p := d.prevSite(s.Name); p != nil && p.DivergentGTID != "" {
			if known, err := gtid.Parse(p.DivergentGTID); err == nil {
				extra = extra.Subtract(known)
			}
		}
		if !extra.IsEmpty() {
			missing = append(missing, fmt.Sprintf("%s has %s", s.Name, GTIDPhrase(extra.OneLine())))
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("active site %s is read-only and other sites hold transactions it lacks (%s): it stays read-only", active, strings.Join(missing, "; "))
		d.degrade(v1alpha1.ReasonIncomparableGTIDSets, "%s", msg)
		if prev := findCondition(d.in.Status.Conditions, v1alpha1.ConditionDegraded); prev == nil || prev.Reason != v1alpha1.ReasonIncomparableGTIDSets {
			d.event(true, v1alpha1.EventActiveSiteReassertRefused, "%s", msg)
		}
		return
	}
	d.act(Action{Kind: MakeWritable, Site: active, ResetReplication: av.Replica != nil,
		Why: fmt.Sprintf("site %s is the active site (topologyGeneration %d) and was found read-only", active, d.in.Status.TopologyGeneration)})
}

// follower decides one follower's source convergence, divergence and clone.
func (d *decider) follower(s SiteSpec, active string, av *Observed) {
	st := d.sites[s.Name]
	in := d.in.Observed[s.Name]
	o := d.view(s.Name)
	want := SourceHost(d.in.Namespace, d.in.Group, active)
	if o == nil {
		st.SourceConvergenceState, st.SourceConvergenceReason = "Pending", "ProbeFailed"
		return
	}
	if o.Writable {
		// Fenced in this decision (fenceWritable). Its set is judged, and it
		// is repointed, only on an observation taken after the fence: writes
		// it commits between this poll and the fence must be seen, recorded
		// as divergence if the active site lacks them, never rejoined.
		st.SourceConvergenceState, st.SourceConvergenceReason = "Pending", "SourceMismatch"
		st.Message = fmt.Sprintf("site %s takes writes (super_read_only=OFF): fenced first, judged and repointed on the next poll", s.Name)
		return
	}
	if in.Clone.Running {
		// Its data is being replaced: nothing to repoint, start or judge.
		st.SourceConvergenceState, st.SourceConvergenceReason = "Pending", "SourceMismatch"
		st.Message = fmt.Sprintf("cloning from site %s since %s", in.Clone.Donor, in.Clone.Started.UTC().Format("15:04:05Z"))
		return
	}
	srcOK := o.Replica != nil && SameHost(o.Replica.SourceHost, want) && o.Replica.SourcePort == SourcePort
	if av == nil {
		// The active site is not observed: nothing to compare with and
		// nothing to repoint to right now.
		if srcOK {
			st.SourceConvergenceState, st.SourceConvergenceReason = "Converged", "DirectSource"
		} else {
			st.SourceConvergenceState, st.SourceConvergenceReason = "Pending", "SourceMismatch"
		}
		return
	}
	var retrieved gtid.Set
	if o.Replica != nil {
		retrieved = o.Replica.Retrieved
	}
	extra := d.divergentFrom(o, av, active)
	needsClone := NeedsClone(o.Executed, retrieved, av.Executed, av.Purged) ||
		(srcOK && o.Replica.ReadError == ReadErrorPurged)
	d.recordDivergence(s, st, extra, active)
	if !extra.IsEmpty() {
		switch {
		case needsClone:
			st.SourceConvergenceState, st.SourceConvergenceReason = "Blocked", "GTIDDiverged"
			msg := fmt.Sprintf("site %s cannot catch up from site %s's binary logs (purged) and holds %d transactions site %s lacks (%s): it is not cloned, so they are not destroyed; review them, then reclone with the interlock annotation",
				s.Name, active, extra.Count(), active, GTIDPhrase(extra.OneLine()))
			st.Message = msg
			if p := d.prevSite(s.Name); p == nil || p.SourceConvergenceReason != "GTIDDiverged" {
				d.event(true, v1alpha1.EventCloneRefusedDivergentTransactions, "%s", msg)
			}
		case !srcOK:
			st.SourceConvergenceState, st.SourceConvergenceReason = "Blocked", "GTIDDiverged"
			st.Message = fmt.Sprintf("site %s holds %d transactions site %s lacks (%s) and %s: it is not repointed", s.Name, extra.Count(), active, GTIDPhrase(extra.OneLine()), replicatesFrom(o))
		default:
			st.SourceConvergenceState, st.SourceConvergenceReason = "Converged", "DirectSource"
		}
		return
	}
	if srcOK && o.Replica.ReadError == ReadErrorReplicaHasMore && !refusalResolved(o, av) {
		d.replicaHasMore(s, st, o, av, active)
		return
	}
	if needsClone {
		if !Divergent(o.Executed, av.Executed, av.ServerUUID).IsEmpty() {
			// It holds transactions the active site's poll did not show yet
			// (received from it a moment later). Nothing is destroyed on a
			// set that is not contained in the donor's: judge on the next poll.
			st.SourceConvergenceState, st.SourceConvergenceReason = "Pending", "SourceMismatch"
			st.Message = fmt.Sprintf("cannot catch up from site %s's binary logs (purged): cloning once its set is contained in %s's", active, active)
			return
		}
		d.cloneFollower(s, st, in, active, srcOK, want)
		return
	}
	if !srcOK {
		st.SourceConvergenceState, st.SourceConvergenceReason = "Pending", "SourceMismatch"
		if in.MutationError != "" {
			st.SourceConvergenceReason = "MutationFailed"
			st.Message = "repoint failed: " + in.MutationError
		}
		d.act(Action{Kind: Repoint, Site: s.Name, SourceHost: want, SourcePort: SourcePort,
			Why: repointWhy(s.Name, o, active)})
		return
	}
	st.SourceConvergenceState, st.SourceConvergenceReason = "Converged", "DirectSource"
	r := o.Replica
	stopped := (r.IORunning != "Yes" && r.IORunning != "Connecting") || !r.SQLRunning
	if stopped && !(r.LastSQLErrno != 0 && !r.SQLRunning) {
		if in.MutationError != "" {
			st.SourceConvergenceState, st.SourceConvergenceReason = "Pending", "MutationFailed"
			st.Message = "start replica failed: " + in.MutationError
		}
		d.act(Action{Kind: StartReplica, Site: s.Name, Why: fmt.Sprintf("site %s replication is stopped", s.Name)})
	}
}

// sourceOf is the follower's source as host:port; "" when it has none.
func sourceOf(o *Observed) string {
	if o.Replica == nil || o.Replica.SourceHost == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d", o.Replica.SourceHost, o.Replica.SourcePort)
}

// replicatesFrom says where a follower replicates from; a follower with no
// source says so rather than quoting an empty host.
func replicatesFrom(o *Observed) string {
	if src := sourceOf(o); src != "" {
		return fmt.Sprintf("replicates from %q", src)
	}
	return "has no replication source"
}

func repointWhy(site string, o *Observed, active string) string {
	if src := sourceOf(o); src != "" {
		return fmt.Sprintf("site %s replicates from %q, not from the active site %s", site, src, active)
	}
	return fmt.Sprintf("site %s has no replication source; the active site is %s", site, active)
}

// GTIDPhrase renders a GTID set for a message: an empty set would leave
// "promoted at" with nothing after it.
func GTIDPhrase(set string) string {
	if set == "" {
		return "an empty GTID set"
	}
	return set
}

// cloneFollower handles a follower that cannot catch up from binary logs
// and holds nothing the active site lacks.
func (d *decider) cloneFollower(s SiteSpec, st *v1alpha1.SiteStatus, in SiteInput, active string, srcOK bool, donorHost string) {
	if srcOK {
		st.SourceConvergenceState, st.SourceConvergenceReason = "Converged", "DirectSource"
	} else {
		st.SourceConvergenceState, st.SourceConvergenceReason = "Pending", "SourceMismatch"
	}
	switch {
	case in.Clone.Running:
		st.Message = fmt.Sprintf("cloning from site %s since %s", in.Clone.Donor, in.Clone.Started.UTC().Format("15:04:05Z"))
	case !in.Clone.FailedAt.IsZero() && d.in.Now.Sub(in.Clone.FailedAt) < d.in.CloneRetryDelay:
		st.SourceConvergenceState, st.SourceConvergenceReason = "Pending", "MutationFailed"
		st.Message = fmt.Sprintf("clone from site %s failed: %s; retried after %s", active, in.Clone.Error, in.Clone.FailedAt.Add(d.in.CloneRetryDelay).UTC().Format("15:04:05Z"))
	default:
		st.Message = fmt.Sprintf("cannot catch up from site %s's binary logs (purged): cloning", active)
		d.act(Action{Kind: Clone, Site: s.Name, Donor: active, SourceHost: donorHost, SourcePort: SourcePort,
			Why: fmt.Sprintf("site %s lacks transactions site %s already purged from its binary logs", s.Name, active)})
	}
}

// recordDivergence keeps the divergence record of a follower: set when it
// holds transactions the active site lacks, cleared when it no longer does.
// The former primary of the last failover (or a site already recorded as
// one) is an old primary: its record makes recovery Blocked, which the
// deployment API treats as unstable, where a replica's audit report is not.
func (d *decider) recordDivergence(s SiteSpec, st *v1alpha1.SiteStatus, extra gtid.Set, active string) {
	if extra.IsEmpty() {
		if st.RecoveryState == v1alpha1.RecoveryBlocked {
			st.RecoveryState = ""
			d.event(false, v1alpha1.EventOldPrimaryRecovered, "old primary %s no longer holds transactions site %s lacks", s.Name, active)
		}
		st.DivergentGTID, st.DivergentTransactionCount, st.DivergenceDetectedBy, st.DivergenceComparedTo = "", 0, "", ""
		return
	}
	detector := v1alpha1.DivergenceByReplicaAudit
	lf := d.out.Status.LastFailover
	if st.DivergenceDetectedBy == v1alpha1.DivergenceByOldPrimaryRecovery || (lf != nil && lf.Source == s.Name && lf.Target == active) {
		detector = v1alpha1.DivergenceByOldPrimaryRecovery
		st.RecoveryState = v1alpha1.RecoveryBlocked
	}
	set := extra.OneLine()
	if st.DivergentGTID != set {
		who := "site"
		if detector == v1alpha1.DivergenceByOldPrimaryRecovery {
			who = "old primary"
		}
		d.event(true, v1alpha1.EventDivergentTransactionsDetected, "%s %s holds %d transactions site %s lacks: %s",
			who, s.Name, extra.Count(), active, GTIDPhrase(set))
	}
	st.DivergentGTID, st.DivergentTransactionCount = set, int64(extra.Count())
	st.DivergenceDetectedBy, st.DivergenceComparedTo = detector, active
}
