package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MysqlFailoverGroupStatus is what the operator observed and is doing.
// Fields that cannot be rebuilt from observation (topologyGeneration,
// transition, lastFailover, planned-failover claim and result, restore
// records) are the operator's durable memory: they survive restarts.
type MysqlFailoverGroupStatus struct {
	// observedGeneration is the metadata.generation the topology manager
	// last applied; the topology conditions carry the same value.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// activeSite is the site currently serving as primary.
	// +optional
	ActiveSite string `json:"activeSite,omitempty"`
	// topologyGeneration increments on every authoritative active-site change
	// (bootstrap completion, emergency, planned and ordered-update failover,
	// restore-in-place promotion). A change revokes every deployment lease of
	// the group. It is not metadata.generation.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TopologyGeneration int64 `json:"topologyGeneration,omitempty"`
	// transition is the persisted intent of an active-site change in flight.
	// It is written before anything is fenced or promoted and cleared in the
	// same write that publishes the new topologyGeneration. While it is set
	// the deployment API answers renewals with 423 unstable.
	// +optional
	Transition *Transition `json:"transition,omitempty"`
	// automaticFailoverHold, when set, stops automatic failover until an
	// administrator clears it (deployment API unstableReason
	// AutomaticFailoverHeld).
	// +optional
	AutomaticFailoverHold *AutomaticFailoverHold `json:"automaticFailoverHold,omitempty"`
	// sites is the per-site observation.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Sites []SiteStatus `json:"sites,omitempty"`
	// conditions: Ready, Degraded, RecoveryPending, Bootstrapping, Updating,
	// EncryptionAtRestReady, PITRArchiveReady, TLSReady (with spec.tls).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// lastFailover is the most recent authoritative active-site change made
	// by a failover (emergency, planned or ordered-update).
	// +optional
	LastFailover *LastFailover `json:"lastFailover,omitempty"`
	// recloneHistory records the reclones requested through the
	// bloodraven.shipstream.io/reclone-site annotation (the latest 10,
	// oldest first), each with the transactions it discarded. An entry is
	// written before the clone starts, so no divergent set is destroyed
	// without a record.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	RecloneHistory []RecloneRecord `json:"recloneHistory,omitempty"`
	// updatePhase is the current step of an ordered update; empty when none
	// is running.
	// +optional
	UpdatePhase UpdatePhase `json:"updatePhase,omitempty"`
	// restore is the initFromBackup restore, in flight or finished.
	// +optional
	Restore *RestoreStatus `json:"restore,omitempty"`
	// restoreInPlace is the latest in-place restore, in flight or finished.
	// +optional
	RestoreInPlace *RestoreInPlaceStatus `json:"restoreInPlace,omitempty"`
	// restoreReclones tracks the follower reclones a full in-place restore
	// requires.
	// +optional
	RestoreReclones *RestoreReclonesStatus `json:"restoreReclones,omitempty"`
	// backupSchedules is a per-schedule rollup.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	BackupSchedules []BackupScheduleStatus `json:"backupSchedules,omitempty"`
	// lastBackupTime is when the most recent successful backup of any
	// profile completed.
	// +optional
	LastBackupTime *metav1.Time `json:"lastBackupTime,omitempty"`
	// pitr summarizes the binary-log archive when spec.backup.pitr is enabled.
	// +optional
	PITR *PITRStatus `json:"pitr,omitempty"`
	// plannedFailover is the durable claim and record of the most recent
	// planned failover. Kept until a newer request replaces it.
	// +optional
	PlannedFailover *PlannedFailoverStatus `json:"plannedFailover,omitempty"`
	// dragonfly is the observed Dragonfly state when enabled.
	// +optional
	Dragonfly *DragonflyStatus `json:"dragonfly,omitempty"`
	// encryptionAtRest is the observed keyring state when enabled. Alert on
	// the EncryptionAtRestReady condition.
	// +optional
	EncryptionAtRest *EncryptionAtRestStatus `json:"encryptionAtRest,omitempty"`
}

// TransitionKind is what started an active-site change.
// +kubebuilder:validation:Enum=Bootstrap;Automatic;Planned;OrderedUpdate;RestoreInPlace;SplitBrainResolution
type TransitionKind string

const (
	TransitionBootstrap            TransitionKind = "Bootstrap"
	TransitionAutomatic            TransitionKind = "Automatic"
	TransitionPlanned              TransitionKind = "Planned"
	TransitionOrderedUpdate        TransitionKind = "OrderedUpdate"
	TransitionRestoreInPlace       TransitionKind = "RestoreInPlace"
	TransitionSplitBrainResolution TransitionKind = "SplitBrainResolution"
)

// TransitionStep is the step an active-site change has reached. Steps are
// recorded before they are acted on, so a restarted operator resumes at the
// recorded step.
// +kubebuilder:validation:Enum=Recorded;NotifyingSidecars;FencingSource;AwaitingSelfFence;CatchingUp;Promoting;RepointingFollowers;DrainingSessions;Publishing;RollingBack
type TransitionStep string

const (
	StepRecorded            TransitionStep = "Recorded"
	StepNotifyingSidecars   TransitionStep = "NotifyingSidecars"
	StepFencingSource       TransitionStep = "FencingSource"
	StepAwaitingSelfFence   TransitionStep = "AwaitingSelfFence"
	StepCatchingUp          TransitionStep = "CatchingUp"
	StepPromoting           TransitionStep = "Promoting"
	StepRepointingFollowers TransitionStep = "RepointingFollowers"
	StepDrainingSessions    TransitionStep = "DrainingSessions"
	StepPublishing          TransitionStep = "Publishing"
	StepRollingBack         TransitionStep = "RollingBack"
)

// Transition is the persisted intent of an active-site change in flight.
type Transition struct {
	// id identifies this transition across operator restarts (a UUID); logs,
	// Events and the planned-failover claim refer to it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id"`
	// kind of change: Bootstrap, Automatic, Planned, OrderedUpdate,
	// RestoreInPlace or SplitBrainResolution.
	// +required
	Kind TransitionKind `json:"kind"`
	// sourceSite is the active site being replaced; empty for a bootstrap.
	// +optional
	// +kubebuilder:validation:MaxLength=20
	SourceSite string `json:"sourceSite,omitempty"`
	// targetSite is the site being made active.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	TargetSite string `json:"targetSite"`
	// topologyGeneration is the generation the change publishes when it
	// completes (the current one plus one).
	// +required
	// +kubebuilder:validation:Minimum=1
	TopologyGeneration int64 `json:"topologyGeneration"`
	// step reached.
	// +required
	Step TransitionStep `json:"step"`
	// startTime is when the intent was recorded.
	// +required
	StartTime metav1.Time `json:"startTime"`
	// stepTime is when step was entered.
	// +optional
	StepTime *metav1.Time `json:"stepTime,omitempty"`
	// sourceFenceDeadline is, for an unreachable source, the time after which
	// its sidecar has fenced it by itself; promotion waits for it. Kept to the
	// microsecond, so the wait is not rounded up to a whole second.
	// +optional
	SourceFenceDeadline *PreciseTime `json:"sourceFenceDeadline,omitempty"`
	// candidateGtidSet is, for an automatic failover, the target's
	// gtid_executed together with its Retrieved_Gtid_Set when it was chosen:
	// what it held then. It is not promoted before it executed all of it,
	// and what it lacks of it at promotion is reported as possibly lost.
	// +optional
	CandidateGTIDSet string `json:"candidateGtidSet,omitempty"`
	// message explains the step in human terms.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// AutomaticFailoverHold stops automatic failover of the group.
type AutomaticFailoverHold struct {
	// reason is a CamelCase cause, for example PlannedFailoverSourceLeftFenced.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason"`
	// since is when the hold was placed.
	// +required
	Since metav1.Time `json:"since"`
	// message explains how to clear it.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// SiteState is what the operator last observed of a site.
// +kubebuilder:validation:Enum=Writable;ReadOnly;Unreachable;Unknown
type SiteState string

const (
	SiteWritable    SiteState = "Writable"
	SiteReadOnly    SiteState = "ReadOnly"
	SiteUnreachable SiteState = "Unreachable"
	SiteUnknown     SiteState = "Unknown"
)

// ReplicationState is the replication state of a site.
// +kubebuilder:validation:Enum=NotReplicating;Running;Connecting;Stopped;Error
type ReplicationState string

const (
	// ReplicationNotReplicating: the site has no replication source (the
	// active site, or a site not yet configured).
	ReplicationNotReplicating ReplicationState = "NotReplicating"
	// ReplicationRunning: IO and SQL threads both running.
	ReplicationRunning ReplicationState = "Running"
	// ReplicationConnecting: the IO thread is connecting to its source.
	ReplicationConnecting ReplicationState = "Connecting"
	// ReplicationStopped: a thread is stopped without an error.
	ReplicationStopped ReplicationState = "Stopped"
	// ReplicationError: a thread stopped with an error.
	ReplicationError ReplicationState = "Error"
)

// SourceConvergenceState says whether a follower replicates directly from
// the active site.
// +kubebuilder:validation:Enum=Converged;Pending;Blocked
type SourceConvergenceState string

// SourceConvergenceReason is the stable cause of a SourceConvergenceState.
// +kubebuilder:validation:Enum=DirectSource;SourceMismatch;ProbeFailed;MutationFailed;GTIDDiverged
type SourceConvergenceReason string

// RecoveryState is the old-primary recovery state of a site.
// +kubebuilder:validation:Enum=RecoveryInProgress;RecoveryBlocked
type RecoveryState string

const (
	RecoveryInProgress RecoveryState = "RecoveryInProgress"
	RecoveryBlocked    RecoveryState = "RecoveryBlocked"
)

// DivergenceDetector is what found a site's divergent transactions.
// +kubebuilder:validation:Enum=OldPrimaryRecovery;ReplicaAudit
type DivergenceDetector string

const (
	// DivergenceByOldPrimaryRecovery: a returning old primary holds
	// transactions the active site lacks. This makes the group unstable.
	DivergenceByOldPrimaryRecovery DivergenceDetector = "OldPrimaryRecovery"
	// DivergenceByReplicaAudit: the periodic audit found errant transactions
	// on a replica. Degraded, but the deployment API keeps granting leases.
	DivergenceByReplicaAudit DivergenceDetector = "ReplicaAudit"
)

// SiteStatus is the observation of one site.
type SiteStatus struct {
	// name of the site.
	// +required
	// +kubebuilder:validation:MaxLength=20
	Name string `json:"name"`
	// role of the site as of the last observation (copied from spec).
	// +optional
	Role SiteRole `json:"role,omitempty"`
	// state: Writable, ReadOnly, Unreachable or Unknown.
	// +optional
	State SiteState `json:"state,omitempty"`
	// lastSeenTime is when the operator last polled the site successfully.
	// +optional
	LastSeenTime *metav1.Time `json:"lastSeenTime,omitempty"`
	// serverUUID is the site's MySQL server_uuid.
	// +optional
	// +kubebuilder:validation:MaxLength=36
	ServerUUID string `json:"serverUUID,omitempty"`
	// replication is the site's replication state.
	// +optional
	Replication ReplicationState `json:"replication,omitempty"`
	// secondsBehindSource is the replication lag; unset when unknown or not
	// replicating.
	// +optional
	SecondsBehindSource *int64 `json:"secondsBehindSource,omitempty"`
	// gtidExecuted is the GTID set executed on the site.
	// +optional
	GTIDExecuted string `json:"gtidExecuted,omitempty"`
	// sourceHost is the replication source host MySQL reports. Followers
	// should name the active site's internal Service.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	SourceHost string `json:"sourceHost,omitempty"`
	// sourceConvergenceState: Converged, Pending or Blocked.
	// +optional
	SourceConvergenceState SourceConvergenceState `json:"sourceConvergenceState,omitempty"`
	// sourceConvergenceReason: DirectSource, SourceMismatch, ProbeFailed,
	// MutationFailed or GTIDDiverged.
	// +optional
	SourceConvergenceReason SourceConvergenceReason `json:"sourceConvergenceReason,omitempty"`
	// recoveryState of an old primary: empty, RecoveryInProgress, or
	// RecoveryBlocked (divergent transactions; reclone to recover).
	// +optional
	RecoveryState RecoveryState `json:"recoveryState,omitempty"`
	// divergentGtid is the GTID set this site holds that the active site lacks.
	// +optional
	DivergentGTID string `json:"divergentGtid,omitempty"`
	// divergentTransactionCount is the number of transactions in divergentGtid.
	// +optional
	DivergentTransactionCount int64 `json:"divergentTransactionCount,omitempty"`
	// divergenceDetectedBy: OldPrimaryRecovery or ReplicaAudit.
	// +optional
	DivergenceDetectedBy DivergenceDetector `json:"divergenceDetectedBy,omitempty"`
	// divergenceComparedTo is the site whose GTID set the divergence was
	// computed against (the active site at the time).
	// +optional
	// +kubebuilder:validation:MaxLength=20
	DivergenceComparedTo string `json:"divergenceComparedTo,omitempty"`
	// message is a human-readable note on the site's state.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// LastFailover records the most recent failover.
type LastFailover struct {
	// time the new primary was published.
	// +required
	Time metav1.Time `json:"time"`
	// target is the site that was promoted.
	// +required
	Target string `json:"target"`
	// source is the site that was replaced.
	// +optional
	Source string `json:"source,omitempty"`
	// kind of failover (Automatic, Planned, OrderedUpdate, ...).
	// +optional
	Kind TransitionKind `json:"kind,omitempty"`
	// promotionGtidExecuted is the target's GTID set when it was made
	// writable, before it accepted writes.
	// +optional
	PromotionGTIDExecuted string `json:"promotionGtidExecuted,omitempty"`
	// possiblyLostGtid is the set the operator saw committed on the old
	// primary that the new primary lacks. Empty means nothing known lost.
	// +optional
	PossiblyLostGTID string `json:"possiblyLostGtid,omitempty"`
}

// RecloneRecord is one reclone requested through the reclone-site
// annotation.
type RecloneRecord struct {
	// site that was recloned.
	// +required
	// +kubebuilder:validation:MaxLength=20
	Site string `json:"site"`
	// donor is the active site the clone copied from.
	// +required
	// +kubebuilder:validation:MaxLength=20
	Donor string `json:"donor"`
	// requestTime is when the operator accepted the request.
	// +required
	RequestTime metav1.Time `json:"requestTime"`
	// discardedGtid is the set the site held that the donor lacked when
	// the reclone was accepted: the transactions the clone destroys. Empty
	// for a cold reclone.
	// +optional
	DiscardedGTID string `json:"discardedGtid,omitempty"`
	// discardedTransactionCount is the number of transactions in
	// discardedGtid.
	// +optional
	DiscardedTransactionCount int64 `json:"discardedTransactionCount,omitempty"`
	// divergenceDetectedBy is how the discarded set had been found:
	// OldPrimaryRecovery or ReplicaAudit; empty for a cold reclone.
	// +optional
	DivergenceDetectedBy DivergenceDetector `json:"divergenceDetectedBy,omitempty"`
}

// UpdatePhase is the step of an ordered update.
// +kubebuilder:validation:Enum=RollingFollowers;HandingOff;RollingFormerPrimary
type UpdatePhase string

const (
	// UpdateRollingFollowers: followers are recreated from the new pod
	// template one at a time while the active site serves.
	UpdateRollingFollowers UpdatePhase = "RollingFollowers"
	// UpdateHandingOff: the primary role is being handed to an updated
	// follower through a planned failover whose claim the ordered update
	// wrote (status.plannedFailover).
	UpdateHandingOff UpdatePhase = "HandingOff"
	// UpdateRollingFormerPrimary: the handoff succeeded and the former
	// active site, now a follower, is being recreated.
	UpdateRollingFormerPrimary UpdatePhase = "RollingFormerPrimary"
)

// RestorePhase is the phase of a restore.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type RestorePhase string

// RestoreSourceRecord identifies what a restore loaded.
type RestoreSourceRecord struct {
	// backupName of the MysqlBackup, for a backupRef source.
	// +optional
	BackupName string `json:"backupName,omitempty"`
	// location of the dump (s3://bucket/prefix or pvc://claim/path).
	// +optional
	Location string `json:"location,omitempty"`
	// gtidExecuted recorded by the dump.
	// +optional
	GTIDExecuted string `json:"gtidExecuted,omitempty"`
	// mysqlImage that produced the dump.
	// +optional
	MySQLImage string `json:"mysqlImage,omitempty"`
	// sizeBytes of the dump.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
}

// RestoreTargetRecord identifies where a restore loaded.
type RestoreTargetRecord struct {
	// site the dump was loaded into.
	// +optional
	Site string `json:"site,omitempty"`
	// gtidExecuted of the site after the load (and replay).
	// +optional
	GTIDExecuted string `json:"gtidExecuted,omitempty"`
}

// RestoreProvenance records what a restore loaded, where, and how far a
// point-in-time replay went.
type RestoreProvenance struct {
	// source of the load.
	// +optional
	Source *RestoreSourceRecord `json:"source,omitempty"`
	// target of the load.
	// +optional
	Target *RestoreTargetRecord `json:"target,omitempty"`
	// pointInTime is the replay result (initFromBackup only).
	// +optional
	PointInTime *PointInTimeResult `json:"pointInTime,omitempty"`
}

// RestoreStatus is the initFromBackup restore.
type RestoreStatus struct {
	// phase of the restore. Once Succeeded the restore never runs again.
	// +optional
	Phase RestorePhase `json:"phase,omitempty"`
	// jobName of the restore Job.
	// +optional
	JobName string `json:"jobName,omitempty"`
	// targetSite the dump is loaded into.
	// +optional
	TargetSite string `json:"targetSite,omitempty"`
	// startTime of the restore.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime of the restore.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// provenance of what was loaded.
	// +optional
	Provenance *RestoreProvenance `json:"provenance,omitempty"`
	// message explains the phase.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
}

// RestoreScope is what an in-place restore replaces.
// +kubebuilder:validation:Enum=Instance;Schema
type RestoreScope string

// RestoreInPlaceStatus is the latest in-place restore.
type RestoreInPlaceStatus struct {
	// phase of the restore.
	// +optional
	Phase RestorePhase `json:"phase,omitempty"`
	// jobName of the restore Job.
	// +optional
	JobName string `json:"jobName,omitempty"`
	// targetSite (the active site when the restore started).
	// +optional
	TargetSite string `json:"targetSite,omitempty"`
	// scope: Instance (whole instance, followers recloned) or Schema.
	// +optional
	Scope RestoreScope `json:"scope,omitempty"`
	// schema restored, for scope Schema.
	// +optional
	Schema string `json:"schema,omitempty"`
	// confirmTokenUsed is the spec.restoreInPlace.confirm value this run
	// consumed; the next run needs a strictly later token.
	// +optional
	ConfirmTokenUsed string `json:"confirmTokenUsed,omitempty"`
	// startTime of the restore.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime of the restore.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// provenance of what was loaded (pointInTime stays unset).
	// +optional
	Provenance *RestoreProvenance `json:"provenance,omitempty"`
	// message explains the phase.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
}

// RestoreReclonePhase is the phase of post-restore follower reclones.
// +kubebuilder:validation:Enum=Armed;Draining;Held
type RestoreReclonePhase string

// RestoreReclonesStatus tracks follower reclones after a full in-place restore.
type RestoreReclonesStatus struct {
	// phase: Armed (queued), Draining (reclones running) or Held (waiting,
	// for example behind a deployment hold).
	// +optional
	Phase RestoreReclonePhase `json:"phase,omitempty"`
	// requestTime is when the reclones were requested.
	// +optional
	RequestTime *metav1.Time `json:"requestTime,omitempty"`
	// pendingSites still to be recloned.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	PendingSites []string `json:"pendingSites,omitempty"`
	// message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
}

// BackupScheduleStatus is the rollup of one schedule.
type BackupScheduleStatus struct {
	// name of the schedule.
	// +required
	Name string `json:"name"`
	// cronJobName rendered for the schedule.
	// +optional
	CronJobName string `json:"cronJobName,omitempty"`
	// lastScheduleTime is when the schedule last fired.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// lastSuccessfulTime is when a backup of this schedule last succeeded.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`
	// lastBackupName is the newest MysqlBackup of this schedule.
	// +optional
	LastBackupName string `json:"lastBackupName,omitempty"`
	// lastBackupPhase is that backup's phase.
	// +optional
	LastBackupPhase ResourcePhase `json:"lastBackupPhase,omitempty"`
	// lastSuccessfulBackupName is the newest successful MysqlBackup.
	// +optional
	LastSuccessfulBackupName string `json:"lastSuccessfulBackupName,omitempty"`
	// lastRetryAttempt is the retry count of the newest failure run.
	// +optional
	LastRetryAttempt int32 `json:"lastRetryAttempt,omitempty"`
	// nextRetryTime is when the next retry is due.
	// +optional
	NextRetryTime *metav1.Time `json:"nextRetryTime,omitempty"`
}

// PITRSiteStatus is one sidecar's archiver report.
type PITRSiteStatus struct {
	// name of the site.
	// +required
	Name string `json:"name"`
	// storeReady is false when the archive store could not be built; unset
	// when the sidecar does not report it.
	// +optional
	StoreReady *bool `json:"storeReady,omitempty"`
	// lastArchivedFile is the newest binary log uploaded.
	// +optional
	LastArchivedFile string `json:"lastArchivedFile,omitempty"`
	// lastArchiveTime is when it was uploaded.
	// +optional
	LastArchiveTime *metav1.Time `json:"lastArchiveTime,omitempty"`
	// consecutiveFailedScans since the last good scan.
	// +optional
	ConsecutiveFailedScans *int32 `json:"consecutiveFailedScans,omitempty"`
	// message is the sidecar's last error, if any.
	// +optional
	Message string `json:"message,omitempty"`
}

// PITRStatus summarizes the binary-log archive.
type PITRStatus struct {
	// profileName of the archive profile.
	// +optional
	ProfileName string `json:"profileName,omitempty"`
	// archiveID identifies the archive generation this group is bound to.
	// +optional
	ArchiveID string `json:"archiveID,omitempty"`
	// earliestRecoverableTime is the earliest stop time a restore can reach
	// (the oldest baseline backup of this archive).
	// +optional
	EarliestRecoverableTime *metav1.Time `json:"earliestRecoverableTime,omitempty"`
	// latestRecoverableTime is the newest archived commit time.
	// +optional
	LatestRecoverableTime *metav1.Time `json:"latestRecoverableTime,omitempty"`
	// sites are the per-sidecar archiver reports.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Sites []PITRSiteStatus `json:"sites,omitempty"`
	// message summarizes the archive's health.
	// +optional
	Message string `json:"message,omitempty"`
}

// PlannedFailoverPhase is the phase of a planned failover.
// +kubebuilder:validation:Enum=Admitting;Deferred;Draining;CatchingUp;Fencing;Promoting;Publishing;RollingBack;Succeeded;Failed
type PlannedFailoverPhase string

const (
	PlannedFailoverAdmitting   PlannedFailoverPhase = "Admitting"
	PlannedFailoverDeferred    PlannedFailoverPhase = "Deferred"
	PlannedFailoverDraining    PlannedFailoverPhase = "Draining"
	PlannedFailoverCatchingUp  PlannedFailoverPhase = "CatchingUp"
	PlannedFailoverFencing     PlannedFailoverPhase = "Fencing"
	PlannedFailoverPromoting   PlannedFailoverPhase = "Promoting"
	PlannedFailoverPublishing  PlannedFailoverPhase = "Publishing"
	PlannedFailoverRollingBack PlannedFailoverPhase = "RollingBack"
	PlannedFailoverSucceeded   PlannedFailoverPhase = "Succeeded"
	PlannedFailoverFailed      PlannedFailoverPhase = "Failed"
)

// IsTerminal reports whether the phase ends a run (the claim is released).
func (p PlannedFailoverPhase) IsTerminal() bool {
	return p == PlannedFailoverSucceeded || p == PlannedFailoverFailed
}

// PlannedFailoverWaitReason is why a run is still Admitting.
// +kubebuilder:validation:Enum=ReplicationUnhealthy;TargetUnreachable;OperationInProgress;TargetLagging
type PlannedFailoverWaitReason string

// PlannedFailoverDeferReason is why a run is Deferred.
// +kubebuilder:validation:Enum=DeploymentHold;Cooldown
type PlannedFailoverDeferReason string

// PlannedFailoverOutcome is how a run ended (metric label in kebab-case).
// +kubebuilder:validation:Enum=Succeeded;NotStarted;RolledBack;SourceLeftFenced;PromotedUnconfirmed;ManualRecoveryRequired
type PlannedFailoverOutcome string

// PlannedFailoverResultReason is the cause of an outcome.
// +kubebuilder:validation:Enum=Completed;InvalidTarget;TargetNotCandidate;AlreadyActive;CooldownActive;AdmissionTimedOut;CatchUpTimedOut;FenceFailed;PromotionFailed;DragonflySyncTimeout;Superseded;Canceled
type PlannedFailoverResultReason string

// PlannedFailoverAdmission is the admission state of a run.
type PlannedFailoverAdmission struct {
	// waitReason while Admitting.
	// +optional
	WaitReason PlannedFailoverWaitReason `json:"waitReason,omitempty"`
	// deferReason while Deferred.
	// +optional
	DeferReason PlannedFailoverDeferReason `json:"deferReason,omitempty"`
	// retryAfter is when a Deferred run is revalidated (for DeploymentHold
	// the earliest hold expiry).
	// +optional
	RetryAfter *metav1.Time `json:"retryAfter,omitempty"`
	// blockingOperationID is the deployment operation whose hold defers the run.
	// +optional
	BlockingOperationID string `json:"blockingOperationID,omitempty"`
	// blockingInstance is the MysqlDatabase name holding it.
	// +optional
	BlockingInstance string `json:"blockingInstance,omitempty"`
	// message explains the wait.
	// +optional
	Message string `json:"message,omitempty"`
}

// PlannedFailoverResult is how a run ended.
type PlannedFailoverResult struct {
	// outcome of the run.
	// +required
	Outcome PlannedFailoverOutcome `json:"outcome"`
	// reason for the outcome.
	// +optional
	Reason PlannedFailoverResultReason `json:"reason,omitempty"`
	// transactionsLost is the number of transactions the target lacked at
	// promotion (0 for a completed zero-loss handoff).
	// +optional
	TransactionsLost *int64 `json:"transactionsLost,omitempty"`
	// message explains the outcome.
	// +optional
	Message string `json:"message,omitempty"`
}

// PlannedFailoverDragonflyStatus is the Dragonfly part of a planned failover.
type PlannedFailoverDragonflyStatus struct {
	// sessionsPreserved is true when the Dragonfly replica caught up and took
	// over before MySQL was promoted.
	// +optional
	SessionsPreserved *bool `json:"sessionsPreserved,omitempty"`
	// message explains what happened.
	// +optional
	Message string `json:"message,omitempty"`
}

// PlannedFailoverStatus is the durable claim and record of a planned failover.
type PlannedFailoverStatus struct {
	// runID identifies the run (also the transition id once fencing starts).
	// +required
	// +kubebuilder:validation:MaxLength=64
	RunID string `json:"runID"`
	// targetSite requested.
	// +required
	TargetSite string `json:"targetSite"`
	// sourceSite active when the run was admitted.
	// +optional
	SourceSite string `json:"sourceSite,omitempty"`
	// phase of the run. A run whose phase is not Succeeded or Failed holds
	// the group's operation claim.
	// +required
	Phase PlannedFailoverPhase `json:"phase"`
	// maxLagWait in effect for this run.
	// +optional
	MaxLagWait *metav1.Duration `json:"maxLagWait,omitempty"`
	// requestTime is when the annotation was accepted.
	// +optional
	RequestTime *metav1.Time `json:"requestTime,omitempty"`
	// phaseTime is when phase was entered.
	// +optional
	PhaseTime *metav1.Time `json:"phaseTime,omitempty"`
	// completionTime is when the run ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// admission state while Admitting or Deferred.
	// +optional
	Admission *PlannedFailoverAdmission `json:"admission,omitempty"`
	// result once the run ended.
	// +optional
	Result *PlannedFailoverResult `json:"result,omitempty"`
	// dragonfly is the Dragonfly part of the handoff, when enabled.
	// +optional
	Dragonfly *PlannedFailoverDragonflyStatus `json:"dragonfly,omitempty"`
}

// DragonflyPhase is the phase of the Dragonfly subsystem.
// +kubebuilder:validation:Enum=Disabled;Reconciling;ConfiguringReplication;Ready;Degraded;Promoting;Upgrading
type DragonflyPhase string

// DragonflyRole is a Dragonfly node's observed role.
// +kubebuilder:validation:Enum=Master;Replica;StaleMaster;Unconfigured;Unreachable;Unknown
type DragonflyRole string

// DragonflyStatus is the observed Dragonfly state.
type DragonflyStatus struct {
	// enabled mirrors spec.dragonfly.enabled at last observation.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// activeSite is the site acting as Dragonfly master.
	// +optional
	ActiveSite string `json:"activeSite,omitempty"`
	// phase of the subsystem.
	// +optional
	Phase DragonflyPhase `json:"phase,omitempty"`
	// message summarizes the state.
	// +optional
	Message string `json:"message,omitempty"`
	// lastPromotionTime of the last successful promotion.
	// +optional
	LastPromotionTime *metav1.Time `json:"lastPromotionTime,omitempty"`
	// lastPromotionTarget is the site promoted then.
	// +optional
	LastPromotionTarget string `json:"lastPromotionTarget,omitempty"`
	// sites is the per-site observation.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Sites []DragonflySiteStatus `json:"sites,omitempty"`
	// upgrade is the progress of an image upgrade.
	// +optional
	Upgrade *DragonflyUpgradeStatus `json:"upgrade,omitempty"`
}

// DragonflySiteStatus is one site's Dragonfly observation.
type DragonflySiteStatus struct {
	// name of the site.
	// +required
	Name string `json:"name"`
	// role observed.
	// +optional
	Role DragonflyRole `json:"role,omitempty"`
	// reachable is true when INFO replication succeeded on the last poll.
	// +optional
	Reachable bool `json:"reachable,omitempty"`
	// serviceName of the site-local Dragonfly Service.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
	// podName of the Dragonfly pod.
	// +optional
	PodName string `json:"podName,omitempty"`
	// replicationState is Dragonfly's raw role value.
	// +optional
	ReplicationState string `json:"replicationState,omitempty"`
	// linkStatus is a replica's master_link_status.
	// +optional
	LinkStatus string `json:"linkStatus,omitempty"`
	// syncInProgress; unset when it could not be read.
	// +optional
	SyncInProgress *bool `json:"syncInProgress,omitempty"`
	// lastIOSecondsAgo since the replica last heard from its master (-1:
	// never); unset when it could not be read.
	// +optional
	LastIOSecondsAgo *int64 `json:"lastIOSecondsAgo,omitempty"`
	// ready is operator-level readiness for the site's role.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// message about the site.
	// +optional
	Message string `json:"message,omitempty"`
}

// DragonflyUpgradePhase is the phase of a Dragonfly image upgrade.
// +kubebuilder:validation:Enum=Pending;Deferred;Snapshotting;Upgrading;Restoring;Succeeded;Failed
type DragonflyUpgradePhase string

// DragonflyUpgradeStatus is the progress of a Dragonfly image upgrade.
type DragonflyUpgradeStatus struct {
	// phase of the upgrade.
	// +optional
	Phase DragonflyUpgradePhase `json:"phase,omitempty"`
	// targetImage being rolled out.
	// +optional
	TargetImage string `json:"targetImage,omitempty"`
	// startTime of the upgrade.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime of the upgrade.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// reason for Deferred or Failed.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
}

// IsActive reports whether an upgrade is running or waiting to run.
func (u *DragonflyUpgradeStatus) IsActive() bool {
	return u != nil && u.Phase != "" && u.Phase != "Succeeded" && u.Phase != "Failed"
}

// EncryptionAtRestStatus is the observed keyring state.
type EncryptionAtRestStatus struct {
	// sites is the per-site keyring lifecycle.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Sites []SiteEncryptionStatus `json:"sites,omitempty"`
	// observedGeneration the encryption subsystem last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// KeyringPhase is a site's keyring lifecycle phase.
// +kubebuilder:validation:Enum=Pending;Unsealed;Escrowed;Sealed;Failed
type KeyringPhase string

// UnsealReason is why a site's keyring is writable.
// +kubebuilder:validation:Enum=Bootstrap;Clone;Rotation
type UnsealReason string

// SiteEncryptionStatus is one site's keyring lifecycle.
type SiteEncryptionStatus struct {
	// name of the site.
	// +required
	Name string `json:"name"`
	// phase: Pending, Unsealed, Escrowed, Sealed or Failed.
	// +optional
	Phase KeyringPhase `json:"phase,omitempty"`
	// unsealReason while unsealed.
	// +optional
	UnsealReason UnsealReason `json:"unsealReason,omitempty"`
	// keyringSecret is the escrow Secret the site is sealed against.
	// +optional
	KeyringSecret string `json:"keyringSecret,omitempty"`
	// keyringVersion is the escrow version (monotonic per site).
	// +optional
	KeyringVersion int64 `json:"keyringVersion,omitempty"`
	// keyringDigest is sha256:<hex> of the escrowed keyring.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	KeyringDigest string `json:"keyringDigest,omitempty"`
	// lastEscrowTime is when the current version was accepted.
	// +optional
	LastEscrowTime *metav1.Time `json:"lastEscrowTime,omitempty"`
	// unsealTime is when the site entered Unsealed.
	// +optional
	UnsealTime *metav1.Time `json:"unsealTime,omitempty"`
	// message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// coverage observed on the live instance.
	// +optional
	Coverage *SiteEncryptionCoverage `json:"coverage,omitempty"`
}

// SiteEncryptionCoverage is sampled from the live instance. An unset value
// means it could not be read.
type SiteEncryptionCoverage struct {
	// keyringComponent from performance_schema.keyring_component_status.
	// +optional
	KeyringComponent string `json:"keyringComponent,omitempty"`
	// keyringReadOnly is the component's Read_only status.
	// +optional
	KeyringReadOnly *bool `json:"keyringReadOnly,omitempty"`
	// systemTablespaceEncrypted: the mysql tablespace is encrypted.
	// +optional
	SystemTablespaceEncrypted *bool `json:"systemTablespaceEncrypted,omitempty"`
	// unencryptedTablespaces still in the clear.
	// +optional
	UnencryptedTablespaces *int64 `json:"unencryptedTablespaces,omitempty"`
	// redoLogEncrypted is @@innodb_redo_log_encrypt.
	// +optional
	RedoLogEncrypted *bool `json:"redoLogEncrypted,omitempty"`
	// undoLogEncrypted is @@innodb_undo_log_encrypt.
	// +optional
	UndoLogEncrypted *bool `json:"undoLogEncrypted,omitempty"`
	// binlogEncrypted is @@binlog_encryption.
	// +optional
	BinlogEncrypted *bool `json:"binlogEncrypted,omitempty"`
	// lastCheckTime is when coverage was sampled.
	// +optional
	LastCheckTime *metav1.Time `json:"lastCheckTime,omitempty"`
}
