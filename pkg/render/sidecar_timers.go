package render

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shipstream/bloodraven/pkg/protocol"
)

// SidecarTimers reads the leaseTimeout and peerCheckInterval a running pod's
// sidecar was started with, from the environment its template gave it
// (protocol defaults where the template set none). ok is false for a pod
// without the sidecar container. A pod keeps the values it was created
// with until it is recreated, so during a rollout of spec.sidecar they can
// differ from the spec's.
func SidecarTimers(pod *corev1.Pod) (lease, peerCheck time.Duration, ok bool) {
	for _, c := range pod.Spec.Containers {
		if c.Name != ContainerSidecar {
			continue
		}
		lease, peerCheck = protocol.DefaultLeaseTimeout, protocol.DefaultPeerCheckInterval
		for _, e := range c.Env {
			d, err := time.ParseDuration(e.Value)
			if err != nil {
				continue
			}
			switch e.Name {
			case protocol.EnvLeaseTimeout:
				lease = d
			case protocol.EnvPeerCheckInterval:
				peerCheck = d
			}
		}
		return lease, peerCheck, true
	}
	return 0, 0, false
}
