package topologymanager

import (
	"errors"
	"testing"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// The topology an unfence was decided on must still be the stored one
// (issue 21, hole 3): another leader's failover, step or publication in
// between refuses it; changes the unfence does not depend on do not.
func TestSameTopology(t *testing.T) {
	tr := func(id string, step v1alpha1.TransitionStep) *v1alpha1.Transition {
		return &v1alpha1.Transition{ID: id, Step: step, Kind: v1alpha1.TransitionAutomatic}
	}
	decided := v1alpha1.MysqlFailoverGroupStatus{ActiveSite: "iad", TopologyGeneration: 3}
	for _, tc := range []struct {
		name   string
		stored func(*v1alpha1.MysqlFailoverGroupStatus)
		moved  bool
	}{
		{"unchanged", func(*v1alpha1.MysqlFailoverGroupStatus) {}, false},
		{"site fields refreshed", func(s *v1alpha1.MysqlFailoverGroupStatus) { s.Sites = []v1alpha1.SiteStatus{{Name: "iad"}} }, false},
		{"another leader recorded a failover", func(s *v1alpha1.MysqlFailoverGroupStatus) { s.Transition = tr("f2", v1alpha1.StepRecorded) }, true},
		{"published elsewhere", func(s *v1alpha1.MysqlFailoverGroupStatus) { s.ActiveSite, s.TopologyGeneration = "pdx", 4 }, true},
		{"generation moved", func(s *v1alpha1.MysqlFailoverGroupStatus) { s.TopologyGeneration = 4 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := *decided.DeepCopy()
			tc.stored(&stored)
			err := sameTopology(decided, stored)
			if moved := errors.Is(err, errTopologyMoved); moved != tc.moved || (err != nil && !moved) {
				t.Fatalf("sameTopology: %v, want moved=%v", err, tc.moved)
			}
		})
	}
	t.Run("a transition's step moved on", func(t *testing.T) {
		a, b := decided, decided
		a.Transition, b.Transition = tr("f1", v1alpha1.StepCatchingUp), tr("f1", v1alpha1.StepPromoting)
		if err := sameTopology(a, b); !errors.Is(err, errTopologyMoved) {
			t.Fatalf("%v", err)
		}
		if err := sameTopology(a, a); err != nil {
			t.Fatal(err)
		}
	})
}
