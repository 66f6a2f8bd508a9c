package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Types shared by more than one kind: object references, Secret references,
// backup storage locations, dump and load tuning.
//
// Patterns used by the markers below (kept here so every field uses the same):
//   DNS label (RFC 1123):      ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$
//   DNS subdomain (RFC 1123):  ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
//   Secret key:                ^[-._a-zA-Z0-9]+$

// FailoverGroupReference names a MysqlFailoverGroup in the referring object's namespace.
type FailoverGroupReference struct {
	// name of the MysqlFailoverGroup, in the same namespace as the referring object.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// BackupReference names a MysqlBackup in the referring object's namespace.
type BackupReference struct {
	// name of the MysqlBackup, in the same namespace as the referring object.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// PassphraseSecretKeySelector selects the key of a Secret, in the same
// namespace, that holds an encryption passphrase. Leading and trailing
// whitespace of the value is stripped when the passphrase is read.
type PassphraseSecretKeySelector struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// key within the Secret that holds the passphrase bytes.
	// +optional
	// +kubebuilder:default=passphrase
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// PasswordSecretKeySelector selects the key of a Secret, in the same
// namespace, that holds a password.
type PasswordSecretKeySelector struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// key within the Secret that holds the password.
	// +optional
	// +kubebuilder:default=password
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// BackupEncryptionSpec turns on client-side envelope encryption (AES-256-GCM
// with HKDF-SHA256 key derivation) of every dump file and, when the profile is
// also the PITR profile, of every archived binary log. Rotating or deleting
// the passphrase Secret makes existing ciphertext unreadable: keep old values.
type BackupEncryptionSpec struct {
	// algorithm used for encryption. Only AES-256-GCM is supported.
	// +optional
	// +kubebuilder:default=AES-256-GCM
	// +kubebuilder:validation:Enum=AES-256-GCM
	Algorithm string `json:"algorithm,omitempty"`
	// passphraseSecretKeyRef selects the Secret key holding the passphrase.
	// +required
	PassphraseSecretKeyRef PassphraseSecretKeySelector `json:"passphraseSecretKeyRef"`
}

// BackupDecryptionSpec supplies the passphrase that decrypts an encrypted
// backup and any binary logs replayed on top of it. It must be the passphrase
// in use when the backup was written: a rotated value does not decrypt older
// ciphertext.
type BackupDecryptionSpec struct {
	// passphraseSecretKeyRef selects the Secret key holding the passphrase.
	// +required
	PassphraseSecretKeyRef PassphraseSecretKeySelector `json:"passphraseSecretKeyRef"`
}

// BackupStorageType names the kind of store a backup profile writes to.
// +kubebuilder:validation:Enum=S3;PVC
type BackupStorageType string

const (
	// BackupStorageS3 stores backups in an S3-compatible object store.
	BackupStorageS3 BackupStorageType = "S3"
	// BackupStoragePVC stores backups on a PersistentVolumeClaim.
	BackupStoragePVC BackupStorageType = "PVC"
)

// BackupStorage is a tagged union: type S3 with the s3 block, or type PVC with
// the pvc block.
// +kubebuilder:validation:XValidation:rule="self.type == 'S3' ? (has(self.s3) && !has(self.pvc)) : (has(self.pvc) && !has(self.s3))",message="storage: type S3 needs the s3 block and no pvc block; type PVC needs the pvc block and no s3 block"
type BackupStorage struct {
	// type selects the storage backend: S3 or PVC.
	// +required
	Type BackupStorageType `json:"type"`
	// s3 is the object-store location, required when type is S3.
	// +optional
	S3 *S3Storage `json:"s3,omitempty"`
	// pvc is the claim location, required when type is PVC.
	// +optional
	PVC *PVCStorage `json:"pvc,omitempty"`
}

// S3Storage is a location in an S3-compatible object store.
type S3Storage struct {
	// bucket name.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][-.a-z0-9]*[a-z0-9]$`
	Bucket string `json:"bucket"`
	// prefix under which every object is written, at most 512 characters.
	// Segments are separated by "/"; an empty segment (a//b), "." and ".." are
	// refused. A leading "/" is ignored, so "/prod" and "prod" are the same
	// prefix. Give every group and profile a prefix of its own.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="(self.startsWith('/') ? self.substring(1) : self).split('/').all(seg, seg != '' && seg != '.' && seg != '..')",message="prefix must not contain an empty, '.' or '..' segment"
	Prefix string `json:"prefix"`
	// region of the bucket. Empty lets the client discover it.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Region string `json:"region,omitempty"`
	// endpointURL of an S3-compatible service, with scheme, for example
	// https://s3.eu-west-1.amazonaws.com or http://minio.storage:9000. Empty
	// uses AWS S3.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (url(self).getScheme() == 'http' || url(self).getScheme() == 'https') && url(self).getHostname() != ''",message="endpointURL must be an http:// or https:// URL with a host"
	EndpointURL string `json:"endpointURL,omitempty"`
	// forcePathStyle addresses the bucket as a path (endpoint/bucket) instead of
	// a virtual host (bucket.endpoint). Most self-hosted stores need it.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
	// credentialsSecretName names a Secret with the keys AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY. Omit it to use the pod's ambient identity
	// (for example IAM roles for service accounts).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	CredentialsSecretName string `json:"credentialsSecretName,omitempty"`
}

// PVCStorage is a backup location on a PersistentVolumeClaim: either an
// existing claim (claimName) or one the operator provisions (provisioned).
// Exactly one of the two.
// +kubebuilder:validation:XValidation:rule="has(self.claimName) != has(self.provisioned)",message="pvc: set exactly one of claimName and provisioned"
type PVCStorage struct {
	// claimName of an existing PersistentVolumeClaim in the group's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClaimName string `json:"claimName,omitempty"`
	// provisioned asks the operator to create and own the claim. It cannot be
	// added, changed or removed once set: the claim holds the backups.
	// +optional
	Provisioned *ProvisionedClaim `json:"provisioned,omitempty"`
}

// ProvisionedClaim describes a claim the operator creates for backups.
type ProvisionedClaim struct {
	// storageClassName of the claim.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	StorageClassName string `json:"storageClassName"`
	// size of the claim: a positive quantity string such as "500Gi".
	// +required
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))",message="size must be a positive quantity such as 100Gi"
	Size string `json:"size"`
}

// BackupSource is a tagged reference to a backup to load: exactly one of
// backupRef, s3 or pvc.
// +kubebuilder:validation:XValidation:rule="(has(self.backupRef) ? 1 : 0) + (has(self.s3) ? 1 : 0) + (has(self.pvc) ? 1 : 0) == 1",message="source: set exactly one of backupRef, s3 and pvc"
type BackupSource struct {
	// backupRef names a MysqlBackup in the same namespace. Its artifact
	// location, GTID set and encryption key are read from its status.
	// +optional
	BackupRef *BackupReference `json:"backupRef,omitempty"`
	// s3 is the location of a dump in an object store; prefix is the dump's
	// own directory (the one holding its @.json).
	// +optional
	S3 *S3Storage `json:"s3,omitempty"`
	// pvc is the location of a dump on an existing claim.
	// +optional
	PVC *PVCSource `json:"pvc,omitempty"`
}

// PVCSource is a dump directory on an existing claim.
type PVCSource struct {
	// claimName of the PersistentVolumeClaim holding the dump.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClaimName string `json:"claimName"`
	// path of the dump directory inside the claim, relative to its root.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && self.split('/').all(seg, seg != '' && seg != '.' && seg != '..')",message="path must be relative, without an empty, '.' or '..' segment"
	Path string `json:"path"`
}

// DumpCompression is the compression of dump chunks.
// +kubebuilder:validation:Enum=zstd;gzip;none
type DumpCompression string

// DumpOptions tunes mysqlsh util.dumpInstance().
type DumpOptions struct {
	// threads used by the dump.
	// +optional
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Threads *int32 `json:"threads,omitempty"`
	// bytesPerChunk is the approximate size of each data chunk, for example 64M.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[1-9][0-9]*[kKmMgG]?$`
	BytesPerChunk string `json:"bytesPerChunk,omitempty"`
	// compression of data chunks.
	// +optional
	// +kubebuilder:default=zstd
	Compression DumpCompression `json:"compression,omitempty"`
	// includeSchemas limits the dump to these schemas. Empty dumps every
	// user schema.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:MinLength=1
	IncludeSchemas []string `json:"includeSchemas,omitempty"`
	// excludeSchemas leaves these schemas out of the dump.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:MinLength=1
	ExcludeSchemas []string `json:"excludeSchemas,omitempty"`
	// consistent takes a consistent snapshot across tables (FLUSH TABLES WITH
	// READ LOCK, or backup lock where available).
	// +optional
	// +kubebuilder:default=true
	Consistent *bool `json:"consistent,omitempty"`
	// ocimds checks the dump for MySQL HeatWave Service compatibility.
	// +optional
	OCIMDS bool `json:"ocimds,omitempty"`
}

// LoadOptions tunes mysqlsh util.loadDump().
type LoadOptions struct {
	// threads used by the load.
	// +optional
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Threads *int32 `json:"threads,omitempty"`
	// skipBinlog loads without writing the binary log, so the load does not
	// replicate. Per-schema in-place restores force it to false.
	// +optional
	SkipBinlog bool `json:"skipBinlog,omitempty"`
	// loadIndexes creates secondary indexes during the load.
	// +optional
	// +kubebuilder:default=true
	LoadIndexes *bool `json:"loadIndexes,omitempty"`
	// includeSchemas loads only these schemas. An in-place restore accepts at
	// most one entry (a per-schema restore).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:MinLength=1
	IncludeSchemas []string `json:"includeSchemas,omitempty"`
	// excludeSchemas leaves these schemas out of the load.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:MinLength=1
	ExcludeSchemas []string `json:"excludeSchemas,omitempty"`
}

// ResourcePhase is the coarse lifecycle phase of a job-like resource.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type ResourcePhase string

const (
	PhasePending   ResourcePhase = "Pending"
	PhaseRunning   ResourcePhase = "Running"
	PhaseSucceeded ResourcePhase = "Succeeded"
	PhaseFailed    ResourcePhase = "Failed"
)

// BinlogPosition is a binary-log file and position.
type BinlogPosition struct {
	// file is the binary log file name.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	File string `json:"file,omitempty"`
	// position within the file.
	// +optional
	Position int64 `json:"position,omitempty"`
}

// PointInTimeResult records how far a binary-log replay went.
type PointInTimeResult struct {
	// requestedStopTime is the stop time that was asked for.
	// +optional
	RequestedStopTime *metav1.Time `json:"requestedStopTime,omitempty"`
	// reachedTime is the commit time of the last replayed transaction.
	// +optional
	ReachedTime *metav1.Time `json:"reachedTime,omitempty"`
	// replayedBinlogs is the number of binary log files replayed.
	// +optional
	ReplayedBinlogs int32 `json:"replayedBinlogs,omitempty"`
	// gtidExecuted after the replay.
	// +optional
	GTIDExecuted string `json:"gtidExecuted,omitempty"`
	// truncated is true when the archive ended before the stop time, so the
	// replay stopped early (Event PITRReplayTruncated).
	// +optional
	Truncated bool `json:"truncated,omitempty"`
}
