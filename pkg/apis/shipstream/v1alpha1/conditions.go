package v1alpha1

// Condition types and reasons of the v1.7.0 vocabulary. Reasons are
// CamelCase; every kind carries a Ready condition.
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
	ReasonNotDegraded           = "NotDegraded"

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
