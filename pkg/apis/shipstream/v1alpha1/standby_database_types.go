package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=msc,categories=bloodraven
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Latest Dump",type=date,JSONPath=`.status.discovered.dumpCompletionTime`
// +kubebuilder:printcolumn:name="Binlogs Until",type=date,JSONPath=`.status.discovered.binlogWindowEnd`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MysqlStandbyCluster is a passive disaster-recovery descriptor on the DR
// cluster: it watches a source group's backup archive in an object store and
// reports whether a restore could start from it. It starts no MySQL.
type MysqlStandbyCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the source archive.
	// +required
	Spec MysqlStandbyClusterSpec `json:"spec"`
	// status is what the last bucket scan found.
	// +optional
	Status MysqlStandbyClusterStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MysqlStandbyClusterList is a list of MysqlStandbyCluster.
type MysqlStandbyClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MysqlStandbyCluster `json:"items"`
}

// StandbyTransport is how a standby reaches its source.
// +kubebuilder:validation:Enum=ObjectStore
type StandbyTransport string

// MysqlStandbyClusterSpec names the source archive.
type MysqlStandbyClusterSpec struct {
	// transport is how the source is reached; only ObjectStore exists.
	// +optional
	// +kubebuilder:default=ObjectStore
	Transport StandbyTransport `json:"transport,omitempty"`
	// source is the archive to watch.
	// +required
	Source StandbySource `json:"source"`
	// freshness sets the discovery cadence.
	// +optional
	// +kubebuilder:default={}
	Freshness *StandbyFreshnessSpec `json:"freshness,omitempty"`
}

// StandbySource is the source group's backup profile location.
type StandbySource struct {
	// s3 is the source profile's object-store location (prefix required).
	// The controller only reads from it.
	// +required
	S3 S3Storage `json:"s3"`
	// decryption supplies the passphrase of an encrypted source; the Secret
	// must exist in this namespace.
	// +optional
	Decryption *BackupDecryptionSpec `json:"decryption,omitempty"`
}

// StandbyFreshnessSpec sets the discovery cadence.
type StandbyFreshnessSpec struct {
	// discoveryInterval is how often the bucket is re-scanned. Bounds: 30s
	// to 24h.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('24h')",message="spec.freshness.discoveryInterval must be between 30s and 24h"
	DiscoveryInterval *metav1.Duration `json:"discoveryInterval,omitempty"`
}

// StandbyDiscovered is the newest usable dump and binlog window found.
type StandbyDiscovered struct {
	// dumpLocation of the newest complete dump.
	// +optional
	DumpLocation string `json:"dumpLocation,omitempty"`
	// dumpName is the dump directory name.
	// +optional
	DumpName string `json:"dumpName,omitempty"`
	// dumpCompletionTime recorded by the dump.
	// +optional
	DumpCompletionTime *metav1.Time `json:"dumpCompletionTime,omitempty"`
	// gtidExecuted recorded by the dump.
	// +optional
	GTIDExecuted string `json:"gtidExecuted,omitempty"`
	// sizeBytes of the dump.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// binlogWindowStart is the oldest archived commit time.
	// +optional
	BinlogWindowStart *metav1.Time `json:"binlogWindowStart,omitempty"`
	// binlogWindowEnd is the newest archived commit time.
	// +optional
	BinlogWindowEnd *metav1.Time `json:"binlogWindowEnd,omitempty"`
	// scanTime is when this result was produced.
	// +optional
	ScanTime *metav1.Time `json:"scanTime,omitempty"`
}

// MysqlStandbyClusterStatus is what the last bucket scan found.
type MysqlStandbyClusterStatus struct {
	// observedGeneration the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// discovered is the result of the last complete scan (kept when a scan
	// is cut short).
	// +optional
	Discovered *StandbyDiscovered `json:"discovered,omitempty"`
	// conditions: BucketReadable, SourceConfigKnown, and Ready (True/
	// SourceDiscovered when both are True, otherwise the first one's False
	// reason).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mdb,categories=bloodraven
// +kubebuilder:selectablefield:JSONPath=`.spec.failoverGroupRef.name`
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.failoverGroupRef.name`
// +kubebuilder:printcolumn:name="Database",type=string,JSONPath=`.spec.databaseName`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MysqlDatabase declares a schema (and optionally its owner account) on a
// failover group, and the deployment clients allowed to coordinate
// migrations of it through the deployment API. Its name is the lease
// instance identity of the deployment API.
type MysqlDatabase struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired schema.
	// +required
	Spec MysqlDatabaseSpec `json:"spec"`
	// status is the applied state.
	// +optional
	Status MysqlDatabaseStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MysqlDatabaseList is a list of MysqlDatabase.
type MysqlDatabaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MysqlDatabase `json:"items"`
}

// DatabaseDeletionPolicy says what deleting a MysqlDatabase does to the schema.
// +kubebuilder:validation:Enum=Retain;Drop
type DatabaseDeletionPolicy string

const (
	// DatabaseRetain leaves the schema and owner account in place.
	DatabaseRetain DatabaseDeletionPolicy = "Retain"
	// DatabaseDrop drops the schema (and owner account) unless another
	// MysqlDatabase still declares it (DatabaseDropRefused,
	// OwnerUserDropSkipped).
	DatabaseDrop DatabaseDeletionPolicy = "Drop"
)

// MysqlDatabaseSpec is the desired schema.
type MysqlDatabaseSpec struct {
	// failoverGroupRef names the group, in the same namespace. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.failoverGroupRef is immutable"
	FailoverGroupRef FailoverGroupReference `json:"failoverGroupRef"`
	// databaseName is the MySQL schema name: letters, digits, '_' and '$',
	// at most 64 characters. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_$]+$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.databaseName is immutable"
	// +kubebuilder:validation:XValidation:rule="!(self.lowerAscii() in ['mysql', 'sys', 'performance_schema', 'information_schema'])",message="spec.databaseName must not be a MySQL system schema"
	DatabaseName string `json:"databaseName"`
	// characterSet of the schema.
	// +optional
	// +kubebuilder:default=utf8mb4
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z0-9_]+$`
	CharacterSet string `json:"characterSet,omitempty"`
	// collation of the schema. Unset renders no COLLATE clause (the server's
	// default for the character set).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9_]+$`
	Collation string `json:"collation,omitempty"`
	// owner is an account created with all privileges on this schema only.
	// +optional
	Owner *DatabaseOwner `json:"owner,omitempty"`
	// deletionPolicy: Retain (default) keeps the schema when this object is
	// deleted; Drop drops it.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy DatabaseDeletionPolicy `json:"deletionPolicy,omitempty"`
	// deploymentClients are the ServiceAccounts allowed to take deployment
	// leases on this database's group through the deployment API. Editing
	// this list grants that authority. Keyed by namespace and
	// serviceAccount; at most 16.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=serviceAccount
	// +kubebuilder:validation:MaxItems=16
	DeploymentClients []DeploymentClient `json:"deploymentClients,omitempty"`
}

// DatabaseOwner is the schema's owner account.
type DatabaseOwner struct {
	// username of the account, at most 32 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_]+$`
	Username string `json:"username"`
	// passwordSecretKeyRef selects the Secret key holding the password; a
	// change is applied with ALTER USER.
	// +required
	PasswordSecretKeyRef PasswordSecretKeySelector `json:"passwordSecretKeyRef"`
}

// DeploymentClient is a ServiceAccount allowed to use the deployment API.
type DeploymentClient struct {
	// namespace of the ServiceAccount.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`
	// serviceAccount name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccount string `json:"serviceAccount"`
}

// DatabasePhase is the phase of a MysqlDatabase.
// +kubebuilder:validation:Enum=Pending;Applying;Ready;Failed;Deleting
type DatabasePhase string

// MysqlDatabaseStatus is the applied state of a MysqlDatabase.
type MysqlDatabaseStatus struct {
	// observedGeneration the controller last applied.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase: Pending, Applying, Ready, Failed or Deleting.
	// +optional
	Phase DatabasePhase `json:"phase,omitempty"`
	// conditions: Ready (False/GroupNotYetCreated while the group does not
	// exist).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// appliedCharacterSet on the server.
	// +optional
	AppliedCharacterSet string `json:"appliedCharacterSet,omitempty"`
	// appliedCollation on the server.
	// +optional
	AppliedCollation string `json:"appliedCollation,omitempty"`
	// message explains the phase.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
	// adopted: the schema already existed on the active site when this
	// object first applied it. deletionPolicy Drop does not drop an adopted
	// schema unless the annotation
	// bloodraven.shipstream.io/drop-adopted-database names this object's UID.
	// +optional
	Adopted bool `json:"adopted,omitempty"`
}
