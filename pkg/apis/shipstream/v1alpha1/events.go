package v1alpha1

// Event reasons, defined once here for every controller and decision
// package. Each reads <Subject><PastTenseVerb>, optionally followed by a
// qualifier naming the cause (PromotionRefusedReclonePending), and each is
// always recorded with the type noted beside it. docs/events.md lists every
// reason with its type and what records it, including the ones no code
// records yet; a test keeps that page and this file in step.

// Event reasons of MysqlDatabase.
const (
	// EventDatabaseGroupResolved (Normal): the referenced MysqlFailoverGroup exists.
	EventDatabaseGroupResolved = "DatabaseGroupResolved"
	// EventDatabaseGroupLost (Warning): the referenced MysqlFailoverGroup was deleted.
	EventDatabaseGroupLost = "DatabaseGroupLost"
	// EventDatabaseApplied (Normal): the schema (and its owner) are as the
	// spec says on the active site; the database turned Ready.
	EventDatabaseApplied = "DatabaseApplied"
	// EventDatabaseAdopted (Normal): the schema already existed on the
	// active site when the object first applied it (status.adopted).
	EventDatabaseAdopted = "DatabaseAdopted"
	// EventDatabaseSettingsMismatched (Warning): the schema on the server
	// has another character set or collation than the spec; nothing altered.
	EventDatabaseSettingsMismatched = "DatabaseSettingsMismatched"
	// EventDatabaseApplyFailed (Warning): MySQL refused a statement; the
	// message carries its error.
	EventDatabaseApplyFailed = "DatabaseApplyFailed"
	// EventDatabaseNameConflicted (Warning): an older MysqlDatabase declares
	// the same databaseName on the group; this one applies nothing.
	EventDatabaseNameConflicted = "DatabaseNameConflicted"
	// EventOwnerUserRefused (Warning): the owner is named like an account
	// the operator manages, or an account of that name exists with another
	// password; nothing changed.
	EventOwnerUserRefused = "OwnerUserRefused"
	// EventOwnerSecretReadFailed (Warning): the owner's password Secret or
	// key is missing or empty; nothing changed.
	EventOwnerSecretReadFailed = "OwnerSecretReadFailed"
	// EventOwnerUserCreated (Normal): the owner account was created.
	EventOwnerUserCreated = "OwnerUserCreated"
	// EventOwnerPasswordRotationStarted (Normal): the owner has its new
	// password; the old one keeps working for the overlap.
	EventOwnerPasswordRotationStarted = "OwnerPasswordRotationStarted"
	// EventOwnerPasswordRotated (Normal): the owner's old password was
	// discarded.
	EventOwnerPasswordRotated = "OwnerPasswordRotated"
	// EventDatabaseDropped (Normal): deletionPolicy Drop dropped the schema.
	EventDatabaseDropped = "DatabaseDropped"
	// EventDatabaseDropSkipped (Normal): deletionPolicy Drop found nothing
	// to drop (no such schema, or the group is gone).
	EventDatabaseDropSkipped = "DatabaseDropSkipped"
	// EventDatabaseDropRefused (Warning): the schema was not dropped:
	// another MysqlDatabase still declares it, or it was adopted without the
	// confirming annotation.
	EventDatabaseDropRefused = "DatabaseDropRefused"
	// EventDatabaseDropTimedOut (Warning): the group had no writable
	// primary for the whole drop wait; the object was released and the
	// schema and owner left in place.
	EventDatabaseDropTimedOut = "DatabaseDropTimedOut"
	// EventOwnerUserDropped (Normal): deletionPolicy Drop dropped the owner.
	EventOwnerUserDropped = "OwnerUserDropped"
	// EventOwnerUserDropSkipped (Warning): the owner was not dropped because
	// another MysqlDatabase still claims it.
	EventOwnerUserDropSkipped = "OwnerUserDropSkipped"
)

// Event reasons of the deploy-lease controller.
const (
	// EventDeploymentLeaseRevoked (Normal): deployment leases of the group
	// were revoked (TopologyChanged or OperatorRevoked).
	EventDeploymentLeaseRevoked = "DeploymentLeaseRevoked"
)

// Event reasons of automatic failover.
const (
	// EventFailoverStarted (Warning): the active site is unreachable; the
	// intent to promote a candidate was recorded.
	EventFailoverStarted = "FailoverStarted"
	// EventFailoverRefused (Warning): the active site is unreachable and no
	// candidate may be promoted automatically (the message says why and how
	// to override).
	EventFailoverRefused = "FailoverRefused"
	// EventFailoverAborted (Warning): the candidate became unreachable
	// before it was promoted; nothing changed.
	EventFailoverAborted = "FailoverAborted"
	// EventFailoverSourceFenceConfirmed (Normal): the unreachable old primary's
	// own sidecar proved that it cannot take writes (its mysqld exited, or
	// the sidecar read super_read_only=ON), so the promotion does not wait
	// out the self-fence bound (docs/safety.md).
	EventFailoverSourceFenceConfirmed = "FailoverSourceFenceConfirmed"
	// EventFailoverCatchUpTimedOut (Warning): the candidate did not execute
	// what it held when chosen within the catch-up bound; the failover ended
	// unpromoted, automatic failover is held, and the message says what a
	// promotion of it would lose (docs/runbooks/failover-refused-or-held.md).
	EventFailoverCatchUpTimedOut = "FailoverCatchUpTimedOut"
	// EventFailoverSucceeded (Normal): the candidate is the active site and
	// the new topologyGeneration is published.
	EventFailoverSucceeded = "FailoverSucceeded"
	// EventTransactionsPossiblyLost (Warning): the promoted site lacks
	// transactions the operator saw committed on the old primary.
	EventTransactionsPossiblyLost = "TransactionsPossiblyLost"
	// EventClientSessionsEvicted (Normal, or Warning when an open
	// transaction held a fence off and its sessions were killed so the fence
	// takes effect): client sessions were killed on a fenced site.
	EventClientSessionsEvicted = "ClientSessionsEvicted"
)

// Event reasons of planned failover admission .
const (
	// EventPlannedFailoverRejected (Warning): the request cannot run at all
	// (bad annotation, invalid target, cooldown with onCooldown=Reject).
	EventPlannedFailoverRejected = "PlannedFailoverRejected"
	// EventPlannedFailoverDeferred (Normal): the run waits for a deployment
	// hold or the cooldown to end.
	EventPlannedFailoverDeferred = "PlannedFailoverDeferred"
	// EventPlannedFailoverStarted (Normal): admission passed; the handoff begins.
	EventPlannedFailoverStarted = "PlannedFailoverStarted"
	// EventPlannedFailoverSkipped (Normal): a request for the target of the
	// run already in flight was removed without starting a second run.
	EventPlannedFailoverSkipped = "PlannedFailoverSkipped"
	// EventPlannedFailoverHoldAcknowledgmentIgnored (Warning): the
	// clear-hold annotation named the group while no automatic-failover
	// hold was in place; it is removed without effect.
	EventPlannedFailoverHoldAcknowledgmentIgnored = "PlannedFailoverHoldAcknowledgmentIgnored"
)

// Event reasons of the handoff.
const (
	// EventPlannedFailoverTargetCaughtUp (Normal): the target holds every
	// transaction of the fenced source.
	EventPlannedFailoverTargetCaughtUp = "PlannedFailoverTargetCaughtUp"
	// EventPlannedFailoverDrainStarted (Normal): the source was fenced and
	// its client sessions are being drained.
	EventPlannedFailoverDrainStarted = "PlannedFailoverDrainStarted"
	// EventPlannedFailoverRollbackStarted (Warning): the handoff cannot
	// complete; the source is being unfenced.
	EventPlannedFailoverRollbackStarted = "PlannedFailoverRollbackStarted"
	// EventPlannedFailoverSucceeded (Normal): the target is the active site.
	EventPlannedFailoverSucceeded = "PlannedFailoverSucceeded"
	// EventPlannedFailoverFailed (Warning): the run ended without moving the
	// active site (or uncertain); status.plannedFailover.result says why.
	EventPlannedFailoverFailed = "PlannedFailoverFailed"
	// EventAutomaticFailoverHoldPlaced (Warning) and
	// EventAutomaticFailoverHoldCleared (Normal): status.automaticFailoverHold
	// was set by a planned run that ended uncertain, or cleared by an
	// administrator's annotation.
	EventAutomaticFailoverHoldPlaced  = "AutomaticFailoverHoldPlaced"
	EventAutomaticFailoverHoldCleared = "AutomaticFailoverHoldCleared"
)

// Event reasons of a reclone request.
const (
	// EventRecloneRejected (Warning): the annotation was invalid or the
	// group could not take a reclone now; it was cleared, nothing changed.
	EventRecloneRejected = "RecloneRejected"
	// EventRecloneRequested (Warning when transactions are discarded): the
	// request was accepted and recorded; the message carries the set the
	// clone destroys.
	EventRecloneRequested = "RecloneRequested"
)

// Event reasons of split brain (several writable sites, no active site on
// record).
const (
	// EventSplitBrainDetected (Warning): several sites are writable and
	// nothing says which one serves; without splitBrainPolicy.sitePriorities
	// none is fenced automatically.
	EventSplitBrainDetected = "SplitBrainDetected"
	// EventSplitBrainResolutionStarted (Warning): sitePriorities names the
	// site to keep; the intent was recorded and the others are fenced.
	EventSplitBrainResolutionStarted = "SplitBrainResolutionStarted"
	// EventSplitBrainResolved (Normal): the kept site is the only writable
	// one and is published as the active site.
	EventSplitBrainResolved = "SplitBrainResolved"
	// EventSplitBrainResolutionAborted (Warning): the kept site stopped being
	// writable or reachable before the resolution completed.
	EventSplitBrainResolutionAborted = "SplitBrainResolutionAborted"
)

// Event reasons of the topology manager.
const (
	// EventOldPrimaryRejoined (Normal): the former primary of the last failover
	// held nothing the active site lacks and now replicates from it.
	EventOldPrimaryRejoined = "OldPrimaryRejoined"
	// EventAutomaticFailoverHoldClearRejected (Warning): the clear-hold
	// annotation did not name the group; it is removed unapplied.
	EventAutomaticFailoverHoldClearRejected = "AutomaticFailoverHoldClearRejected"
	// EventBootstrapStarted (Normal): the first active site was chosen and
	// the intent recorded in status.transition.
	EventBootstrapStarted = "BootstrapStarted"
	// EventBootstrapSucceeded (Normal): the first active site is writable and
	// published; topologyGeneration was incremented.
	EventBootstrapSucceeded = "BootstrapSucceeded"
	// EventBootstrapAborted (Warning): a recorded bootstrap was abandoned
	// because its target stopped qualifying; a new choice follows.
	EventBootstrapAborted = "BootstrapAborted"
	// EventBootstrapRefusedIncomparableGTIDSets (Warning): no site was made
	// writable because two sites hold transactions the other lacks.
	EventBootstrapRefusedIncomparableGTIDSets = "BootstrapRefusedIncomparableGTIDSets"
	// EventBootstrapRefusedNoEligibleCandidate (Warning): no reachable
	// PrimaryCandidate holds every transaction.
	EventBootstrapRefusedNoEligibleCandidate = "BootstrapRefusedNoEligibleCandidate"
	// EventActiveSiteReasserted (Normal): the known active site was found
	// read-only (for example after a mysqld restart) and made writable again.
	EventActiveSiteReasserted = "ActiveSiteReasserted"
	// EventActiveSiteReassertRefused (Warning): the known active site is
	// read-only and another site holds transactions it lacks, so it stays
	// read-only.
	EventActiveSiteReassertRefused = "ActiveSiteReassertRefused"
	// EventSiteFenced (Warning): a site that must not be writable was found
	// writable and fenced (super_read_only=ON).
	EventSiteFenced = "SiteFenced"
	// EventFollowerRepointed (Normal): a follower now replicates from the
	// active site's internal Service.
	EventFollowerRepointed = "FollowerRepointed"
	// EventFollowerRepointFailed (Warning): repointing or starting a
	// follower's replication failed.
	EventFollowerRepointFailed = "FollowerRepointFailed"
	// EventCloneStarted (Normal), EventCloneSucceeded (Normal),
	// EventCloneFailed (Warning): a follower that could not catch up from
	// binary logs is being, was, or could not be recloned from the active site.
	EventCloneStarted   = "CloneStarted"
	EventCloneSucceeded = "CloneSucceeded"
	EventCloneFailed    = "CloneFailed"
	// EventCloneRefusedDivergentTransactions (Warning): a follower needs a
	// clone but holds transactions the donor lacks; it is left as it is.
	EventCloneRefusedDivergentTransactions = "CloneRefusedDivergentTransactions"
	// EventDivergentTransactionsDetected (Warning): a follower (a replica,
	// or the old primary after a failover) holds transactions the active
	// site lacks.
	EventDivergentTransactionsDetected = "DivergentTransactionsDetected"
	// EventOldPrimaryRecovered (Normal): an old primary's divergence record
	// cleared.
	EventOldPrimaryRecovered = "OldPrimaryRecovered"
	// EventActiveSiteLostOwnTransactions (Warning): the active site came
	// back without transactions of its own that another site holds and is
	// neither made writable again nor failed over; the message names the
	// site, the missing range and why no failover started.
	EventActiveSiteLostOwnTransactions = "ActiveSiteLostOwnTransactions"
	// EventCloneRefusedReplicaHasMore (Warning): a follower's receiver was
	// refused because it holds more of the active site's own GTIDs than the
	// active site; it is not cloned (it may hold their only copy).
	EventCloneRefusedReplicaHasMore = "CloneRefusedReplicaHasMore"
)

// Event reasons of the group's Kubernetes objects.
const (
	// EventSiteRenderFailed (Warning): a site's objects could not be rendered.
	EventSiteRenderFailed = "SiteRenderFailed"
	// EventObjectRefused (Warning): the API server refused one of the
	// group's objects as invalid; recorded when the refusal first shows.
	EventObjectRefused = "ObjectRefused"
	// EventMySQLConfOptionIgnored (Warning): mysqlConf named an option the
	// operator owns; recorded when the template carrying it is written.
	EventMySQLConfOptionIgnored = "MySQLConfOptionIgnored"
	// EventSiteRolled (Normal): a site's pod was deleted to be recreated from
	// the new pod template.
	EventSiteRolled = "SiteRolled"
	// EventOrderedUpdateStalled (Warning): the ordered update stopped at a
	// site that is not Ready, or cannot hand the primary role over;
	// recorded when the stall begins.
	EventOrderedUpdateStalled = "OrderedUpdateStalled"
	// EventOrderedUpdateHandoffStarted (Normal): the ordered update stored
	// the planned-failover claim that hands the primary role to an updated
	// follower (also for a retry).
	EventOrderedUpdateHandoffStarted = "OrderedUpdateHandoffStarted"
	// EventOrderedUpdateHandoffFailed (Warning): that planned failover ended
	// without moving the active site; the message says when it is retried.
	EventOrderedUpdateHandoffFailed = "OrderedUpdateHandoffFailed"
	// EventDNSEndpointSkippedCRDMissing (Warning): external-dns's DNSEndpoint
	// CRD is not installed, so the DNS record is not managed.
	EventDNSEndpointSkippedCRDMissing = "DNSEndpointSkippedCRDMissing"
	// EventSidecarVersionSkew (Warning): spec.sidecar.image pins a sidecar
	// of another release than the running operator's (seed 003).
	EventSidecarVersionSkew = "SidecarVersionSkew"
	// EventDNSEndpointUpdated (Normal): the DNS record now points at a new
	// target (or was created).
	EventDNSEndpointUpdated = "DNSEndpointUpdated"
	// EventNodeTainted and EventNodeUntainted (Normal): the group's
	// db-readonly taint was added to or removed from a node.
	EventNodeTainted   = "NodeTainted"
	EventNodeUntainted = "NodeUntainted"
	// EventDNSEndpointDeleted (Normal): the group's DNSEndpoint was deleted
	// while the group was being deleted.
	EventDNSEndpointDeleted = "DNSEndpointDeleted"
	// EventTLSVerificationFailed (Warning): with spec.tls, the operator
	// refused a site's mysqld because its certificate did not verify (wrong
	// CA, wrong name, no TLS); recorded when a site's failure begins or its
	// cause changes. The operator never retries without TLS.
	EventTLSVerificationFailed = "TLSVerificationFailed"
	// EventAccountCreated (Normal): a role's account that the active site
	// lacked was created there (it replicates).
	EventAccountCreated = "AccountCreated"
	// EventAccountGrantsRestored (Warning): an account's grants had drifted
	// from its role's and were restored on the active site.
	EventAccountGrantsRestored = "AccountGrantsRestored"
	// EventCredentialsRejected (Warning): a credential Secret or key is
	// missing or invalid; nothing changes and the previous passwords keep
	// working. Recorded when the problem begins or changes.
	EventCredentialsRejected = "CredentialsRejected"
	// EventPasswordRotationStarted (Normal): a changed Secret's password was
	// set on the active site, the old one retained.
	EventPasswordRotationStarted = "PasswordRotationStarted"
	// EventPasswordOverlapStarted (Normal): every managed consumer uses the
	// new password; the old one keeps working until the overlap ends.
	EventPasswordOverlapStarted = "PasswordOverlapStarted"
	// EventPasswordRotated (Normal): the old password was discarded.
	EventPasswordRotated = "PasswordRotated"
	// EventAccountsFailed (Warning): creating, restoring or rotating an
	// account failed; retried on the next pass.
	EventAccountsFailed = "AccountsFailed"
	// EventReplicationChannelMoved (Normal): a site that was unreachable
	// while the replication password rotated came back, and its channel
	// was moved to the password the servers accept.
	EventReplicationChannelMoved = "ReplicationChannelMoved"
)

// Event reasons of MysqlBackup (the backup controller).
const (
	// EventBackupStarted (Normal): the backup Job runs against the chosen
	// source site; names the Job, the site and who triggered the backup.
	EventBackupStarted = "BackupStarted"
	// EventBackupSucceeded (Normal): the Job succeeded and its stamp was
	// read back: names the location, the GTID set and the size.
	EventBackupSucceeded = "BackupSucceeded"
	// EventBackupFailed (Warning): the backup ended Failed; the message
	// starts with its Ready reason (JobFailed, NoHealthySource, ...).
	EventBackupFailed = "BackupFailed"
	// EventBackupJobLost (Warning): the backup's Job was deleted before it
	// finished; the backup is Failed and no Job is created again.
	EventBackupJobLost = "BackupJobLost"
	// EventBackupDeferredProfileNotFound (Warning): spec.profileName is not
	// a profile of the group; the backup waits (WaitingForProfile).
	EventBackupDeferredProfileNotFound = "BackupDeferredProfileNotFound"
)
