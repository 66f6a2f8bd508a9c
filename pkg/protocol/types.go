package protocol

import "time"

// Roles a sidecar reports for its local mysqld (MySQLStatus.Role).
const (
	// RoleSource: writable and not replicating.
	RoleSource = "Source"
	// RoleReplica: read-only with a replication channel.
	RoleReplica = "Replica"
	// RoleReadOnly: read-only without a replication channel (fenced, or
	// not configured yet).
	RoleReadOnly = "ReadOnly"
	// RoleInconsistent: writable while replicating, which no healthy site is.
	RoleInconsistent = "Inconsistent"
	// RoleUnknown: mysqld did not answer.
	RoleUnknown = "Unknown"
)

// Replication states (ReplicationStatus.State), the values of the CRD's
// status.sites[].replication.
const (
	ReplicationNotReplicating = "NotReplicating"
	ReplicationRunning        = "Running"
	ReplicationConnecting     = "Connecting"
	ReplicationStopped        = "Stopped"
	ReplicationError          = "Error"
)

// SiteStatus is one site's view as its sidecar sees it: the answer of the
// sidecar's PathSidecarStatus, and the one type the operator's topology
// manager uses for a sidecar's report. The operator reads it as a second
// source next to its own MySQL poll: a site whose mysqld the operator cannot
// reach but whose sidecar reports a healthy local mysqld is a network
// problem, not a dead site.
type SiteStatus struct {
	Namespace string `json:"namespace"`
	Group     string `json:"group"`
	Site      string `json:"site"`
	// SidecarVersion is the sidecar's release.
	SidecarVersion string `json:"sidecarVersion,omitempty"`
	// Capabilities lists the Capability* strings this sidecar supports.
	Capabilities []string `json:"capabilities,omitempty"`
	// ObservedAt is when MySQL was last observed (sidecar wall clock,
	// informational).
	ObservedAt *time.Time `json:"observedAt,omitempty"`
	// ObservationAgeMillis is how old that observation was when the answer
	// was written; a duration, so clock offsets between hosts do not matter.
	ObservationAgeMillis *int64 `json:"observationAgeMillis,omitempty"`
	// MySQL is the local mysqld; nil means not reported.
	MySQL *MySQLStatus `json:"mysql,omitempty"`
	// Fencing is the sidecar's self-fencing state; nil means not reported
	// (a sidecar without CapabilitySelfFenceV1).
	Fencing *FencingStatus `json:"fencing,omitempty"`
	// Process is the local mysqld's process as the latest round saw it;
	// nil means not reported (no pid file, or a sidecar without
	// CapabilityFenceProof).
	Process *MySQLProcess `json:"process,omitempty"`
}

// MySQLProcess is the mysqld instance a sidecar last saw running.
type MySQLProcess struct {
	Instance Instance `json:"instance"`
	// Exited: that instance's process has ended and the pid file names no
	// other running process.
	Exited bool `json:"exited"`
	// Error is why the process could not be looked at.
	Error string `json:"error,omitempty"`
}

// HasCapability reports whether the status lists capability c.
func (s SiteStatus) HasCapability(c string) bool {
	for _, x := range s.Capabilities {
		if x == c {
			return true
		}
	}
	return false
}

// ReportsHealthyMySQL reports whether the sidecar saw its local mysqld answer,
// with a consistent role, no longer than maxAge before it answered. The
// operator's topology manager uses it as its second source: a site whose
// mysqld the operator cannot reach while this holds is cut off from the
// operator by the network, not dead (docs/sidecar.md).
func (s SiteStatus) ReportsHealthyMySQL(maxAge time.Duration) bool {
	if s.MySQL == nil || !s.MySQL.Reachable || s.ObservationAgeMillis == nil {
		return false
	}
	if s.Process != nil && s.Process.Exited {
		// The process was looked at after the observation: it is gone.
		return false
	}
	if time.Duration(*s.ObservationAgeMillis)*time.Millisecond > maxAge {
		return false
	}
	switch s.MySQL.Role {
	case RoleSource, RoleReplica, RoleReadOnly:
		return true
	default:
		return false
	}
}

// MySQLStatus is the local mysqld as the sidecar last observed it.
type MySQLStatus struct {
	// Reachable is false when the last observation failed; Error says why.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// Role is one of the Role* values.
	Role string `json:"role,omitempty"`
	// Version is @@version.
	Version    string `json:"version,omitempty"`
	ServerUUID string `json:"serverUUID,omitempty"`
	ServerID   uint32 `json:"serverID,omitempty"`
	// ReadOnly and SuperReadOnly are nil when not reported (mysqld not
	// reachable, or an older sidecar).
	ReadOnly      *bool  `json:"readOnly,omitempty"`
	SuperReadOnly *bool  `json:"superReadOnly,omitempty"`
	GTIDExecuted  string `json:"gtidExecuted,omitempty"`
	GTIDPurged    string `json:"gtidPurged,omitempty"`
	// Replication is nil when not reported; State NotReplicating when the
	// server has no replication channel.
	Replication *ReplicationStatus `json:"replication,omitempty"`
}

// Writable reports whether the report says clients may write. An unreported
// flag is not "off": it returns false, ok=false.
func (m *MySQLStatus) Writable() (writable, ok bool) {
	if m == nil || m.ReadOnly == nil || m.SuperReadOnly == nil {
		return false, false
	}
	return !*m.ReadOnly && !*m.SuperReadOnly, true
}

// ReplicationStatus is a replica's channel, from SHOW REPLICA STATUS.
type ReplicationStatus struct {
	// State is one of the Replication* values.
	State               string `json:"state"`
	SourceHost          string `json:"sourceHost,omitempty"`
	SourcePort          int    `json:"sourcePort,omitempty"`
	IORunning           string `json:"ioRunning,omitempty"`
	SQLRunning          string `json:"sqlRunning,omitempty"`
	SecondsBehindSource *int64 `json:"secondsBehindSource,omitempty"`
	RetrievedGTIDSet    string `json:"retrievedGtidSet,omitempty"`
	LastIOErrno         int    `json:"lastIOErrno,omitempty"`
	LastIOError         string `json:"lastIOError,omitempty"`
	LastSQLErrno        int    `json:"lastSQLErrno,omitempty"`
	LastSQLError        string `json:"lastSQLError,omitempty"`
}

// FencingStatus is the sidecar's self-fencing state.
type FencingStatus struct {
	// View is what the sidecar believes is active (as PathPeerActiveSite).
	View PeerActiveSite `json:"view"`
	// LocalConfirmedForMillis is how much longer this site stays confirmed
	// as active (by the operator or a peer) on the sidecar's clock; 0 when
	// it is not confirmed.
	LocalConfirmedForMillis int64 `json:"localConfirmedForMillis"`
	// LastDecision is the fencing rule's latest verdict (a Reason* of
	// pkg/sidecar/fencing), LastDecisionAt when it was taken.
	LastDecision   string     `json:"lastDecision,omitempty"`
	LastDecisionAt *time.Time `json:"lastDecisionAt,omitempty"`
	// SelfFencedAt is when this sidecar last set super_read_only=ON itself.
	SelfFencedAt *time.Time `json:"selfFencedAt,omitempty"`
	// SelfFenceCount counts self-fences since the sidecar started.
	SelfFenceCount int64 `json:"selfFenceCount"`
	// OperatorError is why the latest request to the operator failed;
	// empty when it answered.
	OperatorError string `json:"operatorError,omitempty"`
	// Peers are the peer sidecars as the latest round saw them.
	Peers []PeerState `json:"peers,omitempty"`
	// LeaseTimeout and PeerCheckInterval are the sidecar's settings (Go
	// duration strings).
	LeaseTimeout      string `json:"leaseTimeout,omitempty"`
	PeerCheckInterval string `json:"peerCheckInterval,omitempty"`
}

// PeerState is one peer sidecar in FencingStatus.
type PeerState struct {
	Site      string `json:"site"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// ConfirmsThisSite: its latest report still confirms the reporting
	// sidecar's site as active.
	ConfirmsThisSite bool `json:"confirmsThisSite"`
}

// TransitionNotice is an active-site change in flight, as the operator
// announces it. While a transition is announced nobody confirms the old
// active site any more.
type TransitionNotice struct {
	ID                 string    `json:"id,omitempty"`
	Kind               string    `json:"kind,omitempty"`
	SourceSite         string    `json:"sourceSite,omitempty"`
	TargetSite         string    `json:"targetSite,omitempty"`
	TopologyGeneration int64     `json:"topologyGeneration,omitempty"`
	Step               string    `json:"step,omitempty"`
	StartTime          time.Time `json:"startTime,omitzero"`
}

// ActiveSite is the operator's answer on PathActiveSite: the group's
// confirmed active site. It is read from the persisted status, never from a
// decision not yet written. The operator also POSTs it to a sidecar's
// PathPeerActiveSite to announce a transition; a pushed document can only
// withdraw a confirmation, never grant one.
type ActiveSite struct {
	Namespace string `json:"namespace"`
	Group     string `json:"group"`
	// ActiveSite is the site serving as primary; empty when none is.
	ActiveSite string `json:"activeSite"`
	// TopologyGeneration is status.topologyGeneration.
	TopologyGeneration int64 `json:"topologyGeneration"`
	// Transition is set while an active-site change is in flight; the
	// operator then confirms no site.
	Transition *TransitionNotice `json:"transition,omitempty"`
	// Since is when ActiveSite became active, when known.
	Since *time.Time `json:"since,omitempty"`
}

// Confirms reports whether the answer confirms site as the active site: it
// names it, and no transition is announced.
func (a ActiveSite) Confirms(site string) bool {
	return site != "" && a.ActiveSite == site && a.Transition == nil
}

// Transition steps at and after which the operator has made (or is making)
// the target writable on purpose; the spelling is the API's TransitionStep.
var promotedSteps = map[string]bool{"Promoting": true, "RepointingFollowers": true, "DrainingSessions": true, "Publishing": true}

// PromotedTarget is the site a transition in flight is promoting: its
// target once the operator recorded Promoting (or a later step), else "".
// Between that write and the publication of the new active site, the
// operator's own answer vouches for the target, so its sidecar does not
// fence a promotion the operator is finishing. Only a polled answer may be
// read this way: a pushed document never confirms anything.
func (a ActiveSite) PromotedTarget() string {
	if t := a.Transition; t != nil && promotedSteps[t.Step] {
		return t.TargetSite
	}
	return ""
}

// PeerActiveSite is a sidecar's answer on PathPeerActiveSite: what it last
// heard from the operator and whether that is still within its lease.
type PeerActiveSite struct {
	// Site is the answering sidecar's site.
	Site string `json:"site"`
	// ActiveSite is what the operator last told this sidecar is active;
	// empty when it has heard nothing or the operator named none.
	ActiveSite string `json:"activeSite"`
	// TopologyGeneration of that answer.
	TopologyGeneration int64 `json:"topologyGeneration"`
	// Transition is set when the operator announced a transition.
	Transition *TransitionNotice `json:"transition,omitempty"`
	// Since is when this sidecar first heard the current ActiveSite (its
	// wall clock; informational only).
	Since *time.Time `json:"since,omitempty"`
	// Confirmed is true while the operator's answer is younger than this
	// sidecar's lease timeout (measured from when it sent the request).
	Confirmed bool `json:"confirmed"`
	// ValidForMillis is how much longer the answer stays within the lease,
	// on this sidecar's monotonic clock; 0 when not confirmed. Durations,
	// not timestamps, cross the wire, so clock offsets between pods do not
	// matter.
	ValidForMillis int64 `json:"validForMillis"`
	// OperatorAnswerAgeMillis is how old the last operator answer is; nil
	// when the sidecar never got one.
	OperatorAnswerAgeMillis *int64 `json:"operatorAnswerAgeMillis,omitempty"`
}

// ConfirmsFor reports whether this peer answer confirms site as active, and
// for how long after the request was sent.
func (p PeerActiveSite) ConfirmsFor(site string) (time.Duration, bool) {
	if !p.Confirmed || p.ValidForMillis <= 0 || site == "" || p.ActiveSite != site || p.Transition != nil {
		return 0, false
	}
	return time.Duration(p.ValidForMillis) * time.Millisecond, true
}

// Health is the sidecar's PathHealth answer (200 when Ready, else 503).
type Health struct {
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"`
	Role   string `json:"role,omitempty"`
}

// Livez is the sidecar's PathLivez answer (200 when Live, else 503).
type Livez struct {
	Live bool `json:"live"`
	// FencingLoopLastProgressAgeMillis is how long ago the fencing loop
	// last completed a round.
	FencingLoopLastProgressAgeMillis int64  `json:"fencingLoopLastProgressAgeMillis"`
	Reason                           string `json:"reason,omitempty"`
}

// Ping is the sidecar's PathPeerPing answer; it never touches MySQL.
type Ping struct {
	Site           string `json:"site"`
	SidecarVersion string `json:"sidecarVersion,omitempty"`
}

// ArchiverStatus is the sidecar's PathArchiverStatus answer. StoreReady and
// ConsecutiveFailedScans are additive fields: nil means not reported, never
// "failed".
type ArchiverStatus struct {
	Enabled                bool       `json:"enabled"`
	State                  string     `json:"state,omitempty"`
	StoreReady             *bool      `json:"storeReady,omitempty"`
	ConsecutiveFailedScans *int64     `json:"consecutiveFailedScans,omitempty"`
	LastScanAt             *time.Time `json:"lastScanAt,omitempty"`
	Message                string     `json:"message,omitempty"`
}

// KeyringStatus is the sidecar's PathKeyringStatus answer.
type KeyringStatus struct {
	Enabled bool   `json:"enabled"`
	State   string `json:"state,omitempty"`
	Digest  string `json:"keyringDigest,omitempty"`
	Message string `json:"message,omitempty"`
}

// StateDisabled is the State of a feature that is not built or not enabled.
const StateDisabled = "disabled"

// PITRCutoff is the operator's PathPITRCutoff answer.
type PITRCutoff struct {
	Namespace  string `json:"namespace"`
	Group      string `json:"group"`
	Configured bool   `json:"configured"`
	// Coverage names the cutoff's proof kind (CapabilityCoverageGTIDv1);
	// an answer without it is a time-only reply, which updated sidecars
	// refuse.
	Coverage string `json:"coverage,omitempty"`
	// CutoffGTIDSet is what may be retired; empty when Configured is false.
	CutoffGTIDSet string `json:"cutoffGtidSet,omitempty"`
	Message       string `json:"message,omitempty"`
}

// OperatorStatus is the operator's PathOperatorStatus answer and each
// message of PathWSStatus.
type OperatorStatus struct {
	// Leader is whether the answering process is the leader. A non-leader
	// still answers from its informer cache.
	Leader      bool          `json:"leader"`
	GeneratedAt time.Time     `json:"generatedAt"`
	Groups      []GroupStatus `json:"groups"`
}

// GroupStatus is one failover group as the operator's status records it.
type GroupStatus struct {
	Namespace          string            `json:"namespace"`
	Name               string            `json:"name"`
	ActiveSite         string            `json:"activeSite,omitempty"`
	TopologyGeneration int64             `json:"topologyGeneration"`
	Ready              string            `json:"ready,omitempty"` // the Ready condition's status
	UpdatePhase        string            `json:"updatePhase,omitempty"`
	Transition         *TransitionNotice `json:"transition,omitempty"`
	LastFailover       *LastFailover     `json:"lastFailover,omitempty"`
	Sites              []GroupSite       `json:"sites"`
}

// LastFailover mirrors status.lastFailover.
type LastFailover struct {
	Time                  time.Time `json:"time"`
	Target                string    `json:"target"`
	Source                string    `json:"source,omitempty"`
	Kind                  string    `json:"kind,omitempty"`
	PromotionGTIDExecuted string    `json:"promotionGtidExecuted,omitempty"`
}

// GroupSite is one site of a GroupStatus, with the CR's values (state
// Writable, ReadOnly, Unreachable, Unknown).
type GroupSite struct {
	Name         string                `json:"name"`
	Role         string                `json:"role,omitempty"`
	State        string                `json:"state,omitempty"`
	GTIDExecuted string                `json:"gtidExecuted,omitempty"`
	Replication  *GroupSiteReplication `json:"replication,omitempty"`
}

// GroupSiteReplication is a site's replication as the CR records it.
type GroupSiteReplication struct {
	State               string `json:"state,omitempty"`
	SourceHost          string `json:"sourceHost,omitempty"`
	SecondsBehindSource *int64 `json:"secondsBehindSource,omitempty"`
}
