package metrics

import "github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"

// Metric label values are kebab-case; the CamelCase spellings belong to
// the custom resources only (docs/metrics.md, Label values). Each mapping
// is an explicit table so a value the API gains later is not silently
// spelled some new way: it maps to "unknown" until it is added here, and
// TestLabelTablesCoverEveryCRDEnumValue fails until then.

var siteStateLabels = map[v1alpha1.SiteState]string{
	v1alpha1.SiteWritable:    "writable",
	v1alpha1.SiteReadOnly:    "read-only",
	v1alpha1.SiteUnreachable: "unreachable",
	v1alpha1.SiteUnknown:     "unknown",
}

var siteRoleLabels = map[v1alpha1.SiteRole]string{
	v1alpha1.SiteRolePrimaryCandidate: "primary-candidate",
	v1alpha1.SiteRoleDisasterRecovery: "disaster-recovery",
	v1alpha1.SiteRoleReadOnly:         "read-only",
}

var replicationLabels = map[v1alpha1.ReplicationState]string{
	v1alpha1.ReplicationNotReplicating: "not-replicating",
	v1alpha1.ReplicationRunning:        "running",
	v1alpha1.ReplicationConnecting:     "connecting",
	v1alpha1.ReplicationStopped:        "stopped",
	v1alpha1.ReplicationError:          "error",
}

// Unknown is the label value of a state or role the operator has not
// observed (an empty status field) or does not know.
const Unknown = "unknown"

// SiteStateLabel is the state label value of a site state.
func SiteStateLabel(s v1alpha1.SiteState) string { return lookup(siteStateLabels, s) }

// SiteRoleLabel is the role label value of a site role.
func SiteRoleLabel(r v1alpha1.SiteRole) string { return lookup(siteRoleLabels, r) }

// ReplicationLabel is the state label value of a replication state.
func ReplicationLabel(r v1alpha1.ReplicationState) string { return lookup(replicationLabels, r) }

// SiteStates, SiteRoles and ReplicationStates list every value in the
// order the gauges export them (each gauge carries one series per value,
// 1 for the current one), so a series never disappears when a value
// changes.
var (
	SiteStates        = []v1alpha1.SiteState{v1alpha1.SiteWritable, v1alpha1.SiteReadOnly, v1alpha1.SiteUnreachable, v1alpha1.SiteUnknown}
	SiteRoles         = []v1alpha1.SiteRole{v1alpha1.SiteRolePrimaryCandidate, v1alpha1.SiteRoleDisasterRecovery, v1alpha1.SiteRoleReadOnly}
	ReplicationStates = []v1alpha1.ReplicationState{v1alpha1.ReplicationNotReplicating, v1alpha1.ReplicationRunning, v1alpha1.ReplicationConnecting, v1alpha1.ReplicationStopped, v1alpha1.ReplicationError}
)

func lookup[K ~string](table map[K]string, k K) string {
	if v, ok := table[k]; ok {
		return v
	}
	return Unknown
}
