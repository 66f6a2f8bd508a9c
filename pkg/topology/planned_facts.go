package topology

import (
	"fmt"
	"sort"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// PlannedTargetState is what planned admission needs to know of the group
// in one decision input (see PlannedAdmissionInput).
type PlannedTargetState struct {
	// Trusted: the target is Reachable and its latest poll succeeded.
	Trusted bool
	// Replicating: the target is read-only and replicates from the active
	// site's internal Service with both threads running.
	Replicating bool
	// OtherOperation names a change in flight that a planned failover must
	// not overlap; empty when none.
	OtherOperation string
	// Lagging describes a target further behind than
	// spec.replication.maxLagSeconds; empty when it is not.
	Lagging string
	// Diverged describes transactions the target holds that the active
	// site lacks (a handoff would publish them); empty when none.
	Diverged string
}

// PlannedTargetStateOf reads PlannedTargetState from a decision input, so
// the admitter sees the group exactly as the manager's decision does.
func PlannedTargetStateOf(in Input, target string) PlannedTargetState {
	var s PlannedTargetState
	active := in.Status.ActiveSite
	if o, ok := in.Observed[target]; ok && o.Reach == observe.Reachable && o.Fresh && o.Last != nil {
		s.Trusted = true
		r := o.Last.Replica
		s.Replicating = !o.Last.Writable && active != "" && ReplicationState(r) == v1alpha1.ReplicationRunning &&
			SameHost(r.SourceHost, SourceHost(in.Namespace, in.Group, active))
		if r != nil && r.SecondsBehindSource != nil && *r.SecondsBehindSource > in.MaxLagSeconds {
			s.Lagging = fmt.Sprintf("target site %s is %ds behind (spec.replication.maxLagSeconds %d)", target, *r.SecondsBehindSource, in.MaxLagSeconds)
		}
		if a, ok := in.Observed[active]; ok && a.Fresh && a.Last != nil {
			if extra := divergentFrom(in.Namespace, in.Group, o.Last, a.Last, active); !extra.IsEmpty() {
				s.Diverged = fmt.Sprintf("target site %s holds %d transactions the active site %s lacks (%s)", target, extra.Count(), active, GTIDPhrase(extra.OneLine()))
			}
		}
	}
	s.OtherOperation = otherOperation(in)
	return s
}

func otherOperation(in Input) string {
	if t := in.Status.Transition; t != nil {
		return fmt.Sprintf("transition %s (%s) to site %s", t.ID, t.Kind, t.TargetSite)
	}
	if in.Status.ActiveSite == "" {
		return "no active site is on record"
	}
	if in.Reclone != nil {
		return "a reclone request is being handled"
	}
	var cloning []string
	for site, o := range in.Observed {
		if o.Clone.Running {
			cloning = append(cloning, site)
		}
	}
	if len(cloning) > 0 {
		sort.Strings(cloning)
		return fmt.Sprintf("a clone into site %s is in flight", cloning[0])
	}
	return ""
}
