package topology

import (
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// plannedInput: iad active, pdx a healthy follower of iad.
func plannedInput() Input {
	return Input{
		Namespace: "shop", Group: "orders",
		Status: v1alpha1.MysqlFailoverGroupStatus{ActiveSite: "iad"},
		Observed: map[string]SiteInput{
			"iad": {Reach: observe.Reachable, Fresh: true, Last: &Observed{Writable: true}},
			"pdx": {Reach: observe.Reachable, Fresh: true, Last: &Observed{Replica: &Replica{
				SourceHost: "orders-iad-internal.shop.svc.cluster.local.", IORunning: "Yes", SQLRunning: true}}},
		},
	}
}

func TestPlannedTargetStateOf(t *testing.T) {
	cases := []struct {
		name                      string
		mutate                    func(*Input)
		trusted, replicating      bool
		otherOperationMentionsAny string
	}{
		{name: "healthy follower", mutate: func(*Input) {}, trusted: true, replicating: true},
		{name: "unreachable", mutate: func(in *Input) { s := in.Observed["pdx"]; s.Reach = observe.Unreachable; in.Observed["pdx"] = s }},
		{name: "suspect", mutate: func(in *Input) { s := in.Observed["pdx"]; s.Reach = observe.Suspect; in.Observed["pdx"] = s }},
		{name: "stale poll", mutate: func(in *Input) { s := in.Observed["pdx"]; s.Fresh = false; in.Observed["pdx"] = s }},
		{name: "never polled", mutate: func(in *Input) { s := in.Observed["pdx"]; s.Last = nil; in.Observed["pdx"] = s }},
		{name: "not in the input", mutate: func(in *Input) { delete(in.Observed, "pdx") }},
		{name: "IO thread connecting", mutate: func(in *Input) { in.Observed["pdx"].Last.Replica.IORunning = "Connecting" }, trusted: true},
		{name: "SQL thread stopped", mutate: func(in *Input) { in.Observed["pdx"].Last.Replica.SQLRunning = false }, trusted: true},
		{name: "no channel", mutate: func(in *Input) { in.Observed["pdx"].Last.Replica = nil }, trusted: true},
		{name: "replicating from another site", mutate: func(in *Input) {
			in.Observed["pdx"].Last.Replica.SourceHost = "orders-dr-internal.shop.svc"
		}, trusted: true},
		{name: "writable target", mutate: func(in *Input) { in.Observed["pdx"].Last.Writable = true }, trusted: true},
		{name: "transition in flight", mutate: func(in *Input) {
			in.Status.Transition = &v1alpha1.Transition{ID: "t-7", Kind: v1alpha1.TransitionAutomatic, TargetSite: "pdx"}
		}, trusted: true, replicating: true, otherOperationMentionsAny: "t-7"},
		{name: "no active site", mutate: func(in *Input) { in.Status.ActiveSite = "" }, trusted: true, otherOperationMentionsAny: "no active site"},
		{name: "reclone request", mutate: func(in *Input) { in.Reclone = &RecloneInput{Value: "dr:confirm=orders:uid=u"} },
			trusted: true, replicating: true, otherOperationMentionsAny: "reclone"},
		{name: "clone running", mutate: func(in *Input) {
			in.Observed["dr"] = SiteInput{Clone: CloneState{Running: true, Donor: "iad"}}
		}, trusted: true, replicating: true, otherOperationMentionsAny: "site dr"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := plannedInput()
			c.mutate(&in)
			s := PlannedTargetStateOf(in, "pdx")
			if s.Trusted != c.trusted || s.Replicating != c.replicating {
				t.Fatalf("trusted=%v replicating=%v, want %v %v", s.Trusted, s.Replicating, c.trusted, c.replicating)
			}
			if c.otherOperationMentionsAny == "" && s.OtherOperation != "" {
				t.Fatalf("otherOperation = %q, want none", s.OtherOperation)
			}
			if c.otherOperationMentionsAny != "" && !strings.Contains(s.OtherOperation, c.otherOperationMentionsAny) {
				t.Fatalf("otherOperation = %q, want it to mention %q", s.OtherOperation, c.otherOperationMentionsAny)
			}
		})
	}
}
