package topology

import "github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"

// startsCooldown reports whether a failover of this kind, recorded in
// status.lastFailover, starts spec.failoverCooldown: "the minimum time
// between two automatic failovers" (docs/safety.md, The cooldown).
//
// Planned and ordered-update handoffs do not: after every image or
// configuration roll the new primary would otherwise have no automatic
// failover for the whole cooldown. Leaving them out loses nothing the
// cooldown exists for: both are admitted only once the cooldown has passed
// since the failover recorded before them (AdmitPlanned's plannedCooldown
// refuses or defers inside it, and an ordered update always defers), so
// when one of them is the last failover recorded, the last automatic one is
// at least a cooldown old. Every other kind, and a record without a kind
// (restored from the last-failover annotations, which keep no kind), still
// counts: nothing says the cooldown passed before it.
func startsCooldown(k v1alpha1.TransitionKind) bool {
	switch k {
	case v1alpha1.TransitionPlanned, v1alpha1.TransitionOrderedUpdate:
		return false
	}
	return true
}
