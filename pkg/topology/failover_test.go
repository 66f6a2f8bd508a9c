package topology

import (
	"strings"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/observe"
)

func TestFailoverDue(t *testing.T) {
	now := t0
	for _, c := range []struct {
		name string
		tr   FailoverTrigger
		due  bool
		why  string
	}{
		{"active reachable: nothing to do", FailoverTrigger{Now: now, ActiveReach: observe.Reachable}, false, ""},
		{"active suspect (below failureThreshold): not yet", FailoverTrigger{Now: now, ActiveReach: observe.Suspect}, false, ""},
		{"active unreachable, never failed over: due", FailoverTrigger{Now: now, ActiveReach: observe.Unreachable, Cooldown: 5 * time.Minute}, true, ""},
		{"inside the cooldown: refused", FailoverTrigger{Now: now, ActiveReach: observe.Unreachable, Cooldown: 5 * time.Minute, LastFailover: now.Add(-4 * time.Minute)}, false, "failoverCooldown"},
		{"cooldown passed: due", FailoverTrigger{Now: now, ActiveReach: observe.Unreachable, Cooldown: 5 * time.Minute, LastFailover: now.Add(-5 * time.Minute)}, true, ""},
		{"held: refused", FailoverTrigger{Now: now, ActiveReach: observe.Unreachable, Held: true}, false, "held"},
		{"a transition in flight: refused", FailoverTrigger{Now: now, ActiveReach: observe.Unreachable, InTransition: true}, false, "in flight"},
	} {
		t.Run(c.name, func(t *testing.T) {
			due, why := FailoverDue(c.tr)
			if due != c.due || !strings.Contains(why, c.why) || (c.why == "" && why != "") {
				t.Fatalf("FailoverDue = %v %q", due, why)
			}
		})
	}
}

func TestChooseFailoverCandidate(t *testing.T) {
	pc, dr := v1alpha1.SiteRolePrimaryCandidate, v1alpha1.SiteRoleDisasterRecovery
	// lag(n): a connected channel whose applier is n seconds behind what it
	// queued (the original commit times of both).
	lag := func(n int64) *LagEvidence {
		e := &LagEvidence{ObservedAt: t0, LastHeartbeat: t0, LastQueued: "q", LastQueuedCommit: t0, LastApplied: "a", LastAppliedCommit: t0.Add(-time.Duration(n) * time.Second)}
		if n == 0 {
			e.LastApplied = "q"
		}
		return e
	}
	cand := func(name string, role v1alpha1.SiteRole, executed, retrieved string, l *LagEvidence) FailoverCandidate {
		return FailoverCandidate{Name: name, Role: role, Trusted: true, Executed: set(expand(executed)), Retrieved: set(expand(retrieved)), Evidence: l, FromSource: true}
	}
	guards := FailoverGuards{MaxLagSeconds: 300, SeenOnSource: set(expand("I:1-10")), SourceUUID: uIAD, MaxMissing: 2, SourceAlive: t0, StaleAfter: 6 * time.Second}
	for _, c := range []struct {
		name    string
		cands   []FailoverCandidate
		g       func(FailoverGuards) FailoverGuards
		site    string
		refusal string
		mayLose string
	}{
		{name: "the most advanced wins over spec order",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-8", "", lag(0)), cand("sfo", pc, "I:1-10", "", lag(0))}, site: "sfo"},
		{name: "received but not applied counts",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-8", "", lag(0)), cand("sfo", pc, "I:1-5", "I:6-10", lag(0))}, site: "sfo"},
		{name: "equal: spec order",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-10", "", lag(0)), cand("sfo", pc, "I:1-10", "", lag(0))}, site: "pdx"},
		{name: "equal: sitePriorities before spec order",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-10", "", lag(0)), cand("sfo", pc, "I:1-10", "", lag(0))},
			g:     func(g FailoverGuards) FailoverGuards { g.Priorities = []string{"sfo", "pdx"}; return g }, site: "sfo"},
		{name: "priorities never beat a more advanced site",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-10", "", lag(0)), cand("sfo", pc, "I:1-9", "", lag(0))},
			g:     func(g FailoverGuards) FailoverGuards { g.Priorities = []string{"sfo"}; return g }, site: "pdx"},
		{name: "a DisasterRecovery site is never promoted, even when ahead",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-9", "", lag(0)), cand("dr", dr, "I:1-10", "", lag(0))}, site: "pdx", mayLose: "I:10"},
		{name: "an untrusted site is not considered",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-9", "", lag(0)), {Name: "sfo", Role: pc, Executed: set(expand("I:1-10"))}}, site: "pdx", mayLose: "I:10"},
		{name: "no reachable candidate",
			cands: []FailoverCandidate{cand("dr", dr, "I:1-10", "", lag(0))}, refusal: RefusalNoCandidate},
		{name: "incomparable candidates: refused",
			cands:   []FailoverCandidate{cand("pdx", pc, "I:1-9,P:1", "", lag(0)), cand("sfo", pc, "I:1-10,D:1", "", lag(0))},
			g:       func(g FailoverGuards) FailoverGuards { g.SeenOnSource = set(expand("I:1-10,P:1,D:1")); return g },
			refusal: RefusalIncomparableCandidates},
		{name: "best candidate lagging beyond maxLagSeconds: refused",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-5", "I:6-10", lag(900))}, refusal: RefusalCandidateLagging},
		{name: "an applier that applied everything it received is not behind, whatever its last commit times",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-10", "I:1-10", lag(900))}, site: "pdx"},
		{name: "lag unknown (no evidence): refused",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-10", "", nil)}, refusal: RefusalCandidateLagUnknown},
		{name: "a backlog whose applier applied nothing since start: unknown, refused",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-5", "I:6-10", &LagEvidence{ObservedAt: t0, LastHeartbeat: t0})}, refusal: RefusalCandidateLagUnknown},
		{name: "its channel last heard from the source long before the source was last seen alive: stale, refused",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-10", "", &LagEvidence{ObservedAt: t0, LastHeartbeat: t0.Add(-7 * time.Second)})}, refusal: RefusalCandidateLagStale},
		{name: "silent for less than the staleness bound: promoted",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-10", "", &LagEvidence{ObservedAt: t0, LastHeartbeat: t0.Add(-5 * time.Second)})}, site: "pdx"},
		{name: "a transaction queued recently counts as contact when heartbeats stopped under load",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-10", "", &LagEvidence{ObservedAt: t0, LastHeartbeat: t0.Add(-time.Minute), LastQueued: "q", LastQueuedAt: t0, LastApplied: "q"})}, site: "pdx"},
		{name: "evidence read longer ago than the staleness bound: stale, refused",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-10", "", lag(0))},
			g:     func(g FailoverGuards) FailoverGuards { g.Now = t0.Add(7 * time.Second); return g }, refusal: RefusalCandidateLagStale},
		{name: "lag unknown, but the override names it: promoted",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-10", "", nil)},
			g:     func(g FailoverGuards) FailoverGuards { g.Override = "pdx"; return g }, site: "pdx"},
		{name: "errant transactions exclude the most advanced candidate",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-10,P:1", "", lag(0)), cand("sfo", pc, "I:1-10", "", lag(0))}, site: "sfo"},
		{name: "the old primary's own transactions beyond its snapshot are not errant",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-12", "", lag(0)), cand("sfo", pc, "I:1-10", "", lag(0))}, site: "pdx"},
		{name: "what an excluded candidate holds of the old primary's counts as possibly lost",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-12,P:1", "", lag(0)), cand("sfo", pc, "I:1-10", "", lag(0))}, site: "sfo", mayLose: "I:11-12"},
		{name: "no clean candidate: refused",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-10,P:1", "", lag(0)), cand("sfo", pc, "I:1-10,D:1", "", lag(0))}, refusal: RefusalErrantCandidates},
		{name: "the override takes its site as it is, errant transactions included",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-10,P:1", "", lag(0)), cand("sfo", pc, "I:1-10,D:1", "", lag(0))},
			g:     func(g FailoverGuards) FailoverGuards { g.Override = "pdx"; return g }, site: "pdx"},
		{name: "lagging, but the override names it: promoted",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-5", "I:6-10", lag(900))},
			g:     func(g FailoverGuards) FailoverGuards { g.Override = "pdx"; return g }, site: "pdx"},
		{name: "lacking more than the bound of what the old primary committed: refused",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-7", "", lag(0))}, refusal: RefusalCandidateMissingTransactions, mayLose: "I:8-10"},
		{name: "lacking up to the bound: promoted, the loss is reported",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-8", "", lag(0))}, site: "pdx", mayLose: "I:9-10"},
		{name: "an override naming another site does not bypass the guards",
			cands: []FailoverCandidate{cand("pdx", pc, "I:1-7", "", lag(0)), cand("sfo", pc, "I:1-6", "", lag(0))},
			g:     func(g FailoverGuards) FailoverGuards { g.Override = "sfo"; return g }, refusal: RefusalCandidateMissingTransactions, mayLose: "I:8-10"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := guards
			if c.g != nil {
				g = c.g(g)
			}
			got := ChooseFailoverCandidate(c.cands, g)
			if got.Site != c.site || got.Refusal != c.refusal {
				t.Fatalf("choice %q refusal %q (%s), want %q %q", got.Site, got.Refusal, got.Message, c.site, c.refusal)
			}
			if !got.MayLose.Equal(set(expand(c.mayLose))) {
				t.Fatalf("mayLose %s, want %s", got.MayLose.OneLine(), c.mayLose)
			}
			if got.Message == "" {
				t.Fatal("no message")
			}
		})
	}
}
