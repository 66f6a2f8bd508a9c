package topology

import (
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// SiteState is what the rollout decision needs to know about one site.
type SiteState struct {
	Name string
	// DesiredHash is the hash of the freshly rendered pod template.
	DesiredHash string
	// StatefulSetExists, and the template hash it carries.
	StatefulSetExists bool
	StatefulSetHash   string
	// StatefulSetObserved: the StatefulSet controller has seen the
	// StatefulSet's latest spec (status.observedGeneration >= generation),
	// so a pod deleted now is recreated from the current template.
	StatefulSetObserved bool
	// PodExists, the template hash the pod was created from, whether it is
	// Ready and whether it is already being deleted.
	PodExists      bool
	PodHash        string
	PodReady       bool
	PodTerminating bool
}

// SiteAction is the rollout decision for one site.
type SiteAction struct {
	Name string
	// ApplyTemplate writes the new pod template and my.cnf (or creates the
	// StatefulSet).
	ApplyTemplate bool
	// DeletePod deletes the site's pod so the StatefulSet recreates it from
	// the new template.
	DeletePod bool
	// Held: the site has a pending change that is not applied because it is
	// the active site under OrderedUpdate.
	Held bool
	// Waiting: a follower whose turn has not come (another follower is
	// being rolled and is not Ready yet).
	Waiting bool
	// WaitingFor names that follower.
	WaitingFor string
	// Outdated: the site's StatefulSet or pod is not at the desired hash.
	Outdated bool
}

// Rollout is the decision for every site, in site order.
type Rollout struct {
	Sites []SiteAction
}

// Held returns the site held back, or "".
func (r Rollout) Held() string {
	for _, s := range r.Sites {
		if s.Held {
			return s.Name
		}
	}
	return ""
}

// Outdated returns the names of the sites not at the desired hash.
func (r Rollout) Outdated() []string {
	var out []string
	for _, s := range r.Sites {
		if s.Outdated {
			out = append(out, s.Name)
		}
	}
	return out
}

// PlanRollout decides, per site, whether to write the new pod template and
// whether to delete the pod so it is recreated (StatefulSets use OnDelete:
// nothing restarts unless this says so).
//
//   - A missing StatefulSet is always created.
//   - Recreate, or no active site yet (nothing is serving), rolls every
//     site at once.
//   - OrderedUpdate rolls followers one at a time, in site order: the next
//     starts once every follower already on the new template is Ready. The
//     active site is held: its hand-over to an updated standby belongs to
//     planned failover, which is not part of this controller, so its new
//     template is not applied at all (the pod, should it restart, keeps its
//     old template and my.cnf).
func PlanRollout(strategy v1alpha1.UpdateStrategyType, active string, sites []SiteState) Rollout {
	allAtOnce := strategy == v1alpha1.Recreate || !hasSite(sites, active)
	out := Rollout{Sites: make([]SiteAction, len(sites))}

	// A follower already switched to the new template whose pod is not yet
	// back and Ready is the one being rolled.
	busy := ""
	for _, s := range sites {
		if s.Name != active && inFlight(s) {
			busy = s.Name
			break
		}
	}
	for i, s := range sites {
		a := SiteAction{Name: s.Name, Outdated: outdated(s)}
		out.Sites[i] = a
		if !s.StatefulSetExists {
			out.Sites[i].ApplyTemplate = true
			continue
		}
		if !a.Outdated {
			continue
		}
		switch {
		case allAtOnce:
		case s.Name == active:
			out.Sites[i].Held = true
			continue
		case busy != "" && busy != s.Name:
			out.Sites[i].Waiting, out.Sites[i].WaitingFor = true, busy
			continue
		default:
			busy = s.Name
		}
		out.Sites[i].ApplyTemplate = s.StatefulSetHash != s.DesiredHash
		out.Sites[i].DeletePod = s.PodExists && s.PodHash != s.DesiredHash && !s.PodTerminating &&
			s.StatefulSetHash == s.DesiredHash && s.StatefulSetObserved
	}
	return out
}

func hasSite(sites []SiteState, name string) bool {
	for _, s := range sites {
		if s.Name == name {
			return true
		}
	}
	return false
}

func outdated(s SiteState) bool {
	return !s.StatefulSetExists || s.StatefulSetHash != s.DesiredHash || (s.PodExists && s.PodHash != s.DesiredHash)
}

// inFlight: the StatefulSet carries the new template but its pod is not yet
// a Ready pod of that template.
func inFlight(s SiteState) bool {
	if !s.StatefulSetExists || s.StatefulSetHash != s.DesiredHash {
		return false
	}
	return !s.PodExists || s.PodHash != s.DesiredHash || !s.PodReady || s.PodTerminating
}
