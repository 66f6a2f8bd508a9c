package topology

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/observe"
	"github.com/shipstream/bloodraven/pkg/stability"
)

var pdxHost = "orders-pdx-internal.shop.svc"

func failoverInput(obs map[string]SiteInput, st v1alpha1.MysqlFailoverGroupStatus) Input {
	in := newInput(obs, st)
	in.Failover = FailoverSettings{Enabled: true, Cooldown: 5 * time.Minute, SelfFenceBound: 20 * time.Second, MaxMissing: 0, PollInterval: 2 * time.Second}
	return in
}

// connected is lag evidence of a channel that heard from its source at t0
// and applied everything it queued.
func connected() *LagEvidence {
	return &LagEvidence{ObservedAt: t0, LastHeartbeat: t0}
}

// withEvidence gives every replicating site of obs that has none the
// evidence of a connected channel.
func withEvidence(obs map[string]SiteInput) map[string]SiteInput {
	for n, si := range obs {
		if si.Last != nil && si.Last.Replica != nil && si.Evidence == nil {
			si.Evidence = connected()
			obs[n] = si
		}
	}
	return obs
}

// iadDown: the active site iad stopped answering after its last poll at t0.
func iadDown() map[string]SiteInput {
	obs := steadyObs()
	obs["iad"] = SiteInput{Reach: observe.Unreachable, PollError: "connection refused", Last: site("iad", true, "I:1-10", nil).Last, SidecarSeen: true}
	return withEvidence(obs)
}

func inFailover(step v1alpha1.TransitionStep) v1alpha1.MysqlFailoverGroupStatus {
	st := active(3, "iad")
	dl := v1alpha1.NewPreciseTime(t0.Add(20 * time.Second))
	st.Transition = &v1alpha1.Transition{ID: "f1", Kind: v1alpha1.TransitionAutomatic, SourceSite: "iad", TargetSite: "pdx",
		TopologyGeneration: 4, Step: step, StartTime: metav1.NewTime(t0), SourceFenceDeadline: &dl}
	return st
}

func TestFailoverStart(t *testing.T) {
	// The intent carries no self-fence deadline: the operator's
	// /active-site confirms iad until the intent reaches its cache, however
	// long the write takes, so the deadline cannot be known yet.
	d := Decide(failoverInput(iadDown(), active(3, "iad")))
	tr := d.Status.Transition
	if tr == nil || tr.Kind != v1alpha1.TransitionAutomatic || tr.SourceSite != "iad" || tr.TargetSite != "pdx" || tr.TopologyGeneration != 4 ||
		tr.Step != v1alpha1.StepRecorded || !d.WriteFirst || tr.SourceFenceDeadline != nil {
		t.Fatalf("transition %+v", tr)
	}
	// Only the sidecars are told (after the intent is written); nothing is
	// fenced or promoted yet.
	if strings.Join(actions(d), ",") != "NotifySidecars " || d.Status.ActiveSite != "iad" || d.Status.TopologyGeneration != 3 {
		t.Fatalf("intent recorded and acted on at once: %v %+v", actions(d), d.Status)
	}
	if !hasEvent(d, v1alpha1.EventFailoverStarted, true) {
		t.Fatalf("events %+v", d.Events)
	}

	t.Run("mysqld unreachable but its sidecar reports it healthy: a network problem, not failed over", func(t *testing.T) {
		obs := iadDown()
		iad := obs["iad"]
		iad.SidecarHealthy = true
		obs["iad"] = iad
		d := Decide(failoverInput(obs, active(3, "iad")))
		if d.Status.Transition != nil || len(d.Actions) != 0 {
			t.Fatalf("failed over a site its sidecar reports healthy: %+v %v", d.Status.Transition, actions(d))
		}
		if g := cond(d, v1alpha1.ConditionDegraded); g.Reason != v1alpha1.ReasonFailoverRefused || !strings.Contains(g.Message, "sidecar") {
			t.Fatalf("Degraded %+v", g)
		}
		if m := siteStatus(d, "iad").Message; !strings.Contains(m, "network problem") {
			t.Fatalf("site message %q", m)
		}
	})
	t.Run("inside the cooldown: refused, Degraded says why", func(t *testing.T) {
		st := active(3, "iad")
		st.LastFailover = &v1alpha1.LastFailover{Time: metav1.NewTime(t0.Add(-time.Minute)), Target: "iad"}
		d := Decide(failoverInput(iadDown(), st))
		if d.Status.Transition != nil {
			t.Fatal("failover inside the cooldown")
		}
		if g := cond(d, v1alpha1.ConditionDegraded); g.Reason != v1alpha1.ReasonFailoverRefused || !strings.Contains(g.Message, "failoverCooldown") {
			t.Fatalf("Degraded %+v", g)
		}
		if !hasEvent(d, v1alpha1.EventFailoverRefused, true) {
			t.Fatalf("events %+v", d.Events)
		}
	})
	t.Run("candidate lagging: refused; the override promotes it", func(t *testing.T) {
		// Its applier is 900 s behind what it received (the original commit
		// times of the last queued and the last applied transaction).
		obs := iadDown()
		r := replicating(iadHost)
		r.Retrieved = set(expand("I:1-10"))
		obs["pdx"] = site("pdx", false, "I:1-4", r)
		obs["pdx"] = SiteInput{Reach: obs["pdx"].Reach, Fresh: true, Last: obs["pdx"].Last, Evidence: &LagEvidence{ObservedAt: t0, LastHeartbeat: t0,
			LastQueued: expand("I:10"), LastQueuedAt: t0, LastQueuedCommit: t0, LastApplied: expand("I:4"), LastAppliedCommit: t0.Add(-900 * time.Second)}}
		obs["dr"] = unreachable()
		d := Decide(failoverInput(obs, active(3, "iad")))
		if d.Status.Transition != nil || !strings.Contains(cond(d, v1alpha1.ConditionDegraded).Message, "far behind") {
			t.Fatalf("transition %+v, Degraded %+v", d.Status.Transition, cond(d, v1alpha1.ConditionDegraded))
		}
		in := failoverInput(obs, active(3, "iad"))
		in.Failover.Override = "pdx"
		if d := Decide(in); d.Status.Transition == nil || d.Status.Transition.TargetSite != "pdx" {
			t.Fatalf("override ignored: %+v", d.Status.Transition)
		}
	})
	t.Run("a channel silent long before the old primary was last seen: stale, refused", func(t *testing.T) {
		obs := iadDown() // iad last polled at t0
		obs["dr"] = unreachable()
		si := obs["pdx"]
		si.Evidence = &LagEvidence{ObservedAt: t0, LastHeartbeat: t0.Add(-900 * time.Second)}
		obs["pdx"] = si
		d := Decide(failoverInput(obs, active(3, "iad")))
		if d.Status.Transition != nil || !strings.Contains(cond(d, v1alpha1.ConditionDegraded).Message, "stale") {
			t.Fatalf("a candidate that stopped hearing from the primary 900s before it died was promoted: %+v %+v", d.Status.Transition, cond(d, v1alpha1.ConditionDegraded))
		}
	})
	t.Run("active only suspect: no failover yet", func(t *testing.T) {
		obs := steadyObs()
		obs["iad"] = SiteInput{Reach: observe.Suspect, Last: obs["iad"].Last}
		if d := Decide(failoverInput(obs, active(3, "iad"))); d.Status.Transition != nil {
			t.Fatal("failover before failureThreshold")
		}
	})
}

func TestFailoverSteps(t *testing.T) {
	t.Run("the pass that finds the intent in its input starts the self-fence wait from its own time", func(t *testing.T) {
		st := inFailover(v1alpha1.StepRecorded)
		st.Transition.SourceFenceDeadline = nil
		in := failoverInput(iadDown(), st)
		in.Now = t0.Add(7 * time.Second) // the intent took long to reach the cache
		d := Decide(in)
		tr := d.Status.Transition
		if tr == nil || tr.Step != v1alpha1.StepAwaitingSelfFence || !d.WriteFirst || tr.SourceFenceDeadline == nil ||
			!tr.SourceFenceDeadline.Time.Equal(t0.Add(27*time.Second)) {
			t.Fatalf("transition %+v", tr)
		}
		if strings.Join(actions(d), ",") != "NotifySidecars " {
			t.Fatalf("actions %v: nothing but the announcement before the deadline", actions(d))
		}
		// Written again (a failed write, a restarted operator): the deadline
		// never moves earlier than the pass that records it.
		in.Now = t0.Add(9 * time.Second)
		if d := Decide(in); !d.Status.Transition.SourceFenceDeadline.Time.Equal(t0.Add(29 * time.Second)) {
			t.Fatalf("deadline %v", d.Status.Transition.SourceFenceDeadline)
		}
		// The deadline is stored to the microsecond: not rounded to a whole
		// second, and rounded up, never down, below a microsecond.
		in.Now = t0.Add(9*time.Second + 300*time.Millisecond + 500*time.Nanosecond)
		want := t0.Add(29*time.Second + 300*time.Millisecond + time.Microsecond)
		if d := Decide(in); !d.Status.Transition.SourceFenceDeadline.Time.Equal(want) {
			t.Fatalf("deadline %v, want %v", d.Status.Transition.SourceFenceDeadline, want)
		}
	})
	t.Run("an intent the cache sidecars are answered from does not hold yet starts no wait", func(t *testing.T) {
		st := inFailover(v1alpha1.StepRecorded)
		st.Transition.SourceFenceDeadline = nil
		in := failoverInput(iadDown(), st)
		in.TransitionUnserved = true // the pass decides on its own last write
		d := Decide(in)
		if tr := d.Status.Transition; tr == nil || tr.Step != v1alpha1.StepRecorded || tr.SourceFenceDeadline != nil || d.WriteFirst {
			t.Fatalf("transition %+v, writeFirst %v: a deadline before /active-site stops confirming the old primary", tr, d.WriteFirst)
		}
		in.TransitionUnserved = false
		if tr := Decide(in).Status.Transition; tr == nil || tr.SourceFenceDeadline == nil {
			t.Fatalf("transition %+v: once served, the wait starts", tr)
		}
	})
	t.Run("an old primary seen fenced needs no deadline", func(t *testing.T) {
		st := inFailover(v1alpha1.StepRecorded)
		st.Transition.SourceFenceDeadline = nil
		obs := iadDown()
		obs["iad"] = site("iad", false, "I:1-10", nil)
		d := Decide(failoverInput(obs, st))
		if tr := d.Status.Transition; tr == nil || tr.Step != v1alpha1.StepCatchingUp || tr.SourceFenceDeadline != nil {
			t.Fatalf("transition %+v", tr)
		}
	})
	t.Run("before the self-fence deadline: wait", func(t *testing.T) {
		d := Decide(failoverInput(iadDown(), inFailover(v1alpha1.StepAwaitingSelfFence)))
		if strings.Join(actions(d), ",") != "NotifySidecars " || d.WriteFirst {
			t.Fatalf("actions %v", actions(d))
		}
	})
	t.Run("after the deadline: CatchingUp recorded, catch-up started", func(t *testing.T) {
		in := failoverInput(iadDown(), inFailover(v1alpha1.StepAwaitingSelfFence))
		in.Now = t0.Add(21 * time.Second)
		d := Decide(in)
		if d.Status.Transition.Step != v1alpha1.StepCatchingUp || !d.WriteFirst || strings.Join(actions(d), ",") != "NotifySidecars ,CatchUp pdx" {
			t.Fatalf("step %s actions %v", d.Status.Transition.Step, actions(d))
		}
	})
	t.Run("old primary back and writable: fenced first, no progress", func(t *testing.T) {
		obs := iadDown()
		obs["iad"] = site("iad", true, "I:1-10", nil)
		in := failoverInput(obs, inFailover(v1alpha1.StepAwaitingSelfFence))
		in.Now = t0.Add(time.Minute)
		d := Decide(in)
		if strings.Join(actions(d), ",") != "Fence iad" || d.WriteFirst {
			t.Fatalf("actions %v", actions(d))
		}
	})
	t.Run("old primary back and fenced: no need to wait for the deadline", func(t *testing.T) {
		obs := iadDown()
		obs["iad"] = site("iad", false, "I:1-10", nil)
		d := Decide(failoverInput(obs, inFailover(v1alpha1.StepAwaitingSelfFence)))
		if d.Status.Transition.Step != v1alpha1.StepCatchingUp {
			t.Fatalf("step %s", d.Status.Transition.Step)
		}
	})
	t.Run("received but not applied: keep catching up, no promotion", func(t *testing.T) {
		obs := iadDown()
		r := replicating(iadHost)
		r.IORunning, r.Retrieved = "No", set(expand("I:1-12"))
		obs["pdx"] = site("pdx", false, "I:1-10", r)
		in := failoverInput(obs, inFailover(v1alpha1.StepCatchingUp))
		in.Now = t0.Add(time.Minute)
		d := Decide(in)
		if strings.Join(actions(d), ",") != "CatchUp pdx" || d.Status.Transition.Step != v1alpha1.StepCatchingUp {
			t.Fatalf("actions %v step %s", actions(d), d.Status.Transition.Step)
		}
	})
	t.Run("caught up: Promoting and lastFailover recorded, then made writable", func(t *testing.T) {
		obs := iadDown()
		obs["iad"].Last.Executed = set(expand("I:1-12"))
		r := replicating(iadHost)
		r.IORunning, r.Retrieved = "No", set(expand("I:1-11"))
		obs["pdx"] = site("pdx", false, "I:1-11", r)
		in := failoverInput(obs, inFailover(v1alpha1.StepCatchingUp))
		in.Now = t0.Add(time.Minute)
		d := Decide(in)
		// The other followers of iad stop receiving from it: should it come
		// back before they are repointed, they must not fetch its writes.
		if d.Status.Transition.Step != v1alpha1.StepPromoting || !d.WriteFirst || strings.Join(actions(d), ",") != "MakeWritable pdx,StopReceiver dr,StopReceiver reader" || !d.Actions[0].ResetReplication {
			t.Fatalf("step %s actions %+v", d.Status.Transition.Step, d.Actions)
		}
		lf := d.Status.LastFailover
		if lf == nil || lf.Target != "pdx" || lf.Source != "iad" || lf.PromotionGTIDExecuted != expand("I:1-11") || lf.PossiblyLostGTID != expand("I:12") {
			t.Fatalf("lastFailover %+v", lf)
		}
	})
	t.Run("promoted and writable: published in one write, followers repointed", func(t *testing.T) {
		obs := iadDown()
		obs["pdx"] = site("pdx", true, "I:1-11", nil)
		st := inFailover(v1alpha1.StepPromoting)
		st.LastFailover = &v1alpha1.LastFailover{Time: metav1.NewTime(t0), Target: "pdx", Source: "iad", PromotionGTIDExecuted: expand("I:1-11"), PossiblyLostGTID: expand("I:12")}
		in := failoverInput(obs, st)
		in.Now = t0.Add(time.Minute)
		d := Decide(in)
		if d.Status.ActiveSite != "pdx" || d.Status.TopologyGeneration != 4 || d.Status.Transition != nil || !d.WriteFirst {
			t.Fatalf("status %+v", d.Status)
		}
		if lf := d.Status.LastFailover; lf.PromotionGTIDExecuted != expand("I:1-11") || !lf.Time.Time.Equal(in.Now) {
			t.Fatalf("lastFailover %+v", lf)
		}
		if got := strings.Join(actions(d), ","); got != "StopReceiver dr,StopReceiver reader,Repoint dr,Repoint reader" {
			t.Fatalf("actions %s", got)
		}
		for _, a := range d.Actions {
			if a.Kind == Repoint && a.SourceHost != pdxHost {
				t.Fatalf("repointed to %s", a.SourceHost)
			}
		}
		if !hasEvent(d, v1alpha1.EventFailoverSucceeded, false) || !hasEvent(d, v1alpha1.EventTransactionsPossiblyLost, true) {
			t.Fatalf("events %+v", d.Events)
		}
	})
	t.Run("candidate lost before promotion: aborted", func(t *testing.T) {
		obs := iadDown()
		obs["pdx"] = unreachable()
		d := Decide(failoverInput(obs, inFailover(v1alpha1.StepCatchingUp)))
		if d.Status.Transition != nil || !d.WriteFirst || d.Status.TopologyGeneration != 3 || !hasEvent(d, v1alpha1.EventFailoverAborted, true) {
			t.Fatalf("status %+v", d.Status)
		}
	})
	t.Run("candidate lost after promotion: never abandoned", func(t *testing.T) {
		obs := iadDown()
		obs["pdx"] = unreachable()
		d := Decide(failoverInput(obs, inFailover(v1alpha1.StepPromoting)))
		if d.Status.Transition == nil || d.WriteFirst || len(d.Actions) != 0 {
			t.Fatalf("status %+v actions %v", d.Status, actions(d))
		}
	})
}

func TestFailoverDisabled(t *testing.T) {
	in := failoverInput(iadDown(), active(3, "iad"))
	in.Failover.Enabled = false
	d := Decide(in)
	if d.Status.Transition != nil || len(d.Actions) != 0 {
		t.Fatalf("failover while disabled: %+v %v", d.Status.Transition, actions(d))
	}
	if g := cond(d, v1alpha1.ConditionDegraded); g.Reason != v1alpha1.ReasonSiteUnhealthy {
		t.Fatalf("Degraded %+v", g)
	}
}

func TestDrainFormerPrimary(t *testing.T) {
	obs := steadyObs()
	obs["pdx"] = site("pdx", true, "I:1-10", nil)
	obs["iad"] = site("iad", false, "I:1-10", replicating(pdxHost))
	st := active(4, "pdx")
	st.LastFailover = &v1alpha1.LastFailover{Time: metav1.NewTime(t0), Target: "pdx", Source: "iad"}
	in := failoverInput(obs, st)
	in.Failover.DrainTimeout = 30 * time.Second
	in.Now = t0.Add(10 * time.Second)
	if got := strings.Join(actions(Decide(in)), ","); !strings.Contains(got, "EvictSessions iad") {
		t.Fatalf("inside the drain window: %s", got)
	}
	in.Now = t0.Add(31 * time.Second)
	if got := strings.Join(actions(Decide(in)), ","); strings.Contains(got, "EvictSessions") {
		t.Fatalf("after the drain window: %s", got)
	}
	// A former primary back writable is fenced first, drained on a later poll.
	in.Now = t0.Add(10 * time.Second)
	in.Observed["iad"] = site("iad", true, "I:1-10", nil)
	if got := strings.Join(actions(Decide(in)), ","); !strings.HasPrefix(got, "Fence iad") || strings.Contains(got, "EvictSessions") {
		t.Fatalf("writable former primary: %s", got)
	}
}

// The former primary returns with transactions the new active site lacks
// (writes it took after the operator lost it): it is not repointed, its
// recovery is Blocked and the group unstable until a human acts.
func TestReturningOldPrimaryWithLostWrites(t *testing.T) {
	obs := steadyObs()
	obs["pdx"] = site("pdx", true, "I:1-10", nil)
	obs["iad"] = site("iad", false, "I:1-12", nil)
	obs["dr"] = site("dr", false, "I:1-10", replicating(pdxHost))
	obs["reader"] = site("reader", false, "I:1-10", replicating(pdxHost))
	st := active(4, "pdx")
	st.LastFailover = &v1alpha1.LastFailover{Time: metav1.NewTime(t0.Add(-time.Hour)), Target: "pdx", Source: "iad"}
	d := Decide(failoverInput(obs, st))
	iad := siteStatus(d, "iad")
	if iad.RecoveryState != v1alpha1.RecoveryBlocked || iad.DivergenceDetectedBy != v1alpha1.DivergenceByOldPrimaryRecovery ||
		iad.DivergentGTID != expand("I:11-12") || iad.SourceConvergenceReason != "GTIDDiverged" {
		t.Fatalf("iad %+v", iad)
	}
	for _, a := range d.Actions {
		if a.Site == "iad" && a.Kind != EvictSessions {
			t.Fatalf("acted on the old primary: %v", actions(d))
		}
	}
	if c := cond(d, v1alpha1.ConditionRecoveryPending); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonDivergentTransactions {
		t.Fatalf("RecoveryPending %+v", c)
	}
	if g := cond(d, v1alpha1.ConditionDegraded); g.Reason != v1alpha1.ReasonDivergentTransactions || !strings.Contains(g.Message, "iad") {
		t.Fatalf("Degraded %+v", g)
	}
	group := &v1alpha1.MysqlFailoverGroup{Status: d.Status}
	for _, s := range fourSites {
		group.Spec.Sites = append(group.Spec.Sites, v1alpha1.SiteSpec{Name: s.Name, Role: s.Role})
	}
	if v := stability.Evaluate(group); v.Stable || v.Reason != stability.RecoveryPending {
		t.Fatalf("deployment API stability %+v, want unstable RecoveryPending", v)
	}
	// Recloned by a human: the record clears, recovery is over.
	obs["iad"] = site("iad", false, "I:1-10", replicating(pdxHost))
	healed := Decide(failoverInput(obs, d.Status))
	if s := siteStatus(healed, "iad"); s.RecoveryState != "" || s.DivergentGTID != "" {
		t.Fatalf("iad after reclone %+v", s)
	}
	if c := cond(healed, v1alpha1.ConditionRecoveryPending); c.Status != metav1.ConditionFalse || !hasEvent(healed, v1alpha1.EventOldPrimaryRecovered, false) {
		t.Fatalf("RecoveryPending %+v events %+v", c, healed.Events)
	}
}

// The old primary answers again before the promotion, fenced by its sidecar,
// holding writes the candidate never received: the failover is abandoned
// (nothing is promoted) and the old primary stays the active site; with
// nothing the candidate lacks, the failover goes on.
func TestFailoverAbandonedWhenTheOldPrimaryReturnsWithMore(t *testing.T) {
	for _, step := range []v1alpha1.TransitionStep{v1alpha1.StepAwaitingSelfFence, v1alpha1.StepCatchingUp} {
		t.Run(string(step), func(t *testing.T) {
			obs := steadyObs()
			obs["iad"] = site("iad", false, "I:1-25", nil) // back, read-only, 15 more writes
			obs["pdx"] = site("pdx", false, "I:1-10", replicating(iadHost))
			d := Decide(failoverInput(obs, inFailover(step)))
			if d.Status.Transition != nil || !d.WriteFirst || d.Status.ActiveSite != "iad" || d.Status.TopologyGeneration != 3 {
				t.Fatalf("transition %+v active %s gen %d", d.Status.Transition, d.Status.ActiveSite, d.Status.TopologyGeneration)
			}
			for _, a := range d.Actions {
				if a.Kind == MakeWritable {
					t.Fatalf("made %s writable while abandoning", a.Site)
				}
			}
			if !hasEvent(d, v1alpha1.EventFailoverAborted, true) {
				t.Fatalf("events %+v", d.Events)
			}
			// The next decision reasserts the old primary.
			again := Decide(failoverInput(obs, d.Status))
			if got := strings.Join(actions(again), ","); !strings.Contains(got, "MakeWritable iad") {
				t.Fatalf("next decision: %s", got)
			}
		})
	}
	t.Run("answering again but not trusted yet: its answer still stops the promotion", func(t *testing.T) {
		obs := steadyObs()
		back := site("iad", true, "I:1-25", nil)
		back.Reach = observe.Unreachable // one good poll after failureThreshold failures
		obs["iad"] = back
		r := replicating(iadHost)
		r.IORunning = "No"
		obs["pdx"] = site("pdx", false, "I:1-10", r)
		in := failoverInput(obs, inFailover(v1alpha1.StepCatchingUp))
		in.Now = t0.Add(time.Minute)
		d := Decide(in)
		if d.Status.Transition != nil || len(d.Actions) != 0 {
			t.Fatalf("transition %+v actions %v", d.Status.Transition, actions(d))
		}
	})
	t.Run("another candidate overtook the chosen one: chosen again", func(t *testing.T) {
		obs := iadDown()
		r := replicating(iadHost)
		r.IORunning = "No"
		obs["pdx"] = site("pdx", false, "I:1-10", r)
		more := replicating(iadHost)
		more.Retrieved = set(expand("I:1-14"))
		sites := append([]SiteSpec{}, fourSites...)
		sites[2].Role = v1alpha1.SiteRolePrimaryCandidate // dr takes part
		obs["dr"] = site("dr", false, "I:1-12", more)
		drIn := obs["dr"]
		drIn.Evidence = &LagEvidence{ObservedAt: t0.Add(time.Minute), LastHeartbeat: t0, LastQueued: expand("I:14"), LastQueuedAt: t0, LastQueuedCommit: t0,
			LastApplied: expand("I:12"), LastAppliedCommit: t0.Add(-time.Second)}
		obs["dr"] = drIn
		in := failoverInput(obs, inFailover(v1alpha1.StepCatchingUp))
		in.Sites = sites
		in.Now = t0.Add(time.Minute)
		d := Decide(in)
		if d.Status.Transition != nil || !hasEvent(d, v1alpha1.EventFailoverAborted, true) {
			t.Fatalf("transition %+v events %+v", d.Status.Transition, d.Events)
		}
		in = failoverInput(withEvidence(obs), d.Status)
		in.Sites = sites
		in.Now = t0.Add(time.Minute + time.Second)
		again := Decide(in)
		if tr := again.Status.Transition; tr == nil || tr.TargetSite != "dr" {
			t.Fatalf("chosen again: %+v %+v", tr, cond(again, v1alpha1.ConditionDegraded))
		}
	})
	t.Run("nothing the candidate lacks: the failover goes on", func(t *testing.T) {
		obs := steadyObs()
		obs["iad"] = site("iad", false, "I:1-10", nil)
		r := replicating(iadHost)
		r.IORunning = "No"
		obs["pdx"] = site("pdx", false, "I:1-10", r)
		d := Decide(failoverInput(obs, inFailover(v1alpha1.StepCatchingUp)))
		if d.Status.Transition == nil || d.Status.Transition.Step != v1alpha1.StepPromoting || !strings.Contains(strings.Join(actions(d), ","), "MakeWritable pdx") {
			t.Fatalf("transition %+v actions %v", d.Status.Transition, actions(d))
		}
	})
}
