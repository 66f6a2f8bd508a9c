package topology

import (
	"fmt"
	"time"

	"github.com/shipstream/bloodraven/pkg/protocol"
)

// FenceProofMaxAge is how long after the operator sent its request a
// sidecar's fence proof may be acted on. A verdict stays true once it is
// true (an exited process does not come back; a restarted mysqld starts
// read-only, and the sidecar fences it again while the transition is
// announced), so the bound only keeps a pass from promoting on an answer
// from a round long past.
const FenceProofMaxAge = 2 * time.Second

// FenceProofAnswer is one answer of the source's sidecar on
// protocol.PathFenceProof, timed on this process's monotonic clock.
type FenceProofAnswer struct {
	Proof protocol.FenceProof
	// SentAt and ReceivedAt are when the request went out and the answer
	// came back (time.Now readings: monotonic).
	SentAt, ReceivedAt time.Time
}

// FenceProofCheck is what a proof is judged against.
type FenceProofCheck struct {
	TransitionID string
	Source       string
	// LastWritable is the instance of the source the operator last saw
	// writable (its own poll answered super_read_only=OFF and the sidecar
	// named the same server_uuid); zero when this process never saw one.
	LastWritable protocol.Instance
	Now          time.Time
}

// CheckFenceProof reports whether the answer proves that the source can no
// longer take writes, and if not, why (docs/safety.md, "Proof from the old
// primary's sidecar"). Every condition is required:
//   - the operator knows which instance was last writable, and the proof
//     names that pod and server (a sidecar in a replacement pod, whose
//     mysqld cannot even start while the old pod holds the volume, proves
//     nothing about the old pod);
//   - it is about this transition, observed after the sidecar took the
//     transition in, and after the operator sent its request;
//   - it is young enough on this process's clock;
//   - its verdict is Exited for the very container last writable, or
//     Fenced as read from a mysqld of the same server.
func CheckFenceProof(a FenceProofAnswer, c FenceProofCheck) (bool, string) {
	p, want := a.Proof, c.LastWritable
	rtt := a.ReceivedAt.Sub(a.SentAt)
	switch {
	case !want.Complete():
		return false, "this operator process never saw a writable instance of " + c.Source + " with its pod, container and server identity"
	case p.Site != c.Source || p.TransitionID != c.TransitionID:
		return false, fmt.Sprintf("the answer is about site %q and transition %q", p.Site, p.TransitionID)
	case p.Instance.PodUID != want.PodUID:
		return false, fmt.Sprintf("the answer comes from pod %s, but the instance last seen writable ran in pod %s", orNone(p.Instance.PodUID), want.PodUID)
	case p.Instance.ServerUUID != want.ServerUUID:
		return false, fmt.Sprintf("the answer is about server %s, but the instance last seen writable is server %s", orNone(p.Instance.ServerUUID), want.ServerUUID)
	case p.ObservedAgeMillis < 0 || p.AckAgeMillis < p.ObservedAgeMillis:
		return false, "the observation was not taken after the sidecar held the transition"
	case time.Duration(p.ObservedAgeMillis)*time.Millisecond > rtt:
		return false, fmt.Sprintf("the observation is %d ms old, older than the request (%s): it was not taken for it", p.ObservedAgeMillis, rtt.Round(time.Millisecond))
	case c.Now.Sub(a.SentAt) > FenceProofMaxAge:
		return false, fmt.Sprintf("the answer is %s old (more than %s)", c.Now.Sub(a.SentAt).Round(time.Millisecond), FenceProofMaxAge)
	}
	switch p.Verdict {
	case protocol.ProofExited:
		if p.Instance.ContainerID != want.ContainerID {
			return false, fmt.Sprintf("the container that exited is %s, but the one last seen writable is %s", orNone(p.Instance.ContainerID), want.ContainerID)
		}
		return true, fmt.Sprintf("its sidecar saw mysqld (container %s) exit", want.ContainerID)
	case protocol.ProofFenced:
		return true, "its sidecar read super_read_only=ON after taking in the transition"
	}
	if p.Reason != "" {
		return false, "no proof: " + p.Reason
	}
	return false, "no proof (verdict " + orNone(p.Verdict) + ")"
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
