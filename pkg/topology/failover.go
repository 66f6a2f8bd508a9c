package topology

import (
	"fmt"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// Automatic failover, decision part: when a failover is due and which
// candidate may be promoted (docs/topology.md, Automatic failover; the rules
// they keep are invariant 3 of docs/safety.md). The step machine that
// fences, waits, promotes and publishes is in failover_steps.go.

// FailoverTrigger is what FailoverDue needs.
type FailoverTrigger struct {
	Now time.Time
	// ActiveReach is the active site's reachability (failureThreshold
	// already applied by package observe).
	ActiveReach observe.Reachability
	// LastFailover is status.lastFailover.time; zero when there was none.
	LastFailover time.Time
	// Cooldown is spec.failoverCooldown.
	Cooldown time.Duration
	// Held: status.automaticFailoverHold is set.
	Held bool
	// InTransition: status.transition is set (another change is in flight).
	InTransition bool
}

// FailoverDue reports whether an automatic failover should start now, and
// if not, why (empty when the active site is fine).
func FailoverDue(t FailoverTrigger) (bool, string) {
	switch {
	case t.ActiveReach != observe.Unreachable:
		return false, ""
	case t.InTransition:
		return false, "a transition is already in flight"
	case t.Held:
		return false, "automatic failover is held (status.automaticFailoverHold)"
	case !t.LastFailover.IsZero() && t.Now.Sub(t.LastFailover) < t.Cooldown:
		return false, fmt.Sprintf("failoverCooldown %s has not passed since the last failover at %s (until %s)",
			t.Cooldown, t.LastFailover.UTC().Format(time.RFC3339), t.LastFailover.Add(t.Cooldown).UTC().Format(time.RFC3339))
	}
	return true, ""
}

// FailoverCandidate is one site considered for promotion.
type FailoverCandidate struct {
	Name string
	Role v1alpha1.SiteRole
	// Trusted: Reachable with a current observation.
	Trusted bool
	// Executed and Retrieved are the site's gtid_executed and
	// Retrieved_Gtid_Set; it is ranked by their union (what it has or can
	// apply before promotion).
	Executed, Retrieved gtid.Set
	// FromSource: its channel replicates from the old primary, so what it
	// retrieved came from there.
	FromSource bool
	// Recorded is the divergence status.sites[].divergentGtid records for it.
	Recorded gtid.Set
	// Evidence is its channel's lag evidence from the same poll; nil unknown.
	Evidence *LagEvidence
}

// FailoverGuards bound what an automatic promotion may lose.
type FailoverGuards struct {
	// MaxLagSeconds is spec.replication.maxLagSeconds: a best candidate that
	// lagged more (judgeLag) is not promoted automatically.
	MaxLagSeconds int64
	// SeenOnSource is the old primary's last known gtid_executed (the
	// operator's last good poll, else status): transactions the operator
	// saw committed there.
	SeenOnSource gtid.Set
	// SourceUUID is the old primary's server_uuid ("" unknown): candidates
	// legitimately hold its transactions beyond SeenOnSource.
	SourceUUID string
	// SourceAlive is the latest moment the old primary is known to have been
	// alive (judgeLag); zero unknown.
	SourceAlive time.Time
	// StaleAfter bounds how long before SourceAlive the candidate's channel
	// may have last heard from the source, and how old the evidence's read
	// may be at Now (StaleEvidencePolls pollIntervals).
	StaleAfter time.Duration
	// Now is the decision's time.
	Now time.Time
	// MaxMissing is how many of those the best candidate may lack and still
	// be promoted automatically.
	MaxMissing uint64
	// Priorities is spec.splitBrainPolicy.sitePriorities.
	Priorities []string
	// Override names a site a human chose to promote despite the lag and
	// loss guards and its own errant transactions (never despite
	// incomparable sets or a non-candidate role).
	Override string
}

// FailoverChoice is ChooseFailoverCandidate's verdict.
type FailoverChoice struct {
	// Site to promote; empty when refused.
	Site string
	// Refusal is a CamelCase cause when refused: NoCandidate,
	// ErrantCandidates, IncomparableCandidates, CandidateLagUnknown,
	// CandidateLagStale, CandidateLagging, CandidateMissingTransactions.
	Refusal string
	// Message explains the choice or the refusal.
	Message string
	// MayLose is what the operator saw committed on the old primary, or on
	// a candidate excluded for errant transactions, that the chosen site
	// does not have (received or applied).
	MayLose gtid.Set
	// Held is the chosen site's gtid_executed ∪ Retrieved_Gtid_Set: what it
	// holds at the choice (status.transition.candidateGtidSet).
	Held gtid.Set
}

// Failover refusal causes.
const (
	RefusalNoCandidate                  = "NoCandidate"
	RefusalErrantCandidates             = "ErrantCandidates"
	RefusalIncomparableCandidates       = "IncomparableCandidates"
	RefusalCandidateLagUnknown          = "CandidateLagUnknown"
	RefusalCandidateLagStale            = "CandidateLagStale"
	RefusalCandidateLagging             = "CandidateLagging"
	RefusalCandidateMissingTransactions = "CandidateMissingTransactions"
)

// errant is what a candidate holds that the old primary lacks: its
// recorded divergence and what it holds beyond the primary's last known
// set, except the primary's own transactions (it created them after that
// snapshot, and the most advanced candidate received them) and what it
// retrieved from the primary itself.
func errant(c FailoverCandidate, g FailoverGuards) gtid.Set {
	extra := Divergent(c.Executed.Union(c.Retrieved), g.SeenOnSource, g.SourceUUID)
	if c.FromSource {
		extra = extra.Subtract(c.Retrieved)
	}
	return extra.Union(c.Recorded.Subtract(g.SeenOnSource))
}

// ChooseFailoverCandidate ranks the trusted PrimaryCandidate sites (never
// DisasterRecovery or readers) that hold nothing the old primary lacks
// (errant; a site named by the override is taken as it is) by
// gtid_executed ∪ Retrieved_Gtid_Set: the one whose set contains every
// other's wins; ties go to the first in sitePriorities, then in spec order.
// No clean candidate and incomparable candidates are refused. The winner is
// then refused if its lag is unknown, its knowledge of the source stale, it
// lagged beyond MaxLagSeconds (judgeLag), or it lacks more than MaxMissing
// of the transactions seen on the old primary or on an excluded candidate,
// unless a human named it in Override.
func ChooseFailoverCandidate(cands []FailoverCandidate, g FailoverGuards) FailoverChoice {
	var pool []FailoverCandidate
	var excluded []string
	var legit gtid.Set // what excluded candidates hold that the primary had
	for _, c := range cands {
		if !c.Trusted || c.Role != v1alpha1.SiteRolePrimaryCandidate {
			continue
		}
		if e := errant(c, g); !e.IsEmpty() && g.Override != c.Name {
			excluded = append(excluded, fmt.Sprintf("%s holds %s the old primary lacks", c.Name, GTIDPhrase(e.OneLine())))
			legit = legit.Union(rank(c).Subtract(e))
			continue
		}
		pool = append(pool, c)
	}
	switch {
	case len(pool) == 0 && len(excluded) > 0:
		return FailoverChoice{Refusal: RefusalErrantCandidates, Message: fmt.Sprintf(
			"every reachable PrimaryCandidate holds transactions the old primary lacks (%s): none is promoted automatically, so no errant set spreads to every site", strings.Join(excluded, "; "))}
	case len(pool) == 0:
		return FailoverChoice{Refusal: RefusalNoCandidate, Message: "no reachable PrimaryCandidate site"}
	}
	var all gtid.Set
	for _, c := range pool {
		all = all.Union(rank(c))
	}
	var best []FailoverCandidate
	for _, c := range pool {
		if all.IsSubsetOf(rank(c)) {
			best = append(best, c)
		}
	}
	if len(best) == 0 {
		var parts []string
		for _, c := range pool {
			parts = append(parts, fmt.Sprintf("%s has %s", c.Name, GTIDPhrase(rank(c).OneLine())))
		}
		return FailoverChoice{Refusal: RefusalIncomparableCandidates, Message: fmt.Sprintf(
			"no candidate holds every other candidate's transactions (%s): none is promoted automatically", strings.Join(parts, "; "))}
	}
	w := byPriority(best, g.Priorities)
	lose := g.SeenOnSource.Union(legit).Subtract(rank(w))
	msg := fmt.Sprintf("site %s is the most advanced reachable candidate", w.Name)
	if len(excluded) > 0 {
		msg += fmt.Sprintf(" without errant transactions (excluded: %s)", strings.Join(excluded, "; "))
	}
	if g.Override == w.Name {
		return FailoverChoice{Site: w.Name, MayLose: lose, Held: rank(w), Message: msg + " (promotion forced by the override)"}
	}
	if refusal, why := judgeLag(w, g); refusal != "" {
		return FailoverChoice{Refusal: refusal, MayLose: lose, Message: fmt.Sprintf(
			"the most advanced candidate %s is not promoted automatically: %s", w.Name, why)}
	}
	if lose.Count() > g.MaxMissing {
		return FailoverChoice{Refusal: RefusalCandidateMissingTransactions, MayLose: lose, Message: fmt.Sprintf(
			"the most advanced candidate %s lacks %d transactions seen committed on the old primary or on an excluded candidate (%s; bound %d): not promoted automatically",
			w.Name, lose.Count(), GTIDPhrase(lose.OneLine()), g.MaxMissing)}
	}
	return FailoverChoice{Site: w.Name, MayLose: lose, Held: rank(w), Message: msg}
}

func rank(c FailoverCandidate) gtid.Set { return c.Executed.Union(c.Retrieved) }

// byPriority picks the first of equally advanced candidates by
// sitePriorities, then spec order (the order of cs).
func byPriority(cs []FailoverCandidate, priorities []string) FailoverCandidate {
	for _, p := range priorities {
		for _, c := range cs {
			if c.Name == p {
				return c
			}
		}
	}
	return cs[0]
}
