// Package topology is the topology manager's decision logic: a pure function
// from what the operator observed of a failover group's sites (plus the
// group's persisted status and the operator's in-memory clone bookkeeping) to
// the status it should publish and the MySQL actions to take. It does no I/O
// and reads no clock: Decide is tested with tables and randomized inputs,
// and the safety invariants of docs/safety.md live here, among them:
//
//   - a site is made writable only if its GTID set contains the set of every
//     other reachable site (and the last known set of every unreachable one);
//     incomparable sets make nothing writable;
//   - a clone never overwrites a site holding transactions the donor lacks;
//   - a bootstrap records its intent (status.transition) before anything is
//     fenced or promoted, and completes by bumping topologyGeneration in the
//     same status write that clears the intent.
package topology

import (
	"time"

	"github.com/shipstream/bloodraven/pkg/protocol"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// SiteSpec is what the decision needs of spec.sites[].
type SiteSpec struct {
	Name string
	Role v1alpha1.SiteRole
}

// Replica is a site's replication channel as SHOW REPLICA STATUS reports it.
type Replica struct {
	SourceHost string
	SourcePort int
	// IORunning is Replica_IO_Running: Yes, No or Connecting.
	IORunning    string
	SQLRunning   bool
	LastIOErrno  int
	LastIOError  string
	LastSQLErrno int
	LastSQLError string
	// SecondsBehindSource is nil when MySQL reports NULL.
	SecondsBehindSource *int64
	// Retrieved is Retrieved_Gtid_Set: received, maybe not applied.
	Retrieved gtid.Set
	// ReadError is what the source refused when LastIOErrno is its fatal
	// read error (13114): purged logs, or a replica holding more of its
	// own GTIDs than it has (SourceReadError).
	ReadError SourceReadError
}

// Observed is one successful poll of a site.
type Observed struct {
	ServerUUID string
	// Writable: super_read_only is OFF, so the server commits client
	// writes: every account's when read_only is OFF too, those of accounts
	// with SUPER or CONNECTION_ADMIN when only read_only is ON. A site is
	// fenced only when super_read_only is ON (!Writable; docs/safety.md).
	Writable bool
	// ReadOnly: read_only is ON. A Writable site that is ReadOnly is not
	// fenced, and it does not serve the application either (serving).
	ReadOnly bool
	Executed gtid.Set
	Purged   gtid.Set
	// Replica is nil when the site has no replication channel.
	Replica *Replica
	// At is when the poll completed.
	At time.Time
}

// serving: the site takes every account's writes (read_only and
// super_read_only OFF), as the active site must.
func (o *Observed) serving() bool { return o.Writable && !o.ReadOnly }

// CloneState is the operator's in-memory record of clones into a site.
type CloneState struct {
	// Running: a CLONE INSTANCE into the site is in flight.
	Running bool
	Donor   string
	Started time.Time
	// FailedAt and Error describe the last failed clone; zero when the last
	// clone succeeded or none ran in this process.
	FailedAt time.Time
	Error    string
}

// SiteInput is everything the operator knows of one site right now.
type SiteInput struct {
	Reach observe.Reachability
	// Fresh: the latest poll succeeded (Last is current).
	Fresh bool
	// Last is the latest successful poll in this process; nil if none.
	Last *Observed
	// PollError is the latest poll's error, for messages.
	PollError string
	// SidecarHealthy: the latest poll of mysqld failed, but the site's
	// sidecar answered the operator at the same time and reports its local
	// mysqld healthy (protocol.SiteStatus.ReportsHealthyMySQL): the operator
	// is cut off from mysqld by the network, the site is not dead.
	SidecarHealthy bool
	// SidecarSeen: the site's sidecar answered the operator in the latest
	// poll round in which the operator reached the site at all (its mysqld
	// or its sidecar). False when the sidecar did not answer then, and when
	// this operator process never reached the site: an old primary is
	// taken to fence itself by SelfFenceBound only if its sidecar was seen
	// running when the operator lost it (docs/safety.md, rule 1).
	SidecarSeen bool
	// LastWritable is the instance this process last saw writable at the
	// site, as its own poll and the sidecar's report agreed on it; zero
	// when none was (docs/safety.md, "Proof from the old primary's
	// sidecar").
	LastWritable protocol.Instance
	// FenceProof is the site's sidecar's answer to this pass's fence-proof
	// request; nil when none was asked or it did not answer.
	FenceProof *FenceProofAnswer
	Clone      CloneState
	// MutationError is the last failed repoint or replica start of the site,
	// cleared by the next success.
	MutationError string
	// Evidence is the site's replication lag evidence read in its latest
	// successful poll (performance_schema; LagEvidence); nil when it has no
	// channel or the read failed. Automatic failover judges a candidate's
	// lag from it alone (judgeLag).
	Evidence *LagEvidence
}

// Input is one decision's input.
type Input struct {
	// Now is when the decision is taken. It must not be earlier than the
	// read of Status from the cache the operator's /active-site answers
	// from: a transition found in Status is then already served to the
	// sidecars, which is where an unreachable primary's self-fence
	// deadline starts (see startFailover).
	Now        time.Time
	Namespace  string
	Group      string
	Generation int64
	// Sites in spec order.
	Sites []SiteSpec
	// MaxLagSeconds is spec.replication.maxLagSeconds (explicit 0 kept).
	MaxLagSeconds int64
	// CloneRetryDelay is how long after a failed clone the next one may start.
	CloneRetryDelay time.Duration
	// StatusRefresh bounds how stale the fast-changing site fields
	// (lastSeenTime, gtidExecuted, secondsBehindSource) may be in status
	// before they are rewritten on their own; other changes rewrite them at once.
	StatusRefresh time.Duration
	// Status is the group's status as the operator's informer cache holds
	// it (the resourceVersion the decision's status write is conditioned
	// on: a decision on a stale copy fails to store anything).
	Status v1alpha1.MysqlFailoverGroupStatus
	// Observed holds every site of Sites.
	Observed map[string]SiteInput
	// NewTransitionID names a transition this decision may record.
	NewTransitionID string
	// TransitionSeen is when this operator process first saw
	// Status.Transition (by its ID), on the clock Now comes from; zero when
	// unknown. It bounds the self-fence wait on this process's own clock
	// (deadline.go).
	TransitionSeen time.Time
	// TransitionUnserved is true when Status is this process's own last
	// write, newer than the informer cache /active-site answers from, and
	// that cache does not hold Status.Transition yet: sidecars may still be
	// confirmed as before it, so no self-fence deadline may start (Now
	// would be earlier than the cache read the deadline counts from).
	TransitionUnserved bool
	// Failover configures automatic failover; a zero SelfFenceBound and
	// Cooldown are used as given (tests), callers pass the spec's values.
	Failover FailoverSettings
	// Reclone is the reclone-site annotation, nil when absent.
	Reclone *RecloneInput
	// Planned is the planned-failover part (holds, ordered update, hold
	// release).
	Planned PlannedInput
}

// ActionKind is a MySQL mutation the executor performs.
type ActionKind string

const (
	// Fence sets super_read_only=ON.
	Fence ActionKind = "Fence"
	// MakeWritable (optionally after STOP REPLICA and RESET REPLICA ALL)
	// clears read_only. The executor runs it only if every Fence before it
	// in the same decision succeeded.
	MakeWritable ActionKind = "MakeWritable"
	// Repoint changes the site's source to SourceHost:SourcePort with
	// auto-position and starts replication.
	Repoint ActionKind = "Repoint"
	// StartReplica starts stopped replication threads.
	StartReplica ActionKind = "StartReplica"
	// Clone replaces the site's data with the donor's (CLONE INSTANCE). The
	// executor re-checks, on fresh reads, that the site's set is still a
	// subset of the donor's before sending it.
	Clone ActionKind = "Clone"
)

// Action is one mutation.
type Action struct {
	Kind ActionKind
	Site string
	// SourceHost and SourcePort: the active site's internal Service, for
	// Repoint (the replication source) and Clone (the donor address as the
	// recipient resolves it).
	SourceHost string
	SourcePort int
	// Donor is the donor site of a Clone.
	Donor string
	// ResetReplication: MakeWritable first stops and forgets the site's
	// replication channel.
	ResetReplication bool
	// Discard, on a Clone requested through the reclone annotation, is the
	// set of the site's transactions the donor lacks that the request
	// accepted to destroy (recorded in status first). The executor clones
	// only if the site's fresh set minus the donor's is within it; a Clone
	// without Discard never destroys anything.
	Discard gtid.Set
	// Why is a human-readable reason, for logs and Events.
	Why string
}

// Event is a Kubernetes Event the decision asks for (recorded once, when the
// condition it reports first appears).
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// Decision is Decide's output.
type Decision struct {
	// Status is the status to publish (fields the topology manager does not
	// own are copied from Input.Status).
	Status v1alpha1.MysqlFailoverGroupStatus
	// WriteFirst: Status records an intent or completes one (a transition,
	// a topologyGeneration bump); it must be written, conditioned on the
	// resourceVersion the input was read at, before any action runs, and the
	// actions must not run if the write fails.
	WriteFirst bool
	Actions    []Action
	Events     []Event
	// ClearRecloneAnnotation: the reclone-site annotation was handled
	// (accepted or refused) and is removed once the status is stored and
	// the actions ran.
	ClearRecloneAnnotation bool
}
