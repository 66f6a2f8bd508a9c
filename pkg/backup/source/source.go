// Package source chooses the site a backup is taken from, as a pure
// function of the failover group's stored spec and status and of the sites
// the caller saw being cloned.
//
// The rule (docs: the MysqlBackup source selection):
//
//   - With spec.sourceSite set, that site or none: it must be a site of the
//     group and healthy (below). The replica lag bound does not apply to a
//     site named explicitly.
//   - Otherwise a healthy replica whose lag is known and within
//     maxLagSecondsForSource (an explicit 0 asks for a replica 0 s behind),
//     the least behind first, then the group's site order; else the
//     primary, if it is healthy.
//   - Never a site that holds transactions the active site lacks
//     (divergentGtid), is RecoveryBlocked or still recovering, does not
//     replicate directly from the active site (not Converged), is being
//     cloned, is not reachable, or is writable without being the active
//     site.
//   - No source at all while the group has no active site or an
//     active-site change is in flight (status.transition): which site is
//     primary, and which history a replica follows, is being decided, and
//     a dump taken then could hold transactions the next primary discards.
//
// Every verdict carries a message naming each site that was passed over and
// why, so an operator reading a Pending backup knows what to fix.
package source

import (
	"fmt"
	"sort"
	"strings"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// DefaultMaxLagSeconds is maxLagSecondsForSource when the group leaves it
// unset (the CRD default).
const DefaultMaxLagSeconds = 300

// Input is what the choice reads.
type Input struct {
	// Group is the failover group as stored (spec and status).
	Group *v1alpha1.MysqlFailoverGroup
	// SourceSite is the backup's spec.sourceSite; empty chooses.
	SourceSite string
	// Cloning are the sites a clone is running into (or requested for).
	Cloning map[string]bool
}

// Exclusion is why one site was passed over.
type Exclusion struct {
	Site   string
	Reason Reason
	// Detail adds figures to the reason (the lag, the divergent count).
	Detail string
}

// converged is the SourceConvergenceState of a follower that replicates
// directly from the active site.
const converged v1alpha1.SourceConvergenceState = "Converged"

// Reason is the cause of an Exclusion.
type Reason string

// Reasons a site is passed over.
const (
	NotInGroup         Reason = "not a site of the group"
	NotObserved        Reason = "not observed yet"
	Unreachable        Reason = "unreachable"
	StateUnknown       Reason = "state unknown"
	WritableNotActive  Reason = "writable but not the active site"
	PrimaryNotWritable Reason = "the active site is not writable"
	Divergent          Reason = "divergent"
	RecoveryBlocked    Reason = "RecoveryBlocked"
	RecoveryInProgress Reason = "recovery in progress"
	NotConverged       Reason = "not replicating directly from the active site"
	NotReplicating     Reason = "replication not running"
	Cloning            Reason = "being cloned"
	LagUnknown         Reason = "replication lag unknown"
	LagAboveMax        Reason = "replication lag above maxLagSecondsForSource"
)

func (e Exclusion) String() string {
	if e.Detail == "" {
		return fmt.Sprintf("%s: %s", e.Site, e.Reason)
	}
	return fmt.Sprintf("%s: %s (%s)", e.Site, e.Reason, e.Detail)
}

// Decision is the verdict.
type Decision struct {
	// Site is the chosen source; empty when none qualifies.
	Site string
	// Primary is true when Site is the active site.
	Primary bool
	// Excluded are the sites passed over, in the group's site order.
	Excluded []Exclusion
	// Message explains the verdict in one sentence.
	Message string
}

// Choose returns the backup's source site, or none with the reason.
func Choose(in Input) Decision {
	g := in.Group
	active := g.Status.ActiveSite
	if active == "" {
		return none(nil, "the group has no active site yet")
	}
	if t := g.Status.Transition; t != nil {
		return none(nil, fmt.Sprintf("a change of active site is in flight (%s, site %s to site %s)", t.Kind, orNone(t.SourceSite), t.TargetSite))
	}
	if in.SourceSite != "" {
		return chooseNamed(in, active)
	}
	var ok []candidate
	var excluded []Exclusion
	maxLag := maxLagSeconds(g)
	for _, s := range g.Spec.Sites {
		if s.Name == active {
			continue
		}
		st, found := siteStatus(g, s.Name)
		if ex := replicaExclusion(s.Name, st, found, in.Cloning); ex != nil {
			excluded = append(excluded, *ex)
			continue
		}
		if ex := lagExclusion(s.Name, st, maxLag); ex != nil {
			excluded = append(excluded, *ex)
			continue
		}
		ok = append(ok, candidate{name: s.Name, lag: *st.SecondsBehindSource})
	}
	if len(ok) > 0 {
		// Stable: equal lags keep the group's site order.
		sort.SliceStable(ok, func(i, j int) bool { return ok[i].lag < ok[j].lag })
		c := ok[0]
		return Decision{Site: c.name, Excluded: excluded, Message: withExcluded(
			fmt.Sprintf("site %s, a replica %ds behind the active site %s (maxLagSecondsForSource %d)", c.name, c.lag, active, maxLag), excluded)}
	}
	st, found := siteStatus(g, active)
	if ex := primaryExclusion(active, st, found, in.Cloning); ex != nil {
		return none(append(excluded, *ex), "no replica qualifies and the primary does not either")
	}
	msg := fmt.Sprintf("site %s, the primary", active)
	if len(excluded) > 0 {
		msg += ": no replica qualifies"
	} else {
		msg += ": the group has no replica"
	}
	return Decision{Site: active, Primary: true, Excluded: excluded, Message: withExcluded(msg, excluded)}
}

type candidate struct {
	name string
	lag  int64
}

// chooseNamed judges the site spec.sourceSite names.
func chooseNamed(in Input, active string) Decision {
	g, name := in.Group, in.SourceSite
	if !inSpec(g, name) {
		return none([]Exclusion{{Site: name, Reason: NotInGroup}}, fmt.Sprintf("spec.sourceSite %s is not a site of MysqlFailoverGroup %s", name, g.Name))
	}
	st, found := siteStatus(g, name)
	var ex *Exclusion
	if name == active {
		ex = primaryExclusion(name, st, found, in.Cloning)
	} else {
		ex = replicaExclusion(name, st, found, in.Cloning)
	}
	if ex != nil {
		return none([]Exclusion{*ex}, fmt.Sprintf("spec.sourceSite %s does not qualify", name))
	}
	if name == active {
		return Decision{Site: name, Primary: true, Message: fmt.Sprintf("site %s, the primary, as spec.sourceSite asks", name)}
	}
	return Decision{Site: name, Message: fmt.Sprintf("site %s, a replica of the active site %s, as spec.sourceSite asks", name, active)}
}

// replicaExclusion is why a non-active site may not be a source, or nil.
// The checks run in order of gravity, so the reason given is the one that
// matters most (a divergent site is reported divergent, not lagging).
func replicaExclusion(name string, st v1alpha1.SiteStatus, found bool, cloning map[string]bool) *Exclusion {
	ex := func(r Reason, detail string) *Exclusion { return &Exclusion{Site: name, Reason: r, Detail: detail} }
	switch {
	case !found:
		return ex(NotObserved, "")
	case cloning[name]:
		return ex(Cloning, "")
	case st.DivergentGTID != "":
		return ex(Divergent, divergentDetail(st))
	case st.RecoveryState == v1alpha1.RecoveryBlocked:
		return ex(RecoveryBlocked, "")
	case st.RecoveryState == v1alpha1.RecoveryInProgress:
		return ex(RecoveryInProgress, "")
	case st.State == v1alpha1.SiteUnreachable:
		return ex(Unreachable, "")
	case st.State == v1alpha1.SiteWritable:
		return ex(WritableNotActive, "")
	case st.State != v1alpha1.SiteReadOnly:
		return ex(StateUnknown, "")
	case st.Replication != v1alpha1.ReplicationRunning:
		return ex(NotReplicating, "replication "+orNone(string(st.Replication)))
	case st.SourceConvergenceState != converged:
		return ex(NotConverged, convergenceDetail(st))
	}
	return nil
}

// lagExclusion applies maxLagSecondsForSource to an otherwise healthy replica.
func lagExclusion(name string, st v1alpha1.SiteStatus, maxLag int64) *Exclusion {
	switch {
	case st.SecondsBehindSource == nil:
		return &Exclusion{Site: name, Reason: LagUnknown}
	case *st.SecondsBehindSource > maxLag:
		return &Exclusion{Site: name, Reason: LagAboveMax, Detail: fmt.Sprintf("%ds, maximum %ds", *st.SecondsBehindSource, maxLag)}
	}
	return nil
}

// primaryExclusion is why the active site may not be a source, or nil.
func primaryExclusion(name string, st v1alpha1.SiteStatus, found bool, cloning map[string]bool) *Exclusion {
	ex := func(r Reason) *Exclusion { return &Exclusion{Site: name + " (primary)", Reason: r} }
	switch {
	case !found:
		return ex(NotObserved)
	case cloning[name]:
		return ex(Cloning)
	case st.State == v1alpha1.SiteUnreachable:
		return ex(Unreachable)
	case st.State != v1alpha1.SiteWritable:
		return ex(PrimaryNotWritable)
	}
	return nil
}

func divergentDetail(st v1alpha1.SiteStatus) string {
	n := st.DivergentTransactionCount
	if n == 1 {
		return "holds 1 transaction the active site lacks"
	}
	if n > 1 {
		return fmt.Sprintf("holds %d transactions the active site lacks", n)
	}
	return "holds transactions the active site lacks"
}

func convergenceDetail(st v1alpha1.SiteStatus) string {
	s := "convergence " + orNone(string(st.SourceConvergenceState))
	if st.SourceConvergenceReason != "" {
		s += ", " + string(st.SourceConvergenceReason)
	}
	return s
}

func maxLagSeconds(g *v1alpha1.MysqlFailoverGroup) int64 {
	if b := g.Spec.Backup; b != nil && b.MaxLagSecondsForSource != nil {
		return int64(*b.MaxLagSecondsForSource)
	}
	return DefaultMaxLagSeconds
}

func siteStatus(g *v1alpha1.MysqlFailoverGroup, name string) (v1alpha1.SiteStatus, bool) {
	for _, s := range g.Status.Sites {
		if s.Name == name {
			return s, true
		}
	}
	return v1alpha1.SiteStatus{}, false
}

func inSpec(g *v1alpha1.MysqlFailoverGroup, name string) bool {
	for _, s := range g.Spec.Sites {
		if s.Name == name {
			return true
		}
	}
	return false
}

func none(excluded []Exclusion, why string) Decision {
	return Decision{Excluded: excluded, Message: withExcluded("no site qualifies as the backup source: "+why, excluded)}
}

func withExcluded(msg string, excluded []Exclusion) string {
	if len(excluded) == 0 {
		return msg
	}
	parts := make([]string, len(excluded))
	for i, e := range excluded {
		parts[i] = e.String()
	}
	return msg + "; passed over: " + strings.Join(parts, "; ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
