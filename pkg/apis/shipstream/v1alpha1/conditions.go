package v1alpha1

// Condition types and reasons of every kind, defined once here: the
// controllers, the decision packages and the deployment API all use these
// names. Reasons are CamelCase; every kind carries a Ready condition.
// docs/api.md lists what each means.
const (
	// ConditionReady is present on every kind.
	ConditionReady = "Ready"

	// MysqlFailoverGroup condition types.
	ConditionDegraded              = "Degraded"
	ConditionRecoveryPending       = "RecoveryPending"
	ConditionBootstrapping         = "Bootstrapping"
	ConditionUpdating              = "Updating"
	ConditionEncryptionAtRestReady = "EncryptionAtRestReady"
	ConditionPITRArchiveReady      = "PITRArchiveReady"

	// MysqlFailoverGroup Ready reasons.
	ReasonHealthy              = "Healthy"
	ReasonNoWritablePrimary    = "NoWritablePrimary"
	ReasonReplicationUnhealthy = "ReplicationUnhealthy"

	// MysqlFailoverGroup Degraded reasons.
	ReasonSiteUnhealthy         = "SiteUnhealthy"
	ReasonCrossSiteAlert        = "CrossSiteAlert"
	ReasonBootstrapFailed       = "BootstrapFailed"
	ReasonDivergentTransactions = "DivergentTransactions"
	ReasonSplitBrain            = "SplitBrain"
	ReasonIncomparableGTIDSets  = "IncomparableGTIDSets"
	ReasonFailoverRefused       = "FailoverRefused"
	// ReasonCatchUpTimedOut (Degraded=True): an automatic failover ended
	// because its candidate did not catch up within the bound.
	ReasonCatchUpTimedOut = "CatchUpTimedOut"
	ReasonNotDegraded     = "NotDegraded"
	// ReasonActiveSiteLostOwnTransactions (Degraded=True): the active site
	// came back without transactions of its own server UUID that another
	// site holds (a tail lost with relaxed durability), or a replica's
	// receiver was refused by it for holding more of them; it is not made
	// writable again (docs/safety.md).
	ReasonActiveSiteLostOwnTransactions = "ActiveSiteLostOwnTransactions"

	// MysqlFailoverGroup RecoveryPending reasons.
	ReasonRecoveryInProgress = "RecoveryInProgress"

	// MysqlFailoverGroup Bootstrapping reasons.
	ReasonNotBootstrapping = "NotBootstrapping"
	ReasonCloning          = "Cloning"

	// MysqlFailoverGroup Updating reasons.
	ReasonOrderedUpdateStalled = "OrderedUpdateStalled"

	// MysqlFailoverGroup EncryptionAtRestReady reasons.
	ReasonAllSitesSealed   = "AllSitesSealed"
	ReasonKeyringNotSealed = "KeyringNotSealed"
	ReasonKeyringFailed    = "KeyringFailed"
	ReasonAdoptionRefused  = "AdoptionRefused"

	// MysqlBackup Ready reasons.
	ReasonPending                 = "Pending"
	ReasonRunning                 = "Running"
	ReasonSucceeded               = "Succeeded"
	ReasonWaitingForHealthySource = "WaitingForHealthySource"
	ReasonNoHealthySource         = "NoHealthySource"
	ReasonPendingTimedOut         = "PendingTimedOut"
	ReasonGroupNotFound           = "GroupNotFound"

	// MysqlBackupVerification condition types and reasons.
	ConditionVerified = "Verified"
	ReasonInProgress  = "InProgress"

	// MysqlStandbyCluster condition types and reasons.
	ConditionBucketReadable    = "BucketReadable"
	ConditionSourceConfigKnown = "SourceConfigKnown"
	ReasonSourceDiscovered     = "SourceDiscovered"

	// MysqlDatabase Ready reasons.
	ReasonGroupNotYetCreated = "GroupNotYetCreated"
)

// MysqlFailoverGroup condition types and reasons beyond the set above.
const (
	// ReasonNoEligibleCandidate (Degraded=True): the sites' GTID sets are
	// comparable, but the site holding all of them cannot be made the first
	// active site (it is a DisasterRecovery or reader site, or unreachable).
	ReasonNoEligibleCandidate = "NoEligibleCandidate"
	// ReasonNoRecoveryPending is RecoveryPending=False: no old primary is
	// being recovered or blocked.
	ReasonNoRecoveryPending = "NoRecoveryPending"

	// ConditionResourcesReady: every site's objects could be rendered and
	// applied. False/RenderFailed names the field at fault.
	ConditionResourcesReady = "ResourcesReady"
	// ConditionDNSReady: the DNSEndpoint points at the active site.
	ConditionDNSReady = "DNSReady"

	// ResourcesReady reasons.
	ReasonReconciled   = "Reconciled"
	ReasonRenderFailed = "RenderFailed"
	// ReasonApplyRefused: the API server refused one of the group's objects
	// as invalid (ResourcesReady False); the message names the object, the
	// spec fields it comes from and the API server's reason.
	ReasonApplyRefused = "ApplyRefused"

	// DNSReady reasons.
	ReasonDNSEndpointCurrent    = "DNSEndpointCurrent"
	ReasonDNSEndpointCRDMissing = "DNSEndpointCRDMissing"
	ReasonNoDNSTarget           = "NoDNSTarget"

	// Updating reasons, besides ReasonOrderedUpdateStalled.
	ReasonUpToDate = "UpToDate"
	ReasonRolling  = "Rolling"

	// ConditionTLSReady (only with spec.tls): the operator's connections to
	// every site's mysqld verified its certificate against the TLS Secret's
	// ca.crt and the site's internal Service name (docs/tls.md).
	ConditionTLSReady = "TLSReady"
	// TLSReady reasons: ReasonTLSVerified (True); ReasonTLSVerificationFailed
	// (False) names each site and the cause; ReasonTLSSecretInvalid (False):
	// the Secret or its ca.crt is missing or unreadable.
	ReasonTLSVerified           = "Verified"
	ReasonTLSVerificationFailed = "TLSVerificationFailed"
	ReasonTLSSecretInvalid      = "TLSSecretInvalid"

	// ConditionCredentialsReady: every account spec.credentials names exists
	// on the active site with its role's grants, and no password rotation
	// is in progress (docs/credentials.md).
	ConditionCredentialsReady = "CredentialsReady"
	// CredentialsReady reasons: ReasonCredentialsCurrent (True);
	// ReasonRotating (False) names each account's rotation step;
	// ReasonCredentialsInvalid (False): a credential Secret or key is
	// missing or invalid, and the previous passwords keep working;
	// ReasonAccountsFailed (False): creating or restoring an account failed.
	ReasonCredentialsCurrent = "CredentialsCurrent"
	ReasonRotating           = "Rotating"
	ReasonCredentialsInvalid = "CredentialsInvalid"
	ReasonAccountsFailed     = "AccountsFailed"
)

// MysqlDatabase Ready reasons besides ReasonGroupNotYetCreated.
const (
	// ReasonGroupDeleting: the group exists but is being deleted.
	ReasonGroupDeleting = "GroupDeleting"
	// ReasonGroupNotReady: the group exists but its own Ready is not True.
	ReasonGroupNotReady = "GroupNotReady"
	// ReasonApplying: the group is ready; the schema is being applied.
	ReasonApplying = "Applying"
	// ReasonDeleting: the MysqlDatabase itself is being deleted.
	ReasonDeleting = "Deleting"
	// ReasonApplied (True): the schema and owner are as the spec says on
	// the group's active site.
	ReasonApplied = "Applied"
	// ReasonWaitingForActiveSite: a change of the group's active site is in
	// flight; nothing is applied until it ends.
	ReasonWaitingForActiveSite = "WaitingForActiveSite"
	// ReasonStatementRefused: MySQL refused a statement (the message
	// carries its error).
	ReasonStatementRefused = "StatementRefused"
	// ReasonSettingsMismatch: the schema exists with another character set
	// or collation than the spec; it is not altered.
	ReasonSettingsMismatch = "SettingsMismatch"
	// ReasonDuplicateDatabaseName: an older MysqlDatabase declares the same
	// databaseName on the group.
	ReasonDuplicateDatabaseName = "DuplicateDatabaseName"
	// ReasonOwnerSecretInvalid: the owner's password Secret or key is
	// missing or empty.
	ReasonOwnerSecretInvalid = "OwnerSecretInvalid"
	// ReasonOwnerConflict: the owner is an account the operator manages,
	// or one that exists with another password.
	ReasonOwnerConflict = "OwnerConflict"
	// ReasonOwnerPending: the owner is created by an older MysqlDatabase
	// claiming it, which has not yet done so.
	ReasonOwnerPending = "OwnerPending"
)
