package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mb,categories=bloodraven
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.failoverGroupRef.name`
// +kubebuilder:printcolumn:name="Profile",type=string,JSONPath=`.spec.profileName`
// +kubebuilder:printcolumn:name="Site",type=string,JSONPath=`.status.sourceSite`
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completionTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name: a MysqlBackup name must be at most 63 characters"
// +kubebuilder:validation:XValidation:rule="!self.metadata.name.endsWith('.bloodraven-backup.json')",message="metadata.name: a MysqlBackup name must not end in .bloodraven-backup.json"

// MysqlBackup is one backup run of a failover group's profile, created on
// demand or by a schedule.
type MysqlBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says what to back up.
	// +required
	Spec MysqlBackupSpec `json:"spec"`
	// status is the progress and result of the run.
	// +optional
	Status MysqlBackupStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MysqlBackupList is a list of MysqlBackup.
type MysqlBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MysqlBackup `json:"items"`
}

// DeletionPolicy says what deleting an object does to its artifact.
// +kubebuilder:validation:Enum=Delete;Retain
type DeletionPolicy string

const (
	// DeletionPolicyDelete deletes the artifact with the object.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyRetain keeps the artifact (except on a claim the group
	// provisioned, which goes with the group).
	DeletionPolicyRetain DeletionPolicy = "Retain"
)

// MysqlBackupSpec says what to back up. Everything but deletionPolicy is
// immutable.
// +kubebuilder:validation:XValidation:rule="has(self.sourceSite) == has(oldSelf.sourceSite) && (!has(self.sourceSite) || self.sourceSite == oldSelf.sourceSite)",message="spec.sourceSite is immutable",fieldPath=".sourceSite"
type MysqlBackupSpec struct {
	// failoverGroupRef names the group to back up. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.failoverGroupRef is immutable"
	FailoverGroupRef FailoverGroupReference `json:"failoverGroupRef"`
	// profileName of the group's spec.backup.profiles entry. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.profileName is immutable"
	ProfileName string `json:"profileName"`
	// sourceSite forces the backup to run against this site. Omitted picks
	// a healthy replica within maxLagSecondsForSource, else the primary.
	// Immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	SourceSite string `json:"sourceSite,omitempty"`
	// deletionPolicy: Delete removes the artifact with this object; Retain
	// keeps it (except on a claim the group provisioned).
	// +optional
	// +kubebuilder:default=Delete
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// ArtifactStorage is where a backup's artifact lives.
type ArtifactStorage struct {
	// type of store: S3 or PVC.
	// +optional
	Type BackupStorageType `json:"type,omitempty"`
	// location of the dump directory: s3://bucket/prefix/... or
	// pvc://claim/path.
	// +optional
	Location string `json:"location,omitempty"`
}

// BackupEncryptionStatus records how a backup was encrypted.
type BackupEncryptionStatus struct {
	// algorithm used.
	// +optional
	Algorithm string `json:"algorithm,omitempty"`
	// keySecretName is the operator-made dump key snapshot Secret
	// (mysql-dump-key-...) that decrypts this backup.
	// +optional
	KeySecretName string `json:"keySecretName,omitempty"`
}

// BackupPendingReason is why a backup has not started.
// +kubebuilder:validation:Enum=WaitingForHealthySource;WaitingForGroup;WaitingForProfile;WaitingForPreviousBackup;WaitingForArchiveBinding
type BackupPendingReason string

// MysqlBackupStatus is the progress and result of a backup.
type MysqlBackupStatus struct {
	// observedGeneration the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase: Pending, Running, Succeeded or Failed.
	// +optional
	Phase ResourcePhase `json:"phase,omitempty"`
	// pendingReason while Pending.
	// +optional
	PendingReason BackupPendingReason `json:"pendingReason,omitempty"`
	// conditions: Ready (False from creation until Succeeded).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// jobName of the backup Job.
	// +optional
	JobName string `json:"jobName,omitempty"`
	// sourceSite the dump was taken from.
	// +optional
	SourceSite string `json:"sourceSite,omitempty"`
	// startTime of the dump.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime of the dump.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// mysqlImage that produced the dump; restore onto the same major version.
	// +optional
	MySQLImage string `json:"mysqlImage,omitempty"`
	// artifactStorage is the only recorded location of the artifact.
	// +optional
	ArtifactStorage *ArtifactStorage `json:"artifactStorage,omitempty"`
	// gtidExecuted recorded by the dump.
	// +optional
	GTIDExecuted string `json:"gtidExecuted,omitempty"`
	// binlogPosition at the dump's consistency point.
	// +optional
	BinlogPosition *BinlogPosition `json:"binlogPosition,omitempty"`
	// sizeBytes of the artifact.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// encryption of the artifact, when encrypted.
	// +optional
	Encryption *BackupEncryptionStatus `json:"encryption,omitempty"`
	// pitrArchiveID is the archive this backup is a point-in-time baseline
	// of; empty when it is not one.
	// +optional
	PITRArchiveID string `json:"pitrArchiveID,omitempty"`
	// retryAttempt of a scheduled backup (0 for the first run).
	// +optional
	RetryAttempt int32 `json:"retryAttempt,omitempty"`
	// message explains the phase.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mbv,categories=bloodraven
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.failoverGroupRef.name`
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.status.backupName`
// +kubebuilder:printcolumn:name="Sanity",type=string,JSONPath=`.status.sanityCheck.outcome`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name: a MysqlBackupVerification name must be at most 63 characters"

// MysqlBackupVerification restores a backup into a throwaway MySQL to prove
// that it loads, optionally replays binary logs and runs a sanity query.
type MysqlBackupVerification struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which backup to verify and how.
	// +required
	Spec MysqlBackupVerificationSpec `json:"spec"`
	// status is the progress and result of the verification.
	// +optional
	Status MysqlBackupVerificationStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MysqlBackupVerificationList is a list of MysqlBackupVerification.
type MysqlBackupVerificationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MysqlBackupVerification `json:"items"`
}

// MysqlBackupVerificationSpec says which backup to verify and how.
// failoverGroupRef, profileName, backupRef, pointInTime and sanityCheck are
// immutable.
// +kubebuilder:validation:XValidation:rule="has(self.backupRef) == has(oldSelf.backupRef) && (!has(self.backupRef) || self.backupRef == oldSelf.backupRef)",message="spec.backupRef is immutable",fieldPath=".backupRef"
// +kubebuilder:validation:XValidation:rule="has(self.pointInTime) == has(oldSelf.pointInTime) && (!has(self.pointInTime) || self.pointInTime == oldSelf.pointInTime)",message="spec.pointInTime is immutable",fieldPath=".pointInTime"
// +kubebuilder:validation:XValidation:rule="has(self.sanityCheck) == has(oldSelf.sanityCheck) && (!has(self.sanityCheck) || self.sanityCheck == oldSelf.sanityCheck)",message="spec.sanityCheck is immutable",fieldPath=".sanityCheck"
type MysqlBackupVerificationSpec struct {
	// failoverGroupRef names the group whose backup is verified. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.failoverGroupRef is immutable"
	FailoverGroupRef FailoverGroupReference `json:"failoverGroupRef"`
	// profileName of the group's backup profile. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.profileName is immutable"
	ProfileName string `json:"profileName"`
	// backupRef names the MysqlBackup to verify. Omit it to verify the
	// profile's latest successful backup. Immutable.
	// +optional
	BackupRef *BackupReference `json:"backupRef,omitempty"`
	// pointInTime replays archived binary logs after the load. Omit it to
	// verify the dump alone. Immutable.
	// +optional
	PointInTime *VerificationPointInTime `json:"pointInTime,omitempty"`
	// sanityCheck runs one query against the restored instance. Immutable.
	// +optional
	SanityCheck *SanityCheck `json:"sanityCheck,omitempty"`
	// ttlSecondsAfterFinished deletes the finished verification's Pod (and
	// its restored datadir) after this many seconds. Unset keeps it until
	// retention deletes this object; 0 cleans up at once.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
	// resources of the throwaway MySQL; bound its disk with
	// limits.ephemeral-storage.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// SanityCheckOutcome is the result of a sanity query.
// +kubebuilder:validation:Enum=Passed;Failed;Errored
type SanityCheckOutcome string

// SanityCheckResult is what the sanity query returned.
type SanityCheckResult struct {
	// outcome: Passed, Failed (result below minResult) or Errored.
	// +optional
	Outcome SanityCheckOutcome `json:"outcome,omitempty"`
	// result is the first column of the returned row.
	// +optional
	Result *int64 `json:"result,omitempty"`
	// durationMilliseconds the query took.
	// +optional
	DurationMilliseconds int64 `json:"durationMilliseconds,omitempty"`
	// error returned by the query, if any.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Error string `json:"error,omitempty"`
}

// VerificationPointInTimeStatus is the replay result of a verification.
type VerificationPointInTimeStatus struct {
	// mode used.
	// +optional
	Mode PointInTimeMode `json:"mode,omitempty"`
	// result of the replay.
	// +optional
	PointInTimeResult `json:",inline"`
}

// MysqlBackupVerificationStatus is the progress and result of a verification.
type MysqlBackupVerificationStatus struct {
	// observedGeneration the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase: Pending, Running, Succeeded or Failed.
	// +optional
	Phase ResourcePhase `json:"phase,omitempty"`
	// conditions: Verified, and Ready which mirrors it (False/InProgress
	// before the result).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// backupName that was verified (resolved from backupRef or "latest").
	// +optional
	BackupName string `json:"backupName,omitempty"`
	// podName of the throwaway MySQL.
	// +optional
	PodName string `json:"podName,omitempty"`
	// startTime of the verification.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime of the verification.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// loadDurationMilliseconds the load took.
	// +optional
	LoadDurationMilliseconds int64 `json:"loadDurationMilliseconds,omitempty"`
	// pointInTime is the replay result.
	// +optional
	PointInTime *VerificationPointInTimeStatus `json:"pointInTime,omitempty"`
	// sanityCheck is the query result.
	// +optional
	SanityCheck *SanityCheckResult `json:"sanityCheck,omitempty"`
	// message explains the phase.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
}
