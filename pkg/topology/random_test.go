package topology

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// randomSet draws a small GTID set over the four sites' UUIDs.
func randomSet(r *rand.Rand) gtid.Set {
	var s gtid.Set
	for _, u := range []string{uIAD, uPDX, uDR, uRD} {
		if r.IntN(3) == 0 {
			continue
		}
		start := int64(1 + r.IntN(3))
		for n := start; n <= start+int64(r.IntN(4)); n++ {
			s = s.Add(gtid.GTID{UUID: u, GNO: n})
		}
	}
	return s
}

func randomInput(r *rand.Rand) Input {
	obs := map[string]SiteInput{}
	var status v1alpha1.MysqlFailoverGroupStatus
	for _, s := range fourSites {
		reach := []observe.Reachability{observe.Reachable, observe.Reachable, observe.Reachable, observe.Unreachable, observe.Suspect, observe.Unobserved}[r.IntN(6)]
		si := SiteInput{Reach: reach, SidecarSeen: r.IntN(5) != 0}
		if reach == observe.Reachable || r.IntN(2) == 0 {
			o := &Observed{ServerUUID: uuids[s.Name], Writable: r.IntN(3) == 0, Executed: randomSet(r), At: t0}
			// read_only=ON, super_read_only=OFF: not fenced (issue 19, hole 4).
			o.ReadOnly = !o.Writable || r.IntN(4) == 0
			if r.IntN(2) == 0 {
				o.Purged = o.Executed.Intersect(randomSet(r))
			}
			if r.IntN(2) == 0 {
				host := []string{iadHost, "orders-pdx-internal.shop.svc", "elsewhere"}[r.IntN(3)]
				o.Replica = replicating(host)
				if r.IntN(3) == 0 {
					o.Replica.Retrieved = randomSet(r)
				}
			}
			si.Last = o
			si.Fresh = reach == observe.Reachable || (reach == observe.Unreachable && r.IntN(2) == 0)
		}
		if r.IntN(5) == 0 {
			si.Clone = CloneState{Running: r.IntN(2) == 0, FailedAt: t0, Error: "x"}
		}
		obs[s.Name] = si
		if r.IntN(2) == 0 {
			status.Sites = append(status.Sites, v1alpha1.SiteStatus{Name: s.Name, GTIDExecuted: randomSet(r).OneLine()})
		}
	}
	switch r.IntN(4) {
	case 0:
	case 1:
		status.ActiveSite = []string{"iad", "pdx"}[r.IntN(2)]
		status.TopologyGeneration = int64(1 + r.IntN(5))
	case 2:
		status = withTransition(status, []string{"iad", "pdx"}[r.IntN(2)])
	case 3:
		status.ActiveSite = "iad"
		status.TopologyGeneration = 2
		steps := []v1alpha1.TransitionStep{"", v1alpha1.StepRecorded, v1alpha1.StepAwaitingSelfFence, v1alpha1.StepCatchingUp, v1alpha1.StepPromoting, v1alpha1.StepPublishing}
		deadline := metav1.NewTime(t0.Add(time.Duration(r.IntN(3)-1) * time.Minute))
		kind := []v1alpha1.TransitionKind{v1alpha1.TransitionAutomatic, v1alpha1.TransitionPlanned, v1alpha1.TransitionOrderedUpdate}[r.IntN(3)]
		if kind != v1alpha1.TransitionAutomatic {
			steps = []v1alpha1.TransitionStep{v1alpha1.StepFencingSource, v1alpha1.StepCatchingUp, v1alpha1.StepPromoting}
			deadline = metav1.NewTime(t0.Add(-time.Duration(r.IntN(60)) * time.Second)) // the start time
		}
		status.Transition = &v1alpha1.Transition{ID: "y", Kind: kind, SourceSite: "iad", TargetSite: "pdx", TopologyGeneration: 3,
			Step: steps[r.IntN(len(steps))], SourceFenceDeadline: &v1alpha1.PreciseTime{MicroTime: metav1.MicroTime{Time: deadline.Time}}, StartTime: deadline, StepTime: &deadline}
		if status.Transition.Step == v1alpha1.StepRecorded || r.IntN(8) == 0 {
			status.Transition.SourceFenceDeadline = nil // not yet found in the cache by a later pass
		}
		if kind != v1alpha1.TransitionAutomatic && r.IntN(4) != 0 {
			status.PlannedFailover = randomClaim(r, []v1alpha1.PlannedFailoverPhase{
				v1alpha1.PlannedFailoverFencing, v1alpha1.PlannedFailoverDraining, v1alpha1.PlannedFailoverPromoting})
		}
	}
	if status.Transition == nil && status.ActiveSite == "iad" && r.IntN(2) == 0 {
		status.PlannedFailover = randomClaim(r, []v1alpha1.PlannedFailoverPhase{
			v1alpha1.PlannedFailoverCatchingUp, v1alpha1.PlannedFailoverRollingBack, v1alpha1.PlannedFailoverPublishing, v1alpha1.PlannedFailoverFencing})
		plannedFriendly(r, obs, &status)
	}
	if r.IntN(3) == 0 {
		status.LastFailover = &v1alpha1.LastFailover{Time: metav1.NewTime(t0.Add(-time.Duration(r.IntN(10)) * time.Minute)), Target: "iad"}
	}
	in := newInput(obs, status)
	in.Failover = FailoverSettings{Enabled: r.IntN(4) != 0, Cooldown: 5 * time.Minute, SelfFenceBound: time.Duration(r.IntN(3)) * time.Minute, MaxMissing: uint64(r.IntN(3))}
	in.Planned = PlannedInput{HoldsRead: r.IntN(3) != 0, Holds: PlannedHolds{Held: r.IntN(3) == 0, EarliestExpiry: t0.Add(time.Minute)}, OrderedUpdate: r.IntN(2) == 0}
	return in
}

// plannedFriendly often makes the world one a planned run can move in:
// pdx a caught-up replica of a serving iad, or the writable published target.
func plannedFriendly(r *rand.Rand, obs map[string]SiteInput, status *v1alpha1.MysqlFailoverGroupStatus) {
	if r.IntN(2) == 0 {
		return
	}
	iad := &Observed{ServerUUID: uIAD, Writable: true, Executed: randomSet(r), At: t0}
	pdx := &Observed{ServerUUID: uPDX, Executed: iad.Executed.Intersect(randomSet(r)), Replica: replicating(iadHost), At: t0}
	if status.PlannedFailover.Phase == v1alpha1.PlannedFailoverPublishing {
		status.ActiveSite, status.TopologyGeneration = "pdx", 3
		pdx.Writable, pdx.Replica = r.IntN(4) != 0, nil
		iad.Writable = false
	}
	obs["iad"] = SiteInput{Reach: observe.Reachable, Fresh: true, Last: iad}
	obs["pdx"] = SiteInput{Reach: observe.Reachable, Fresh: true, Last: pdx}
}

// randomClaim is a planned-failover claim from iad to pdx in one of phases,
// entered up to a minute before t0.
func randomClaim(r *rand.Rand, phases []v1alpha1.PlannedFailoverPhase) *v1alpha1.PlannedFailoverStatus {
	at := metav1.NewTime(t0.Add(-time.Duration(r.IntN(60)) * time.Second))
	return &v1alpha1.PlannedFailoverStatus{RunID: "y", SourceSite: "iad", TargetSite: "pdx", Phase: phases[r.IntN(len(phases))],
		PhaseTime: &at, RequestTime: &at, MaxLagWait: &metav1.Duration{Duration: time.Duration(1+r.IntN(60)) * time.Second}}
}

func withTransition(st v1alpha1.MysqlFailoverGroupStatus, target string) v1alpha1.MysqlFailoverGroupStatus {
	b := bootstrapping(target, st.TopologyGeneration+1)
	st.Transition = b.Transition
	return st
}

// trusted returns the observation Decide may rely on to make a site
// writable, choose it or clone it, or nil.
func trusted(in Input, site string) *Observed {
	si := in.Observed[site]
	if si.Reach == observe.Reachable && si.Fresh {
		return si.Last
	}
	return nil
}

// takesWrites reports whether the site's latest poll, trusted or not, found
// super_read_only OFF: what the site answered is true whatever the
// operator's trust in it, so the fencing checks below judge by it, never by
// trusted() (issue 19: reusing the code's own definition hid holes 2 and 4).
func takesWrites(in Input, site string) bool {
	si := in.Observed[site]
	return si.Fresh && si.Last != nil && si.Last.Writable
}

// mustFence is the site that may keep taking writes after this decision,
// and whether the fencing check applies at all: not for planned runs (their
// own checks below), a run the decision abandoned, or a group with no
// active site and nothing recorded (bootstrap waiting, a split brain left
// to a human: docs/safety.md, rule 1 limits).
func mustFence(in Input, d Decision) (keep string, applies bool) {
	tr := in.Status.Transition
	switch {
	case tr != nil && IsPlannedKind(tr.Kind):
		return "", false
	case tr != nil && d.Status.Transition == nil && d.Status.ActiveSite == in.Status.ActiveSite:
		return "", false // abandoned: judged again on the next decision
	case tr != nil && tr.Kind == v1alpha1.TransitionAutomatic && !promoted(tr.Step):
		return "", true
	case tr != nil:
		return tr.TargetSite, true
	case in.Status.ActiveSite != "":
		return in.Status.ActiveSite, true
	case d.Status.Transition != nil:
		return d.Status.Transition.TargetSite, true
	}
	return "", false
}

// checkFencing (holes 2 and 3): every site but the kept one that answered
// writable is fenced in this decision; nothing is made writable while
// another site answers writable; no site is repointed, restarted or cloned
// on an observation that shows it writable, nor in a decision that fences it.
func checkFencing(in Input, d Decision, fail func(string, ...any)) {
	fenced := map[string]bool{}
	for _, a := range d.Actions {
		if a.Kind == Fence {
			fenced[a.Site] = true
		}
	}
	if keep, ok := mustFence(in, d); ok {
		for _, s := range fourSites {
			if s.Name != keep && takesWrites(in, s.Name) && !fenced[s.Name] {
				fail("%s answered writable (reach %s) and is not fenced (keeping %q)", s.Name, in.Observed[s.Name].Reach, keep)
			}
		}
	}
	for _, a := range d.Actions {
		switch a.Kind {
		case MakeWritable:
			for _, s := range fourSites {
				if s.Name != a.Site && takesWrites(in, s.Name) {
					fail("made %s writable while %s answers writable (reach %s)", a.Site, s.Name, in.Observed[s.Name].Reach)
				}
			}
		case Repoint, StartReplica, Clone:
			if takesWrites(in, a.Site) || fenced[a.Site] {
				fail("%s of %s on an observation from before its fence", a.Kind, a.Site)
			}
		}
	}
}

// TestDecideInvariants checks the safety rules on many random inputs: a
// site is made writable only if no other trusted site holds transactions it
// lacks (beyond divergence already on record), after every other writer was
// fenced, once at most, and never in the decision that records the intent;
// a clone never targets a site holding transactions the donor lacks;
// topologyGeneration only moves by one, with the intent cleared in a
// write-first status; Decide is deterministic.
func TestDecideInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	// How often the planned-handoff checks ran: the generator must reach
	// them, or the checks below prove nothing about the handoff.
	var plannedPromotions, plannedStarts, claimsSucceeded int
	defer func() {
		t.Logf("planned promotions %d, planned starts %d, claims succeeded %d", plannedPromotions, plannedStarts, claimsSucceeded)
		if plannedPromotions == 0 || plannedStarts == 0 || claimsSucceeded == 0 {
			t.Errorf("the random inputs never reached a planned promotion, start or success")
		}
	}()
	for i := range 5000 {
		in := randomInput(r)
		d := Decide(in)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("case %d: %s\ninput status %+v\nobserved %s\nactions %v", i, fmt.Sprintf(format, args...), in.Status, dump(in), actions(d))
		}
		if !reflect.DeepEqual(d, Decide(in)) {
			fail("Decide is not deterministic")
		}
		writable := 0
		fenced := map[string]bool{}
		for _, a := range d.Actions {
			switch a.Kind {
			case Fence:
				fenced[a.Site] = true
			case MakeWritable:
				writable++
				target := trusted(in, a.Site)
				if target == nil {
					fail("made untrusted site %s writable", a.Site)
				}
				tr := in.Status.Transition
				if tr != nil && tr.Kind == v1alpha1.TransitionAutomatic {
					checkFailoverPromotion(t, in, d, a, fenced, fail)
					continue
				}
				rollback := tr != nil && IsPlannedKind(tr.Kind) && d.Status.Transition == nil && a.Site == tr.SourceSite && !promoted(tr.Step)
				if tr != nil && IsPlannedKind(tr.Kind) && !rollback {
					plannedPromotions++
					checkPlannedPromotion(in, d, a, fenced, fail)
					continue
				}
				if rollback {
					tr = nil // the source is the active site again: the steady rule applies
				}
				if tr != nil && tr.Kind != v1alpha1.TransitionBootstrap {
					fail("made %s writable during a %s transition", a.Site, tr.Kind)
				}
				if tr == nil && in.Status.ActiveSite != a.Site {
					fail("made %s writable outside a bootstrap while %q is active", a.Site, in.Status.ActiveSite)
				}
				for _, s := range fourSites {
					o := trusted(in, s.Name)
					if s.Name == a.Site || o == nil {
						continue
					}
					extra := Divergent(o.Executed, target.Executed, target.ServerUUID)
					if tr != nil {
						extra = o.Executed.Subtract(target.Executed) // a bootstrap target must hold everything
					} else {
						for _, p := range in.Status.Sites {
							if p.Name == s.Name && p.DivergentGTID != "" {
								extra = extra.Subtract(gtid.MustParse(p.DivergentGTID))
							}
						}
					}
					if !extra.IsEmpty() {
						fail("made %s writable although %s holds %s it lacks", a.Site, s.Name, extra.OneLine())
					}
					if takesWrites(in, s.Name) && !fenced[s.Name] {
						fail("made %s writable while %s is writable and not fenced first", a.Site, s.Name)
					}
				}
			case Clone:
				target, donor := trusted(in, a.Site), trusted(in, a.Donor)
				if target == nil || donor == nil {
					fail("clone between untrusted sites %s <- %s", a.Site, a.Donor)
				}
				if extra := Divergent(target.Executed, donor.Executed, donor.ServerUUID); !extra.IsEmpty() {
					fail("clone over %s which holds %s the donor lacks", a.Site, extra.OneLine())
				}
				if in.Observed[a.Site].Clone.Running {
					fail("second clone into %s", a.Site)
				}
			}
		}
		if writable > 1 {
			fail("%d sites made writable", writable)
		}
		if in.Status.Transition == nil && d.Status.Transition != nil && writable > 0 {
			fail("intent recorded and a site made writable in the same decision")
		}
		if d.Status.Transition != nil && in.Status.Transition == nil && !d.WriteFirst {
			fail("intent not written first")
		}
		if g0, g1 := in.Status.TopologyGeneration, d.Status.TopologyGeneration; g1 != g0 {
			if g1 != g0+1 || !d.WriteFirst || d.Status.Transition != nil || d.Status.ActiveSite == "" {
				fail("generation %d -> %d (transition %+v)", g0, g1, d.Status.Transition)
			}
		}
		if d.Status.ActiveSite != in.Status.ActiveSite && in.Status.ActiveSite != "" {
			tr := in.Status.Transition
			if tr == nil || (tr.Kind != v1alpha1.TransitionAutomatic && !IsPlannedKind(tr.Kind)) || tr.TargetSite != d.Status.ActiveSite || !promoted(tr.Step) {
				fail("active site changed from %s to %s outside a promoted failover", in.Status.ActiveSite, d.Status.ActiveSite)
			}
			if o := trusted(in, tr.TargetSite); o == nil || !o.Writable {
				fail("published %s before it was observed writable", tr.TargetSite)
			}
		}
		if in.Status.Transition == nil && d.Status.Transition != nil && IsPlannedKind(d.Status.Transition.Kind) {
			plannedStarts++
			checkPlannedStart(in, d, fail)
		}
		if c := d.Status.PlannedFailover; c != nil && c.Phase == v1alpha1.PlannedFailoverSucceeded && in.Status.PlannedFailover.Phase != c.Phase {
			claimsSucceeded++
		}
		checkClaim(in, d, fail)
		checkFencing(in, d, fail)
		if in.Status.Transition == nil && d.Status.Transition != nil && d.Status.Transition.Kind == v1alpha1.TransitionAutomatic {
			if in.Observed[in.Status.ActiveSite].Reach != observe.Unreachable {
				fail("failover started while the active site is %s", in.Observed[in.Status.ActiveSite].Reach)
			}
			// Only an automatic failover (or one of unknown kind) starts the
			// cooldown; planned handoffs are admitted only after it passed.
			if lf := in.Status.LastFailover; lf != nil && lf.Kind != v1alpha1.TransitionPlanned && lf.Kind != v1alpha1.TransitionOrderedUpdate &&
				in.Now.Sub(lf.Time.Time) < in.Failover.Cooldown {
				fail("failover started inside the cooldown of a %q failover", lf.Kind)
			}
			if !in.Observed[in.Status.ActiveSite].SidecarSeen && in.Failover.Override == "" {
				fail("failover started although the active site's sidecar was not seen running")
			}
			target := d.Status.Transition.TargetSite
			if newRole(target) != v1alpha1.SiteRolePrimaryCandidate || trusted(in, target) == nil {
				fail("failover target %s is not a reachable PrimaryCandidate", target)
			}
		}
	}
}

func newRole(site string) v1alpha1.SiteRole {
	for _, s := range fourSites {
		if s.Name == site {
			return s.Role
		}
	}
	return ""
}

// checkFailoverPromotion: the candidate of an automatic failover is made
// writable only once the old primary is observed fenced or its self-fence
// deadline passed (or the failover was already past the point of no return),
// and only after the candidate applied everything it received.
func checkFailoverPromotion(t *testing.T, in Input, d Decision, a Action, fenced map[string]bool, fail func(string, ...any)) {
	t.Helper()
	tr := in.Status.Transition
	if a.Site != tr.TargetSite {
		fail("made %s writable during a failover to %s", a.Site, tr.TargetSite)
	}
	if takesWrites(in, tr.SourceSite) {
		fail("made %s writable while the old primary %s answers writable", a.Site, tr.SourceSite)
	}
	if promoted(tr.Step) {
		return
	}
	if tr.Step != v1alpha1.StepCatchingUp {
		fail("made %s writable at step %q", a.Site, tr.Step)
	}
	// CatchingUp without a deadline was recorded on an answer that showed the
	// source fenced (continueFailover), and a fence is never undone.
	src := in.Observed[tr.SourceSite]
	if dl := tr.SourceFenceDeadline; (!src.Fresh || src.Last == nil || src.Last.Writable) && dl != nil && in.Now.Before(dl.Time) {
		fail("made %s writable before the old primary's self-fence deadline", a.Site)
	}
	target := trusted(in, a.Site)
	if r := target.Replica; r != nil && (r.IORunning != "No" || !r.Retrieved.IsSubsetOf(target.Executed)) {
		fail("made %s writable before it applied what it received", a.Site)
	}
	if d.Status.Transition == nil || d.Status.Transition.Step != v1alpha1.StepPromoting || !d.WriteFirst {
		fail("Promoting not recorded before the promotion")
	}
}

func dump(in Input) string {
	out := ""
	if tr := in.Status.Transition; tr != nil {
		out += fmt.Sprintf("\n  transition %s %s -> %s step %s", tr.Kind, tr.SourceSite, tr.TargetSite, tr.Step)
	}
	for _, s := range fourSites {
		si := in.Observed[s.Name]
		out += fmt.Sprintf("\n  %s reach=%s fresh=%v", s.Name, si.Reach, si.Fresh)
		if si.Last != nil {
			out += fmt.Sprintf(" writable=%v executed=%s purged=%s", si.Last.Writable, si.Last.Executed.OneLine(), si.Last.Purged.OneLine())
		}
	}
	return out
}

// checkPlannedPromotion: a planned handoff makes only its target writable,
// and (unless already past the point of no return) only once the source is
// observed fenced and the target holds every transaction the fenced source
// has; Promoting is recorded first.
func checkPlannedPromotion(in Input, d Decision, a Action, fenced map[string]bool, fail func(string, ...any)) {
	tr := in.Status.Transition
	if a.Site != tr.TargetSite {
		fail("made %s writable during a planned handoff to %s", a.Site, tr.TargetSite)
	}
	if takesWrites(in, tr.SourceSite) {
		fail("made %s writable while the source %s answers writable", a.Site, tr.SourceSite)
	}
	if promoted(tr.Step) {
		return
	}
	src, target := trusted(in, tr.SourceSite), trusted(in, a.Site)
	if src == nil || src.Writable {
		fail("made %s writable without observing the source %s fenced", a.Site, tr.SourceSite)
	}
	if tr.Step != v1alpha1.StepCatchingUp {
		fail("made %s writable at step %q", a.Site, tr.Step)
	}
	if !src.Executed.IsSubsetOf(target.Executed) {
		fail("made %s writable while it lacks %s of the fenced source", a.Site, src.Executed.Subtract(target.Executed).OneLine())
	}
	if d.Status.Transition == nil || d.Status.Transition.Step != v1alpha1.StepPromoting || !d.WriteFirst {
		fail("Promoting not recorded before the promotion")
	}
}

// checkPlannedStart: a planned handoff's transition is recorded only for a
// claim that was catching up, once the holds were read and none holds, the
// source serves and the target is a trusted, caught-up replica.
func checkPlannedStart(in Input, d Decision, fail func(string, ...any)) {
	c := in.Status.PlannedFailover
	if c == nil || c.Phase != v1alpha1.PlannedFailoverCatchingUp {
		fail("planned transition recorded without a claim catching up")
		return
	}
	if !in.Planned.HoldsRead || in.Planned.Holds.Held {
		fail("planned transition recorded with holds read=%v held=%v", in.Planned.HoldsRead, in.Planned.Holds.Held)
	}
	tv := trusted(in, c.TargetSite)
	if tv == nil || tv.Writable || tv.Replica == nil || tv.Replica.SecondsBehindSource == nil || *tv.Replica.SecondsBehindSource > PlannedCaughtUpLagSeconds {
		fail("planned transition recorded while the target %s is not a caught-up replica", c.TargetSite)
	}
	if !d.WriteFirst || d.Status.PlannedFailover == nil || d.Status.PlannedFailover.Phase != v1alpha1.PlannedFailoverFencing {
		fail("planned transition not recorded with the claim at Fencing, written first")
	}
	if want := in.Planned.OrderedUpdate; (d.Status.Transition.Kind == v1alpha1.TransitionOrderedUpdate) != want {
		fail("transition kind %s with orderedUpdate=%v", d.Status.Transition.Kind, want)
	}
}

// checkClaim: a claim only ends Succeeded once its target is the published
// active site, and any claim change is written first.
func checkClaim(in Input, d Decision, fail func(string, ...any)) {
	before, after := in.Status.PlannedFailover, d.Status.PlannedFailover
	if after == nil || reflect.DeepEqual(before, after) {
		return
	}
	if !d.WriteFirst {
		fail("claim moved %v -> %s without a write-first status", before, after.Phase)
	}
	if after.Phase == v1alpha1.PlannedFailoverSucceeded {
		if d.Status.ActiveSite != after.TargetSite || d.Status.Transition != nil {
			fail("claim Succeeded while %q is active (transition %+v)", d.Status.ActiveSite, d.Status.Transition)
		}
		if o := trusted(in, after.TargetSite); o == nil || !o.Writable {
			fail("claim Succeeded before its target was seen writable")
		}
	}
	if before != nil && before.Phase.IsTerminal() {
		fail("a finished claim moved again")
	}
}
