// Package protocol holds what crosses between the operator and the sidecar:
// the sidecar's port, the paths of both sides' HTTP endpoints, their request
// and response documents, and the capability strings. Both sides compile
// against these definitions.
//
// Changes are additive only: an operator and a sidecar one minor release
// apart must still understand each other. So a decoder ignores fields it does
// not know (a newer peer added them), and a field that is absent means "not
// reported" (an older peer does not know it), never "false" or "zero". Fields
// whose absence must be told apart from their zero value are pointers.
package protocol

// SidecarPort is the one port the sidecar listens on inside a MySQL pod. It
// is published on the site's internal Service (for the operator and peer
// sidecars) and never on a client-facing Service.
const SidecarPort = 8089

// SidecarPortName names SidecarPort on the container and on the internal
// Service.
const SidecarPortName = "sidecar"

// Sidecar endpoints the kubelet probes. They are part of the skew contract:
// every supported sidecar serves them.
const (
	// PathPeerPing answers without touching MySQL: the liveness probe.
	PathPeerPing = "/peer/ping"
	// PathHealth reports local mysqld health: the readiness probe.
	PathHealth = "/health"
)

// The other sidecar endpoints, polled by the operator and by peer sidecars.
const (
	// PathLivez fails when the sidecar's fencing loop is wedged. Sidecars
	// older than CapabilityLivez answer 404, so probes keep PathPeerPing
	// until every supported sidecar serves it.
	PathLivez = "/livez"
	// PathSidecarStatus answers a SiteStatus: the sidecar's view of its site.
	PathSidecarStatus = "/status"
	// PathPeerActiveSite answers GET with a PeerActiveSite (what this sidecar
	// believes is active, and whether that belief is still confirmed), and
	// accepts POST of an ActiveSite from the operator announcing a
	// transition (see ActiveSite).
	PathPeerActiveSite = "/peer/active-site"
	// PathArchiverStatus answers an ArchiverStatus.
	PathArchiverStatus = "/archiver/status"
	// PathKeyringStatus answers a KeyringStatus.
	PathKeyringStatus = "/keyring/status"
)

// The operator's auxiliary endpoints on its plain-HTTP listener (:8082),
// polled by sidecars and by people.
const (
	// PathOperatorHealthz answers "ok" while the process serves.
	PathOperatorHealthz = "/healthz"
	// PathOperatorStatus answers an OperatorStatus.
	PathOperatorStatus = "/status"
	// PathActiveSite answers an ActiveSite for one group
	// (?namespace=&group=). Only the leader answers; others reply 503 with
	// ErrorNotLeader.
	PathActiveSite = "/active-site"
	// PathWSStatus is a WebSocket stream of OperatorStatus documents, one
	// at connect and one on every change.
	PathWSStatus = "/ws/status"
	// PathPITRCutoff answers a PITRCutoff for one group (?namespace=&group=).
	PathPITRCutoff = "/pitr-cutoff"
	// PathSiteEvent accepts POST of a SiteEvent from a sidecar for one
	// group (?namespace=&group=): a hint to poll the site now, nothing
	// more. Only the leader takes it; others reply 503 with ErrorNotLeader.
	PathSiteEvent = "/site-event"
)

// Kinds of SiteEvent.
const (
	// SiteEventMySQLExited: the sidecar saw its mysqld's process end.
	SiteEventMySQLExited = "MySQLExited"
)

// SiteEvent is what a sidecar pushes on PathSiteEvent. The operator trusts
// none of it: it only polls the site (and asks its sidecar) at once.
type SiteEvent struct {
	Site string `json:"site"`
	Kind string `json:"kind"`
}

// Query parameters of the per-group operator endpoints.
const (
	QueryNamespace = "namespace"
	QueryGroup     = "group"
)

// Capabilities a sidecar advertises in SiteStatus.Capabilities. A peer that
// does not list one does not have it; features gate on them, not on versions.
const (
	// CapabilityCoverageGTIDv1: PITR retention proves archive coverage by
	// content-bound GTID ranges. Reserved: PITR is not built yet, and no
	// sidecar advertises it (docs/sidecar.md, Version skew).
	CapabilityCoverageGTIDv1 = "coverage=gtid-v1"
	// CapabilityLivez: the sidecar serves PathLivez.
	CapabilityLivez = "livez"
	// CapabilitySelfFenceV1: the sidecar self-fences by the rule of
	// docs/sidecar.md and reports its lease in PeerActiveSite.
	CapabilitySelfFenceV1 = "self-fence=v1"
	// CapabilityTransitionPush: the sidecar accepts POST PathPeerActiveSite.
	CapabilityTransitionPush = "transition-push=v1"
)

// Error codes of ErrorResponse.Error.
const (
	// ErrorNotLeader: this operator process is not the leader; ask again
	// (the Service may route the next request to the leader).
	ErrorNotLeader = "not_leader"
	// ErrorNotFound: no such group, or no such route.
	ErrorNotFound = "not_found"
	// ErrorBadRequest: a parameter or the body is invalid; Message names it.
	ErrorBadRequest = "bad_request"
	// ErrorNotConfigured: the feature is off (for example PITR).
	ErrorNotConfigured = "not_configured"
	// ErrorUnavailable: the answer cannot be given now (not synced yet).
	ErrorUnavailable = "unavailable"
	// ErrorConflict: the request contradicts this sidecar's rules.
	ErrorConflict = "conflict"
)

// ErrorResponse is the body of every non-2xx JSON answer on both sides.
type ErrorResponse struct {
	Error   string `json:"error"`
	Message string `json:"message,omitempty"`
}
