package topology

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

const (
	oldH = "old"
	newH = "new"
)

// site builds a SiteState: the StatefulSet at stsHash (observed), the pod
// at podHash ("" = no pod), Ready or not.
func site(name, stsHash, podHash string, ready bool) SiteState {
	return SiteState{
		Name: name, DesiredHash: newH,
		StatefulSetExists: true, StatefulSetHash: stsHash, StatefulSetObserved: true,
		PodExists: podHash != "", PodHash: podHash, PodReady: ready,
	}
}

func TestPlanRollout(t *testing.T) {
	ordered, recreate := v1alpha1.OrderedUpdate, v1alpha1.Recreate
	cases := []struct {
		name     string
		strategy v1alpha1.UpdateStrategyType
		active   string
		sites    []SiteState
		want     []SiteAction
	}{{
		name: "everything current: nothing to do", strategy: ordered, active: "iad",
		sites: []SiteState{site("iad", newH, newH, true), site("pdx", newH, newH, true)},
		want:  []SiteAction{{Name: "iad"}, {Name: "pdx"}},
	}, {
		name: "a missing StatefulSet is created even for the active site", strategy: ordered, active: "iad",
		sites: []SiteState{{Name: "iad", DesiredHash: newH}, site("pdx", newH, newH, true)},
		want:  []SiteAction{{Name: "iad", ApplyTemplate: true, Outdated: true}, {Name: "pdx"}},
	}, {
		name: "OrderedUpdate holds the active site and rolls one follower at a time", strategy: ordered, active: "iad",
		sites: []SiteState{site("iad", oldH, oldH, true), site("pdx", oldH, oldH, true), site("reader", oldH, oldH, true)},
		want: []SiteAction{
			{Name: "iad", Held: true, Outdated: true},
			{Name: "pdx", ApplyTemplate: true, Outdated: true},
			{Name: "reader", Waiting: true, WaitingFor: "pdx", Outdated: true},
		},
	}, {
		name: "the follower's pod is deleted once the StatefulSet controller saw the new template", strategy: ordered, active: "iad",
		sites: []SiteState{site("iad", oldH, oldH, true), site("pdx", newH, oldH, true), site("reader", oldH, oldH, true)},
		want: []SiteAction{
			{Name: "iad", Held: true, Outdated: true},
			{Name: "pdx", DeletePod: true, Outdated: true},
			{Name: "reader", Waiting: true, WaitingFor: "pdx", Outdated: true},
		},
	}, {
		name: "the next follower waits while the rolled one is back but not Ready", strategy: ordered, active: "iad",
		sites: []SiteState{site("iad", oldH, oldH, true), site("pdx", newH, newH, false), site("reader", oldH, oldH, true)},
		want: []SiteAction{
			{Name: "iad", Held: true, Outdated: true},
			{Name: "pdx"},
			{Name: "reader", Waiting: true, WaitingFor: "pdx", Outdated: true},
		},
	}, {
		name: "the next follower goes once the rolled one is Ready", strategy: ordered, active: "iad",
		sites: []SiteState{site("iad", oldH, oldH, true), site("pdx", newH, newH, true), site("reader", oldH, oldH, true)},
		want: []SiteAction{
			{Name: "iad", Held: true, Outdated: true},
			{Name: "pdx"},
			{Name: "reader", ApplyTemplate: true, Outdated: true},
		},
	}, {
		name: "a change of one site rolls only that site", strategy: ordered, active: "iad",
		sites: []SiteState{site("iad", newH, newH, true), site("pdx", oldH, oldH, true), site("reader", newH, newH, true)},
		want:  []SiteAction{{Name: "iad"}, {Name: "pdx", ApplyTemplate: true, Outdated: true}, {Name: "reader"}},
	}, {
		name: "no pod deletion before the StatefulSet controller observed the new spec", strategy: recreate, active: "iad",
		sites: []SiteState{
			{Name: "iad", DesiredHash: newH, StatefulSetExists: true, StatefulSetHash: newH, PodExists: true, PodHash: oldH},
			site("pdx", newH, newH, true),
		},
		want: []SiteAction{{Name: "iad", Outdated: true}, {Name: "pdx"}},
	}, {
		name: "Recreate rolls every site together, the active one included", strategy: recreate, active: "iad",
		sites: []SiteState{site("iad", newH, oldH, true), site("pdx", newH, oldH, true), site("reader", oldH, oldH, false)},
		want: []SiteAction{
			{Name: "iad", DeletePod: true, Outdated: true},
			{Name: "pdx", DeletePod: true, Outdated: true},
			{Name: "reader", ApplyTemplate: true, Outdated: true},
		},
	}, {
		name: "without an active site nothing serves: every site rolls", strategy: ordered, active: "",
		sites: []SiteState{site("iad", oldH, oldH, false), site("pdx", newH, oldH, false)},
		want:  []SiteAction{{Name: "iad", ApplyTemplate: true, Outdated: true}, {Name: "pdx", DeletePod: true, Outdated: true}},
	}, {
		name: "a pod already terminating is not deleted again", strategy: recreate, active: "iad",
		sites: []SiteState{func() SiteState { s := site("iad", newH, oldH, true); s.PodTerminating = true; return s }()},
		want:  []SiteAction{{Name: "iad", Outdated: true}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanRollout(tc.strategy, tc.active, tc.sites)
			if !reflect.DeepEqual(got.Sites, tc.want) {
				t.Errorf("PlanRollout:\n got  %+v\n want %+v", got.Sites, tc.want)
			}
		})
	}
}

// Randomized invariants of OrderedUpdate with an active site: the active
// site's existing StatefulSet and pod are never touched, and at most one
// follower is being rolled at any time.
func TestPlanRolloutOrderedInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	hashes := []string{oldH, newH}
	names := []string{"a", "b", "c", "d"}
	for iter := 0; iter < 5000; iter++ {
		var sites []SiteState
		for _, n := range names {
			s := SiteState{Name: n, DesiredHash: newH, StatefulSetExists: r.IntN(8) != 0,
				StatefulSetObserved: r.IntN(2) == 0, PodExists: r.IntN(4) != 0, PodReady: r.IntN(2) == 0, PodTerminating: r.IntN(6) == 0}
			if s.StatefulSetExists {
				s.StatefulSetHash = hashes[r.IntN(2)]
			}
			if s.PodExists {
				s.PodHash = hashes[r.IntN(2)]
			}
			sites = append(sites, s)
		}
		active := names[r.IntN(len(names))]
		plan := PlanRollout(v1alpha1.OrderedUpdate, active, sites)
		rolling := 0
		for i, a := range plan.Sites {
			s := sites[i]
			if a.Name == active && s.StatefulSetExists && (a.ApplyTemplate || a.DeletePod) {
				t.Fatalf("iteration %d: the active site %s was touched: %+v from %+v", iter, active, a, s)
			}
			if a.Name != active && s.StatefulSetExists && (a.ApplyTemplate || a.DeletePod || inFlight(s)) {
				rolling++
			}
			if a.DeletePod && (!s.PodExists || s.PodHash == newH || s.StatefulSetHash != newH || !s.StatefulSetObserved || s.PodTerminating) {
				t.Fatalf("iteration %d: pod of %s deleted without cause: %+v", iter, a.Name, s)
			}
		}
		// Followers already in flight before this plan count as rolling; the
		// plan may add a new one only when none is.
		inflightBefore := 0
		for _, s := range sites {
			if s.Name != active && inFlight(s) {
				inflightBefore++
			}
		}
		if inflightBefore == 0 && rolling > 1 {
			t.Fatalf("iteration %d: %d followers rolled at once: %+v", iter, rolling, plan.Sites)
		}
		if inflightBefore > 0 && rolling > inflightBefore {
			t.Fatalf("iteration %d: a new follower started while %d were in flight: %+v", iter, inflightBefore, plan.Sites)
		}
	}
}
