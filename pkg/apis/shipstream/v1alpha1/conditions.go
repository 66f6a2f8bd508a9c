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
)
