// Package protocol holds what crosses between the operator and the sidecar:
// the sidecar's port and the paths of its HTTP endpoints. Both sides compile
// against these constants. Changes are additive only: an operator and a
// sidecar one minor release apart must still understand each other.
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
