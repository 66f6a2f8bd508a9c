package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupSpec configures backups of a failover group.
type BackupSpec struct {
	// image containing mysqlsh, used by backup, restore and verification Jobs.
	// +optional
	// +kubebuilder:default="container-registry.oracle.com/mysql/community-server:9.7"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`
	// imagePullSecrets for the backup image.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// profiles are named backup configurations referenced by schedules,
	// MysqlBackup and MysqlBackupVerification objects.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Profiles []BackupProfile `json:"profiles,omitempty"`
	// schedules are cron-driven recurring backups, one CronJob each.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Schedules []BackupSchedule `json:"schedules,omitempty"`
	// maxLagSecondsForSource is the replica lag above which a backup is taken
	// from the primary instead of a replica. An explicit 0 is honored.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	MaxLagSecondsForSource *int32 `json:"maxLagSecondsForSource,omitempty"`
	// resources of the backup Job's mysqlsh container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// activeDeadlineSeconds caps the wall-clock time of one backup Job.
	// +optional
	// +kubebuilder:default=7200
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=604800
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
	// backoffLimit of backup Jobs. An explicit 0 is honored.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
	// retry re-creates failed scheduled backups, independently of the Job's
	// backoffLimit.
	// +optional
	Retry *BackupRetrySpec `json:"retry,omitempty"`
	// pitr archives binary logs continuously for point-in-time recovery.
	// +optional
	PITR *PITRSpec `json:"pitr,omitempty"`
	// podSecurityContext is merged over the hardened default of backup pods.
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
	// containerSecurityContext is merged over the hardened default of backup
	// containers.
	// +optional
	ContainerSecurityContext *corev1.SecurityContext `json:"containerSecurityContext,omitempty"`
	// stagingVolumeSizeLimit caps the emptyDir used to stage plaintext by
	// backup, restore and verification Jobs. Unset falls back to the node's
	// ephemeral-storage limit.
	// +optional
	StagingVolumeSizeLimit *resource.Quantity `json:"stagingVolumeSizeLimit,omitempty"`
}

// BackupProfile is a reusable named backup configuration.
// +kubebuilder:validation:XValidation:rule="(has(self.storage.pvc) && has(self.storage.pvc.provisioned)) == (has(oldSelf.storage.pvc) && has(oldSelf.storage.pvc.provisioned)) && (!(has(self.storage.pvc) && has(self.storage.pvc.provisioned)) || self.storage.pvc.provisioned == oldSelf.storage.pvc.provisioned)",message="spec.backup.profiles[].storage.pvc.provisioned cannot be added, changed or removed",fieldPath=".storage"
type BackupProfile struct {
	// name of the profile: a DNS label of at most 63 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// storage is where the profile's dumps (and, for the PITR profile, its
	// binary-log archive) live.
	// +required
	Storage BackupStorage `json:"storage"`
	// dump tunes util.dumpInstance().
	// +optional
	Dump *DumpOptions `json:"dump,omitempty"`
	// retention decides which successful and failed MysqlBackup objects
	// (and their artifacts) are kept.
	// +optional
	// +kubebuilder:default={}
	Retention *BackupRetention `json:"retention,omitempty"`
	// verification periodically restores this profile's latest backup into a
	// throwaway MySQL to prove it loads.
	// +optional
	Verification *ProfileVerificationSpec `json:"verification,omitempty"`
	// encryption encrypts every dump file (and archived binary log) of this
	// profile on the client side.
	// +optional
	Encryption *BackupEncryptionSpec `json:"encryption,omitempty"`
}

// BackupRetention keeps a successful backup while any of its rules says keep.
type BackupRetention struct {
	// keepLast is how many newest successful backups are always kept. It is
	// also the floor that stops a sweep from deleting the last good backup
	// after a long run of failures.
	// +optional
	// +kubebuilder:default=7
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	KeepLast *int32 `json:"keepLast,omitempty"`
	// keepWithinDays also keeps every successful backup younger than this
	// many days. Unset keeps none by age.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3650
	KeepWithinDays *int32 `json:"keepWithinDays,omitempty"`
	// keepFailed is how many newest failed backups are kept for inspection.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	KeepFailed *int32 `json:"keepFailed,omitempty"`
}

// BackupSchedule is a cron-driven recurring backup.
type BackupSchedule struct {
	// name of the schedule: a DNS label of at most 63 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// schedule in cron format, for example "0 3 * * *".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule"`
	// timeZone of the schedule (IANA name). Unset uses the controller's zone.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`
	// profileName of the spec.backup.profiles entry to back up with.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ProfileName string `json:"profileName"`
	// suspend pauses the schedule.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// BackupRetrySpec re-creates failed scheduled backups with exponential backoff.
// +kubebuilder:validation:XValidation:rule="duration(self.initialBackoff) <= duration(self.maxBackoff)",message="spec.backup.retry.initialBackoff must not exceed spec.backup.retry.maxBackoff",fieldPath=".initialBackoff"
type BackupRetrySpec struct {
	// maxAttempts is the number of retries after the first failure; 0
	// disables retries.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	MaxAttempts *int32 `json:"maxAttempts,omitempty"`
	// initialBackoff before the first retry. Bounds: 1s to 24h.
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="spec.backup.retry.initialBackoff must be between 1s and 24h"
	InitialBackoff *metav1.Duration `json:"initialBackoff,omitempty"`
	// maxBackoff caps the doubling backoff. Bounds: 1s to 24h.
	// +optional
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="spec.backup.retry.maxBackoff must be between 1s and 24h"
	MaxBackoff *metav1.Duration `json:"maxBackoff,omitempty"`
}

// PITRSpec turns on continuous binary-log archival.
// +kubebuilder:validation:XValidation:rule="!self.enabled || has(self.profileName)",message="spec.backup.pitr.profileName is required when pitr is enabled",fieldPath=".profileName"
type PITRSpec struct {
	// enabled turns archival on.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// profileName of the profile whose storage receives the archive (under a
	// binlogs/ subprefix). Required when enabled. Use a prefix no other
	// group or release has written.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ProfileName string `json:"profileName,omitempty"`
	// maxBinlogSize is passed to MySQL as max_binlog_size; it sets the
	// rotation cadence and so the archive's recovery-point gap.
	// +optional
	// +kubebuilder:default="100M"
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[1-9][0-9]*[KMG]?$`
	MaxBinlogSize string `json:"maxBinlogSize,omitempty"`
	// archivePollInterval is the sidecar's scan cadence beside inotify.
	// Bounds: 1s to 1h.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="spec.backup.pitr.archivePollInterval must be between 1s and 1h"
	ArchivePollInterval *metav1.Duration `json:"archivePollInterval,omitempty"`
}

// PointInTimeMode chooses how far a verification replays binary logs.
// +kubebuilder:validation:Enum=Latest;Timestamp
type PointInTimeMode string

const (
	// PointInTimeLatest replays everything archived.
	PointInTimeLatest PointInTimeMode = "Latest"
	// PointInTimeTimestamp replays up to stopTime.
	PointInTimeTimestamp PointInTimeMode = "Timestamp"
)

// VerificationPointInTime asks a verification to replay archived binary logs
// after the load. Omit the block to verify the dump alone.
// +kubebuilder:validation:XValidation:rule="self.mode == 'Timestamp' ? has(self.stopTime) : !has(self.stopTime)",message="pointInTime.stopTime is required for mode Timestamp and forbidden for mode Latest",fieldPath=".stopTime"
type VerificationPointInTime struct {
	// mode: Latest replays everything archived, Timestamp up to stopTime.
	// +required
	Mode PointInTimeMode `json:"mode"`
	// stopTime for mode Timestamp: RFC 3339 with an explicit zone and whole
	// seconds.
	// +optional
	// +kubebuilder:validation:MaxLength=25
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$') && timestamp(self) > timestamp('1970-01-01T00:00:00Z')",message="pointInTime.stopTime must be an RFC 3339 timestamp with whole seconds and an explicit zone"
	StopTime string `json:"stopTime,omitempty"`
}

// SanityCheck runs one query against the restored instance.
type SanityCheck struct {
	// query to run, for example SELECT COUNT(*) FROM orders.orders. It must
	// return one row whose first column is an integer.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query"`
	// minResult is the smallest acceptable value of the first column.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinResult *int64 `json:"minResult,omitempty"`
	// timeout of the query. Bounds: 1s to 1h.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="sanityCheck.timeout must be between 1s and 1h"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// VerificationRetention keeps the newest verification objects of a profile.
// An explicit 0 keeps none.
type VerificationRetention struct {
	// keepLast successful verifications.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	KeepLast *int32 `json:"keepLast,omitempty"`
	// keepFailed failed verifications.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	KeepFailed *int32 `json:"keepFailed,omitempty"`
}

// ProfileVerificationSpec schedules MysqlBackupVerification runs of a
// profile's latest backup.
// +kubebuilder:validation:XValidation:rule="!self.enabled || has(self.schedule)",message="verification.schedule is required when verification is enabled",fieldPath=".schedule"
type ProfileVerificationSpec struct {
	// enabled renders the verification CronJob.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// schedule in cron format.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule,omitempty"`
	// pointInTime replays archived binary logs after the load. Omit it to
	// verify the dump alone.
	// +optional
	PointInTime *VerificationPointInTime `json:"pointInTime,omitempty"`
	// sanityCheck runs one query against the restored instance.
	// +optional
	SanityCheck *SanityCheck `json:"sanityCheck,omitempty"`
	// ttlSecondsAfterFinished deletes a finished verification's Pod (and its
	// restored datadir) after this many seconds. Unset keeps it until
	// retention deletes the verification.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
	// retention of this profile's verification objects.
	// +optional
	// +kubebuilder:default={}
	Retention *VerificationRetention `json:"retention,omitempty"`
	// resources of the throwaway MySQL; bound its disk with
	// limits.ephemeral-storage.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// DragonflyOnSyncTimeout says what a planned failover does when the target
// Dragonfly replica does not catch up in time.
// +kubebuilder:validation:Enum=Proceed;Fail
type DragonflyOnSyncTimeout string

// DragonflyUpgradeStrategy chooses how a Dragonfly image change rolls out.
// +kubebuilder:validation:Enum=Rolling;SnapshotRestore
type DragonflyUpgradeStrategy string

const (
	// DragonflyUpgradeRolling restarts Dragonfly pods one by one.
	DragonflyUpgradeRolling DragonflyUpgradeStrategy = "Rolling"
	// DragonflyUpgradeSnapshotRestore snapshots the master, upgrades, and
	// restores the snapshot. Needs snapshot.dir.
	DragonflyUpgradeSnapshotRestore DragonflyUpgradeStrategy = "SnapshotRestore"
)

// DragonflySpec co-manages one Dragonfly per site.
// +kubebuilder:validation:XValidation:rule="!self.enabled || has(self.image)",message="spec.dragonfly.image is required when dragonfly is enabled",fieldPath=".image"
// +kubebuilder:validation:XValidation:rule="self.upgradeStrategy != 'SnapshotRestore' || (self.enabled && has(self.snapshot) && has(self.snapshot.dir))",message="spec.dragonfly.upgradeStrategy SnapshotRestore needs dragonfly enabled and spec.dragonfly.snapshot.dir",fieldPath=".upgradeStrategy"
type DragonflySpec struct {
	// enabled creates one Dragonfly StatefulSet per site; false removes them.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// image of Dragonfly, pinned (v1.38.0 or later); ":latest" is refused.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.endsWith(':latest') && (self.contains('@') || self.substring(self.lastIndexOf('/') + 1).contains(':'))",message="spec.dragonfly.image must be pinned to a tag other than latest or to a digest"
	Image string `json:"image,omitempty"`
	// upgradeStrategy for image changes: Rolling, or SnapshotRestore to keep
	// the data set across the upgrade.
	// +optional
	// +kubebuilder:default=Rolling
	UpgradeStrategy DragonflyUpgradeStrategy `json:"upgradeStrategy,omitempty"`
	// port is the Redis-compatible client port.
	// +optional
	// +kubebuilder:default=6379
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`
	// adminPort is the admin port the operator uses.
	// +optional
	// +kubebuilder:default=9999
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	AdminPort *int32 `json:"adminPort,omitempty"`
	// maxMemory renders --maxmemory; a positive quantity such as 512Mi.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))",message="spec.dragonfly.maxMemory must be a positive quantity such as 512Mi"
	MaxMemory string `json:"maxMemory,omitempty"`
	// proactorThreads renders --proactor_threads. Unset uses Dragonfly's default.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	ProactorThreads *int32 `json:"proactorThreads,omitempty"`
	// args are extra Dragonfly flags; operator-owned flags are filtered out.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	Args []string `json:"args,omitempty"`
	// auth sets the Dragonfly password.
	// +optional
	Auth *DragonflyAuthSpec `json:"auth,omitempty"`
	// resources of each Dragonfly container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// plannedFailover controls Dragonfly during a MySQL planned failover.
	// +optional
	// +kubebuilder:default={}
	PlannedFailover *DragonflyPlannedFailoverSpec `json:"plannedFailover,omitempty"`
	// snapshot configures Dragonfly's snapshot directory (local or s3://).
	// +optional
	Snapshot *DragonflySnapshotSpec `json:"snapshot,omitempty"`
}

// DragonflyAuthSpec sets the Dragonfly password (--requirepass).
type DragonflyAuthSpec struct {
	// passwordSecretKeyRef selects the Secret key holding the password.
	// +required
	PasswordSecretKeyRef PasswordSecretKeySelector `json:"passwordSecretKeyRef"`
}

// DragonflyPlannedFailoverSpec controls Dragonfly during a planned failover.
type DragonflyPlannedFailoverSpec struct {
	// maxSyncWait bounds the wait for the target replica to catch up; it is
	// also the REPLTAKEOVER timeout. Bounds: 1s to 10m.
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('10m')",message="spec.dragonfly.plannedFailover.maxSyncWait must be between 1s and 10m"
	MaxSyncWait *metav1.Duration `json:"maxSyncWait,omitempty"`
	// onSyncTimeout: Proceed promotes MySQL anyway and records
	// sessionsPreserved=false; Fail rolls back before MySQL is promoted.
	// +optional
	// +kubebuilder:default=Proceed
	OnSyncTimeout DragonflyOnSyncTimeout `json:"onSyncTimeout,omitempty"`
}

// DragonflySnapshotSpec is Dragonfly's snapshot location.
type DragonflySnapshotSpec struct {
	// dir is passed as --dir; use s3://bucket[/prefix] for object storage.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Dir string `json:"dir,omitempty"`
	// serviceAccountName of Dragonfly pods, for cloud IAM access.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// credentialsSecretName is projected as AWS credential environment
	// variables.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	CredentialsSecretName string `json:"credentialsSecretName,omitempty"`
	// s3EndpointURL of an S3-compatible store with its scheme, for example
	// http://rustfs:9000. Unset uses AWS over https.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (url(self).getScheme() == 'http' || url(self).getScheme() == 'https') && url(self).getHostname() != ''",message="spec.dragonfly.snapshot.s3EndpointURL must be an http:// or https:// URL with a host"
	S3EndpointURL string `json:"s3EndpointURL,omitempty"`
	// s3SignPayload is passed as --s3_sign_payload.
	// +optional
	S3SignPayload *bool `json:"s3SignPayload,omitempty"`
}

// EncryptionExistingData says what enabling encryption does to a group that
// already holds data.
// +kubebuilder:validation:Enum=Refuse;LeavePlaintext
type EncryptionExistingData string

// EncryptionAtRestSpec turns on InnoDB data-at-rest encryption.
type EncryptionAtRestSpec struct {
	// enabled turns on encryption for every site. It cannot go back to false.
	// +required
	Enabled bool `json:"enabled"`
	// existingData: Refuse (default) refuses to enable encryption on a group
	// that already serves; LeavePlaintext enables it and leaves existing
	// tablespaces in the clear until they are rebuilt.
	// +optional
	// +kubebuilder:default=Refuse
	ExistingData EncryptionExistingData `json:"existingData,omitempty"`
	// coverage selects the encryption settings the operator enforces.
	// +optional
	// +kubebuilder:default={}
	Coverage *EncryptionCoverageSpec `json:"coverage,omitempty"`
	// keyring sets the keyring component paths and escrow lifecycle.
	// +optional
	// +kubebuilder:default={}
	Keyring *KeyringSpec `json:"keyring,omitempty"`
}

// EncryptionCoverageSpec selects which encryption settings are enforced.
// Each defaults to true; turning one off narrows the security claim.
type EncryptionCoverageSpec struct {
	// tables sets default_table_encryption (new schemas and tables).
	// +optional
	// +kubebuilder:default=true
	Tables *bool `json:"tables,omitempty"`
	// privilegeCheck sets table_encryption_privilege_check.
	// +optional
	// +kubebuilder:default=true
	PrivilegeCheck *bool `json:"privilegeCheck,omitempty"`
	// redoLog sets innodb_redo_log_encrypt.
	// +optional
	// +kubebuilder:default=true
	RedoLog *bool `json:"redoLog,omitempty"`
	// undoLog sets innodb_undo_log_encrypt.
	// +optional
	// +kubebuilder:default=true
	UndoLog *bool `json:"undoLog,omitempty"`
	// binaryLog sets binlog_encryption (relay logs too).
	// +optional
	// +kubebuilder:default=true
	BinaryLog *bool `json:"binaryLog,omitempty"`
	// systemTablespace encrypts the mysql tablespace (the data dictionary).
	// +optional
	// +kubebuilder:default=true
	SystemTablespace *bool `json:"systemTablespace,omitempty"`
}

// KeyringSpec sets keyring paths (image-specific) and the escrow lifecycle.
// The paths cannot change while encryption is enabled.
type KeyringSpec struct {
	// dataFileDir is the keyring mount point, outside the MySQL datadir
	// (/var/lib/mysql and below are refused).
	// +optional
	// +kubebuilder:default="/run/mysql-keyring"
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/') && self != '/' && self != '/var/lib/mysql' && !self.startsWith('/var/lib/mysql/')",message="spec.encryptionAtRest.keyring.dataFileDir must be an absolute path outside /var/lib/mysql"
	DataFileDir string `json:"dataFileDir,omitempty"`
	// mysqldDir is the directory holding the mysqld binary.
	// +optional
	// +kubebuilder:default="/usr/sbin"
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/`
	MysqldDir string `json:"mysqldDir,omitempty"`
	// pluginDir is MySQL's plugin_dir.
	// +optional
	// +kubebuilder:default="/usr/lib64/mysql/plugin"
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/`
	PluginDir string `json:"pluginDir,omitempty"`
	// retainVersions is how many superseded escrow Secret versions are kept
	// per site (the sealed one is never pruned).
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=50
	RetainVersions *int32 `json:"retainVersions,omitempty"`
	// escrowTimeout is how long a site may stay unescrowed before it is
	// reported Failed. Bounds: 30s to 24h.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('24h')",message="spec.encryptionAtRest.keyring.escrowTimeout must be between 30s and 24h"
	EscrowTimeout *metav1.Duration `json:"escrowTimeout,omitempty"`
}
