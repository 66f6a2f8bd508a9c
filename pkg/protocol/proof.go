package protocol

// The fence proof (docs/safety.md, "Proof from the old primary's sidecar").
// While an automatic failover waits for its unreachable source to have
// fenced itself, the operator asks the source's sidecar whether the site can
// still take writes. The sidecar first takes in the transition (as a pushed
// announcement: from then on its fencing rule fences, and fences again, its
// site), and only then looks at its mysqld. Its answer lets the operator
// promote before the self-fence bound when it proves, for the very instance
// the operator last saw writable, that this instance's process has exited
// or that the sidecar itself read super_read_only=ON.

// PathFenceProof accepts POST of a FenceProofRequest and answers a
// FenceProof. Sidecars without CapabilityFenceProof answer 404 or 405,
// which is no proof.
const PathFenceProof = "/fence-proof"

// CapabilityFenceProof: the sidecar serves PathFenceProof and reports its
// Instance in SiteStatus.
const CapabilityFenceProof = "fence-proof=v1"

// Instance names one run of mysqld: the pod, the container (or process) and
// the server. A sidecar in a replacement pod reports another PodUID, a
// restarted mysqld another ContainerID.
type Instance struct {
	// PodUID is the pod's metadata.uid (the downward API); empty when the
	// sidecar was not given it.
	PodUID string `json:"podUID,omitempty"`
	// ContainerID is the mysqld container's ID as its cgroup names it, or
	// "process:<pid>:<start time in clock ticks>" where no container ID is
	// visible; empty when no mysqld process was found.
	ContainerID string `json:"containerID,omitempty"`
	// ServerUUID is @@server_uuid as the sidecar last read it from that
	// process's mysqld; empty when it never answered.
	ServerUUID string `json:"serverUUID,omitempty"`
}

// Complete reports whether every part of the identity is known: only a
// complete identity can be matched against another.
func (i Instance) Complete() bool {
	return i.PodUID != "" && i.ContainerID != "" && i.ServerUUID != ""
}

// FenceProofRequest asks for a proof about one transition. Announcement is
// the operator's ActiveSite document with that transition; the sidecar takes
// it in as a push (it can only withdraw a confirmation) before it looks.
type FenceProofRequest struct {
	Announcement ActiveSite `json:"announcement"`
}

// Verdicts of a FenceProof.
const (
	// ProofExited: the process of Instance has exited (no such process, or
	// a zombie), and the pid file names no other running process.
	ProofExited = "Exited"
	// ProofFenced: the sidecar read super_read_only=ON from the mysqld of
	// Instance after taking in the transition.
	ProofFenced = "Fenced"
	// ProofNone: neither could be established; Reason says why.
	ProofNone = "None"
)

// FenceProof is a sidecar's answer on PathFenceProof.
type FenceProof struct {
	Site string `json:"site"`
	// TransitionID is the transition the sidecar took in before looking.
	TransitionID string `json:"transitionID"`
	// Verdict is one of the Proof* values; Reason explains ProofNone (an
	// authentication error, a timeout, a process still running...).
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	// Instance is what the verdict is about: for ProofExited the instance
	// that exited, for ProofFenced the one that answered.
	Instance Instance `json:"instance"`
	// AckAgeMillis is how long before answering the sidecar first held
	// TransitionID; ObservedAgeMillis how long before answering it made the
	// observation. Durations, so the hosts' clocks need not agree; the
	// operator checks that the observation followed both the ack and its
	// own request.
	AckAgeMillis      int64 `json:"ackAgeMillis"`
	ObservedAgeMillis int64 `json:"observedAgeMillis"`
}
