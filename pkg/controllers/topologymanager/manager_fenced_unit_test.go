package topologymanager

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/observe"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// Issue 19, hole 4: read_only=ON with super_read_only=OFF is not fenced
// (accounts with SUPER or CONNECTION_ADMIN still write there, and MySQL
// lets them commit). From the poll's two flags to the decision, such a site
// is fenced when it is not the active one, and it does not count as the
// fenced old primary a failover waits for.
func TestReadOnlyWithoutSuperReadOnlyIsNotFenced(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	executed := gtid.MustParse("11111111-0000-4000-8000-000000000001:1-10")
	observed := func(ro, sro bool) *topology.Observed {
		return toObserved(&observe.Sample[Sample]{At: at, Value: Sample{Observation: mysql.Observation{
			ServerUUID: "11111111-0000-4000-8000-000000000001", ReadOnly: ro, SuperReadOnly: sro, GTIDExecuted: executed}}})
	}
	sites := []topology.SiteSpec{{Name: "iad", Role: v1alpha1.SiteRolePrimaryCandidate}, {Name: "pdx", Role: v1alpha1.SiteRolePrimaryCandidate}}
	input := func(st v1alpha1.MysqlFailoverGroupStatus, iad, pdx *topology.Observed) topology.Input {
		return topology.Input{Now: at.Add(time.Second), Namespace: "shop", Group: "orders", Sites: sites, StatusRefresh: time.Minute,
			Status: st, NewTransitionID: "t", Failover: topology.FailoverSettings{Enabled: true, SelfFenceBound: time.Minute, Cooldown: time.Minute},
			Observed: map[string]topology.SiteInput{
				"iad": {Reach: observe.Reachable, Fresh: true, Last: iad},
				"pdx": {Reach: observe.Reachable, Fresh: true, Last: pdx},
			}}
	}
	fences := func(d topology.Decision, site string) bool {
		for _, a := range d.Actions {
			if a.Kind == topology.Fence && a.Site == site {
				return true
			}
		}
		return false
	}

	t.Run("a follower", func(t *testing.T) {
		d := topology.Decide(input(v1alpha1.MysqlFailoverGroupStatus{ActiveSite: "iad", TopologyGeneration: 2}, observed(false, false), observed(true, false)))
		if !fences(d, "pdx") {
			t.Fatalf("pdx (read_only=ON, super_read_only=OFF) is not fenced: %+v", d.Actions)
		}
		if d := topology.Decide(input(v1alpha1.MysqlFailoverGroupStatus{ActiveSite: "iad", TopologyGeneration: 2}, observed(false, false), observed(true, true))); fences(d, "pdx") {
			t.Fatalf("pdx (super_read_only=ON) fenced again: %+v", d.Actions)
		}
	})
	t.Run("the old primary of a failover", func(t *testing.T) {
		st := v1alpha1.MysqlFailoverGroupStatus{ActiveSite: "iad", TopologyGeneration: 2}
		dl := v1alpha1.NewPreciseTime(at.Add(time.Hour))
		st.Transition = &v1alpha1.Transition{ID: "f", Kind: v1alpha1.TransitionAutomatic, SourceSite: "iad", TargetSite: "pdx",
			TopologyGeneration: 3, Step: v1alpha1.StepAwaitingSelfFence, StartTime: metav1.NewTime(at), SourceFenceDeadline: &dl}
		d := topology.Decide(input(st, observed(true, false), observed(true, true)))
		if tr := d.Status.Transition; tr == nil || tr.Step != v1alpha1.StepAwaitingSelfFence {
			t.Fatalf("the failover moved on as if iad were fenced: %+v", tr)
		}
		if !fences(d, "iad") {
			t.Fatalf("iad (read_only=ON, super_read_only=OFF) is not fenced: %+v", d.Actions)
		}
	})
}

// What the decision gets as SidecarSeen: whether the sidecar answered in
// the latest poll that reached the site at all; a poll that reaches
// neither mysqld nor the sidecar (a full cut) keeps the last contact's word.
func TestSidecarSeenIsTheLastContactsWord(t *testing.T) {
	p := &mpass{m: &Manager{}, st: newGroupState()}
	steps := []struct {
		name         string
		answer       sidecarAnswer
		mysqldFailed bool
		seen         bool
	}{
		{"mysqld and sidecar answer", sidecarAnswer{answered: true}, false, true},
		{"cut off entirely: the last contact's word", sidecarAnswer{}, true, true},
		{"mysqld answers, the sidecar does not: it is down", sidecarAnswer{}, false, false},
		{"cut off entirely again", sidecarAnswer{}, true, false},
		{"mysqld down, the sidecar answers", sidecarAnswer{answered: true, healthy: false}, true, true},
	}
	for _, s := range steps {
		p.noteSidecar("iad", s.answer, s.mysqldFailed)
		if got := p.st.sidecarSeen["iad"]; got != s.seen {
			t.Fatalf("%s: sidecarSeen %v, want %v", s.name, got, s.seen)
		}
	}
}
