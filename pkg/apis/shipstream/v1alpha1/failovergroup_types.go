package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mfg,categories=bloodraven
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.activeSite`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].reason`
// +kubebuilder:printcolumn:name="Transition",type=string,JSONPath=`.status.transition.step`
// +kubebuilder:printcolumn:name="Topology",type=integer,JSONPath=`.status.topologyGeneration`,description="topologyGeneration: incremented on every active-site change"
// +kubebuilder:printcolumn:name="Last Failover",type=date,JSONPath=`.status.lastFailover.time`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name: a MysqlFailoverGroup name must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter, at most 63 characters)"
// +kubebuilder:validation:XValidation:rule="self.spec.sites.all(s, size(self.metadata.name) + size(s.name) <= 41)",message="spec.sites[].name: the group name plus each site name must be at most 41 characters",fieldPath=".spec.sites"

// MysqlFailoverGroup declares a multi-site MySQL cluster with one writable
// site and automatic failover between its PrimaryCandidate sites.
type MysqlFailoverGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired topology and configuration of the group.
	// +required
	Spec MysqlFailoverGroupSpec `json:"spec"`
	// status is the topology the operator observed and the operations it runs.
	// +optional
	Status MysqlFailoverGroupStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MysqlFailoverGroupList is a list of MysqlFailoverGroup.
type MysqlFailoverGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MysqlFailoverGroup `json:"items"`
}

// MysqlFailoverGroupSpec is the desired state of a failover group.
// +kubebuilder:validation:XValidation:rule="!has(self.encryptionAtRest) || !self.encryptionAtRest.enabled || has(self.tls)",message="spec.encryptionAtRest.enabled requires spec.tls: encrypted data can only be cloned over TLS",fieldPath=".encryptionAtRest.enabled"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.encryptionAtRest) || !oldSelf.encryptionAtRest.enabled || (has(self.encryptionAtRest) && self.encryptionAtRest.enabled)",message="spec.encryptionAtRest.enabled cannot go back to false once true",fieldPath=".encryptionAtRest"
// +kubebuilder:validation:XValidation:rule="!(has(oldSelf.encryptionAtRest) && oldSelf.encryptionAtRest.enabled && has(self.encryptionAtRest) && self.encryptionAtRest.enabled) || ((has(self.encryptionAtRest.keyring) ? [self.encryptionAtRest.keyring.dataFileDir, self.encryptionAtRest.keyring.mysqldDir, self.encryptionAtRest.keyring.pluginDir] : []) == (has(oldSelf.encryptionAtRest.keyring) ? [oldSelf.encryptionAtRest.keyring.dataFileDir, oldSelf.encryptionAtRest.keyring.mysqldDir, oldSelf.encryptionAtRest.keyring.pluginDir] : []))",message="spec.encryptionAtRest.keyring: dataFileDir, mysqldDir and pluginDir cannot change while encryption is enabled",fieldPath=".encryptionAtRest.keyring"
// +kubebuilder:validation:XValidation:rule="has(self.initFromBackup) == has(oldSelf.initFromBackup) && (!has(self.initFromBackup) || self.initFromBackup == oldSelf.initFromBackup)",message="spec.initFromBackup cannot be added, changed or removed after the group is created",fieldPath=".initFromBackup"
// +kubebuilder:validation:XValidation:rule="!has(self.splitBrainPolicy) || !has(self.splitBrainPolicy.sitePriorities) || self.splitBrainPolicy.sitePriorities.all(p, self.sites.exists(s, s.name == p && s.role == 'PrimaryCandidate'))",message="spec.splitBrainPolicy.sitePriorities may only name PrimaryCandidate sites of spec.sites",fieldPath=".splitBrainPolicy.sitePriorities"
// +kubebuilder:validation:XValidation:rule="!has(self.serviceTemplate) || !has(self.serviceTemplate.externalTrafficPolicy) || (has(self.serviceTemplate.type) && self.serviceTemplate.type != 'ClusterIP')",message="spec.serviceTemplate.externalTrafficPolicy is only valid when spec.serviceTemplate.type is NodePort or LoadBalancer",fieldPath=".serviceTemplate.externalTrafficPolicy"
// +kubebuilder:validation:XValidation:rule="self.sites.all(s, !has(s.serviceTemplate) || !has(s.serviceTemplate.externalTrafficPolicy) || (has(s.serviceTemplate.type) ? s.serviceTemplate.type : (has(self.serviceTemplate) && has(self.serviceTemplate.type) ? self.serviceTemplate.type : 'ClusterIP')) != 'ClusterIP')",message="spec.sites[].serviceTemplate.externalTrafficPolicy is only valid when the site's effective Service type is NodePort or LoadBalancer",fieldPath=".sites"
// +kubebuilder:validation:XValidation:rule="self.sites.all(s, !has(s.serviceTemplate) || !has(s.serviceTemplate.nodePort) || (has(s.serviceTemplate.type) ? s.serviceTemplate.type : (has(self.serviceTemplate) && has(self.serviceTemplate.type) ? self.serviceTemplate.type : 'ClusterIP')) != 'ClusterIP')",message="spec.sites[].serviceTemplate.nodePort is only valid when the site's effective Service type is NodePort or LoadBalancer",fieldPath=".sites"
// +kubebuilder:validation:XValidation:rule="!has(self.backup) || !has(self.backup.pitr) || !self.backup.pitr.enabled || (has(self.backup.profiles) && self.backup.profiles.exists(p, p.name == self.backup.pitr.profileName))",message="spec.backup.pitr.profileName must name an entry of spec.backup.profiles",fieldPath=".backup.pitr.profileName"
// +kubebuilder:validation:XValidation:rule="!has(self.backup) || !has(self.backup.schedules) || self.backup.schedules.all(s, has(self.backup.profiles) && self.backup.profiles.exists(p, p.name == s.profileName))",message="spec.backup.schedules[].profileName must name an entry of spec.backup.profiles",fieldPath=".backup.schedules"
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !has(self.initFromBackup) || !has(self.initFromBackup.pointInTime) || (has(self.backup) && has(self.backup.profiles) && self.backup.profiles.exists(p, p.name == self.initFromBackup.pointInTime.archiveProfileName))",message="spec.initFromBackup.pointInTime.archiveProfileName must name an entry of spec.backup.profiles",fieldPath=".initFromBackup.pointInTime.archiveProfileName",optionalOldSelf=true
type MysqlFailoverGroupSpec struct {
	// image is the MySQL server image. Pin an immutable tag: only MySQL 9.7
	// is supported.
	// +optional
	// +kubebuilder:default="mysql:9.7"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// sites are the MySQL sites of the group, one StatefulSet each. At least
	// two must be PrimaryCandidate; DisasterRecovery and ReadOnly followers may
	// be added. A site cannot be removed or renamed once created.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.filter(s, s.role == 'PrimaryCandidate').size() >= 2",message="spec.sites must contain at least two PrimaryCandidate sites"
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.serverID == a.serverID))",message="spec.sites[].serverID must be unique within the group"
	// +kubebuilder:validation:XValidation:rule="oldSelf.all(o, self.exists(s, s.name == o.name))",message="spec.sites: a site cannot be removed or renamed (a site name is part of its PVC and Service names)"
	Sites []SiteSpec `json:"sites"`

	// credentials names the Secrets of the MySQL accounts the operator manages.
	// +required
	Credentials CredentialsSpec `json:"credentials"`

	// dns configures the hostname that always points at the active site.
	// +required
	DNS DNSSpec `json:"dns"`

	// tls names the Secret with the certificate MySQL serves. Required by
	// encryptionAtRest.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// pollInterval is the base interval between polls of each site. While a
	// site keeps failing after failureThreshold, the group's cadence backs off
	// exponentially to 30s. Bounds: greater than 0, at most 1m.
	// +optional
	// +kubebuilder:default="2s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('1m')",message="pollInterval must be greater than 0s and at most 1m"
	PollInterval *metav1.Duration `json:"pollInterval,omitempty"`

	// failureThreshold is the number of consecutive failed polls after which a
	// site is marked Unreachable.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	FailureThreshold *int32 `json:"failureThreshold,omitempty"`

	// recoveryThreshold is the number of consecutive successful polls after
	// which an Unreachable site is trusted again.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	RecoveryThreshold *int32 `json:"recoveryThreshold,omitempty"`

	// failoverCooldown is the minimum time between two automatic failovers.
	// Bounds: 30s to 24h.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('24h')",message="failoverCooldown must be between 30s and 24h"
	FailoverCooldown *metav1.Duration `json:"failoverCooldown,omitempty"`

	// connectionDrainTimeout is how long the operator keeps evicting stale
	// application sessions from a fenced former primary after a promotion.
	// Bounds: 0s to 10m.
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('10m')",message="connectionDrainTimeout must be between 0s and 10m"
	ConnectionDrainTimeout *metav1.Duration `json:"connectionDrainTimeout,omitempty"`

	// cloneTimeout bounds one CLONE INSTANCE operation. Bounds: 1m to 24h.
	// +optional
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="cloneTimeout must be between 1m and 24h"
	CloneTimeout *metav1.Duration `json:"cloneTimeout,omitempty"`

	// splitBrainPolicy opts in to automatic resolution when several sites are
	// writable and the operator has no failover history to pick a winner.
	// +optional
	SplitBrainPolicy *SplitBrainPolicySpec `json:"splitBrainPolicy,omitempty"`

	// sidecar configures the Bloodraven sidecar container of every MySQL pod.
	// +optional
	// +kubebuilder:default={}
	Sidecar *SidecarSpec `json:"sidecar,omitempty"`

	// terminationGracePeriodSeconds is the grace period of MySQL pods.
	// +optional
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`

	// mysqlConf holds MySQL options merged into the generated my.cnf.
	// Underscores in keys are normalized to hyphens. The operator owns
	// replica-preserve-commit-order (always ON), sync-binlog and
	// innodb-flush-log-at-trx-commit (always 1), which cannot be set here.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="!('replica_preserve_commit_order' in self) && !('replica-preserve-commit-order' in self)",message="spec.mysqlConf: replica-preserve-commit-order is owned by the operator and cannot be overridden"
	// +kubebuilder:validation:XValidation:rule="!('sync_binlog' in self) && !('sync-binlog' in self) && !('innodb_flush_log_at_trx_commit' in self) && !('innodb-flush-log-at-trx-commit' in self)",message="spec.mysqlConf: sync-binlog and innodb-flush-log-at-trx-commit are owned by the operator (always 1: a crashed primary must not restart without transactions it acknowledged, see docs/safety.md) and cannot be overridden"
	MySQLConf map[string]string `json:"mysqlConf,omitempty"`

	// replication sets the replication health thresholds.
	// +optional
	// +kubebuilder:default={}
	Replication *ReplicationSpec `json:"replication,omitempty"`

	// updateStrategy chooses how pod template changes are rolled out.
	// Omit it for OrderedUpdate.
	// +optional
	// +kubebuilder:default={type: OrderedUpdate}
	UpdateStrategy *UpdateStrategy `json:"updateStrategy,omitempty"`

	// podLabels are added to every MySQL pod; operator labels win on conflict.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// podAnnotations are added to every MySQL pod; operator annotations win on
	// conflict.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// serviceTemplate sets defaults for the client-facing site, primary and
	// replicas Services. Internal per-site Services stay ClusterIP.
	// +optional
	ServiceTemplate *ServiceTemplate `json:"serviceTemplate,omitempty"`

	// extraContainers are added to every MySQL pod (for example an exporter).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	ExtraContainers []corev1.Container `json:"extraContainers,omitempty"`

	// extraInitContainers run after the operator's own init container.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	ExtraInitContainers []corev1.Container `json:"extraInitContainers,omitempty"`

	// backup configures backup profiles, schedules and point-in-time
	// recovery. Omit it to disable backups.
	// +optional
	Backup *BackupSpec `json:"backup,omitempty"`

	// initFromBackup restores a backup into the group once, before the
	// group's first bootstrap completes. It cannot be added, changed or
	// removed after creation.
	// +optional
	InitFromBackup *InitFromBackupSpec `json:"initFromBackup,omitempty"`

	// restoreInPlace runs a destructive restore against the active primary.
	// Setting confirm to a newer RFC 3339 timestamp re-arms it.
	// +optional
	RestoreInPlace *RestoreInPlaceSpec `json:"restoreInPlace,omitempty"`

	// plannedFailover sets the defaults of planned failovers started with the
	// bloodraven.shipstream.io/planned-failover annotation.
	// +optional
	// +kubebuilder:default={}
	PlannedFailover *PlannedFailoverSpec `json:"plannedFailover,omitempty"`

	// dragonfly optionally co-manages one Dragonfly (Redis-compatible cache)
	// per site that follows the MySQL active site.
	// +optional
	Dragonfly *DragonflySpec `json:"dragonfly,omitempty"`

	// encryptionAtRest turns on InnoDB data-at-rest encryption with the
	// component_keyring_file keyring. Requires tls.
	// +optional
	EncryptionAtRest *EncryptionAtRestSpec `json:"encryptionAtRest,omitempty"`
}

// SiteRole is what a site may become.
// +kubebuilder:validation:Enum=PrimaryCandidate;DisasterRecovery;ReadOnly
type SiteRole string

const (
	// SiteRolePrimaryCandidate can be promoted to the active site.
	SiteRolePrimaryCandidate SiteRole = "PrimaryCandidate"
	// SiteRoleDisasterRecovery replicates and counts for health but is never
	// promoted automatically.
	SiteRoleDisasterRecovery SiteRole = "DisasterRecovery"
	// SiteRoleReadOnly is a reader: a health-gated read pool that never
	// becomes primary and whose failures do not degrade the group.
	SiteRoleReadOnly SiteRole = "ReadOnly"
)

// SiteSpec is one site of the group.
// +kubebuilder:validation:XValidation:rule="self.role == 'ReadOnly' || has(self.loadBalancerIP)",message="spec.sites[].loadBalancerIP is required for PrimaryCandidate and DisasterRecovery sites",fieldPath=".loadBalancerIP"
// +kubebuilder:validation:XValidation:rule="self.role == 'ReadOnly' || (has(self.taintNodeSelector) && size(self.taintNodeSelector) > 0)",message="spec.sites[].taintNodeSelector is required and non-empty for PrimaryCandidate and DisasterRecovery sites",fieldPath=".taintNodeSelector"
type SiteSpec struct {
	// name identifies the site (for example iad). It is part of the site's
	// PVC and Service names: a DNS label of at most 20 characters, and the
	// group name plus the site name at most 41 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// role of the site: PrimaryCandidate (can be promoted), DisasterRecovery
	// (never promoted automatically) or ReadOnly (a reader).
	// +optional
	// +kubebuilder:default=PrimaryCandidate
	Role SiteRole `json:"role,omitempty"`

	// serverID is the MySQL server_id of the site: explicit, unique within
	// the group, and immutable once set.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.sites[].serverID is immutable"
	ServerID int64 `json:"serverID"`

	// zone is the availability zone or region the site's pods are scheduled
	// in. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.sites[].zone is immutable"
	Zone string `json:"zone"`

	// taintNodeSelector selects the nodes that receive this group's
	// read-only taint while the site is not active. Required and non-empty
	// for PrimaryCandidate and DisasterRecovery; accepted and ignored on
	// readers.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	TaintNodeSelector map[string]string `json:"taintNodeSelector,omitempty"`

	// loadBalancerIP is the IPv4 address the group's DNS name points at while
	// this site is active (0.0.0.0 is refused). Required for PrimaryCandidate
	// and DisasterRecovery; accepted and ignored on readers.
	// +optional
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:XValidation:rule="isIP(self) && ip(self).family() == 4 && !ip(self).isUnspecified()",message="spec.sites[].loadBalancerIP must be an IPv4 address other than 0.0.0.0"
	LoadBalancerIP string `json:"loadBalancerIP,omitempty"`

	// storage is the site's data volume. Immutable.
	// +required
	Storage StorageSpec `json:"storage"`

	// resources of the MySQL container at this site.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// mysqlConf holds site-specific MySQL options applied after the group's.
	// Changing it rolls only this site.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="!('replica_preserve_commit_order' in self) && !('replica-preserve-commit-order' in self)",message="spec.sites[].mysqlConf: replica-preserve-commit-order is owned by the operator and cannot be overridden"
	// +kubebuilder:validation:XValidation:rule="!('sync_binlog' in self) && !('sync-binlog' in self) && !('innodb_flush_log_at_trx_commit' in self) && !('innodb-flush-log-at-trx-commit' in self)",message="spec.sites[].mysqlConf: sync-binlog and innodb-flush-log-at-trx-commit are owned by the operator (always 1: a crashed primary must not restart without transactions it acknowledged, see docs/safety.md) and cannot be overridden"
	MySQLConf map[string]string `json:"mysqlConf,omitempty"`

	// serviceTemplate overrides the group's serviceTemplate for this site's
	// client-facing Service only.
	// +optional
	ServiceTemplate *SiteServiceTemplate `json:"serviceTemplate,omitempty"`
}

// StorageSpec is a site's persistent volume. Both fields are immutable; the
// size is compared by value, so 1Gi and 1024Mi are the same.
// +kubebuilder:validation:XValidation:rule="self.storageClassName == oldSelf.storageClassName",message="spec.sites[].storage.storageClassName is immutable",fieldPath=".storageClassName"
// +kubebuilder:validation:XValidation:rule="!isQuantity(self.size) || !isQuantity(oldSelf.size) || quantity(self.size).compareTo(quantity(oldSelf.size)) == 0",message="spec.sites[].storage.size is immutable",fieldPath=".size"
type StorageSpec struct {
	// storageClassName of the site's PersistentVolumeClaim.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	StorageClassName string `json:"storageClassName"`
	// size of the volume: a positive quantity string such as "100Gi" (quote
	// a bare number of bytes).
	// +required
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))",message="spec.sites[].storage.size must be a positive quantity such as 100Gi"
	Size string `json:"size"`
}

// CredentialsSpec names the Secrets of the MySQL accounts the operator
// creates (at first boot) and keeps in sync (ALTER USER when a Secret changes).
type CredentialsSpec struct {
	// operatorSecretName is the operator and sidecar account: keys username,
	// password and MYSQL_ROOT_PASSWORD, optionally MYSQL_REPLICATION_USER and
	// MYSQL_REPLICATION_PASSWORD for a separate replication account.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	OperatorSecretName string `json:"operatorSecretName"`
	// appSecretName is the application read-write account (username,
	// password): ALL PRIVILEGES without GRANT OPTION or SUPER.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	AppSecretName string `json:"appSecretName,omitempty"`
	// readOnlySecretName is the application read-only account (username,
	// password): SELECT, SHOW VIEW, SHOW DATABASES, PROCESS.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ReadOnlySecretName string `json:"readOnlySecretName,omitempty"`
	// monitorSecretName is the exporter account (username, password):
	// PROCESS, REPLICATION CLIENT, SELECT on performance_schema.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	MonitorSecretName string `json:"monitorSecretName,omitempty"`
	// backupSecretName is the backup and restore account (username,
	// password): SELECT, LOCK TABLES, SHOW VIEW, EVENT, TRIGGER, RELOAD,
	// BACKUP_ADMIN, REPLICATION CLIENT.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	BackupSecretName string `json:"backupSecretName,omitempty"`
}

// DNSSpec is the hostname that always resolves to the active site.
type DNSSpec struct {
	// hostname managed through an external-dns DNSEndpoint whose A record
	// points at the active site's loadBalancerIP. Applications should CNAME
	// to it.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Hostname string `json:"hostname"`
	// ttlSeconds of the A record.
	// +optional
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	TTLSeconds *int32 `json:"ttlSeconds,omitempty"`
}

// TLSSpec names the TLS Secret MySQL serves and clones over.
type TLSSpec struct {
	// secretName of a kubernetes.io/tls Secret (tls.crt, tls.key, ca.crt):
	// mysqld serves it and refuses clients without TLS; the operator, the
	// sidecars and replication verify it against ca.crt and each site's
	// internal Service name, which its dnsNames must list (docs/tls.md).
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName"`
}

// ReplicationSpec sets replication health thresholds. An explicit 0 is kept
// as 0 (it requires a fully caught-up replica).
type ReplicationSpec struct {
	// maxLagSeconds is the lag above which a follower is unhealthy and the
	// group Degraded.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	MaxLagSeconds *int32 `json:"maxLagSeconds,omitempty"`
	// readOnlyMaxLagSeconds is the lag above which a reader is taken out of
	// its client endpoint. Omitted inherits maxLagSeconds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	ReadOnlyMaxLagSeconds *int32 `json:"readOnlyMaxLagSeconds,omitempty"`
}

// UpdateStrategyType chooses how pod template changes roll out.
// +kubebuilder:validation:Enum=OrderedUpdate;Recreate
type UpdateStrategyType string

const (
	// OrderedUpdate rolls followers first, hands the primary role to an
	// updated standby without losing a transaction, then rolls the old active.
	OrderedUpdate UpdateStrategyType = "OrderedUpdate"
	// Recreate restarts every site at once. Never use it for a MySQL version
	// change.
	Recreate UpdateStrategyType = "Recreate"
)

// UpdateStrategy chooses how pod template changes roll out.
type UpdateStrategy struct {
	// type is OrderedUpdate or Recreate.
	// +optional
	// +kubebuilder:default=OrderedUpdate
	Type UpdateStrategyType `json:"type,omitempty"`
}

// SplitBrainPolicySpec resolves split brain automatically when the operator
// has no failover history to pick a winner.
type SplitBrainPolicySpec struct {
	// sitePriorities is an ordered list of PrimaryCandidate site names. The
	// first writable entry is kept and every other writable site is fenced.
	// Empty leaves resolution to a human (alert only).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=20
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	SitePriorities []string `json:"sitePriorities,omitempty"`
}

// SidecarSpec configures the Bloodraven sidecar of every MySQL pod.
// +kubebuilder:validation:XValidation:rule="!has(self.peerCheckInterval) || !has(self.leaseTimeout) || duration(self.peerCheckInterval) < duration(self.leaseTimeout)",message="spec.sidecar.peerCheckInterval must be shorter than spec.sidecar.leaseTimeout",fieldPath=".peerCheckInterval"
type SidecarSpec struct {
	// image of the sidecar. Leave it unset to run the sidecar image that the
	// operator release ships with; a pin should match the operator's release.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`
	// resources of the sidecar container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// operatorEndpoint is the host:port at which sidecars reach the
	// operator's auxiliary endpoints. Unset uses the operator's default.
	// +optional
	// +kubebuilder:validation:MaxLength=261
	// +kubebuilder:validation:Pattern=`^([a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?|\[[0-9a-fA-F:.]+\]):[0-9]{1,5}$`
	// +kubebuilder:validation:XValidation:rule="int(self.substring(self.lastIndexOf(':') + 1)) >= 1 && int(self.substring(self.lastIndexOf(':') + 1)) <= 65535",message="spec.sidecar.operatorEndpoint port must be between 1 and 65535"
	OperatorEndpoint string `json:"operatorEndpoint,omitempty"`
	// leaseTimeout is how long the sidecar of the active site keeps MySQL
	// writable without confirmation from the operator or a peer; past it the
	// sidecar fences its own MySQL. Bounds: 2s to 5m.
	// +optional
	// +kubebuilder:default="15s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('2s') && duration(self) <= duration('5m')",message="spec.sidecar.leaseTimeout must be between 2s and 5m"
	LeaseTimeout *metav1.Duration `json:"leaseTimeout,omitempty"`
	// peerCheckInterval is how often sidecars check each other. Bounds: 500ms
	// to 1m, and shorter than leaseTimeout.
	// +optional
	// +kubebuilder:default="2s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('500ms') && duration(self) <= duration('1m')",message="spec.sidecar.peerCheckInterval must be between 500ms and 1m"
	PeerCheckInterval *metav1.Duration `json:"peerCheckInterval,omitempty"`
}

// ServiceType is the type of a client-facing Service.
// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
type ServiceType string

// ExternalTrafficPolicy of a NodePort or LoadBalancer Service.
// +kubebuilder:validation:Enum=Cluster;Local
type ExternalTrafficPolicy string

// ServiceTemplate sets defaults for the group's client-facing Services.
type ServiceTemplate struct {
	// type of the site, primary and replicas Services. Omitted means ClusterIP.
	// +optional
	Type ServiceType `json:"type,omitempty"`
	// externalTrafficPolicy, valid only when type is NodePort or LoadBalancer.
	// +optional
	ExternalTrafficPolicy ExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`
	// annotations for the client-facing Services (not internal ones).
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`
}

// SiteServiceTemplate overrides the group's ServiceTemplate for one site's
// client-facing Service.
type SiteServiceTemplate struct {
	// type of this site's Service. Omitted inherits the group's type.
	// +optional
	Type ServiceType `json:"type,omitempty"`
	// externalTrafficPolicy of this site's Service, valid only when the
	// effective type is NodePort or LoadBalancer.
	// +optional
	ExternalTrafficPolicy ExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`
	// nodePort requested for the Service's mysql port, valid only when the
	// effective type is NodePort or LoadBalancer. The cluster enforces its own
	// NodePort range.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	NodePort *int32 `json:"nodePort,omitempty"`
	// annotations merged over the group's annotations; site keys win.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PlannedFailoverOnCooldown says what a planned failover does inside the
// failover cooldown.
// +kubebuilder:validation:Enum=Reject;Defer
type PlannedFailoverOnCooldown string

const (
	// PlannedFailoverRejectOnCooldown refuses the request.
	PlannedFailoverRejectOnCooldown PlannedFailoverOnCooldown = "Reject"
	// PlannedFailoverDeferOnCooldown waits until the cooldown ends.
	PlannedFailoverDeferOnCooldown PlannedFailoverOnCooldown = "Defer"
)

// PlannedFailoverSpec holds the defaults of planned failovers. Parameters
// of the planned-failover annotation override them for one run.
type PlannedFailoverSpec struct {
	// onCooldown: Reject refuses a planned failover inside failoverCooldown;
	// Defer waits for the cooldown to end.
	// +optional
	// +kubebuilder:default=Reject
	OnCooldown PlannedFailoverOnCooldown `json:"onCooldown,omitempty"`
	// maxLagWait bounds how long the target may take to catch up while the
	// source still serves, before anything is fenced. Bounds: 1s to 1h.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="spec.plannedFailover.maxLagWait must be between 1s and 1h"
	MaxLagWait *metav1.Duration `json:"maxLagWait,omitempty"`
	// admissionTimeout bounds how long a run may wait in Admitting (for
	// example for replication to become healthy) before it ends not-started.
	// Bounds: 1s to 1h.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="spec.plannedFailover.admissionTimeout must be between 1s and 1h"
	AdmissionTimeout *metav1.Duration `json:"admissionTimeout,omitempty"`
}

// InitFromBackupSpec restores a backup into a new group once.
type InitFromBackupSpec struct {
	// source of the dump: exactly one of backupRef, s3 and pvc.
	// +required
	Source BackupSource `json:"source"`
	// loadOptions tunes util.loadDump().
	// +optional
	LoadOptions *LoadOptions `json:"loadOptions,omitempty"`
	// pointInTime replays archived binary logs on top of the dump.
	// +optional
	PointInTime *PointInTimeSpec `json:"pointInTime,omitempty"`
	// decryption supplies the passphrase of an encrypted backup. For a
	// backupRef the dump key recorded by the backup is used when omitted.
	// +optional
	Decryption *BackupDecryptionSpec `json:"decryption,omitempty"`
}

// PointInTimeSpec replays binary logs from a PITR archive after the load.
type PointInTimeSpec struct {
	// stopTime is the replay target: RFC 3339 with an explicit zone and whole
	// seconds, for example 2026-04-15T09:30:00Z.
	// +required
	// +kubebuilder:validation:MaxLength=25
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$') && timestamp(self) > timestamp('1970-01-01T00:00:00Z')",message="pointInTime.stopTime must be an RFC 3339 timestamp with whole seconds and an explicit zone, such as 2026-04-15T09:30:00Z"
	StopTime string `json:"stopTime"`
	// excludeGtids is passed to mysqlbinlog --exclude-gtids to skip known-bad
	// transactions.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	ExcludeGTIDs string `json:"excludeGtids,omitempty"`
	// archiveProfileName names the spec.backup.profiles entry whose storage
	// holds the binary-log archive.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ArchiveProfileName string `json:"archiveProfileName"`
}

// RestoreInPlaceSpec is a re-armable destructive restore onto the active
// primary. A restore of one schema (loadOptions.includeSchemas with one
// entry) drops and reloads only that schema and replicates; otherwise the
// whole instance is replaced and followers are recloned.
// +kubebuilder:validation:XValidation:rule="!has(self.loadOptions) || !has(self.loadOptions.includeSchemas) || size(self.loadOptions.includeSchemas) <= 1",message="spec.restoreInPlace.loadOptions.includeSchemas accepts at most one schema",fieldPath=".loadOptions.includeSchemas"
type RestoreInPlaceSpec struct {
	// confirm arms the restore. It must be an RFC 3339 timestamp (upper-case
	// T and Z, an offset within -23:59..+23:59, a digits-only fraction)
	// strictly later than status.restoreInPlace.confirmTokenUsed; a token
	// that is not later is ignored (Event RestoreInPlaceConfirmIgnored).
	// +required
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]([.][0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$') && timestamp(self) > timestamp('1970-01-01T00:00:00Z')",message="spec.restoreInPlace.confirm must be an RFC 3339 timestamp such as 2026-04-15T09:30:00Z (upper-case T and Z, offset within -23:59..+23:59)"
	Confirm string `json:"confirm"`
	// source of the dump: exactly one of backupRef, s3 and pvc.
	// +required
	Source BackupSource `json:"source"`
	// loadOptions tunes util.loadDump(). A per-schema restore forces
	// skipBinlog to false so the reload replicates.
	// +optional
	LoadOptions *LoadOptions `json:"loadOptions,omitempty"`
	// decryption supplies the passphrase of an encrypted backup.
	// +optional
	Decryption *BackupDecryptionSpec `json:"decryption,omitempty"`
}
