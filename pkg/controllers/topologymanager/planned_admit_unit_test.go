package topologymanager

import (
	"testing"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/observe"
	"github.com/shipstream/bloodraven/pkg/topology"
)

func TestPlannedFactsOfReadsTheDecisionInput(t *testing.T) {
	in := topology.Input{Namespace: "shop", Group: "orders",
		Status: v1alpha1.MysqlFailoverGroupStatus{ActiveSite: "iad"},
		Observed: map[string]topology.SiteInput{
			"pdx": {Reach: observe.Reachable, Fresh: true, Last: &topology.Observed{Replica: &topology.Replica{
				SourceHost: "orders-iad-internal.shop.svc", IORunning: "Yes", SQLRunning: true}}},
			"dr": {Reach: observe.Unreachable},
		}}
	if f := plannedFactsOf(in, "pdx"); !f.TargetTrusted || !f.TargetReplicating || f.OtherOperation != "" {
		t.Fatalf("healthy follower: %+v", f)
	}
	if f := plannedFactsOf(in, "dr"); f.TargetTrusted || f.TargetReplicating {
		t.Fatalf("unreachable site: %+v", f)
	}
	in.Status.Transition = &v1alpha1.Transition{ID: "t-1", Kind: v1alpha1.TransitionAutomatic, TargetSite: "pdx"}
	if f := plannedFactsOf(in, "pdx"); f.OtherOperation == "" {
		t.Fatalf("transition in flight not reported: %+v", f)
	}
}
