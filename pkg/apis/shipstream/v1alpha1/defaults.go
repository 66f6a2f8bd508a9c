package v1alpha1

import "time"

// The scalar +kubebuilder:default markers of this package as Go constants,
// for code that needs the fallback of an omitted field (an object built in
// code, not read back from the API server). Markers cannot reference Go
// constants, so TestDefaultConstantsMatchMarkers keeps the two in step: a
// new scalar default needs a constant here and an entry in its table.
// Paths are relative to the kind named, MysqlFailoverGroup where none is.

// MysqlFailoverGroup.
const (
	// DefaultImage is spec.image.
	DefaultImage = "mysql:9.7"
	// DefaultPollInterval is spec.pollInterval.
	DefaultPollInterval = 2 * time.Second
	// DefaultFailureThreshold is spec.failureThreshold.
	DefaultFailureThreshold int32 = 3
	// DefaultRecoveryThreshold is spec.recoveryThreshold.
	DefaultRecoveryThreshold int32 = 2
	// DefaultFailoverCooldown is spec.failoverCooldown.
	DefaultFailoverCooldown = 5 * time.Minute
	// DefaultConnectionDrainTimeout is spec.connectionDrainTimeout.
	DefaultConnectionDrainTimeout = 30 * time.Second
	// DefaultCloneTimeout is spec.cloneTimeout.
	DefaultCloneTimeout = time.Hour
	// DefaultTerminationGracePeriodSeconds is spec.terminationGracePeriodSeconds.
	DefaultTerminationGracePeriodSeconds int64 = 60
	// DefaultSiteRole is spec.sites[].role.
	DefaultSiteRole = SiteRolePrimaryCandidate
	// DefaultDNSTTLSeconds is spec.dns.ttlSeconds.
	DefaultDNSTTLSeconds int32 = 60
	// DefaultMaxLagSeconds is spec.replication.maxLagSeconds.
	DefaultMaxLagSeconds int32 = 300
	// DefaultUpdateStrategyType is spec.updateStrategy.type.
	DefaultUpdateStrategyType = OrderedUpdate
	// DefaultLeaseTimeout is spec.sidecar.leaseTimeout.
	DefaultLeaseTimeout = 15 * time.Second
	// DefaultPeerCheckInterval is spec.sidecar.peerCheckInterval.
	DefaultPeerCheckInterval = 2 * time.Second
	// DefaultPlannedFailoverOnCooldown is spec.plannedFailover.onCooldown.
	DefaultPlannedFailoverOnCooldown = PlannedFailoverRejectOnCooldown
	// DefaultMaxLagWait is spec.plannedFailover.maxLagWait.
	DefaultMaxLagWait = 60 * time.Second
	// DefaultAdmissionTimeout is spec.plannedFailover.admissionTimeout.
	DefaultAdmissionTimeout = 5 * time.Minute
)

// MysqlFailoverGroup spec.backup.
const (
	// DefaultBackupImage is spec.backup.image.
	DefaultBackupImage = "container-registry.oracle.com/mysql/community-server:9.7"
	// DefaultMaxLagSecondsForSource is spec.backup.maxLagSecondsForSource.
	DefaultMaxLagSecondsForSource int32 = 300
	// DefaultBackupActiveDeadlineSeconds is spec.backup.activeDeadlineSeconds.
	DefaultBackupActiveDeadlineSeconds int64 = 7200
	// DefaultBackupBackoffLimit is spec.backup.backoffLimit.
	DefaultBackupBackoffLimit int32 = 2
	// DefaultBackupKeepLast is spec.backup.profiles[].retention.keepLast.
	DefaultBackupKeepLast int32 = 7
	// DefaultBackupKeepFailed is spec.backup.profiles[].retention.keepFailed.
	DefaultBackupKeepFailed int32 = 10
	// DefaultVerificationKeepLast is spec.backup.profiles[].verification.retention.keepLast.
	DefaultVerificationKeepLast int32 = 3
	// DefaultVerificationKeepFailed is spec.backup.profiles[].verification.retention.keepFailed.
	DefaultVerificationKeepFailed int32 = 3
	// DefaultBackupRetryMaxAttempts is spec.backup.retry.maxAttempts.
	DefaultBackupRetryMaxAttempts int32 = 3
	// DefaultBackupRetryInitialBackoff is spec.backup.retry.initialBackoff.
	DefaultBackupRetryInitialBackoff = time.Minute
	// DefaultBackupRetryMaxBackoff is spec.backup.retry.maxBackoff.
	DefaultBackupRetryMaxBackoff = 30 * time.Minute
	// DefaultMaxBinlogSize is spec.backup.pitr.maxBinlogSize.
	DefaultMaxBinlogSize = "100M"
	// DefaultArchivePollInterval is spec.backup.pitr.archivePollInterval.
	DefaultArchivePollInterval = 60 * time.Second
)

// Dump, load and encryption options, shared by backups and restores.
const (
	// DefaultDumpThreads is spec.backup.profiles[].dump.threads.
	DefaultDumpThreads int32 = 4
	// DefaultDumpCompression is spec.backup.profiles[].dump.compression.
	DefaultDumpCompression DumpCompression = "zstd"
	// DefaultDumpConsistent is spec.backup.profiles[].dump.consistent.
	DefaultDumpConsistent = true
	// DefaultLoadThreads is loadOptions.threads (spec.initFromBackup, spec.restoreInPlace).
	DefaultLoadThreads int32 = 4
	// DefaultLoadIndexes is loadOptions.loadIndexes (spec.initFromBackup, spec.restoreInPlace).
	DefaultLoadIndexes = true
	// DefaultEncryptionAlgorithm is spec.backup.profiles[].encryption.algorithm.
	DefaultEncryptionAlgorithm = "AES-256-GCM"
	// DefaultPassphraseKey is passphraseSecretKeyRef.key, wherever a passphrase is selected.
	DefaultPassphraseKey = "passphrase"
	// DefaultPasswordKey is passwordSecretKeyRef.key (spec.dragonfly.auth, MysqlDatabase spec.owner).
	DefaultPasswordKey = "password"
	// DefaultSanityCheckTimeout is verification sanityCheck.timeout (MysqlBackupVerification spec, backup profiles).
	DefaultSanityCheckTimeout = 60 * time.Second
)

// MysqlFailoverGroup spec.dragonfly.
const (
	// DefaultDragonflyUpgradeStrategy is spec.dragonfly.upgradeStrategy.
	DefaultDragonflyUpgradeStrategy = DragonflyUpgradeRolling
	// DefaultDragonflyPort is spec.dragonfly.port.
	DefaultDragonflyPort int32 = 6379
	// DefaultDragonflyAdminPort is spec.dragonfly.adminPort.
	DefaultDragonflyAdminPort int32 = 9999
	// DefaultDragonflyMaxSyncWait is spec.dragonfly.plannedFailover.maxSyncWait.
	DefaultDragonflyMaxSyncWait = 30 * time.Second
	// DefaultDragonflyOnSyncTimeout is spec.dragonfly.plannedFailover.onSyncTimeout.
	DefaultDragonflyOnSyncTimeout DragonflyOnSyncTimeout = "Proceed"
)

// MysqlFailoverGroup spec.encryptionAtRest.
const (
	// DefaultEncryptionExistingData is spec.encryptionAtRest.existingData.
	DefaultEncryptionExistingData EncryptionExistingData = "Refuse"
	// DefaultCoverageTables is spec.encryptionAtRest.coverage.tables.
	DefaultCoverageTables = true
	// DefaultCoveragePrivilegeCheck is spec.encryptionAtRest.coverage.privilegeCheck.
	DefaultCoveragePrivilegeCheck = true
	// DefaultCoverageRedoLog is spec.encryptionAtRest.coverage.redoLog.
	DefaultCoverageRedoLog = true
	// DefaultCoverageUndoLog is spec.encryptionAtRest.coverage.undoLog.
	DefaultCoverageUndoLog = true
	// DefaultCoverageBinaryLog is spec.encryptionAtRest.coverage.binaryLog.
	DefaultCoverageBinaryLog = true
	// DefaultCoverageSystemTablespace is spec.encryptionAtRest.coverage.systemTablespace.
	DefaultCoverageSystemTablespace = true
	// DefaultKeyringDataFileDir is spec.encryptionAtRest.keyring.dataFileDir.
	DefaultKeyringDataFileDir = "/run/mysql-keyring"
	// DefaultKeyringMysqldDir is spec.encryptionAtRest.keyring.mysqldDir.
	DefaultKeyringMysqldDir = "/usr/sbin"
	// DefaultKeyringPluginDir is spec.encryptionAtRest.keyring.pluginDir.
	DefaultKeyringPluginDir = "/usr/lib64/mysql/plugin"
	// DefaultKeyringRetainVersions is spec.encryptionAtRest.keyring.retainVersions.
	DefaultKeyringRetainVersions int32 = 5
	// DefaultKeyringEscrowTimeout is spec.encryptionAtRest.keyring.escrowTimeout.
	DefaultKeyringEscrowTimeout = 10 * time.Minute
)

// MysqlBackup, MysqlStandbyCluster and MysqlDatabase.
const (
	// DefaultBackupDeletionPolicy is MysqlBackup spec.deletionPolicy.
	DefaultBackupDeletionPolicy = DeletionPolicyDelete
	// DefaultStandbyTransport is MysqlStandbyCluster spec.transport.
	DefaultStandbyTransport StandbyTransport = "ObjectStore"
	// DefaultDiscoveryInterval is MysqlStandbyCluster spec.freshness.discoveryInterval.
	DefaultDiscoveryInterval = 5 * time.Minute
	// DefaultCharacterSet is MysqlDatabase spec.characterSet.
	DefaultCharacterSet = "utf8mb4"
	// DefaultDatabaseDeletionPolicy is MysqlDatabase spec.deletionPolicy.
	DefaultDatabaseDeletionPolicy = DatabaseRetain
)
