package groupobjects

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

const (
	oldH = "old"
	newH = "new"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// site builds a SiteState of a PrimaryCandidate that replicates: the
// StatefulSet at stsHash (observed), the pod at podHash ("" = no pod),
// Ready for an hour or not Ready for a second.
func site(name, stsHash, podHash string, ready bool) SiteState {
	s := SiteState{
		Name: name, Role: v1alpha1.SiteRolePrimaryCandidate, DesiredHash: newH,
		StatefulSetExists: true, StatefulSetHash: stsHash, StatefulSetObserved: true,
		PodExists: podHash != "", PodHash: podHash, PodReady: ready,
		Replication: v1alpha1.ReplicationRunning,
	}
	if ready {
		s.PodReadySince = t0.Add(-time.Hour)
	} else {
		s.PodNotReadySince = t0.Add(-time.Second)
	}
	return s
}

func readyFor(s SiteState, d time.Duration) SiteState {
	s.PodReady, s.PodReadySince, s.PodNotReadySince = true, t0.Add(-d), time.Time{}
	return s
}

func notReadyFor(s SiteState, d time.Duration) SiteState {
	s.PodReady, s.PodReadySince, s.PodNotReadySince = false, time.Time{}, t0.Add(-d)
	return s
}

func with(s SiteState, f func(*SiteState)) SiteState { f(&s); return s }

func claim(phase v1alpha1.PlannedFailoverPhase, source, target string, completedAgo time.Duration) *v1alpha1.PlannedFailoverStatus {
	c := &v1alpha1.PlannedFailoverStatus{RunID: "run-1", SourceSite: source, TargetSite: target, Phase: phase}
	if phase.IsTerminal() {
		at := metav1.NewTime(t0.Add(-completedAgo))
		c.CompletionTime = &at
		c.Result = &v1alpha1.PlannedFailoverResult{Outcome: "RolledBack", Reason: "CatchUpTimedOut"}
		if phase == v1alpha1.PlannedFailoverSucceeded {
			c.Result = &v1alpha1.PlannedFailoverResult{Outcome: "Succeeded", Reason: "Completed"}
		}
	}
	return c
}

func ordered(active string, sites ...SiteState) RolloutInput {
	return RolloutInput{Strategy: v1alpha1.OrderedUpdate, Active: active, Now: t0, Sites: sites}
}

// The per-site actions.
func TestPlanRolloutSiteActions(t *testing.T) {
	recreate := func(in RolloutInput) RolloutInput { in.Strategy = v1alpha1.Recreate; return in }
	cases := []struct {
		name string
		in   RolloutInput
		want []SiteAction
	}{{
		name: "everything current: nothing to do",
		in:   ordered("iad", site("iad", newH, newH, true), site("pdx", newH, newH, true)),
		want: []SiteAction{{Name: "iad"}, {Name: "pdx"}},
	}, {
		name: "a missing StatefulSet is created even for the active site",
		in:   ordered("iad", SiteState{Name: "iad", DesiredHash: newH}, site("pdx", newH, newH, true)),
		want: []SiteAction{{Name: "iad", ApplyTemplate: true, Outdated: true}, {Name: "pdx"}},
	}, {
		name: "OrderedUpdate holds the active site and rolls one follower at a time",
		in:   ordered("iad", site("iad", oldH, oldH, true), site("pdx", oldH, oldH, true), site("reader", oldH, oldH, true)),
		want: []SiteAction{
			{Name: "iad", Held: true, Outdated: true},
			{Name: "pdx", ApplyTemplate: true, Outdated: true},
			{Name: "reader", Waiting: true, WaitingFor: "pdx", Outdated: true},
		},
	}, {
		name: "the follower's pod is deleted once the StatefulSet controller saw the new template",
		in:   ordered("iad", site("iad", oldH, oldH, true), site("pdx", newH, oldH, true), site("reader", oldH, oldH, true)),
		want: []SiteAction{
			{Name: "iad", Held: true, Outdated: true},
			{Name: "pdx", DeletePod: true, Outdated: true},
			{Name: "reader", Waiting: true, WaitingFor: "pdx", Outdated: true},
		},
	}, {
		name: "the next follower waits while the rolled one is back but not Ready",
		in:   ordered("iad", site("iad", oldH, oldH, true), site("pdx", newH, newH, false), site("reader", oldH, oldH, true)),
		want: []SiteAction{
			{Name: "iad", Held: true, Outdated: true},
			{Name: "pdx"},
			{Name: "reader", Waiting: true, WaitingFor: "pdx", Outdated: true},
		},
	}, {
		name: "the next follower waits while the rolled one has been Ready for 29s",
		in:   ordered("iad", site("iad", oldH, oldH, true), readyFor(site("pdx", newH, newH, true), 29*time.Second), site("reader", oldH, oldH, true)),
		want: []SiteAction{
			{Name: "iad", Held: true, Outdated: true},
			{Name: "pdx"},
			{Name: "reader", Waiting: true, WaitingFor: "pdx", Outdated: true},
		},
	}, {
		name: "the next follower goes once the rolled one has been Ready for 30s",
		in:   ordered("iad", site("iad", oldH, oldH, true), readyFor(site("pdx", newH, newH, true), 30*time.Second), site("reader", oldH, oldH, true)),
		want: []SiteAction{
			{Name: "iad", Held: true, Outdated: true},
			{Name: "pdx"},
			{Name: "reader", ApplyTemplate: true, Outdated: true},
		},
	}, {
		name: "a change of one follower rolls only that site",
		in:   ordered("iad", site("iad", newH, newH, true), site("pdx", oldH, oldH, true), site("reader", newH, newH, true)),
		want: []SiteAction{{Name: "iad"}, {Name: "pdx", ApplyTemplate: true, Outdated: true}, {Name: "reader"}},
	}, {
		name: "the active site missing from the input (not rendered): the followers still go one at a time",
		in:   ordered("iad", site("pdx", oldH, oldH, true), site("reader", oldH, oldH, true)),
		want: []SiteAction{
			{Name: "pdx", ApplyTemplate: true, Outdated: true},
			{Name: "reader", Waiting: true, WaitingFor: "pdx", Outdated: true},
		},
	}, {
		name: "no pod deletion while an active-site change is in flight",
		in: func() RolloutInput {
			in := ordered("iad", site("iad", oldH, oldH, true), site("pdx", newH, oldH, true))
			in.Transition = "t-1 (Automatic, iad to pdx)"
			return in
		}(),
		want: []SiteAction{
			{Name: "iad", Held: true, Outdated: true},
			{Name: "pdx", Waiting: true, WaitingFor: "the active-site change t-1 (Automatic, iad to pdx) is in flight", Outdated: true},
		},
	}, {
		name: "no pod deletion while a planned failover runs",
		in: func() RolloutInput {
			in := ordered("iad", site("iad", oldH, oldH, true), site("pdx", newH, oldH, true))
			in.Claim = claim(v1alpha1.PlannedFailoverCatchingUp, "iad", "pdx", 0)
			return in
		}(),
		want: []SiteAction{
			{Name: "iad", Held: true, Outdated: true},
			{Name: "pdx", Waiting: true, WaitingFor: "planned failover run-1 to site pdx is CatchingUp", Outdated: true},
		},
	}, {
		name: "after the handoff the former active site rolls as a follower",
		in: func() RolloutInput {
			in := ordered("pdx", site("iad", oldH, oldH, true), site("pdx", newH, newH, true))
			in.Phase, in.Claim = v1alpha1.UpdateHandingOff, claim(v1alpha1.PlannedFailoverSucceeded, "iad", "pdx", time.Second)
			return in
		}(),
		want: []SiteAction{{Name: "iad", ApplyTemplate: true, Outdated: true}, {Name: "pdx"}},
	}, {
		name: "no pod deletion before the StatefulSet controller observed the new spec",
		in: recreate(ordered("iad",
			SiteState{Name: "iad", DesiredHash: newH, StatefulSetExists: true, StatefulSetHash: newH, PodExists: true, PodHash: oldH},
			site("pdx", newH, newH, true))),
		want: []SiteAction{{Name: "iad", Outdated: true}, {Name: "pdx"}},
	}, {
		name: "Recreate rolls every site together, the active one included",
		in:   recreate(ordered("iad", site("iad", newH, oldH, true), site("pdx", newH, oldH, true), site("reader", oldH, oldH, false))),
		want: []SiteAction{
			{Name: "iad", DeletePod: true, Outdated: true},
			{Name: "pdx", DeletePod: true, Outdated: true},
			{Name: "reader", ApplyTemplate: true, Outdated: true},
		},
	}, {
		name: "Recreate deletes no pod while an active-site change is in flight; templates are still written",
		in: func() RolloutInput {
			in := recreate(ordered("iad", site("iad", newH, oldH, true), site("pdx", newH, oldH, true), site("reader", oldH, oldH, true)))
			in.Transition = "t-1 (Automatic, iad to pdx)"
			return in
		}(),
		want: []SiteAction{
			{Name: "iad", Waiting: true, WaitingFor: "the active-site change t-1 (Automatic, iad to pdx) is in flight", Outdated: true},
			{Name: "pdx", Waiting: true, WaitingFor: "the active-site change t-1 (Automatic, iad to pdx) is in flight", Outdated: true},
			{Name: "reader", ApplyTemplate: true, Outdated: true},
		},
	}, {
		name: "Recreate deletes no pod while a planned failover runs",
		in: func() RolloutInput {
			in := recreate(ordered("iad", site("iad", newH, oldH, true), site("pdx", newH, oldH, true)))
			in.Claim = claim(v1alpha1.PlannedFailoverDraining, "iad", "pdx", 0)
			return in
		}(),
		want: []SiteAction{
			{Name: "iad", Waiting: true, WaitingFor: "planned failover run-1 to site pdx is Draining", Outdated: true},
			{Name: "pdx", Waiting: true, WaitingFor: "planned failover run-1 to site pdx is Draining", Outdated: true},
		},
	}, {
		name: "a bootstrap in flight holds the pods too",
		in: func() RolloutInput {
			in := ordered("", site("iad", newH, oldH, false), site("pdx", newH, oldH, false))
			in.Transition = "t-0 (Bootstrap, to iad)"
			return in
		}(),
		want: []SiteAction{
			{Name: "iad", Waiting: true, WaitingFor: "the active-site change t-0 (Bootstrap, to iad) is in flight", Outdated: true},
			{Name: "pdx", Waiting: true, WaitingFor: "the active-site change t-0 (Bootstrap, to iad) is in flight", Outdated: true},
		},
	}, {
		name: "without an active site nothing serves: every site rolls",
		in:   ordered("", site("iad", oldH, oldH, false), site("pdx", newH, oldH, false)),
		want: []SiteAction{{Name: "iad", ApplyTemplate: true, Outdated: true}, {Name: "pdx", DeletePod: true, Outdated: true}},
	}, {
		name: "a pod already terminating is not deleted again",
		in:   recreate(ordered("iad", with(site("iad", newH, oldH, true), func(s *SiteState) { s.PodTerminating = true }))),
		want: []SiteAction{{Name: "iad", Outdated: true}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanRollout(tc.in)
			if !reflect.DeepEqual(got.Sites, tc.want) {
				t.Errorf("PlanRollout:\n got  %+v\n want %+v", got.Sites, tc.want)
			}
		})
	}
}

// The group-wide part: phase, stall, handoff, failure and when to look again.
func TestPlanRolloutOrderedUpdate(t *testing.T) {
	stale := func(n string) SiteState { return site(n, oldH, oldH, true) }
	fresh := func(n string) SiteState { return site(n, newH, newH, true) }
	reader := func(s SiteState) SiteState { s.Role = v1alpha1.SiteRoleReadOnly; return s }
	type want struct {
		phase    v1alpha1.UpdatePhase
		stall    string // site, "" for none
		stallHas []string
		handoff  *Handoff
		failure  *HandoffFailure
		requeue  time.Duration
		done     bool
		notesHas []string
	}
	cases := []struct {
		name string
		in   RolloutInput
		want want
	}{{
		name: "nothing to do: done, no phase",
		in:   ordered("iad", fresh("iad"), fresh("pdx")),
		want: want{done: true},
	}, {
		name: "a follower not Ready outside a rollout is not the rollout's business",
		in:   ordered("iad", fresh("iad"), notReadyFor(fresh("pdx"), time.Hour)),
		want: want{done: true},
	}, {
		name: "a template change starts with the followers",
		in:   ordered("iad", stale("iad"), stale("pdx"), stale("reader")),
		want: want{phase: v1alpha1.UpdateRollingFollowers, notesHas: []string{"site iad (active) is rolled after the primary role is handed"}},
	}, {
		name: "the rolled follower has been Ready 12s: wait 18s more",
		in:   ordered("iad", stale("iad"), readyFor(fresh("pdx"), 12*time.Second), stale("reader")),
		want: want{phase: v1alpha1.UpdateRollingFollowers, requeue: 18 * time.Second, notesHas: []string{"site pdx: Ready since 2026-11-30T09:59:48Z"}},
	}, {
		name: "the rolled follower not Ready for 29s is not stalled yet",
		in:   ordered("iad", stale("iad"), notReadyFor(fresh("pdx"), 29*time.Second), stale("reader")),
		want: want{phase: v1alpha1.UpdateRollingFollowers, requeue: time.Second},
	}, {
		name: "the rolled follower not Ready for 30s stalls the rollout",
		in:   ordered("iad", stale("iad"), notReadyFor(fresh("pdx"), 30*time.Second), stale("reader")),
		want: want{phase: v1alpha1.UpdateRollingFollowers, stall: "pdx", requeue: 30 * time.Second,
			stallHas: []string{"site pdx", "not been Ready since 2026-11-30T09:59:30Z (over 30s)", "the active site iad keeps serving"}},
	}, {
		name: "a crash-looping rolled follower stalls at once",
		in: ordered("iad", stale("iad"), with(notReadyFor(fresh("pdx"), 5*time.Second), func(s *SiteState) { s.PodRestarts = 3 }),
			stale("reader")),
		want: want{phase: v1alpha1.UpdateRollingFollowers, stall: "pdx", requeue: 30 * time.Second, stallHas: []string{"(under 30s) and its containers restarted 3 times"}},
	}, {
		name: "a pod that was Ready and flapped to not Ready 45s ago stalls",
		in:   ordered("iad", stale("iad"), fresh("reader"), notReadyFor(fresh("pdx"), 45*time.Second)),
		want: want{phase: v1alpha1.UpdateRollingFollowers, stall: "pdx", requeue: 30 * time.Second, stallHas: []string{"since 2026-11-30T09:59:15Z (over 30s)"}},
	}, {
		name: "a pod not yet recreated is waited for, not stalled",
		in:   ordered("iad", stale("iad"), site("pdx", newH, "", false)),
		want: want{phase: v1alpha1.UpdateRollingFollowers, notesHas: []string{"waiting for its pod to be recreated"}},
	}, {
		name: "followers stable: hand off to the first PrimaryCandidate in spec order",
		in:   ordered("iad", stale("iad"), reader(fresh("reader")), fresh("pdx"), fresh("sea")),
		want: want{phase: v1alpha1.UpdateHandingOff, handoff: &Handoff{Target: "pdx"}},
	}, {
		name: "sitePriorities choose the target, skipping the active site",
		in: func() RolloutInput {
			in := ordered("iad", stale("iad"), fresh("pdx"), fresh("sea"))
			in.SitePriorities = []string{"iad", "sea", "pdx"}
			return in
		}(),
		want: want{phase: v1alpha1.UpdateHandingOff, handoff: &Handoff{Target: "sea"}},
	}, {
		name: "a priority site that holds divergent transactions is passed over",
		in: func() RolloutInput {
			in := ordered("iad", stale("iad"), fresh("pdx"), with(fresh("sea"), func(s *SiteState) { s.DivergentGTID = "u:1-3" }))
			in.SitePriorities = []string{"sea"}
			return in
		}(),
		want: want{phase: v1alpha1.UpdateHandingOff, handoff: &Handoff{Target: "pdx"}},
	}, {
		name: "the only candidate holds divergent transactions: stalled, no handoff",
		in:   ordered("iad", stale("iad"), with(fresh("pdx"), func(s *SiteState) { s.DivergentGTID = "u:1-3" }), reader(fresh("reader"))),
		want: want{phase: v1alpha1.UpdateRollingFollowers, stall: "iad", requeue: 30 * time.Second,
			stallHas: []string{"pdx holds transactions the active site lacks (divergentGtid u:1-3", "reader is ReadOnly"}},
	}, {
		name: "a candidate in old-primary recovery or not replicating is refused",
		in: ordered("iad", stale("iad"), with(fresh("pdx"), func(s *SiteState) { s.RecoveryState = v1alpha1.RecoveryBlocked }),
			with(fresh("sea"), func(s *SiteState) { s.Replication = v1alpha1.ReplicationConnecting })),
		want: want{phase: v1alpha1.UpdateRollingFollowers, stall: "iad", requeue: 30 * time.Second,
			stallHas: []string{"pdx is in old-primary recovery (RecoveryBlocked)", "sea does not replicate (replication Connecting)"}},
	}, {
		name: "no handoff while the last follower has been Ready only 10s",
		in:   ordered("iad", stale("iad"), readyFor(fresh("pdx"), 10*time.Second)),
		want: want{phase: v1alpha1.UpdateRollingFollowers, requeue: 20 * time.Second},
	}, {
		name: "no handoff while an active-site change is in flight",
		in: func() RolloutInput {
			in := ordered("iad", stale("iad"), fresh("pdx"))
			in.Transition = "t-9 (Automatic)"
			return in
		}(),
		want: want{phase: v1alpha1.UpdateRollingFollowers, notesHas: []string{"t-9 (Automatic) is in flight"}},
	}, {
		name: "no handoff while someone else's planned failover runs",
		in: func() RolloutInput {
			in := ordered("iad", stale("iad"), fresh("pdx"))
			in.Claim = claim(v1alpha1.PlannedFailoverDeferred, "iad", "pdx", 0)
			return in
		}(),
		want: want{phase: v1alpha1.UpdateRollingFollowers, notesHas: []string{"the handoff waits: planned failover run-1 to site pdx is Deferred"}},
	}, {
		name: "our handoff in flight (deferred behind a hold): phase stays HandingOff",
		in: func() RolloutInput {
			in := ordered("iad", stale("iad"), fresh("pdx"))
			in.Phase, in.Claim = v1alpha1.UpdateHandingOff, claim(v1alpha1.PlannedFailoverDeferred, "iad", "pdx", 0)
			in.Claim.Admission = &v1alpha1.PlannedFailoverAdmission{Message: "held by operation op-7"}
			return in
		}(),
		want: want{phase: v1alpha1.UpdateHandingOff, notesHas: []string{"(held by operation op-7)"}},
	}, {
		name: "our handoff failed 10s ago: back to RollingFollowers, retry in 50s",
		in: func() RolloutInput {
			in := ordered("iad", stale("iad"), fresh("pdx"))
			in.Phase, in.Claim = v1alpha1.UpdateHandingOff, claim(v1alpha1.PlannedFailoverFailed, "iad", "pdx", 10*time.Second)
			return in
		}(),
		want: want{phase: v1alpha1.UpdateRollingFollowers, requeue: 50 * time.Second,
			failure: &HandoffFailure{RunID: "run-1", Target: "pdx", Outcome: "RolledBack", Reason: "CatchUpTimedOut", RetryAt: t0.Add(50 * time.Second)}},
	}, {
		name: "a failed handoff is not retried 59s after it ended",
		in: func() RolloutInput {
			in := ordered("iad", stale("iad"), fresh("pdx"))
			in.Phase, in.Claim = v1alpha1.UpdateRollingFollowers, claim(v1alpha1.PlannedFailoverFailed, "iad", "pdx", 59*time.Second)
			return in
		}(),
		want: want{phase: v1alpha1.UpdateRollingFollowers, requeue: time.Second},
	}, {
		name: "a failed handoff is retried a minute after it ended",
		in: func() RolloutInput {
			in := ordered("iad", stale("iad"), fresh("pdx"))
			in.Phase, in.Claim = v1alpha1.UpdateRollingFollowers, claim(v1alpha1.PlannedFailoverFailed, "iad", "pdx", time.Minute)
			return in
		}(),
		want: want{phase: v1alpha1.UpdateHandingOff, handoff: &Handoff{Target: "pdx", Retry: true, PreviousRun: "run-1"}},
	}, {
		name: "a claim that succeeded without moving the active site counts as failed",
		in: func() RolloutInput {
			in := ordered("iad", stale("iad"), fresh("pdx"))
			in.Phase, in.Claim = v1alpha1.UpdateHandingOff, claim(v1alpha1.PlannedFailoverSucceeded, "iad", "pdx", time.Second)
			return in
		}(),
		want: want{phase: v1alpha1.UpdateRollingFollowers, requeue: 59 * time.Second,
			failure: &HandoffFailure{RunID: "run-1", Target: "pdx", Outcome: "Succeeded", Reason: "Completed", RetryAt: t0.Add(59 * time.Second)}},
	}, {
		name: "our claim vanished: the failure is reported and the handoff restarts",
		in: func() RolloutInput {
			in := ordered("iad", stale("iad"), fresh("pdx"))
			in.Phase = v1alpha1.UpdateHandingOff
			return in
		}(),
		want: want{phase: v1alpha1.UpdateHandingOff, handoff: &Handoff{Target: "pdx"}, failure: &HandoffFailure{}},
	}, {
		name: "a run that published the target but ended promoted-unconfirmed: reported, no retry, the former primary rolls",
		in: func() RolloutInput {
			in := ordered("pdx", stale("iad"), fresh("pdx"))
			in.Phase, in.Claim = v1alpha1.UpdateHandingOff, claim(v1alpha1.PlannedFailoverFailed, "iad", "pdx", time.Second)
			in.Claim.Result = &v1alpha1.PlannedFailoverResult{Outcome: "PromotedUnconfirmed", Reason: "PromotionFailed"}
			return in
		}(),
		want: want{phase: v1alpha1.UpdateRollingFollowers,
			failure: &HandoffFailure{RunID: "run-1", Target: "pdx", Outcome: "PromotedUnconfirmed", Reason: "PromotionFailed", Moved: true}},
	}, {
		name: "our handoff published the target and is confirming it: still HandingOff, nothing deleted",
		in: func() RolloutInput {
			in := ordered("pdx", site("iad", newH, oldH, true), fresh("pdx"))
			in.Phase, in.Claim = v1alpha1.UpdateHandingOff, claim(v1alpha1.PlannedFailoverPublishing, "iad", "pdx", 0)
			return in
		}(),
		want: want{phase: v1alpha1.UpdateHandingOff, notesHas: []string{"pod to be recreated"}},
	}, {
		name: "handed over: the former active site rolls",
		in: func() RolloutInput {
			in := ordered("pdx", stale("iad"), fresh("pdx"))
			in.Phase, in.Claim = v1alpha1.UpdateHandingOff, claim(v1alpha1.PlannedFailoverSucceeded, "iad", "pdx", time.Second)
			return in
		}(),
		want: want{phase: v1alpha1.UpdateRollingFormerPrimary},
	}, {
		name: "a planned failover by annotation during the update: the former primary rolls as a follower",
		in: func() RolloutInput {
			in := ordered("pdx", stale("iad"), fresh("pdx"), stale("reader"))
			in.Phase, in.Claim = v1alpha1.UpdateRollingFollowers, claim(v1alpha1.PlannedFailoverSucceeded, "iad", "pdx", time.Second)
			return in
		}(),
		want: want{phase: v1alpha1.UpdateRollingFollowers},
	}, {
		name: "the former active site has been Ready 10s: still RollingFormerPrimary",
		in: func() RolloutInput {
			in := ordered("pdx", readyFor(fresh("iad"), 10*time.Second), fresh("pdx"))
			in.Phase, in.Claim = v1alpha1.UpdateRollingFormerPrimary, claim(v1alpha1.PlannedFailoverSucceeded, "iad", "pdx", time.Minute)
			return in
		}(),
		want: want{phase: v1alpha1.UpdateRollingFormerPrimary, requeue: 20 * time.Second},
	}, {
		name: "the former active site stalls like a follower",
		in: func() RolloutInput {
			in := ordered("pdx", notReadyFor(fresh("iad"), time.Minute), fresh("pdx"))
			in.Phase, in.Claim = v1alpha1.UpdateRollingFormerPrimary, claim(v1alpha1.PlannedFailoverSucceeded, "iad", "pdx", time.Minute)
			return in
		}(),
		want: want{phase: v1alpha1.UpdateRollingFormerPrimary, stall: "iad", requeue: 30 * time.Second,
			stallHas: []string{"(over 1m)", "the active site pdx keeps serving"}},
	}, {
		name: "the former active site stable: the update is done",
		in: func() RolloutInput {
			in := ordered("pdx", readyFor(fresh("iad"), 30*time.Second), fresh("pdx"))
			in.Phase, in.Claim = v1alpha1.UpdateRollingFormerPrimary, claim(v1alpha1.PlannedFailoverSucceeded, "iad", "pdx", time.Minute)
			return in
		}(),
		want: want{done: true},
	}, {
		name: "a stall's duration is coarse: minutes once past one",
		in:   ordered("iad", stale("iad"), notReadyFor(fresh("pdx"), 2*time.Hour+3*time.Minute+20*time.Second)),
		want: want{phase: v1alpha1.UpdateRollingFollowers, stall: "pdx", requeue: 30 * time.Second, stallHas: []string{"(over 2h3m)"}},
	}, {
		name: "incomplete input: no handoff, the stored phase stays",
		in: func() RolloutInput {
			in := ordered("iad", stale("iad"), fresh("pdx"))
			in.Phase, in.Incomplete = v1alpha1.UpdateRollingFollowers, true
			return in
		}(),
		want: want{phase: v1alpha1.UpdateRollingFollowers, notesHas: []string{"could not be rendered or observed"}},
	}, {
		name: "incomplete input: a handoff in flight is not judged failed",
		in: func() RolloutInput {
			in := ordered("iad", stale("iad"), fresh("pdx"))
			in.Phase, in.Incomplete = v1alpha1.UpdateHandingOff, true
			return in
		}(),
		want: want{phase: v1alpha1.UpdateHandingOff},
	}, {
		name: "Recreate never sets a phase",
		in: func() RolloutInput {
			in := ordered("iad", stale("iad"), stale("pdx"))
			in.Strategy = v1alpha1.Recreate
			return in
		}(),
		want: want{},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanRollout(tc.in)
			w := tc.want
			if got.Phase != w.phase {
				t.Errorf("phase %q, want %q", got.Phase, w.phase)
			}
			switch {
			case w.stall == "" && got.Stall != nil:
				t.Errorf("stalled: %+v", got.Stall)
			case w.stall != "" && (got.Stall == nil || got.Stall.Site != w.stall):
				t.Errorf("stall %+v, want one at site %s", got.Stall, w.stall)
			}
			for _, s := range w.stallHas {
				if got.Stall == nil || !strings.Contains(got.Stall.Message, s) {
					t.Errorf("stall message %+v lacks %q", got.Stall, s)
				}
			}
			if !reflect.DeepEqual(got.Handoff, w.handoff) {
				t.Errorf("handoff %+v, want %+v", got.Handoff, w.handoff)
			}
			if !reflect.DeepEqual(got.Failure, w.failure) {
				t.Errorf("failure %+v, want %+v", got.Failure, w.failure)
			}
			if got.RequeueAfter != w.requeue {
				t.Errorf("requeue after %s, want %s", got.RequeueAfter, w.requeue)
			}
			if got.Done() != w.done && tc.in.Strategy == v1alpha1.OrderedUpdate {
				t.Errorf("done %v, want %v (notes %q)", got.Done(), w.done, got.Notes)
			}
			notes := strings.Join(got.Notes, " | ")
			for _, n := range w.notesHas {
				if !strings.Contains(notes, n) {
					t.Errorf("notes %q lack %q", notes, n)
				}
			}
		})
	}
}

// Randomized invariants of OrderedUpdate with an active site: the active
// site's existing StatefulSet and pod are never touched; at most one
// follower is being rolled at any time; nothing is deleted while an
// active-site change or a planned failover is in flight; a handoff starts
// only when every follower is stable and nothing else runs, and only to an
// eligible PrimaryCandidate.
func TestPlanRolloutOrderedInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	hashes := []string{oldH, newH}
	names := []string{"a", "b", "c", "d"}
	roles := []v1alpha1.SiteRole{v1alpha1.SiteRolePrimaryCandidate, v1alpha1.SiteRolePrimaryCandidate, v1alpha1.SiteRoleReadOnly, ""}
	phases := []v1alpha1.PlannedFailoverPhase{v1alpha1.PlannedFailoverAdmitting, v1alpha1.PlannedFailoverDeferred,
		v1alpha1.PlannedFailoverFencing, v1alpha1.PlannedFailoverSucceeded, v1alpha1.PlannedFailoverFailed}
	updatePhases := []v1alpha1.UpdatePhase{"", v1alpha1.UpdateRollingFollowers, v1alpha1.UpdateHandingOff, v1alpha1.UpdateRollingFormerPrimary}
	for iter := 0; iter < 20000; iter++ {
		in := RolloutInput{Strategy: v1alpha1.OrderedUpdate, Now: t0, Phase: updatePhases[r.IntN(4)]}
		for _, n := range names {
			s := SiteState{Name: n, Role: roles[r.IntN(4)], DesiredHash: newH, StatefulSetExists: r.IntN(8) != 0,
				StatefulSetObserved: r.IntN(2) == 0, PodExists: r.IntN(4) != 0, PodReady: r.IntN(2) == 0, PodTerminating: r.IntN(6) == 0,
				PodReadySince: t0.Add(-time.Duration(r.IntN(60)) * time.Second), PodNotReadySince: t0.Add(-time.Duration(r.IntN(60)) * time.Second),
				PodRestarts: int32(r.IntN(3) / 2), Replication: v1alpha1.ReplicationRunning}
			if s.StatefulSetExists {
				s.StatefulSetHash = hashes[r.IntN(2)]
			}
			if s.PodExists {
				s.PodHash = hashes[r.IntN(2)]
			}
			if r.IntN(5) == 0 {
				s.DivergentGTID = "u:1"
			}
			if r.IntN(5) == 0 {
				s.Replication = v1alpha1.ReplicationError
			}
			in.Sites = append(in.Sites, s)
		}
		in.Active = names[r.IntN(len(names))]
		if r.IntN(6) == 0 {
			in.Transition = "t"
		}
		if r.IntN(2) == 0 {
			in.Claim = claim(phases[r.IntN(len(phases))], names[r.IntN(4)], names[r.IntN(4)], time.Duration(r.IntN(120))*time.Second)
		}
		plan := PlanRollout(in)
		busy := in.Transition != "" || (in.Claim != nil && !in.Claim.Phase.IsTerminal())
		rolling := 0
		for i, a := range plan.Sites {
			s := in.Sites[i]
			if a.Name == in.Active && s.StatefulSetExists && (a.ApplyTemplate || a.DeletePod) {
				t.Fatalf("iteration %d: the active site %s was touched: %+v from %+v", iter, in.Active, a, s)
			}
			if a.Name != in.Active && s.StatefulSetExists && (a.ApplyTemplate || a.DeletePod || inFlightFollower(s)) {
				rolling++
			}
			if a.DeletePod && (!s.PodExists || s.PodHash == newH || s.StatefulSetHash != newH || !s.StatefulSetObserved || s.PodTerminating) {
				t.Fatalf("iteration %d: pod of %s deleted without cause: %+v", iter, a.Name, s)
			}
			if a.DeletePod && busy {
				t.Fatalf("iteration %d: pod of %s deleted while a change is in flight", iter, a.Name)
			}
		}
		inflightBefore := 0
		for _, s := range in.Sites {
			if s.Name != in.Active && inFlightFollower(s) {
				inflightBefore++
			}
		}
		if inflightBefore == 0 && rolling > 1 {
			t.Fatalf("iteration %d: %d followers rolled at once: %+v", iter, rolling, plan.Sites)
		}
		if inflightBefore > 0 && rolling > inflightBefore {
			t.Fatalf("iteration %d: a new follower started while %d were in flight: %+v", iter, inflightBefore, plan.Sites)
		}
		if h := plan.Handoff; h != nil {
			checkHandoff(t, iter, in, *h, busy)
		}
	}
}

// inFlightFollower: the StatefulSet carries the new template but its pod is
// not yet a pod of that template Ready for 30s.
func inFlightFollower(s SiteState) bool {
	if !s.StatefulSetExists || s.StatefulSetHash != s.DesiredHash {
		return false
	}
	return !s.PodExists || s.PodHash != s.DesiredHash || !s.PodReady || s.PodTerminating || t0.Sub(s.PodReadySince) < 30*time.Second
}

func checkHandoff(t *testing.T, iter int, in RolloutInput, h Handoff, busy bool) {
	t.Helper()
	if busy {
		t.Fatalf("iteration %d: handoff started while a change is in flight", iter)
	}
	if c := in.Claim; c != nil && c.Phase == v1alpha1.PlannedFailoverFailed && t0.Sub(c.CompletionTime.Time) < time.Minute {
		t.Fatalf("iteration %d: handoff retried %s after a failure", iter, t0.Sub(c.CompletionTime.Time))
	}
	for _, s := range in.Sites {
		if s.Name == in.Active {
			continue
		}
		updated := s.StatefulSetExists && s.StatefulSetHash == newH && s.PodExists && s.PodHash == newH && !s.PodTerminating
		if !updated || inFlightFollower(s) {
			t.Fatalf("iteration %d: handoff with follower %s not stable: %+v", iter, s.Name, s)
		}
		if s.Name == h.Target && (s.DivergentGTID != "" || s.Replication != v1alpha1.ReplicationRunning ||
			(s.Role != "" && s.Role != v1alpha1.SiteRolePrimaryCandidate)) {
			t.Fatalf("iteration %d: handoff to ineligible %+v", iter, s)
		}
	}
}
