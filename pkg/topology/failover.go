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
	// LagSeconds is Seconds_Behind_Source at its last good poll; nil unknown.
	LagSeconds *int64
}

// FailoverGuards bound what an automatic promotion may lose.
type FailoverGuards struct {
	// MaxLagSeconds is spec.replication.maxLagSeconds: a best candidate that
	// lagged more at its last good poll is not promoted automatically.
	MaxLagSeconds int64
	// SeenOnSource is the old primary's gtid_executed at its last good poll:
	// transactions the operator saw committed there.
	SeenOnSource gtid.Set
	// MaxMissing is how many of those the best candidate may lack and still
	// be promoted automatically.
	MaxMissing uint64
	// Priorities is spec.splitBrainPolicy.sitePriorities.
	Priorities []string
	// Override names a site a human chose to promote despite the lag and
	// loss guards (never despite incomparable sets or a non-candidate role).
	Override string
}

// FailoverChoice is ChooseFailoverCandidate's verdict.
type FailoverChoice struct {
	// Site to promote; empty when refused.
	Site string
	// Refusal is a CamelCase cause when refused: NoCandidate,
	// IncomparableCandidates, CandidateLagging, CandidateMissingTransactions.
	Refusal string
	// Message explains the choice or the refusal.
	Message string
	// MayLose is what the operator saw committed on the old primary that the
	// chosen site does not have (received or applied).
	MayLose gtid.Set
}

// Failover refusal causes.
const (
	RefusalNoCandidate                  = "NoCandidate"
	RefusalIncomparableCandidates       = "IncomparableCandidates"
	RefusalCandidateLagging             = "CandidateLagging"
	RefusalCandidateMissingTransactions = "CandidateMissingTransactions"
)

// ChooseFailoverCandidate ranks the trusted PrimaryCandidate sites (never
// DisasterRecovery or readers) by gtid_executed ∪ Retrieved_Gtid_Set: the one
// whose set contains every other candidate's wins; ties go to the first in
// sitePriorities, then in spec order. Incomparable candidates are refused.
// The winner is then refused if it lagged beyond MaxLagSeconds at its last
// good poll, or lacks more than MaxMissing of the transactions seen on the
// old primary, unless a human named it in Override.
func ChooseFailoverCandidate(cands []FailoverCandidate, g FailoverGuards) FailoverChoice {
	var pool []FailoverCandidate
	for _, c := range cands {
		if c.Trusted && c.Role == v1alpha1.SiteRolePrimaryCandidate {
			pool = append(pool, c)
		}
	}
	if len(pool) == 0 {
		return FailoverChoice{Refusal: RefusalNoCandidate, Message: "no reachable PrimaryCandidate site"}
	}
	rank := func(c FailoverCandidate) gtid.Set { return c.Executed.Union(c.Retrieved) }
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
	lose := g.SeenOnSource.Subtract(rank(w))
	choice := FailoverChoice{Site: w.Name, MayLose: lose, Message: fmt.Sprintf("site %s is the most advanced reachable candidate", w.Name)}
	overridden := g.Override != "" && g.Override == w.Name
	switch {
	case w.LagSeconds != nil && *w.LagSeconds > g.MaxLagSeconds && !overridden:
		return FailoverChoice{Refusal: RefusalCandidateLagging, MayLose: lose, Message: fmt.Sprintf(
			"the most advanced candidate %s was %ds behind at its last good poll (maxLagSeconds %d): not promoted automatically",
			w.Name, *w.LagSeconds, g.MaxLagSeconds)}
	case lose.Count() > g.MaxMissing && !overridden:
		return FailoverChoice{Refusal: RefusalCandidateMissingTransactions, MayLose: lose, Message: fmt.Sprintf(
			"the most advanced candidate %s lacks %d transactions seen committed on the old primary (%s; bound %d): not promoted automatically",
			w.Name, lose.Count(), GTIDPhrase(lose.OneLine()), g.MaxMissing)}
	}
	if overridden {
		choice.Message += " (promotion forced by the override)"
	}
	return choice
}

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
