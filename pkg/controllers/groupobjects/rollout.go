package groupobjects

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Timings of an ordered update.
const (
	// RolloutStableFor is how long a rolled pod must have been Ready before
	// the next site rolls (or the primary role is handed over): a pod that
	// passes its readiness probe once and then crash-loops must not let the
	// rollout move on.
	RolloutStableFor = 30 * time.Second
	// RolloutStallAfter is how long a rolled pod may be not Ready (counted
	// from its Ready condition's last transition, or from its creation when
	// it has none yet) before the rollout reports OrderedUpdateStalled. A
	// rolled pod whose containers restarted and that is not Ready is stalled
	// at once: it crash-loops.
	RolloutStallAfter = 30 * time.Second
	// HandoffRetryDelay is how long after a failed planned failover
	// (its completionTime) the ordered update may start a new handoff.
	HandoffRetryDelay = time.Minute
	// stalledRecheck is how often a stalled rollout refreshes its message.
	stalledRecheck = 30 * time.Second
)

// SiteState is what the rollout decision needs to know about one site.
type SiteState struct {
	Name string
	// Role from spec (empty reads as PrimaryCandidate).
	Role v1alpha1.SiteRole
	// DesiredHash is the hash of the freshly rendered pod template.
	DesiredHash string
	// StatefulSetExists, and the template hash it carries.
	StatefulSetExists bool
	StatefulSetHash   string
	// StatefulSetObserved: the StatefulSet controller has seen the
	// StatefulSet's latest spec (status.observedGeneration >= generation),
	// so a pod deleted now is recreated from the current template.
	StatefulSetObserved bool
	// PodExists, the template hash the pod was created from, whether it is
	// Ready and whether it is already being deleted.
	PodExists      bool
	PodHash        string
	PodReady       bool
	PodTerminating bool
	// PodReadySince is, for a Ready pod, when its Ready condition last
	// turned True.
	PodReadySince time.Time
	// PodNotReadySince is, for a pod that is not Ready, when its Ready
	// condition last turned False (its creation time when it has none).
	PodNotReadySince time.Time
	// PodRestarts is the sum of its containers' restart counts.
	PodRestarts int32
	// Replication, DivergentGTID and RecoveryState are the site's entry in
	// status.sites (the topology manager's last observation).
	Replication   v1alpha1.ReplicationState
	DivergentGTID string
	RecoveryState v1alpha1.RecoveryState
}

// RolloutInput is everything the rollout decision reads.
type RolloutInput struct {
	Strategy v1alpha1.UpdateStrategyType
	// Active is status.activeSite.
	Active string
	Now    time.Time
	// Sites in spec order.
	Sites []SiteState
	// Phase is the stored status.updatePhase.
	Phase v1alpha1.UpdatePhase
	// Transition describes status.transition when one is in flight, else "".
	Transition string
	// Claim is status.plannedFailover (nil when there is none).
	Claim *v1alpha1.PlannedFailoverStatus
	// SitePriorities is spec.splitBrainPolicy.sitePriorities: the preferred
	// handoff targets, in order.
	SitePriorities []string
	// Incomplete: some site of the spec could not be rendered or observed
	// and is missing from Sites. The rollout then keeps the stored phase and
	// starts no handoff.
	Incomplete bool
}

// SiteAction is the rollout decision for one site.
type SiteAction struct {
	Name string
	// ApplyTemplate writes the new pod template and my.cnf (or creates the
	// StatefulSet).
	ApplyTemplate bool
	// DeletePod deletes the site's pod so the StatefulSet recreates it from
	// the new template.
	DeletePod bool
	// Held: the site has a pending change that is not applied because it is
	// the active site under OrderedUpdate (its turn comes after the handoff).
	Held bool
	// Waiting: a site whose turn has not come; WaitingFor says for what.
	Waiting    bool
	WaitingFor string
	// Outdated: the site's StatefulSet or pod is not at the desired hash.
	Outdated bool
}

// Stall is a rollout that cannot move on by itself.
type Stall struct {
	// Site the rollout is stuck at.
	Site    string
	Message string
}

// Handoff asks to start handing the primary role to Target.
type Handoff struct {
	Target string
	// Retry: a previous planned failover ended Failed (PreviousRun).
	Retry       bool
	PreviousRun string
}

// HandoffFailure is our handoff (updatePhase HandingOff) found ended
// without moving the active site.
type HandoffFailure struct {
	RunID, Target string
	Outcome       v1alpha1.PlannedFailoverOutcome
	Reason        v1alpha1.PlannedFailoverResultReason
	// RetryAt is when a new handoff may start.
	RetryAt time.Time
	// Moved: the run did publish the target as the active site before it
	// ended (for example promoted-unconfirmed); no new handoff is needed,
	// but the outcome needs a human's look.
	Moved bool
}

// Rollout is the decision for every site, in site order, and for the
// ordered update as a whole.
type Rollout struct {
	Sites []SiteAction
	// Phase is the status.updatePhase to store.
	Phase v1alpha1.UpdatePhase
	// Stall is set when the rollout is stuck (Updating OrderedUpdateStalled).
	Stall *Stall
	// Handoff is set when the handoff is to be started now.
	Handoff *Handoff
	// Failure is set when our handoff ended without moving the active site.
	Failure *HandoffFailure
	// Notes say what the rollout waits for (the Updating message).
	Notes []string
	// RequeueAfter is when the decision may change without any object
	// changing (the 30 s rules, the retry delay); 0: none.
	RequeueAfter time.Duration
}

// Outdated returns the names of the sites not at the desired hash.
func (r Rollout) Outdated() []string {
	var out []string
	for _, s := range r.Sites {
		if s.Outdated {
			out = append(out, s.Name)
		}
	}
	return out
}

// Done reports whether the rollout has nothing left to do.
func (r Rollout) Done() bool {
	return len(r.Outdated()) == 0 && r.Phase == "" && r.Stall == nil
}

func (r *Rollout) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *Rollout) wakeIn(d time.Duration) {
	if d > 0 && (r.RequeueAfter == 0 || d < r.RequeueAfter) {
		r.RequeueAfter = d
	}
}

// PlanRollout decides, per site, whether to write the new pod template and
// whether to delete the pod so it is recreated (StatefulSets use OnDelete:
// nothing restarts unless this says so), and where the ordered update is.
//
//   - A missing StatefulSet is always created.
//   - Recreate, or no active site yet (nothing is serving), rolls every
//     site at once; status.updatePhase stays empty. No pod is deleted while
//     an active-site change or a planned failover is in flight.
//   - With Incomplete input the stored phase is kept and no handoff starts.
//   - OrderedUpdate rolls followers one at a time, in site order: the next
//     starts once every follower on the new template has been Ready for
//     RolloutStableFor. The active site is held (neither its template nor
//     its my.cnf is written) until every follower is done; then the
//     primary role is handed to an updated PrimaryCandidate follower by a
//     planned failover, and the former active site rolls as a follower.
//     While an active-site change or a planned failover is in flight no
//     pod is deleted.
func PlanRollout(in RolloutInput) Rollout {
	out := Rollout{Sites: make([]SiteAction, len(in.Sites))}
	for i, s := range in.Sites {
		out.Sites[i] = SiteAction{Name: s.Name, Outdated: outdated(s)}
	}
	if in.Strategy == v1alpha1.Recreate || in.Active == "" {
		planAllAtOnce(in, &out)
		return out
	}
	planOrdered(in, &out)
	return out
}

func planAllAtOnce(in RolloutInput, out *Rollout) {
	frozen := frozenBy(in)
	for i, s := range in.Sites {
		a := &out.Sites[i]
		switch {
		case !s.StatefulSetExists:
			a.ApplyTemplate = true
		case a.Outdated:
			roll(s, a)
			holdPod(a, frozen)
		}
	}
}

// frozenBy says what keeps pods from being deleted: an active-site change
// or a planned failover in flight (deleting a pod then could take down the
// source being fenced or the target being promoted). "" when nothing does.
func frozenBy(in RolloutInput) string {
	switch {
	case in.Transition != "":
		return "the active-site change " + in.Transition + " is in flight"
	case in.Claim != nil && !in.Claim.Phase.IsTerminal():
		return fmt.Sprintf("planned failover %s to site %s is %s", in.Claim.RunID, in.Claim.TargetSite, in.Claim.Phase)
	}
	return ""
}

// holdPod keeps a rolled site's pod while something in flight freezes
// deletions; the template is still written.
func holdPod(a *SiteAction, frozen string) {
	if a.DeletePod && frozen != "" {
		a.DeletePod = false
		a.Waiting, a.WaitingFor = true, frozen
	}
}

// roll sets the actions that move s one step onto the new template.
func roll(s SiteState, a *SiteAction) {
	a.ApplyTemplate = s.StatefulSetHash != s.DesiredHash
	a.DeletePod = s.PodExists && s.PodHash != s.DesiredHash && !s.PodTerminating &&
		s.StatefulSetHash == s.DesiredHash && s.StatefulSetObserved
}

func planOrdered(in RolloutInput, out *Rollout) {
	ours := in.Phase == v1alpha1.UpdateHandingOff
	claimRunning := in.Claim != nil && !in.Claim.Phase.IsTerminal()
	frozen := frozenBy(in)
	inProgress := in.Phase != ""
	for _, a := range out.Sites {
		inProgress = inProgress || a.Outdated
	}
	if !inProgress {
		for i, s := range in.Sites {
			if !s.StatefulSetExists {
				out.Sites[i].ApplyTemplate = true
			}
		}
		return
	}

	// The followers, one at a time.
	busy := ""
	for _, s := range in.Sites {
		if s.Name != in.Active && s.StatefulSetExists && s.StatefulSetHash == s.DesiredHash && !stable(s, in.Now) {
			busy = s.Name
			break
		}
	}
	for i, s := range in.Sites {
		a := &out.Sites[i]
		switch {
		case !s.StatefulSetExists:
			a.ApplyTemplate = true
		case !a.Outdated:
		case s.Name == in.Active:
			a.Held = true
		case busy != "" && busy != s.Name:
			a.Waiting, a.WaitingFor = true, busy
		default:
			busy = s.Name
			roll(s, a)
			holdPod(a, frozen)
		}
	}
	if busy != "" {
		settle(in, out, siteNamed(in.Sites, busy))
	}

	activeOutdated, followersDone := false, busy == ""
	for _, a := range out.Sites {
		activeOutdated = activeOutdated || (a.Name == in.Active && a.Outdated)
		followersDone = followersDone && (a.Name == in.Active || !a.Outdated)
	}
	c := in.Claim
	handedOver := c != nil && c.Phase == v1alpha1.PlannedFailoverSucceeded && c.SourceSite != in.Active
	if ours && !claimRunning && !handedOver {
		noteFailure(in, out)
	}
	switch {
	case ours && claimRunning:
		out.Phase = v1alpha1.UpdateHandingOff
		out.note("handing the primary role from site %s to site %s: %s%s", c.SourceSite, c.TargetSite, frozen, admissionNote(c))
	case activeOutdated && followersDone:
		out.Phase = v1alpha1.UpdateRollingFollowers
		planHandoff(in, out)
	case !followersDone:
		out.Phase = v1alpha1.UpdateRollingFollowers
		// The former active site after our handoff is rolled like any follower.
		if handedOver && (in.Phase == v1alpha1.UpdateHandingOff || in.Phase == v1alpha1.UpdateRollingFormerPrimary) &&
			(busy == c.SourceSite || outdatedSite(out, c.SourceSite)) {
			out.Phase = v1alpha1.UpdateRollingFormerPrimary
		}
		if activeOutdated {
			out.note("site %s (active) is rolled after the primary role is handed to an updated follower", in.Active)
		}
	default:
		out.Phase = "" // every site rolled and stable
	}
	if in.Incomplete {
		out.Phase, out.Handoff, out.Failure = in.Phase, nil, nil
		out.note("some site could not be rendered or observed (see ResourcesReady)")
	}
}

// settle decides what the rollout waits for at the site being rolled: its
// pod's recreation, Ready for RolloutStableFor, or nothing (stalled).
func settle(in RolloutInput, out *Rollout, s SiteState) {
	switch {
	case !s.PodExists || s.PodHash != s.DesiredHash || s.PodTerminating:
		out.note("site %s: waiting for its pod to be recreated from the new template", s.Name)
	case s.PodReady:
		left := s.PodReadySince.Add(RolloutStableFor).Sub(in.Now)
		out.note("site %s: Ready since %s, moving on once it has been Ready for %s", s.Name, stamp(s.PodReadySince), RolloutStableFor)
		out.wakeIn(left)
	default:
		since := in.Now.Sub(s.PodNotReadySince)
		if since < RolloutStallAfter && s.PodRestarts == 0 {
			out.note("site %s: waiting for its new pod to become Ready", s.Name)
			out.wakeIn(RolloutStallAfter - since)
			return
		}
		msg := fmt.Sprintf("site %s: its pod on the new template has not been Ready since %s (%s)",
			s.Name, stamp(s.PodNotReadySince), roughly(since))
		if s.PodRestarts > 0 {
			msg += fmt.Sprintf(" and its containers restarted %d times", s.PodRestarts)
		}
		serving := ", the active site " + in.Active + " keeps serving"
		if in.Active == "" {
			serving = "" // no site to name: "the active site  keeps serving" reads badly
		}
		out.Stall = &Stall{Site: s.Name, Message: msg + "; the rollout waits until it has been Ready for " + RolloutStableFor.String() +
			serving + " and no other site rolls"}
		out.wakeIn(stalledRecheck)
	}
}

// noteFailure records that our handoff ended without moving the active
// site (a Failed claim, or a claim gone or replaced).
func noteFailure(in RolloutInput, out *Rollout) {
	f := &HandoffFailure{}
	if c := in.Claim; c != nil {
		f.RunID, f.Target = c.RunID, c.TargetSite
		if c.Result != nil {
			f.Outcome, f.Reason = c.Result.Outcome, c.Result.Reason
		}
		f.Moved = c.TargetSite == in.Active && c.SourceSite != in.Active
		if c.CompletionTime != nil && !f.Moved {
			f.RetryAt = c.CompletionTime.Add(HandoffRetryDelay)
		}
	}
	out.Failure = f
}

// planHandoff: every follower is rolled and stable, the active site is
// not. Hand the primary role over, unless something forbids it now.
func planHandoff(in RolloutInput, out *Rollout) {
	c := in.Claim
	switch {
	case in.Transition != "":
		out.note("the handoff waits: the active-site change %s is in flight", in.Transition)
		return
	case c != nil && !c.Phase.IsTerminal():
		out.note("the handoff waits: planned failover %s to site %s is %s", c.RunID, c.TargetSite, c.Phase)
		return
	}
	// A run that ended without moving the active site (Failed, or an odd
	// Succeeded) delays the next handoff, so a failing one is never retried
	// in a tight loop.
	retry := c != nil && (c.Phase == v1alpha1.PlannedFailoverFailed || (c.Phase.IsTerminal() && c.SourceSite == in.Active))
	if retry && c.CompletionTime != nil {
		at := c.CompletionTime.Add(HandoffRetryDelay)
		if in.Now.Before(at) {
			out.note("the handoff waits until %s: planned failover %s to site %s failed (%s)", stamp(at), c.RunID, c.TargetSite, resultOf(c))
			out.wakeIn(at.Sub(in.Now))
			return
		}
	}
	target, why := handoffTarget(in)
	if target == "" {
		out.Stall = &Stall{Site: in.Active, Message: fmt.Sprintf("site %s (active) cannot be handed over: %s; the active site keeps serving on the old template", in.Active, why)}
		out.wakeIn(stalledRecheck)
		return
	}
	out.Phase = v1alpha1.UpdateHandingOff
	out.Handoff = &Handoff{Target: target, Retry: retry}
	if retry {
		out.Handoff.PreviousRun = c.RunID
	}
	out.note("handing the primary role from site %s to site %s", in.Active, target)
}

// handoffTarget picks the follower to hand the primary role to: an updated,
// stable PrimaryCandidate whose replication runs and that holds nothing the
// active site lacks (no divergentGtid, no recovery state); the first of
// spec.splitBrainPolicy.sitePriorities, then spec order. Without one it
// says why each follower is refused.
func handoffTarget(in RolloutInput) (string, string) {
	var ok []string
	var refused []string
	for _, s := range in.Sites {
		if s.Name == in.Active {
			continue
		}
		if why := ineligible(s, in.Now); why != "" {
			refused = append(refused, s.Name+" "+why)
			continue
		}
		ok = append(ok, s.Name)
	}
	if len(ok) == 0 {
		return "", "no follower can take it (" + strings.Join(refused, "; ") + ")"
	}
	for _, p := range in.SitePriorities {
		if slices.Contains(ok, p) {
			return p, ""
		}
	}
	return ok[0], ""
}

func ineligible(s SiteState, now time.Time) string {
	switch {
	case s.Role != "" && s.Role != v1alpha1.SiteRolePrimaryCandidate:
		return "is " + string(s.Role) + ", not PrimaryCandidate"
	case outdated(s) || !stable(s, now):
		return "is not on the new template and Ready"
	case s.DivergentGTID != "":
		return "holds transactions the active site lacks (divergentGtid " + s.DivergentGTID + "; see Degraded/DivergentTransactions)"
	case s.RecoveryState != "":
		return "is in old-primary recovery (" + string(s.RecoveryState) + ")"
	case s.Replication != v1alpha1.ReplicationRunning:
		rep := string(s.Replication)
		if rep == "" {
			rep = "not reported"
		}
		return "does not replicate (replication " + rep + ")"
	}
	return ""
}

func admissionNote(c *v1alpha1.PlannedFailoverStatus) string {
	if c.Admission != nil && c.Admission.Message != "" {
		return " (" + c.Admission.Message + ")"
	}
	return ""
}

func resultOf(c *v1alpha1.PlannedFailoverStatus) string {
	if c.Result == nil {
		return "no result recorded"
	}
	return fmt.Sprintf("%s/%s", c.Result.Outcome, c.Result.Reason)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// roughly says how long a stall has lasted coarsely enough that the
// condition message, which carries it, changes about once a minute rather
// than on every pass.
func roughly(d time.Duration) string {
	switch {
	case d < RolloutStallAfter:
		return "under " + RolloutStallAfter.String()
	case d < time.Minute:
		return "over " + RolloutStallAfter.String()
	}
	return "over " + strings.TrimSuffix(d.Truncate(time.Minute).String(), "0s")
}

func siteNamed(sites []SiteState, name string) SiteState {
	for _, s := range sites {
		if s.Name == name {
			return s
		}
	}
	return SiteState{}
}

func outdatedSite(r *Rollout, name string) bool {
	return slices.ContainsFunc(r.Sites, func(a SiteAction) bool { return a.Name == name && a.Outdated })
}

func outdated(s SiteState) bool {
	return !s.StatefulSetExists || s.StatefulSetHash != s.DesiredHash || (s.PodExists && s.PodHash != s.DesiredHash)
}

// stable: the site's pod runs the desired template and has been Ready for
// RolloutStableFor.
func stable(s SiteState, now time.Time) bool {
	return s.StatefulSetExists && s.StatefulSetHash == s.DesiredHash && s.PodExists && s.PodHash == s.DesiredHash &&
		s.PodReady && !s.PodTerminating && !now.Before(s.PodReadySince.Add(RolloutStableFor))
}
