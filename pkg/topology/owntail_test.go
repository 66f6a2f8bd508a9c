package topology

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// refusedByIAD is a replica's channel to iad after iad came back without
// the tail the replica holds: MySQL's "replica has more" (13114).
func refusedByIAD() *Replica {
	r := replicating(iadHost)
	r.IORunning, r.LastIOErrno, r.ReadError, r.SecondsBehindSource = "No", ErrnoSourcePurged, ReadErrorReplicaHasMore, nil
	r.LastIOError = "Got fatal error 1236 from source when reading data from binary log: 'Replica has more GTIDs than the source has, using the source's SERVER_UUID. ...'"
	return r
}

// lostTail: iad restarted fenced with I:1-95 while pdx holds I:1-100.
func lostTail() map[string]SiteInput {
	obs := steadyObs()
	obs["iad"] = site("iad", false, "I:1-95", nil)
	obs["pdx"] = site("pdx", false, "I:1-100", refusedByIAD())
	obs["dr"] = site("dr", false, "I:1-98", refusedByIAD())
	obs["reader"] = site("reader", false, "I:1-95", replicating(iadHost))
	return withEvidence(obs)
}

func made(d Decision, kind ActionKind, site string) bool {
	for _, a := range d.Actions {
		if a.Kind == kind && a.Site == site {
			return true
		}
	}
	return false
}

func eventWith(d Decision, reason string, parts ...string) bool {
	for _, e := range d.Events {
		if e.Reason != reason || !e.Warning {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(e.Message, p)
		}
		if ok {
			return true
		}
	}
	return false
}

func TestActiveSiteThatLostItsOwnTailIsNeverReasserted(t *testing.T) {
	cases := []struct {
		name     string
		obs      func() map[string]SiteInput
		sites    []SiteSpec
		settings func(*Input)
		// target "" = no failover recorded, then blocked says whether the
		// group must be Degraded with the own-tail reason.
		target  string
		blocked bool
		// reassert: the active site is made writable again (it lost nothing).
		reassert bool
		why      string // in the Degraded message when blocked
	}{
		{name: "a candidate holds the tail: failed over to the one holding the most", obs: lostTail, target: "pdx"},
		{name: "what a candidate received counts as held", obs: func() map[string]SiteInput {
			obs := lostTail()
			r := refusedByIAD()
			r.Retrieved = set(expand("I:1-100"))
			pdx := site("pdx", false, "I:1-95", r)
			// A backlog of 5 transactions committed within a second.
			pdx.Evidence = &LagEvidence{ObservedAt: t0, LastHeartbeat: t0, LastQueued: expand("I:100"), LastQueuedAt: t0,
				LastQueuedCommit: t0, LastApplied: expand("I:95"), LastAppliedCommit: t0.Add(-time.Second)}
			obs["pdx"] = pdx
			obs["dr"] = site("dr", false, "I:1-95", replicating(iadHost))
			return withEvidence(obs)
		}, target: "pdx"},
		{name: "tagged GTIDs of its own UUID count too", obs: func() map[string]SiteInput {
			obs := lostTail()
			obs["iad"] = site("iad", false, "I:1-100", nil)
			obs["pdx"] = site("pdx", false, "I:1-100,"+uIAD+":batch:1-3", refusedByIAD())
			obs["dr"] = site("dr", false, "I:1-100", replicating(iadHost))
			return withEvidence(obs)
		}, target: "pdx"},
		{name: "only a site that may not be promoted holds all of it: blocked, naming the range", obs: func() map[string]SiteInput {
			obs := lostTail()
			obs["pdx"] = site("pdx", false, "I:1-97", refusedByIAD())
			obs["dr"] = site("dr", false, "I:1-100", refusedByIAD()) // DisasterRecovery in fourSites
			return withEvidence(obs)
		}, sites: fourSites, blocked: true, why: RefusalCandidateMissingTransactions},
		{name: "automatic failover disabled: blocked", obs: lostTail, settings: func(in *Input) { in.Failover.Enabled = false },
			blocked: true, why: "disabled"},
		{name: "inside the cooldown: blocked until it passed", obs: lostTail, settings: func(in *Input) {
			in.Status.LastFailover = &v1alpha1.LastFailover{Time: metav1.NewTime(t0.Add(-time.Minute)), Source: "dr", Target: "iad", Kind: v1alpha1.TransitionAutomatic}
		}, blocked: true, why: "failoverCooldown"},
		{name: "automatic failover held: blocked", obs: lostTail, settings: func(in *Input) {
			in.Status.AutomaticFailoverHold = &v1alpha1.AutomaticFailoverHold{Reason: "Manual", Since: metav1.NewTime(t0)}
		}, blocked: true, why: "held"},
		{name: "a candidate without lag evidence: blocked, the lag guard holds", obs: func() map[string]SiteInput {
			obs := lostTail()
			for _, n := range []string{"pdx", "dr"} {
				si := obs[n]
				si.Evidence = &LagEvidence{ObservedAt: t0}
				obs[n] = si
			}
			return obs
		}, blocked: true, why: RefusalCandidateLagUnknown},
		{name: "a writable active site's own GTIDs on a follower are just newer than its poll", obs: func() map[string]SiteInput {
			obs := lostTail()
			obs["iad"] = site("iad", true, "I:1-95", nil)
			obs["pdx"] = site("pdx", false, "I:1-100", replicating(iadHost))
			obs["dr"] = site("dr", false, "I:1-98", replicating(iadHost))
			return withEvidence(obs)
		}},
		{name: "fenced active holding everything its followers hold: reasserted", obs: func() map[string]SiteInput {
			obs := steadyObs()
			obs["iad"] = site("iad", false, "I:1-100", nil)
			obs["pdx"] = site("pdx", false, "I:1-100", replicating(iadHost))
			return withEvidence(obs)
		}, reassert: true},
		{name: "an untrusted follower's tail is not judged (nothing decided on it), and the active is not reasserted on a trusted one's", obs: func() map[string]SiteInput {
			obs := lostTail()
			si := obs["pdx"]
			si.Reach = observe.Unobserved // not trusted yet
			obs["pdx"] = si
			return obs
		}, sites: fourSites, blocked: true, why: RefusalNoCandidate},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := failoverInput(c.obs(), active(3, "iad"))
			in.Sites = threeCandidates()
			if c.sites != nil {
				in.Sites = c.sites
			}
			if c.settings != nil {
				c.settings(&in)
			}
			d := Decide(in)
			if got := made(d, MakeWritable, "iad"); got != c.reassert {
				t.Fatalf("iad made writable: %v, want %v (actions %v, Degraded %+v)", got, c.reassert, actions(d), cond(d, v1alpha1.ConditionDegraded))
			}
			for _, a := range d.Actions {
				if a.Kind == Clone {
					t.Fatalf("a clone in this decision: %v", actions(d))
				}
			}
			tr := d.Status.Transition
			switch {
			case c.target != "":
				if tr == nil || tr.Kind != v1alpha1.TransitionAutomatic || tr.SourceSite != "iad" || tr.TargetSite != c.target || !d.WriteFirst {
					t.Fatalf("transition %+v (write first %v), want a failover iad -> %s; Degraded %+v", tr, d.WriteFirst, c.target, cond(d, v1alpha1.ConditionDegraded))
				}
				if !eventWith(d, v1alpha1.EventFailoverStarted, "iad", "own server UUID") {
					t.Fatalf("events %+v", d.Events)
				}
			case tr != nil:
				t.Fatalf("transition %+v recorded", tr)
			}
			g := cond(d, v1alpha1.ConditionDegraded)
			if got := g.Reason == v1alpha1.ReasonActiveSiteLostOwnTransactions; got != c.blocked {
				t.Fatalf("Degraded %+v, want the own-tail reason: %v", g, c.blocked)
			}
			if !c.blocked {
				return
			}
			if !strings.Contains(g.Message, "site iad came back") || !strings.Contains(g.Message, c.why) {
				t.Fatalf("Degraded message %q does not name iad and %q", g.Message, c.why)
			}
			if !eventWith(d, v1alpha1.EventActiveSiteLostOwnTransactions, "site iad came back", "missing "+expand("I:")) {
				t.Fatalf("events %+v", d.Events)
			}
			// Held on every later poll, with one Event.
			in.Status = d.Status
			again := Decide(in)
			if made(again, MakeWritable, "iad") || again.Status.Transition != nil || hasEvent(again, v1alpha1.EventActiveSiteLostOwnTransactions, true) {
				t.Fatalf("the next decision: actions %v, transition %+v, events %+v", actions(again), again.Status.Transition, again.Events)
			}
		})
	}
}

// TestOwnTailFailoverRunsToPromotion: the recorded failover goes on as an
// automatic one whose old primary answers fenced: no self-fence wait, the
// candidate caught up, promoted, and the old primary rejoins under it.
func TestOwnTailFailoverRunsToPromotion(t *testing.T) {
	obs := lostTail()
	in := failoverInput(obs, active(3, "iad"))
	in.Sites = threeCandidates()
	d := Decide(in)
	if d.Status.Transition == nil {
		t.Fatalf("no failover: %+v", cond(d, v1alpha1.ConditionDegraded))
	}
	steps := []string{}
	for i := 0; i < 6 && d.Status.ActiveSite == "iad"; i++ {
		in.Status = d.Status
		in.Now = in.Now.Add(2 * time.Second)
		d = Decide(in)
		if made(d, MakeWritable, "iad") {
			t.Fatalf("iad made writable at step %d: %v", i, actions(d))
		}
		if tr := d.Status.Transition; tr != nil {
			steps = append(steps, string(tr.Step))
		}
		if made(d, MakeWritable, "pdx") {
			o := obs["pdx"]
			o.Last = site("pdx", true, "I:1-100", nil).Last
			obs["pdx"] = o
		}
	}
	if d.Status.ActiveSite != "pdx" || d.Status.TopologyGeneration != 4 {
		t.Fatalf("after steps %v: active %q generation %d, Degraded %+v", steps, d.Status.ActiveSite, d.Status.TopologyGeneration, cond(d, v1alpha1.ConditionDegraded))
	}
	if lf := d.Status.LastFailover; lf == nil || lf.Source != "iad" || lf.PossiblyLostGTID != "" {
		t.Fatalf("lastFailover %+v", lf)
	}
	// The old primary holds nothing pdx lacks: it is repointed to pdx.
	if !made(d, Repoint, "iad") {
		t.Fatalf("old primary not repointed: %v", actions(d))
	}
}

func TestReplicaHoldingMoreThanItsSourceIsNeverCloned(t *testing.T) {
	cases := []struct {
		name    string
		pdx     SiteInput
		iad     SiteInput
		clone   bool
		blocked bool
	}{
		// The source issued the lost GTIDs again: the sets are equal, only
		// MySQL's refusal tells.
		{name: "refused as holding more by a writable source that reissued its GTIDs", pdx: site("pdx", false, "I:1-100", refusedByIAD()),
			iad: purged(site("iad", true, "I:1-100", nil), "I:1-100"), blocked: true},
		{name: "refused as holding more, the source's logs purged too", pdx: site("pdx", false, "I:1-90", refusedByIAD()),
			iad: purged(site("iad", true, "I:1-100", nil), "I:1-95"), blocked: true},
		{name: "refused before the fenced active site got the tail back: started again", pdx: site("pdx", false, "I:1-100", refusedByIAD()),
			iad: site("iad", false, "I:1-100", nil)},
		{name: "another fatal read error is not taken for purged", pdx: func() SiteInput {
			r := replicating(iadHost)
			r.IORunning, r.LastIOErrno, r.ReadError = "No", ErrnoSourcePurged, ReadErrorOther
			return site("pdx", false, "I:1-100", r)
		}(), iad: site("iad", true, "I:1-100", nil)},
		{name: "purged, by MySQL's word: cloned", pdx: func() SiteInput {
			r := replicating(iadHost)
			r.IORunning, r.LastIOErrno, r.ReadError = "No", ErrnoSourcePurged, ReadErrorPurged
			return site("pdx", false, "I:1-100", r)
		}(), iad: site("iad", true, "I:1-100", nil), clone: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs := steadyObs()
			obs["iad"], obs["pdx"] = c.iad, c.pdx
			d := Decide(newInput(obs, active(3, "iad")))
			if got := made(d, Clone, "pdx"); got != c.clone {
				t.Fatalf("clone of pdx: %v, want %v (actions %v)", got, c.clone, actions(d))
			}
			st := siteStatus(d, "pdx")
			g := cond(d, v1alpha1.ConditionDegraded)
			if !c.blocked {
				if g.Reason == v1alpha1.ReasonActiveSiteLostOwnTransactions || !c.clone && !made(d, StartReplica, "pdx") {
					t.Fatalf("Degraded %+v, actions %v", g, actions(d))
				}
				return
			}
			if st.SourceConvergenceState != "Blocked" || made(d, StartReplica, "pdx") || g.Reason != v1alpha1.ReasonActiveSiteLostOwnTransactions ||
				!strings.Contains(st.Message, "not cloned") || !eventWith(d, v1alpha1.EventCloneRefusedReplicaHasMore, "site pdx", "iad") {
				t.Fatalf("pdx %s/%s %q, actions %v, Degraded %+v, events %+v", st.SourceConvergenceState, st.SourceConvergenceReason, st.Message, actions(d), g, d.Events)
			}
		})
	}
}
