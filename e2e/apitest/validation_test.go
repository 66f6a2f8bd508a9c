package apitest

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Minimal valid objects: every case below starts from one and breaks exactly
// one rule, so a refusal can only come from that rule.
const minimalGroup = `
apiVersion: shipstream.io/v1alpha1
kind: MysqlFailoverGroup
metadata: {name: orders}
spec:
  sites:
    - {name: iad, serverID: 101, zone: us-east-1a, loadBalancerIP: 10.0.1.1, taintNodeSelector: {site: iad}, storage: {storageClassName: fast, size: 100Gi}}
    - {name: pdx, serverID: 102, zone: us-west-2a, loadBalancerIP: 10.0.2.1, taintNodeSelector: {site: pdx}, storage: {storageClassName: fast, size: 100Gi}}
  credentials: {operatorSecretName: orders-operator}
  dns: {hostname: orders.db.example.com}
`

const minimalBackup = `
apiVersion: shipstream.io/v1alpha1
kind: MysqlBackup
metadata: {name: b1}
spec: {failoverGroupRef: {name: orders}, profileName: nightly}
`

const minimalVerification = `
apiVersion: shipstream.io/v1alpha1
kind: MysqlBackupVerification
metadata: {name: v1}
spec: {failoverGroupRef: {name: orders}, profileName: nightly}
`

const minimalStandby = `
apiVersion: shipstream.io/v1alpha1
kind: MysqlStandbyCluster
metadata: {name: s1}
spec: {source: {s3: {bucket: backups, prefix: orders/v1}}}
`

const minimalDatabase = `
apiVersion: shipstream.io/v1alpha1
kind: MysqlDatabase
metadata: {name: d1}
spec: {failoverGroupRef: {name: orders}, databaseName: orders}
`

const s3Profile = `{name: nightly, storage: {type: S3, s3: {bucket: backups, prefix: orders/v1}}}`

type admissionCase struct {
	name  string
	base  string
	edits []edit
	// want are substrings the refusal must contain: the field's path or its
	// name in the rule's message. Empty means the object must be accepted.
	want []string
}

func refused(name, base string, want string, edits ...edit) admissionCase {
	return admissionCase{name: name, base: base, edits: edits, want: []string{want}}
}

// refusedAt is refused with the place of the error as well: the API server
// reports "<path>: Invalid value: ...", so the refusal must point at the
// field at path and carry msg (the rule's message or the schema's).
func refusedAt(name, base, path, msg string, edits ...edit) admissionCase {
	return admissionCase{name: name, base: base, edits: edits, want: []string{path + ": ", msg}}
}

func accepted(name, base string, edits ...edit) admissionCase {
	return admissionCase{name: name, base: base, edits: edits}
}

func longName(n int) string { return strings.Repeat("a", n) }

var createCases = []admissionCase{
	// The baselines themselves.
	accepted("minimal group", minimalGroup),
	accepted("minimal backup", minimalBackup),
	accepted("minimal verification", minimalVerification),
	accepted("minimal standby", minimalStandby),
	accepted("minimal database", minimalDatabase),

	// Names that become object names.
	refusedAt("group name starting with a digit", minimalGroup, "metadata.name", "must be a DNS-1035 label", set("metadata.name", "1orders")),
	refusedAt("group name with a dot", minimalGroup, "metadata.name", "must be a DNS-1035 label", set("metadata.name", "a.b")),
	refused("site name longer than 20", minimalGroup, "spec.sites[0].name", set("spec.sites[0].name", longName(21))),
	refused("site name with upper case", minimalGroup, "spec.sites[0].name", set("spec.sites[0].name", "IAD")),
	refused("site name with a trailing dash", minimalGroup, "spec.sites[0].name", set("spec.sites[0].name", "iad-")),
	refusedAt("group plus site longer than 41", minimalGroup, "spec.sites", "the group name plus each site name must be at most 41",
		set("metadata.name", "o"+longName(29)), set("spec.sites[0].name", longName(12))),
	accepted("group plus site exactly 41", minimalGroup, set("metadata.name", "o"+longName(20)), set("spec.sites[0].name", longName(20))),

	// serverID.
	refused("serverID missing", minimalGroup, "spec.sites[0].serverID", del("spec.sites[0].serverID")),
	refused("serverID zero", minimalGroup, "spec.sites[0].serverID", set("spec.sites[0].serverID", "0")),
	refused("serverID above 2^32-1", minimalGroup, "spec.sites[0].serverID", set("spec.sites[0].serverID", "4294967296")),
	refusedAt("serverID duplicated", minimalGroup, "spec.sites", "spec.sites[].serverID must be unique", set("spec.sites[1].serverID", "101")),

	// Roles and placement.
	refused("lower-case v1.6 role", minimalGroup, "spec.sites[0].role", set("spec.sites[0].role", "primary-candidate")),
	refusedAt("one PrimaryCandidate only", minimalGroup, "spec.sites", "spec.sites must contain at least two PrimaryCandidate sites", set("spec.sites[1].role", "DisasterRecovery")),
	refusedAt("fewer than two sites", minimalGroup, "spec.sites", "should have at least 2 items", del("spec.sites[1]")),
	refusedAt("candidate without loadBalancerIP", minimalGroup, "spec.sites[0].loadBalancerIP", "loadBalancerIP is required for PrimaryCandidate and DisasterRecovery", del("spec.sites[0].loadBalancerIP")),
	refusedAt("defaulted role without taintNodeSelector", minimalGroup, "spec.sites[1].taintNodeSelector", "taintNodeSelector is required", del("spec.sites[1].taintNodeSelector")),
	refusedAt("explicit PrimaryCandidate without taintNodeSelector", minimalGroup, "spec.sites[0].taintNodeSelector", "taintNodeSelector is required",
		set("spec.sites[0].role", "PrimaryCandidate"), del("spec.sites[0].taintNodeSelector")),
	refusedAt("disaster-recovery site without placement", minimalGroup, "spec.sites[2].loadBalancerIP", "loadBalancerIP is required",
		set("spec.sites[2]", "{name: dr, role: DisasterRecovery, serverID: 103, zone: eu-west-1a, taintNodeSelector: {a: b}, storage: {storageClassName: fast, size: 1Gi}}")),
	refusedAt("disaster-recovery site without taintNodeSelector", minimalGroup, "spec.sites[2].taintNodeSelector", "taintNodeSelector is required",
		set("spec.sites[2]", "{name: dr, role: DisasterRecovery, serverID: 103, zone: eu-west-1a, loadBalancerIP: 10.0.3.1, storage: {storageClassName: fast, size: 1Gi}}")),
	accepted("disaster-recovery site with placement", minimalGroup,
		set("spec.sites[2]", "{name: dr, role: DisasterRecovery, serverID: 103, zone: eu-west-1a, loadBalancerIP: 10.0.3.1, taintNodeSelector: {a: b}, storage: {storageClassName: fast, size: 1Gi}}")),
	refusedAt("empty taintNodeSelector", minimalGroup, "spec.sites[0].taintNodeSelector", "taintNodeSelector is required", set("spec.sites[0].taintNodeSelector", "{}")),
	refusedAt("IPv6 loadBalancerIP", minimalGroup, "spec.sites[0].loadBalancerIP", "loadBalancerIP must be an IPv4", set("spec.sites[0].loadBalancerIP", "fd00::1")),
	refusedAt("IPv4-mapped IPv6 loadBalancerIP", minimalGroup, "spec.sites[0].loadBalancerIP", "loadBalancerIP must be an IPv4", set("spec.sites[0].loadBalancerIP", "'::ffff:10.0.1.1'")),
	refusedAt("loadBalancerIP with a leading zero", minimalGroup, "spec.sites[0].loadBalancerIP", "loadBalancerIP must be an IPv4", set("spec.sites[0].loadBalancerIP", "010.0.1.1")),
	refusedAt("unspecified loadBalancerIP", minimalGroup, "spec.sites[0].loadBalancerIP", "other than 0.0.0.0", set("spec.sites[0].loadBalancerIP", "0.0.0.0")),
	refusedAt("empty loadBalancerIP", minimalGroup, "spec.sites[0].loadBalancerIP", "loadBalancerIP must be an IPv4", set("spec.sites[0].loadBalancerIP", `""`)),
	refused("v1.6 lbIP field", minimalGroup, "spec.sites[0].lbIP", set("spec.sites[0].lbIP", "10.0.0.1")),
	accepted("reader without placement fields", minimalGroup,
		set("spec.sites[2]", "{name: reader, role: ReadOnly, serverID: 103, zone: us-east-1b, storage: {storageClassName: fast, size: 1Gi}}")),
	accepted("reader with legacy placement fields", minimalGroup,
		set("spec.sites[2]", "{name: reader, role: ReadOnly, serverID: 103, zone: us-east-1b, loadBalancerIP: 10.0.3.1, taintNodeSelector: {a: b}, storage: {storageClassName: fast, size: 1Gi}}")),
	refusedAt("more than 16 sites", minimalGroup, "spec.sites", "must have at most 16 items", set("spec.sites", manySites(17))),

	refusedAt("duplicate site names", minimalGroup, "spec.sites[1]", "Duplicate value", set("spec.sites[1].name", "iad")),
	// Storage.
	refused("integer storage size", minimalGroup, "spec.sites[0].storage.size", set("spec.sites[0].storage.size", "100")),
	refusedAt("zero storage size", minimalGroup, "spec.sites[0].storage.size", "storage.size must be a positive quantity", set("spec.sites[0].storage.size", `"0"`)),
	refusedAt("non-quantity storage size", minimalGroup, "spec.sites[0].storage.size", "storage.size must be a positive quantity", set("spec.sites[0].storage.size", "lots")),

	// Timers.
	refusedAt("pollInterval 0s", minimalGroup, "spec.pollInterval", "pollInterval must be greater than 0s", set("spec.pollInterval", "0s")),
	refusedAt("pollInterval over 1m", minimalGroup, "spec.pollInterval", "pollInterval must be greater than 0s and at most 1m", set("spec.pollInterval", "61s")),
	refused("pollInterval not a duration", minimalGroup, "spec.pollInterval", set("spec.pollInterval", "2 seconds")),
	refusedAt("failoverCooldown under 30s", minimalGroup, "spec.failoverCooldown", "failoverCooldown must be between 30s", set("spec.failoverCooldown", "29s")),
	refusedAt("failoverCooldown over 24h", minimalGroup, "spec.failoverCooldown", "failoverCooldown must be between 30s and 24h", set("spec.failoverCooldown", "24h1s")),
	accepted("failoverCooldown of exactly 30s", minimalGroup, set("spec.failoverCooldown", "30s")),
	refusedAt("connectionDrainTimeout over 10m", minimalGroup, "spec.connectionDrainTimeout", "connectionDrainTimeout must be between 0s and 10m", set("spec.connectionDrainTimeout", "11m")),
	refusedAt("cloneTimeout under 1m", minimalGroup, "spec.cloneTimeout", "cloneTimeout must be between 1m and 24h", set("spec.cloneTimeout", "59s")),
	refusedAt("cloneTimeout over 24h", minimalGroup, "spec.cloneTimeout", "cloneTimeout must be between 1m and 24h", set("spec.cloneTimeout", "25h")),
	refused("v1.6 integer cloneTimeout", minimalGroup, "spec.cloneTimeout", set("spec.cloneTimeout", "3600")),
	accepted("cloneTimeout at both bounds", minimalGroup, set("spec.cloneTimeout", "24h")),
	accepted("cloneTimeout at the lower bound", minimalGroup, set("spec.cloneTimeout", "1m")),
	refusedAt("maxLagWait over 1h", minimalGroup, "spec.plannedFailover.maxLagWait", "maxLagWait must be between 1s and 1h", set("spec.plannedFailover", "{maxLagWait: 61m}")),
	refusedAt("maxLagWait under 1s", minimalGroup, "spec.plannedFailover.maxLagWait", "maxLagWait must be between 1s and 1h", set("spec.plannedFailover", "{maxLagWait: 500ms}")),
	accepted("maxLagWait and admissionTimeout at their bounds", minimalGroup, set("spec.plannedFailover", "{maxLagWait: 1s, admissionTimeout: 1h}")),
	refusedAt("admissionTimeout over 1h", minimalGroup, "spec.plannedFailover.admissionTimeout", "admissionTimeout must be between 1s and 1h", set("spec.plannedFailover", "{admissionTimeout: 2h}")),
	refusedAt("sidecar leaseTimeout under 2s", minimalGroup, "spec.sidecar.leaseTimeout", "leaseTimeout must be between 2s and 5m", set("spec.sidecar", "{leaseTimeout: 1s, peerCheckInterval: 500ms}")),
	refusedAt("sidecar peerCheckInterval under 500ms", minimalGroup, "spec.sidecar.peerCheckInterval", "peerCheckInterval must be between 500ms and 1m", set("spec.sidecar", "{peerCheckInterval: 100ms}")),
	refusedAt("pitr archivePollInterval 0s", minimalGroup, "spec.backup.pitr.archivePollInterval", "archivePollInterval must be between 1s and 1h", set("spec.backup", "{pitr: {archivePollInterval: 0s}}")),
	refusedAt("retry maxBackoff over 24h", minimalGroup, "spec.backup.retry.maxBackoff", "maxBackoff must be between 1s and 24h", set("spec.backup", "{retry: {maxBackoff: 25h}}")),
	refused("failureThreshold 0", minimalGroup, "spec.failureThreshold", set("spec.failureThreshold", "0")),
	refusedAt("escrowTimeout under 30s", minimalGroup, "spec.encryptionAtRest.keyring.escrowTimeout", "escrowTimeout must be between 30s",
		set("spec.tls", "{secretName: tls}"), set("spec.encryptionAtRest", "{enabled: true, keyring: {escrowTimeout: 10s}}")),
	refusedAt("retry initialBackoff above maxBackoff", minimalGroup, "spec.backup.retry.initialBackoff", "initialBackoff must not exceed",
		set("spec.backup", "{retry: {initialBackoff: 1h, maxBackoff: 30m}}")),
	refusedAt("sidecar peerCheckInterval not shorter than leaseTimeout", minimalGroup, "spec.sidecar.peerCheckInterval", "peerCheckInterval must be shorter than",
		set("spec.sidecar", "{leaseTimeout: 5s, peerCheckInterval: 5s}")),
	refusedAt("dragonfly maxSyncWait 0s", minimalGroup, "spec.dragonfly.plannedFailover.maxSyncWait", "maxSyncWait must be between",
		set("spec.dragonfly", "{enabled: true, image: 'df:v1.38.0', plannedFailover: {maxSyncWait: 0s}}")),

	// CamelCase enums; lower-case v1.6 values are refused.
	refused("lower-case onCooldown", minimalGroup, "spec.plannedFailover.onCooldown", set("spec.plannedFailover", "{onCooldown: reject}")),
	refused("lower-case onSyncTimeout", minimalGroup, "spec.dragonfly.plannedFailover.onSyncTimeout",
		set("spec.dragonfly", "{enabled: true, image: 'df:v1.38.0', plannedFailover: {onSyncTimeout: proceed}}")),
	refused("v1.6 string updateStrategy", minimalGroup, "spec.updateStrategy", set("spec.updateStrategy", "OrderedUpdate")),
	refused("unknown updateStrategy type", minimalGroup, "spec.updateStrategy.type", set("spec.updateStrategy", "{type: Rolling}")),

	// Removed v1.6 fields are refused under strict validation.
	refused("v1.6 secretName", minimalGroup, "spec.secretName", set("spec.secretName", "dsn")),
	refused("v1.6 dns.ttl", minimalGroup, "spec.dns.ttl", set("spec.dns.ttl", "60")),
	refused("v1.6 tls.issuerRef", minimalGroup, "spec.tls.issuerRef", set("spec.tls", "{secretName: tls, issuerRef: {name: x, kind: Issuer}}")),
	refused("v1.6 sidecarImage", minimalGroup, "spec.sidecarImage", set("spec.sidecarImage", "x:1")),
	refused("v1.6 credentials.operatorSecret", minimalGroup, "spec.credentials.operatorSecret", set("spec.credentials.operatorSecret", "x")),
	refused("v1.6 integer retention", minimalGroup, "spec.backup.profiles[0].retention",
		set("spec.backup", "{profiles: ["+s3Profile+"]}"), set("spec.backup.profiles[0].retention", "7")),

	// Secret names and keys.
	refused("credentials missing", minimalGroup, "spec.credentials", del("spec.credentials")),
	refused("Secret name with upper case", minimalGroup, "spec.credentials.operatorSecretName", set("spec.credentials.operatorSecretName", "Orders_Creds")),
	refused("empty optional Secret name", minimalGroup, "spec.credentials.appSecretName", set("spec.credentials.appSecretName", `""`)),
	refused("Secret name longer than 253", minimalGroup, "spec.credentials.backupSecretName", set("spec.credentials.backupSecretName", longName(254))),
	refusedAt("Secret key with a slash", minimalGroup, "spec.backup.profiles[0].encryption.passphraseSecretKeyRef.key", "should match",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: x}}, encryption: {passphraseSecretKeyRef: {name: pp, key: a/b}}}]}")),
	refusedAt("S3 credentials Secret name with upper case", minimalGroup, "spec.backup.profiles[0].storage.s3.credentialsSecretName", "should match",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: x, credentialsSecretName: S3Creds}}}]}")),
	refusedAt("TLS Secret name longer than 253", minimalGroup, "spec.tls.secretName", "may not be more than 253", set("spec.tls", "{secretName: "+longName(254)+"}")),
	refusedAt("restore backupRef name not a DNS subdomain", minimalGroup, "spec.restoreInPlace.source.backupRef.name", "should match",
		set("spec.restoreInPlace", "{confirm: '2026-04-15T09:30:00Z', source: {backupRef: {name: Nightly_1}}}")),
	refusedAt("dragonfly password Secret key too long", minimalGroup, "spec.dragonfly.auth.passwordSecretKeyRef.key", "may not be more than 253",
		set("spec.dragonfly", "{enabled: true, image: 'df:v1.38.0', auth: {passwordSecretKeyRef: {name: df, key: "+longName(254)+"}}}")),
	refused("v1.6 dragonfly auth secretName", minimalGroup, "spec.dragonfly.auth.secretName",
		set("spec.dragonfly", "{enabled: true, image: 'df:v1.38.0', auth: {secretName: df}}")),

	// Backup profiles, schedules and lists.
	accepted("one S3 profile", minimalGroup, set("spec.backup", "{profiles: ["+s3Profile+"]}")),
	refused("profile name with upper case", minimalGroup, "spec.backup.profiles[0].name", set("spec.backup", "{profiles: [{name: Nightly, storage: {type: S3, s3: {bucket: b12, prefix: x}}}]}")),
	refusedAt("profile name longer than 63", minimalGroup, "spec.backup.profiles[0].name", "may not be more than 63",
		set("spec.backup", "{profiles: [{name: "+longName(64)+", storage: {type: S3, s3: {bucket: b12, prefix: x}}}]}")),
	refusedAt("duplicate profile names", minimalGroup, "spec.backup.profiles[1]", "Duplicate value", set("spec.backup", "{profiles: ["+s3Profile+", "+s3Profile+"]}")),
	refusedAt("more than 32 profiles", minimalGroup, "spec.backup.profiles", "must have at most 32 items", set("spec.backup", manyProfiles(33))),
	refusedAt("S3 type without s3 block", minimalGroup, "spec.backup.profiles[0].storage", "type S3 needs the s3 block",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, pvc: {claimName: c}}}]}")),
	refusedAt("pvc with both claimName and provisioned", minimalGroup, "spec.backup.profiles[0].storage.pvc", "set exactly one of claimName and provisioned",
		set("spec.backup", "{profiles: [{name: p, storage: {type: PVC, pvc: {claimName: c, provisioned: {storageClassName: s, size: 1Gi}}}}]}")),
	refused("provisioned pvc without size", minimalGroup, "spec.backup.profiles[0].storage.pvc.provisioned.size",
		set("spec.backup", "{profiles: [{name: p, storage: {type: PVC, pvc: {provisioned: {storageClassName: s}}}}]}")),
	refused("v1.6 storage.pvc.storageClassName", minimalGroup, "spec.backup.profiles[0].storage.pvc.storageClassName",
		set("spec.backup", "{profiles: [{name: p, storage: {type: PVC, pvc: {storageClassName: s, claimName: c}}}]}")),
	refusedAt("S3 prefix with an empty segment", minimalGroup, "spec.backup.profiles[0].storage.s3.prefix", "prefix must not contain an empty",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: a//b}}}]}")),
	refusedAt("S3 prefix with a .. segment", minimalGroup, "spec.backup.profiles[0].storage.s3.prefix", "prefix must not contain an empty",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: a/../b}}}]}")),
	refusedAt("S3 prefix of only a dot", minimalGroup, "spec.backup.profiles[0].storage.s3.prefix", "prefix must not contain an empty",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: /.}}}]}")),
	refusedAt("S3 prefix with a . segment", minimalGroup, "spec.backup.profiles[0].storage.s3.prefix", "prefix must not contain an empty",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: a/./b}}}]}")),
	refusedAt("restore source S3 prefix with a .. segment", minimalGroup, "spec.restoreInPlace.source.s3.prefix", "prefix must not contain an empty",
		set("spec.restoreInPlace", "{confirm: '2026-04-15T09:30:00Z', source: {s3: {bucket: backups, prefix: 'orders/../billing'}}}")),
	refusedAt("initFromBackup source S3 prefix longer than 512", minimalGroup, "spec.initFromBackup.source.s3.prefix", "may not be more than 512",
		set("spec.initFromBackup", "{source: {s3: {bucket: backups, prefix: "+longName(513)+"}}}")),
	refused("S3 prefix longer than 512", minimalGroup, "spec.backup.profiles[0].storage.s3.prefix",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: "+longName(513)+"}}}]}")),
	accepted("S3 prefix with a leading slash", minimalGroup,
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: /prod/orders}}}]}")),
	refusedAt("S3 endpointURL without scheme", minimalGroup, "spec.backup.profiles[0].storage.s3.endpointURL", "endpointURL must be an http:// or https:// URL",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: x, endpointURL: 'minio:9000'}}}]}")),
	refused("v1.6 s3.credentialsSecret", minimalGroup, "spec.backup.profiles[0].storage.s3.credentialsSecret",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: x, credentialsSecret: c}}}]}")),
	refusedAt("schedule naming a missing profile", minimalGroup, "spec.backup.schedules", "schedules[].profileName must name",
		set("spec.backup", "{profiles: ["+s3Profile+"], schedules: [{name: daily, schedule: '0 3 * * *', profileName: weekly}]}")),
	refusedAt("schedule profileName with upper case", minimalGroup, "spec.backup.schedules[0].profileName", "should match",
		set("spec.backup", "{profiles: ["+s3Profile+"], schedules: [{name: daily, schedule: '0 3 * * *', profileName: Nightly}]}")),
	refusedAt("more than 32 schedules", minimalGroup, "spec.backup.schedules", "must have at most 32 items", set("spec.backup", manySchedules(33))),
	refusedAt("duplicate schedule names", minimalGroup, "spec.backup.schedules[1]", "Duplicate value",
		set("spec.backup", "{profiles: ["+s3Profile+"], schedules: [{name: d, schedule: '0 3 * * *', profileName: nightly}, {name: d, schedule: '0 4 * * *', profileName: nightly}]}")),
	refused("schedule name longer than 63", minimalGroup, "spec.backup.schedules[0].name",
		set("spec.backup", "{profiles: ["+s3Profile+"], schedules: [{name: "+longName(64)+", schedule: '0 3 * * *', profileName: nightly}]}")),
	refusedAt("duplicate includeSchemas", minimalGroup, "spec.backup.profiles[0].dump.includeSchemas[1]", "Duplicate value",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: x}}, dump: {includeSchemas: [a, a]}}]}")),
	refusedAt("more than 256 excludeSchemas", minimalGroup, "spec.backup.profiles[0].dump.excludeSchemas", "must have at most 256 items",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: x}}, dump: {excludeSchemas: "+manyNames(257)+"}}]}")),
	refusedAt("duplicate load excludeSchemas", minimalGroup, "spec.initFromBackup.loadOptions.excludeSchemas[1]", "Duplicate value",
		set("spec.initFromBackup", "{source: {backupRef: {name: b}}, loadOptions: {excludeSchemas: [audit, audit]}}")),
	refusedAt("more than 256 load includeSchemas", minimalGroup, "spec.initFromBackup.loadOptions.includeSchemas", "must have at most 256 items",
		set("spec.initFromBackup", "{source: {backupRef: {name: b}}, loadOptions: {includeSchemas: "+manyNames(257)+"}}")),
	refusedAt("load schema name longer than 64", minimalGroup, "spec.initFromBackup.loadOptions.includeSchemas[0]", "may not be more than 64",
		set("spec.initFromBackup", "{source: {backupRef: {name: b}}, loadOptions: {includeSchemas: ["+longName(65)+"]}}")),
	refused("schema name longer than 64", minimalGroup, "spec.backup.profiles[0].dump.excludeSchemas[0]",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: x}}, dump: {excludeSchemas: ["+longName(65)+"]}}]}")),
	refusedAt("more than 16 imagePullSecrets", minimalGroup, "spec.backup.imagePullSecrets", "must have at most 16 items", set("spec.backup", manyPullSecrets(17))),
	refusedAt("duplicate imagePullSecrets", minimalGroup, "spec.backup.imagePullSecrets[1]", "Duplicate value", set("spec.backup", "{imagePullSecrets: [{name: a}, {name: a}]}")),
	refusedAt("pitr without profileName", minimalGroup, "spec.backup.pitr.profileName", "pitr.profileName is required", set("spec.backup", "{pitr: {enabled: true}}")),
	refusedAt("pitr naming a missing profile", minimalGroup, "spec.backup.pitr.profileName", "pitr.profileName must name", set("spec.backup", "{profiles: ["+s3Profile+"], pitr: {enabled: true, profileName: other}}")),
	refusedAt("zero provisioned claim size", minimalGroup, "spec.backup.profiles[0].storage.pvc.provisioned.size", "size must be a positive quantity",
		set("spec.backup", "{profiles: [{name: p, storage: {type: PVC, pvc: {provisioned: {storageClassName: s, size: '0'}}}}]}")),
	refusedAt("integer provisioned claim size", minimalGroup, "spec.backup.profiles[0].storage.pvc.provisioned.size", "must be of type string",
		set("spec.backup", "{profiles: [{name: p, storage: {type: PVC, pvc: {provisioned: {storageClassName: s, size: 1000}}}}]}")),
	refused("v1.6 verification pointInTime mode", minimalGroup, "verification.pointInTime.mode",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: x}}, verification: {enabled: true, schedule: '0 6 * * 0', pointInTime: {mode: latest}}}]}")),
	refusedAt("verification Timestamp without stopTime", minimalGroup, "spec.backup.profiles[0].verification.pointInTime.stopTime", "pointInTime.stopTime is required for mode Timestamp",
		set("spec.backup", "{profiles: [{name: p, storage: {type: S3, s3: {bucket: backups, prefix: x}}, verification: {enabled: true, schedule: '0 6 * * 0', pointInTime: {mode: Timestamp}}}]}")),

	// initFromBackup and restoreInPlace.
	refusedAt("initFromBackup with two sources", minimalGroup, "spec.initFromBackup.source", "set exactly one of backupRef, s3 and pvc",
		set("spec.initFromBackup", "{source: {backupRef: {name: b}, pvc: {claimName: c, path: d}}}")),
	refused("initFromBackup backupRef without name", minimalGroup, "spec.initFromBackup.source.backupRef.name",
		set("spec.initFromBackup", "{source: {backupRef: {}}}")),
	refused("v1.6 mysqlBackupRef", minimalGroup, "spec.initFromBackup.source.mysqlBackupRef",
		set("spec.initFromBackup", "{source: {mysqlBackupRef: {name: b}}}")),
	refusedAt("stopTime in MySQL's native form", minimalGroup, "spec.initFromBackup.pointInTime.stopTime", "pointInTime.stopTime must be an RFC 3339",
		set("spec.backup", "{profiles: ["+s3Profile+"]}"),
		set("spec.initFromBackup", "{source: {backupRef: {name: b}}, pointInTime: {stopTime: '2026-04-15 09:30:00', archiveProfileName: nightly}}")),
	refusedAt("stopTime without a zone", minimalGroup, "spec.initFromBackup.pointInTime.stopTime", "pointInTime.stopTime must be an RFC 3339",
		set("spec.backup", "{profiles: ["+s3Profile+"]}"),
		set("spec.initFromBackup", "{source: {backupRef: {name: b}}, pointInTime: {stopTime: '2026-04-15T09:30:00', archiveProfileName: nightly}}")),
	refusedAt("stopTime with a fraction", minimalGroup, "spec.initFromBackup.pointInTime.stopTime", "pointInTime.stopTime must be an RFC 3339",
		set("spec.backup", "{profiles: ["+s3Profile+"]}"),
		set("spec.initFromBackup", "{source: {backupRef: {name: b}}, pointInTime: {stopTime: '2026-04-15T09:30:00.5Z', archiveProfileName: nightly}}")),
	refusedAt("archiveProfileName naming no profile", minimalGroup, "spec.initFromBackup.pointInTime.archiveProfileName", "archiveProfileName must name",
		set("spec.initFromBackup", "{source: {backupRef: {name: b}}, pointInTime: {stopTime: '2026-04-15T09:30:00Z', archiveProfileName: nightly}}")),
	refusedAt("pointInTime without archiveProfileName", minimalGroup, "spec.initFromBackup.pointInTime.archiveProfileName", "Required value",
		set("spec.backup", "{profiles: ["+s3Profile+"]}"),
		set("spec.initFromBackup", "{source: {backupRef: {name: b}}, pointInTime: {stopTime: '2026-04-15T09:30:00Z'}}")),
	refused("v1.6 pointInTime.stopDatetime", minimalGroup, "spec.initFromBackup.pointInTime.stopDatetime",
		set("spec.backup", "{profiles: ["+s3Profile+"]}"),
		set("spec.initFromBackup", "{source: {backupRef: {name: b}}, pointInTime: {stopDatetime: '2026-04-15T09:30:00Z', stopTime: '2026-04-15T09:30:00Z', archiveProfileName: nightly}}")),
	accepted("initFromBackup with point in time", minimalGroup,
		set("spec.backup", "{profiles: ["+s3Profile+"]}"),
		set("spec.initFromBackup", "{source: {backupRef: {name: b}}, pointInTime: {stopTime: '2026-04-15T09:30:00+02:00', archiveProfileName: nightly}}")),
	refusedAt("confirm with a lower-case t", minimalGroup, "spec.restoreInPlace.confirm", "spec.restoreInPlace.confirm must be an RFC 3339",
		set("spec.restoreInPlace", "{confirm: '2026-04-15t09:30:00Z', source: {backupRef: {name: b}}}")),
	refusedAt("confirm with a lower-case z", minimalGroup, "spec.restoreInPlace.confirm", "spec.restoreInPlace.confirm must be an RFC 3339",
		set("spec.restoreInPlace", "{confirm: '2026-04-15T09:30:00z', source: {backupRef: {name: b}}}")),
	refusedAt("confirm with an offset of 24 hours", minimalGroup, "spec.restoreInPlace.confirm", "spec.restoreInPlace.confirm must be an RFC 3339",
		set("spec.restoreInPlace", "{confirm: '2026-04-15T09:30:00+24:00', source: {backupRef: {name: b}}}")),
	refusedAt("confirm with a non-digit fraction", minimalGroup, "spec.restoreInPlace.confirm", "spec.restoreInPlace.confirm must be an RFC 3339",
		set("spec.restoreInPlace", "{confirm: '2026-04-15T09:30:00.5e3Z', source: {backupRef: {name: b}}}")),
	refusedAt("confirm on a day that does not exist", minimalGroup, "spec.restoreInPlace.confirm", "spec.restoreInPlace.confirm must be an RFC 3339",
		set("spec.restoreInPlace", "{confirm: '2026-02-31T09:30:00Z', source: {backupRef: {name: b}}}")),
	refusedAt("confirm in MySQL's native form", minimalGroup, "spec.restoreInPlace.confirm", "spec.restoreInPlace.confirm must be an RFC 3339",
		set("spec.restoreInPlace", "{confirm: '2026-04-15 09:30:00', source: {backupRef: {name: b}}}")),
	accepted("confirm with a fraction and an offset", minimalGroup,
		set("spec.restoreInPlace", "{confirm: '2026-04-15T09:30:00.123-23:59', source: {backupRef: {name: b}}}")),
	refusedAt("restoreInPlace of two schemas", minimalGroup, "spec.restoreInPlace.loadOptions.includeSchemas", "includeSchemas accepts at most one schema",
		set("spec.restoreInPlace", "{confirm: '2026-04-15T09:30:00Z', source: {backupRef: {name: b}}, loadOptions: {includeSchemas: [a, b]}}")),
	refused("v1.6 restoreInPlace.pointInTime", minimalGroup, "spec.restoreInPlace.pointInTime",
		set("spec.restoreInPlace", "{confirm: '2026-04-15T09:30:00Z', source: {backupRef: {name: b}}, pointInTime: {stopTime: '2026-04-15T09:30:00Z'}}")),
	refused("v1.6 loadOptions.resetProgress", minimalGroup, "spec.restoreInPlace.loadOptions.resetProgress",
		set("spec.restoreInPlace", "{confirm: '2026-04-15T09:30:00Z', source: {backupRef: {name: b}}, loadOptions: {resetProgress: true}}")),

	// Encryption at rest.
	refusedAt("encryption without tls", minimalGroup, "spec.encryptionAtRest.enabled", "spec.encryptionAtRest.enabled requires spec.tls", set("spec.encryptionAtRest", "{enabled: true}")),
	refusedAt("keyring inside the datadir", minimalGroup, "spec.encryptionAtRest.keyring.dataFileDir", "dataFileDir must be an absolute path outside /var/lib/mysql",
		set("spec.tls", "{secretName: tls}"), set("spec.encryptionAtRest", "{enabled: true, keyring: {dataFileDir: /var/lib/mysql/keyring}}")),
	refused("keyring retainVersions 1", minimalGroup, "spec.encryptionAtRest.keyring.retainVersions",
		set("spec.tls", "{secretName: tls}"), set("spec.encryptionAtRest", "{enabled: true, keyring: {retainVersions: 1}}")),
	refused("unknown existingData", minimalGroup, "spec.encryptionAtRest.existingData",
		set("spec.tls", "{secretName: tls}"), set("spec.encryptionAtRest", "{enabled: true, existingData: Encrypt}")),

	// Split brain policy.
	refusedAt("sitePriorities naming a reader", minimalGroup, "spec.splitBrainPolicy.sitePriorities", "sitePriorities may only name PrimaryCandidate",
		set("spec.sites[2]", "{name: reader, role: ReadOnly, serverID: 103, zone: z, storage: {storageClassName: fast, size: 1Gi}}"),
		set("spec.splitBrainPolicy", "{sitePriorities: [iad, reader]}")),
	refusedAt("sitePriorities naming an unknown site", minimalGroup, "spec.splitBrainPolicy.sitePriorities", "sitePriorities may only name PrimaryCandidate",
		set("spec.splitBrainPolicy", "{sitePriorities: [iad, sfo]}")),
	refusedAt("sitePriorities naming a disaster-recovery site", minimalGroup, "spec.splitBrainPolicy.sitePriorities", "sitePriorities may only name PrimaryCandidate",
		set("spec.sites[2]", "{name: dr, role: DisasterRecovery, serverID: 103, zone: eu-west-1a, loadBalancerIP: 10.0.3.1, taintNodeSelector: {a: b}, storage: {storageClassName: fast, size: 1Gi}}"),
		set("spec.splitBrainPolicy", "{sitePriorities: [iad, dr]}")),
	refusedAt("sitePriorities with a duplicate", minimalGroup, "spec.splitBrainPolicy.sitePriorities[1]", "Duplicate value",
		set("spec.splitBrainPolicy", "{sitePriorities: [iad, iad]}")),
	accepted("sitePriorities of both candidates", minimalGroup, set("spec.splitBrainPolicy", "{sitePriorities: [pdx, iad]}")),

	// Dragonfly.
	refusedAt("dragonfly :latest", minimalGroup, "spec.dragonfly.image", "spec.dragonfly.image must be pinned", set("spec.dragonfly", "{enabled: true, image: 'dragonfly:latest'}")),
	refusedAt("dragonfly :latest behind a registry port", minimalGroup, "spec.dragonfly.image", "spec.dragonfly.image must be pinned",
		set("spec.dragonfly", "{enabled: true, image: 'registry.local:5000/dragonflydb/dragonfly:latest'}")),
	refusedAt("dragonfly :latest while disabled", minimalGroup, "spec.dragonfly.image", "spec.dragonfly.image must be pinned",
		set("spec.dragonfly", "{enabled: false, image: 'dragonfly:latest'}")),
	accepted("dragonfly pinned tag behind a registry port", minimalGroup,
		set("spec.dragonfly", "{enabled: true, image: 'registry.local:5000/dragonflydb/dragonfly:v1.38.0'}")),
	refusedAt("dragonfly image without tag", minimalGroup, "spec.dragonfly.image", "spec.dragonfly.image must be pinned", set("spec.dragonfly", "{enabled: true, image: 'registry:5000/dragonfly'}")),
	refusedAt("dragonfly enabled without image", minimalGroup, "spec.dragonfly.image", "spec.dragonfly.image is required", set("spec.dragonfly", "{enabled: true}")),
	accepted("dragonfly pinned by digest", minimalGroup, set("spec.dragonfly", "{enabled: true, image: 'dragonfly@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'}")),
	refusedAt("SnapshotRestore without snapshot dir", minimalGroup, "spec.dragonfly.upgradeStrategy", "upgradeStrategy SnapshotRestore needs",
		set("spec.dragonfly", "{enabled: true, image: 'df:v1.38.0', upgradeStrategy: SnapshotRestore}")),
	refusedAt("SnapshotRestore with dragonfly disabled", minimalGroup, "spec.dragonfly.upgradeStrategy", "upgradeStrategy SnapshotRestore needs",
		set("spec.dragonfly", "{enabled: false, upgradeStrategy: SnapshotRestore, snapshot: {dir: 's3://b/p'}}")),
	refusedAt("dragonfly maxMemory zero", minimalGroup, "spec.dragonfly.maxMemory", "spec.dragonfly.maxMemory must be a positive quantity",
		set("spec.dragonfly", "{enabled: true, image: 'df:v1.38.0', maxMemory: '0'}")),
	refusedAt("dragonfly proactorThreads 0", minimalGroup, "spec.dragonfly.proactorThreads", "should be greater than or equal to 1",
		set("spec.dragonfly", "{enabled: true, image: 'df:v1.38.0', proactorThreads: 0}")),
	refused("v1.6 dragonfly maxMemoryMb", minimalGroup, "spec.dragonfly.maxMemoryMb",
		set("spec.dragonfly", "{enabled: true, image: 'df:v1.38.0', maxMemoryMb: 512}")),
	refusedAt("dragonfly s3EndpointURL without scheme", minimalGroup, "spec.dragonfly.snapshot.s3EndpointURL", "s3EndpointURL must be an http:// or https:// URL",
		set("spec.dragonfly", "{enabled: true, image: 'df:v1.38.0', snapshot: {dir: 's3://b', s3EndpointURL: 'rustfs:9000'}}")),

	// Services (docs/api.md, "How objects are validated": the effective
	// Service type decides which fields are accepted).
	refusedAt("group externalTrafficPolicy on ClusterIP", minimalGroup, "spec.serviceTemplate.externalTrafficPolicy", "spec.serviceTemplate.externalTrafficPolicy is only valid",
		set("spec.serviceTemplate", "{externalTrafficPolicy: Local}")),
	refusedAt("group externalTrafficPolicy on an explicit ClusterIP", minimalGroup, "spec.serviceTemplate.externalTrafficPolicy", "spec.serviceTemplate.externalTrafficPolicy is only valid",
		set("spec.serviceTemplate", "{type: ClusterIP, externalTrafficPolicy: Cluster}")),
	refusedAt("site externalTrafficPolicy on an inherited ClusterIP", minimalGroup, "spec.sites", "spec.sites[].serviceTemplate.externalTrafficPolicy is only valid",
		set("spec.sites[0].serviceTemplate", "{externalTrafficPolicy: Local}")),
	refusedAt("site externalTrafficPolicy on a ClusterIP override", minimalGroup, "spec.sites", "spec.sites[].serviceTemplate.externalTrafficPolicy is only valid",
		set("spec.serviceTemplate", "{type: LoadBalancer}"), set("spec.sites[1].serviceTemplate", "{type: ClusterIP, externalTrafficPolicy: Local}")),
	refusedAt("site nodePort on the default ClusterIP", minimalGroup, "spec.sites", "spec.sites[].serviceTemplate.nodePort is only valid",
		set("spec.sites[0].serviceTemplate", "{nodePort: 32006}")),
	refusedAt("site nodePort on an explicit ClusterIP", minimalGroup, "spec.sites", "spec.sites[].serviceTemplate.nodePort is only valid",
		set("spec.serviceTemplate", "{type: LoadBalancer}"), set("spec.sites[0].serviceTemplate", "{type: ClusterIP, nodePort: 32006}")),
	refusedAt("site nodePort out of range", minimalGroup, "spec.sites[0].serviceTemplate.nodePort", "should be less than or equal to 65535",
		set("spec.sites[0].serviceTemplate", "{type: NodePort, nodePort: 70000}")),
	accepted("site nodePort on an inherited LoadBalancer", minimalGroup,
		set("spec.serviceTemplate", "{type: LoadBalancer, externalTrafficPolicy: Local}"), set("spec.sites[0].serviceTemplate", "{nodePort: 32006, externalTrafficPolicy: Cluster}")),
	accepted("site NodePort override under a ClusterIP group", minimalGroup,
		set("spec.sites[0].serviceTemplate", "{type: NodePort, nodePort: 1, externalTrafficPolicy: Local}")),

	accepted("group externalTrafficPolicy on NodePort", minimalGroup, set("spec.serviceTemplate", "{type: NodePort, externalTrafficPolicy: Local}")),
	// Containers, mysqlConf, sidecar.
	refusedAt("duplicate extraContainers", minimalGroup, "spec.extraContainers[1]", "Duplicate value",
		set("spec.extraContainers", "[{name: exporter, image: 'e:1'}, {name: exporter, image: 'e:2'}]")),
	refusedAt("more than 16 extraContainers", minimalGroup, "spec.extraContainers", "must have at most 16 items", set("spec.extraContainers", manyContainers(17))),
	refusedAt("duplicate extraInitContainers", minimalGroup, "spec.extraInitContainers[1]", "Duplicate value",
		set("spec.extraInitContainers", "[{name: init, image: 'e:1'}, {name: init, image: 'e:2'}]")),
	refusedAt("more than 16 extraInitContainers", minimalGroup, "spec.extraInitContainers", "must have at most 16 items", set("spec.extraInitContainers", manyContainers(17))),
	refusedAt("replica_preserve_commit_order override", minimalGroup, "spec.mysqlConf", "replica-preserve-commit-order is owned by the operator",
		set("spec.mysqlConf", "{replica_preserve_commit_order: 'OFF'}")),
	refusedAt("site replica-preserve-commit-order override", minimalGroup, "spec.sites[0].mysqlConf", "replica-preserve-commit-order is owned by the operator",
		set("spec.sites[0].mysqlConf", "{replica-preserve-commit-order: 'OFF'}")),
	refusedAt("sync_binlog override", minimalGroup, "spec.mysqlConf", "sync-binlog and innodb-flush-log-at-trx-commit are owned by the operator",
		set("spec.mysqlConf", "{sync_binlog: '0'}")),
	refusedAt("site innodb-flush-log-at-trx-commit override", minimalGroup, "spec.sites[0].mysqlConf", "sync-binlog and innodb-flush-log-at-trx-commit are owned by the operator",
		set("spec.sites[0].mysqlConf", "{innodb-flush-log-at-trx-commit: '2'}")),
	accepted("other mysqlConf keys", minimalGroup, set("spec.mysqlConf", "{max_connections: '500', sync_relay_log: '1'}")),
	refused("operatorEndpoint without port", minimalGroup, "spec.sidecar.operatorEndpoint", set("spec.sidecar", "{operatorEndpoint: bloodraven.svc}")),
	refusedAt("operatorEndpoint port 70000", minimalGroup, "spec.sidecar.operatorEndpoint", "operatorEndpoint port must be between 1 and 65535", set("spec.sidecar", "{operatorEndpoint: 'bloodraven.svc:70000'}")),
	accepted("operatorEndpoint host:port", minimalGroup, set("spec.sidecar", "{operatorEndpoint: 'bloodraven.bloodraven.svc:8082'}")),

	// MysqlBackup.
	refusedAt("backup name longer than 63", minimalBackup, "metadata.name", "a MysqlBackup name must be at most 63", set("metadata.name", longName(64))),
	refusedAt("backup name ending in .bloodraven-backup.json", minimalBackup, "metadata.name", "must not end in .bloodraven-backup.json", set("metadata.name", "x.bloodraven-backup.json")),
	refused("backup profileName with upper case", minimalBackup, "spec.profileName", set("spec.profileName", "Nightly")),
	refused("backup sourceSite not a site name", minimalBackup, "spec.sourceSite", set("spec.sourceSite", longName(21))),
	refused("v1.6 sourceSiteOverride", minimalBackup, "spec.sourceSiteOverride", set("spec.sourceSiteOverride", "iad")),
	refused("v1.6 triggeredBy", minimalBackup, "spec.triggeredBy", set("spec.triggeredBy", "schedule")),
	refused("lower-case deletionPolicy", minimalBackup, "spec.deletionPolicy", set("spec.deletionPolicy", "delete")),
	refused("failoverGroupRef name not a DNS subdomain", minimalBackup, "spec.failoverGroupRef.name", set("spec.failoverGroupRef.name", "Orders")),
	refused("backup without failoverGroupRef", minimalBackup, "spec.failoverGroupRef", del("spec.failoverGroupRef")),

	// MysqlBackupVerification.
	refusedAt("verification name longer than 63", minimalVerification, "metadata.name", "a MysqlBackupVerification name must be at most 63", set("metadata.name", longName(64))),
	refused("empty backupRef", minimalVerification, "spec.backupRef.name", set("spec.backupRef", "{}")),
	refused("lower-case pointInTime mode", minimalVerification, "spec.pointInTime.mode", set("spec.pointInTime", "{mode: latest}")),
	refused("v1.6 pointInTime mode none", minimalVerification, "spec.pointInTime.mode", set("spec.pointInTime", "{mode: none}")),
	refusedAt("pointInTime without mode", minimalVerification, "spec.pointInTime.mode", "Required value", set("spec.pointInTime", "{stopTime: '2026-04-15T09:30:00Z'}")),
	refusedAt("verification backupRef name with upper case", minimalVerification, "spec.backupRef.name", "should match", set("spec.backupRef", "{name: B1}")),
	refusedAt("verification profileName not a DNS label", minimalVerification, "spec.profileName", "should match", set("spec.profileName", "nightly.full")),
	refusedAt("Latest with a stopTime", minimalVerification, "spec.pointInTime.stopTime", "stopTime is required for mode Timestamp and forbidden for mode Latest",
		set("spec.pointInTime", "{mode: Latest, stopTime: '2026-04-15T09:30:00Z'}")),
	refused("v1.6 pointInTime.timestamp", minimalVerification, "spec.pointInTime.timestamp",
		set("spec.pointInTime", "{mode: Timestamp, timestamp: '2026-04-15T09:30:00Z', stopTime: '2026-04-15T09:30:00Z'}")),
	refusedAt("sanityCheck timeout 0s", minimalVerification, "spec.sanityCheck.timeout", "sanityCheck.timeout must be between 1s and 1h", set("spec.sanityCheck", "{query: 'SELECT 1', timeout: 0s}")),
	refused("v1.6 sanityCheck.expect", minimalVerification, "spec.sanityCheck.expect", set("spec.sanityCheck", "{query: 'SELECT 1', expect: {minRows: 1}}")),
	refused("v1.6 verification storage", minimalVerification, "spec.storage", set("spec.storage", "{size: 1Gi}")),

	// MysqlStandbyCluster.
	refused("Network transport", minimalStandby, "spec.transport", set("spec.transport", "Network")),
	refused("standby without prefix", minimalStandby, "spec.source.s3.prefix", del("spec.source.s3.prefix")),
	refusedAt("discoveryInterval under 30s", minimalStandby, "spec.freshness.discoveryInterval", "discoveryInterval must be between 30s and 24h", set("spec.freshness", "{discoveryInterval: 10s}")),
	refusedAt("standby prefix with a .. segment", minimalStandby, "spec.source.s3.prefix", "prefix must not contain an empty", set("spec.source.s3.prefix", "orders/../billing")),
	refused("v1.6 source.failoverGroupName", minimalStandby, "spec.source.failoverGroupName", set("spec.source.failoverGroupName", "orders")),
	refused("v1.6 source.storage", minimalStandby, "spec.source.storage", set("spec.source.storage", "{type: S3}")),
	refused("v1.6 template", minimalStandby, "spec.template", set("spec.template", "{}")),
	refused("standby decryption Secret key too long", minimalStandby, "spec.source.decryption.passphraseSecretKeyRef.key",
		set("spec.source.decryption", "{passphraseSecretKeyRef: {name: p, key: "+longName(254)+"}}")),

	// MysqlDatabase.
	refused("v1.6 groupRef", minimalDatabase, "spec.groupRef", set("spec.groupRef", "{name: orders}")),
	refused("database name with a dash", minimalDatabase, "spec.databaseName", set("spec.databaseName", "orders-app")),
	refusedAt("system schema", minimalDatabase, "spec.databaseName", "spec.databaseName must not be a MySQL system schema", set("spec.databaseName", "MySQL")),
	refusedAt("duplicate deployment client", minimalDatabase, "spec.deploymentClients[1]", "Duplicate value",
		set("spec.deploymentClients", "[{namespace: app, serviceAccount: deploy}, {namespace: app, serviceAccount: deploy}]")),
	accepted("two ServiceAccounts in one namespace", minimalDatabase,
		set("spec.deploymentClients", "[{namespace: app, serviceAccount: deploy}, {namespace: app, serviceAccount: migrate}]")),
	refusedAt("more than 16 deployment clients", minimalDatabase, "spec.deploymentClients", "must have at most 16 items", set("spec.deploymentClients", manyClients(17))),
	refused("deployment client without serviceAccount", minimalDatabase, "spec.deploymentClients[0].serviceAccount",
		set("spec.deploymentClients", "[{namespace: app}]")),
	refused("owner password Secret name invalid", minimalDatabase, "spec.owner.passwordSecretKeyRef.name",
		set("spec.owner", "{username: app, passwordSecretKeyRef: {name: 'Bad Name'}}")),
}

// yamlList is a flow-style YAML list of n items, item(i) each.
func yamlList(n int, item func(i int) string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = item(i)
	}
	return "[" + strings.Join(items, ", ") + "]"
}

func manySites(n int) string {
	return yamlList(n, func(i int) string {
		return fmt.Sprintf("{name: s%d, serverID: %d, zone: z, loadBalancerIP: 10.0.0.%d, taintNodeSelector: {a: b}, storage: {storageClassName: fast, size: 1Gi}}", i, 100+i, i+1)
	})
}

func manySchedules(n int) string {
	return "{profiles: [" + s3Profile + "], schedules: " + yamlList(n, func(i int) string {
		return fmt.Sprintf("{name: s%d, schedule: '0 3 * * *', profileName: nightly}", i)
	}) + "}"
}

func manyNames(n int) string {
	return yamlList(n, func(i int) string { return fmt.Sprintf("schema%d", i) })
}

func manyProfiles(n int) string {
	return "{profiles: " + yamlList(n, func(i int) string {
		return fmt.Sprintf("{name: p%d, storage: {type: S3, s3: {bucket: backups, prefix: p%d}}}", i, i)
	}) + "}"
}

func manyPullSecrets(n int) string {
	return "{imagePullSecrets: " + yamlList(n, func(i int) string { return fmt.Sprintf("{name: s%d}", i) }) + "}"
}

func manyContainers(n int) string {
	return yamlList(n, func(i int) string { return fmt.Sprintf("{name: c%d, image: 'busybox:1'}", i) })
}

func manyClients(n int) string {
	return yamlList(n, func(i int) string { return fmt.Sprintf("{namespace: ns%d, serviceAccount: deploy}", i) })
}

// TestAdmissionOnCreate submits every case and checks that it is accepted,
// or refused with a message naming the field.
func TestAdmissionOnCreate(t *testing.T) {
	ns := cp.NewNamespace(t)
	dc := dynamicClient(t)
	for i, tc := range createCases {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, tc.base)
			apply(t, obj, tc.edits...)
			if len(tc.want) == 0 {
				// Accepted objects share the namespace: give each its own
				// name unless the case is about the name.
				if !touchesName(tc.edits) {
					obj.SetName(fmt.Sprintf("%s%d", obj.GetName(), i))
				}
				if _, err := create(t, dc, ns, obj); err != nil {
					t.Fatalf("refused, want accepted: %v", err)
				}
				return
			}
			_, err := create(t, dc, ns, obj)
			if err == nil {
				t.Fatalf("accepted, want refused with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("refused with\n  %v\nwant the message to contain %q", err, w)
				}
			}
			t.Logf("refused as expected: %v", err)
		})
	}
}

func touchesName(edits []edit) bool {
	for _, e := range edits {
		if e.path == "metadata.name" {
			return true
		}
	}
	return false
}

type updateCase struct {
	name    string
	base    string
	initial []edit // applied before the create
	change  []edit // applied to the stored object before the update
	want    string // "" means the update must be accepted
	at      string // where the refusal must point (its "<path>: " prefix)
}

var updateCases = []updateCase{
	// Sites.
	{name: "remove a site", base: minimalGroup,
		initial: []edit{set("spec.sites[2]", "{name: sfo, serverID: 103, zone: us-west-1a, loadBalancerIP: 10.0.3.1, taintNodeSelector: {a: b}, storage: {storageClassName: fast, size: 1Gi}}")},
		change:  []edit{del("spec.sites[2]")}, want: "a site cannot be removed or renamed", at: "spec.sites"},
	{name: "rename a site", base: minimalGroup, change: []edit{set("spec.sites[1].name", "sea")}, want: "a site cannot be removed or renamed", at: "spec.sites"},
	{name: "add a site", base: minimalGroup,
		change: []edit{set("spec.sites[2]", "{name: reader, role: ReadOnly, serverID: 103, zone: z, storage: {storageClassName: fast, size: 1Gi}}")}},
	{name: "change serverID", base: minimalGroup, change: []edit{set("spec.sites[0].serverID", "201")}, want: "serverID is immutable", at: "spec.sites[0].serverID"},
	{name: "change zone", base: minimalGroup, change: []edit{set("spec.sites[0].zone", "us-east-1c")}, want: "zone is immutable", at: "spec.sites[0].zone"},
	{name: "change storageClassName", base: minimalGroup, change: []edit{set("spec.sites[0].storage.storageClassName", "slow")}, want: "storage.storageClassName is immutable", at: "spec.sites[0].storage.storageClassName"},
	{name: "grow storage", base: minimalGroup, change: []edit{set("spec.sites[0].storage.size", "200Gi")}, want: "storage.size is immutable", at: "spec.sites[0].storage.size"},
	{name: "same storage size spelled differently", base: minimalGroup, change: []edit{set("spec.sites[0].storage.size", "102400Mi")}},
	{name: "reader promoted to candidate without placement", base: minimalGroup,
		initial: []edit{set("spec.sites[2]", "{name: reader, role: ReadOnly, serverID: 103, zone: z, storage: {storageClassName: fast, size: 1Gi}}")},
		change:  []edit{set("spec.sites[2].role", "PrimaryCandidate")}, want: "loadBalancerIP is required", at: "spec.sites[2].loadBalancerIP"},
	{name: "reader promoted to candidate with placement", base: minimalGroup,
		initial: []edit{set("spec.sites[2]", "{name: reader, role: ReadOnly, serverID: 103, zone: z, storage: {storageClassName: fast, size: 1Gi}}")},
		change:  []edit{set("spec.sites[2].role", "PrimaryCandidate"), set("spec.sites[2].loadBalancerIP", "10.0.3.1"), set("spec.sites[2].taintNodeSelector", "{a: b}")}},
	{name: "add a site reusing a serverID", base: minimalGroup,
		change: []edit{set("spec.sites[2]", "{name: reader, role: ReadOnly, serverID: 102, zone: z, storage: {storageClassName: fast, size: 1Gi}}")},
		want:   "spec.sites[].serverID must be unique", at: "spec.sites"},
	{name: "demote a candidate below two", base: minimalGroup, change: []edit{set("spec.sites[1].role", "ReadOnly")},
		want: "spec.sites must contain at least two PrimaryCandidate sites", at: "spec.sites"},
	{name: "shrink storage", base: minimalGroup, change: []edit{set("spec.sites[1].storage.size", "50Gi")}, want: "storage.size is immutable", at: "spec.sites[1].storage.size"},
	{name: "change a reader's zone", base: minimalGroup,
		initial: []edit{set("spec.sites[2]", "{name: reader, role: ReadOnly, serverID: 103, zone: z, storage: {storageClassName: fast, size: 1Gi}}")},
		change:  []edit{set("spec.sites[2].zone", "us-east-1c")}, want: "zone is immutable", at: "spec.sites[2].zone"},
	{name: "change a timer", base: minimalGroup, change: []edit{set("spec.pollInterval", "5s"), set("spec.failoverCooldown", "10m")}},

	// initFromBackup.
	{name: "add initFromBackup", base: minimalGroup, change: []edit{set("spec.initFromBackup", "{source: {backupRef: {name: b}}}")},
		want: "spec.initFromBackup cannot be added, changed or removed", at: "spec.initFromBackup"},
	{name: "change initFromBackup", base: minimalGroup, initial: []edit{set("spec.initFromBackup", "{source: {backupRef: {name: b}}}")},
		change: []edit{set("spec.initFromBackup.source.backupRef.name", "c")}, want: "spec.initFromBackup cannot be added, changed or removed", at: "spec.initFromBackup"},
	{name: "remove initFromBackup", base: minimalGroup, initial: []edit{set("spec.initFromBackup", "{source: {backupRef: {name: b}}}")},
		change: []edit{del("spec.initFromBackup")}, want: "spec.initFromBackup cannot be added, changed or removed", at: "spec.initFromBackup"},
	{name: "edit around an unchanged initFromBackup", base: minimalGroup,
		initial: []edit{set("spec.backup", "{profiles: ["+s3Profile+"]}"),
			set("spec.initFromBackup", "{source: {backupRef: {name: b}}, pointInTime: {stopTime: '2026-04-15T09:30:00Z', archiveProfileName: nightly}}")},
		change: []edit{set("spec.pollInterval", "3s")}},

	// Encryption at rest.
	{name: "turn encryption off", base: minimalGroup,
		initial: []edit{set("spec.tls", "{secretName: tls}"), set("spec.encryptionAtRest", "{enabled: true}")},
		change:  []edit{set("spec.encryptionAtRest.enabled", "false")}, want: "spec.encryptionAtRest.enabled cannot go back to false", at: "spec.encryptionAtRest"},
	{name: "remove encryption", base: minimalGroup,
		initial: []edit{set("spec.tls", "{secretName: tls}"), set("spec.encryptionAtRest", "{enabled: true}")},
		change:  []edit{del("spec.encryptionAtRest")}, want: "spec.encryptionAtRest.enabled cannot go back to false", at: "spec.encryptionAtRest"},
	{name: "move the keyring while encrypted", base: minimalGroup,
		initial: []edit{set("spec.tls", "{secretName: tls}"), set("spec.encryptionAtRest", "{enabled: true}")},
		change:  []edit{set("spec.encryptionAtRest.keyring.pluginDir", "/usr/lib/mysql/plugin")}, want: "dataFileDir, mysqldDir and pluginDir cannot change", at: "spec.encryptionAtRest.keyring"},
	{name: "change keyring retention while encrypted", base: minimalGroup,
		initial: []edit{set("spec.tls", "{secretName: tls}"), set("spec.encryptionAtRest", "{enabled: true}")},
		change:  []edit{set("spec.encryptionAtRest.keyring.retainVersions", "10")}},
	{name: "drop tls while encrypted", base: minimalGroup,
		initial: []edit{set("spec.tls", "{secretName: tls}"), set("spec.encryptionAtRest", "{enabled: true}")},
		change:  []edit{del("spec.tls")}, want: "spec.encryptionAtRest.enabled requires spec.tls", at: "spec.encryptionAtRest.enabled"},
	{name: "turn encryption on", base: minimalGroup, initial: []edit{set("spec.tls", "{secretName: tls}")},
		change: []edit{set("spec.encryptionAtRest", "{enabled: true}")}},

	// Provisioned backup claims.
	{name: "resize a provisioned backup claim", base: minimalGroup,
		initial: []edit{set("spec.backup", "{profiles: [{name: p, storage: {type: PVC, pvc: {provisioned: {storageClassName: s, size: 1Gi}}}}]}")},
		change:  []edit{set("spec.backup.profiles[0].storage.pvc.provisioned.size", "2Gi")}, want: "pvc.provisioned cannot be added, changed or removed", at: "spec.backup.profiles[0].storage"},
	{name: "swap a provisioned claim for an existing one", base: minimalGroup,
		initial: []edit{set("spec.backup", "{profiles: [{name: p, storage: {type: PVC, pvc: {provisioned: {storageClassName: s, size: 1Gi}}}}]}")},
		change:  []edit{set("spec.backup.profiles[0].storage.pvc", "{claimName: c}")}, want: "pvc.provisioned cannot be added, changed or removed", at: "spec.backup.profiles[0].storage"},
	{name: "add a provisioned claim to an existing-claim profile", base: minimalGroup,
		initial: []edit{set("spec.backup", "{profiles: [{name: p, storage: {type: PVC, pvc: {claimName: c}}}]}")},
		change:  []edit{set("spec.backup.profiles[0].storage.pvc", "{provisioned: {storageClassName: s, size: 1Gi}}")}, want: "pvc.provisioned cannot be added, changed or removed", at: "spec.backup.profiles[0].storage"},

	// restoreInPlace is meant to be re-armed.
	{name: "re-arm restoreInPlace", base: minimalGroup,
		initial: []edit{set("spec.restoreInPlace", "{confirm: '2026-04-15T09:30:00Z', source: {backupRef: {name: b}}}")},
		change:  []edit{set("spec.restoreInPlace.confirm", "2026-04-16T09:30:00Z")}},

	// MysqlBackup.
	{name: "backup group", base: minimalBackup, change: []edit{set("spec.failoverGroupRef.name", "billing")}, want: "spec.failoverGroupRef is immutable", at: "spec.failoverGroupRef"},
	{name: "backup profile", base: minimalBackup, change: []edit{set("spec.profileName", "weekly")}, want: "spec.profileName is immutable", at: "spec.profileName"},
	{name: "backup sourceSite added", base: minimalBackup, change: []edit{set("spec.sourceSite", "pdx")}, want: "spec.sourceSite is immutable", at: "spec.sourceSite"},
	{name: "backup sourceSite changed", base: minimalBackup, initial: []edit{set("spec.sourceSite", "iad")},
		change: []edit{set("spec.sourceSite", "pdx")}, want: "spec.sourceSite is immutable", at: "spec.sourceSite"},
	{name: "backup sourceSite removed", base: minimalBackup, initial: []edit{set("spec.sourceSite", "iad")},
		change: []edit{del("spec.sourceSite")}, want: "spec.sourceSite is immutable", at: "spec.sourceSite"},
	{name: "backup deletionPolicy", base: minimalBackup, change: []edit{set("spec.deletionPolicy", "Retain")}},

	// MysqlBackupVerification.
	{name: "verification group", base: minimalVerification, change: []edit{set("spec.failoverGroupRef.name", "billing")}, want: "spec.failoverGroupRef is immutable", at: "spec.failoverGroupRef"},
	{name: "verification profile", base: minimalVerification, change: []edit{set("spec.profileName", "weekly")}, want: "spec.profileName is immutable", at: "spec.profileName"},
	{name: "verification backupRef added", base: minimalVerification, change: []edit{set("spec.backupRef", "{name: b1}")}, want: "spec.backupRef is immutable", at: "spec.backupRef"},
	{name: "verification pointInTime changed", base: minimalVerification, initial: []edit{set("spec.pointInTime", "{mode: Latest}")},
		change: []edit{set("spec.pointInTime", "{mode: Timestamp, stopTime: '2026-04-15T09:30:00Z'}")}, want: "spec.pointInTime is immutable", at: "spec.pointInTime"},
	{name: "verification sanityCheck removed", base: minimalVerification, initial: []edit{set("spec.sanityCheck", "{query: 'SELECT 1'}")},
		change: []edit{del("spec.sanityCheck")}, want: "spec.sanityCheck is immutable", at: "spec.sanityCheck"},
	{name: "verification backupRef changed", base: minimalVerification, initial: []edit{set("spec.backupRef", "{name: b1}")},
		change: []edit{set("spec.backupRef.name", "b2")}, want: "spec.backupRef is immutable", at: "spec.backupRef"},
	{name: "verification backupRef removed", base: minimalVerification, initial: []edit{set("spec.backupRef", "{name: b1}")},
		change: []edit{del("spec.backupRef")}, want: "spec.backupRef is immutable", at: "spec.backupRef"},
	{name: "verification pointInTime added", base: minimalVerification, change: []edit{set("spec.pointInTime", "{mode: Latest}")},
		want: "spec.pointInTime is immutable", at: "spec.pointInTime"},
	{name: "verification sanityCheck changed", base: minimalVerification, initial: []edit{set("spec.sanityCheck", "{query: 'SELECT 1'}")},
		change: []edit{set("spec.sanityCheck.minResult", "5")}, want: "spec.sanityCheck is immutable", at: "spec.sanityCheck"},
	{name: "verification ttl", base: minimalVerification, change: []edit{set("spec.ttlSecondsAfterFinished", "0")}},

	// MysqlDatabase.
	{name: "database group", base: minimalDatabase, change: []edit{set("spec.failoverGroupRef.name", "billing")}, want: "spec.failoverGroupRef is immutable", at: "spec.failoverGroupRef"},
	{name: "database name", base: minimalDatabase, change: []edit{set("spec.databaseName", "orders2")}, want: "spec.databaseName is immutable", at: "spec.databaseName"},
	{name: "database clients", base: minimalDatabase, change: []edit{set("spec.deploymentClients", "[{namespace: app, serviceAccount: deploy}]")}},
}

// TestAdmissionOnUpdate creates a valid object, changes it, and checks the
// update is refused with a message naming the immutable field (or accepted).
func TestAdmissionOnUpdate(t *testing.T) {
	ns := cp.NewNamespace(t)
	dc := dynamicClient(t)
	for i, tc := range updateCases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want != "" && tc.at == "" {
				t.Fatal("a refused update case must say where the refusal points (at)")
			}
			obj := object(t, tc.base)
			obj.SetName(fmt.Sprintf("u%d", i))
			apply(t, obj, tc.initial...)
			stored, err := create(t, dc, ns, obj)
			if err != nil {
				t.Fatalf("initial create refused: %v", err)
			}
			apply(t, stored, tc.change...)
			_, err = update(t, dc, ns, stored)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("update refused, want accepted: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("update accepted, want refused with %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("update refused with\n  %v\nwant the message to contain %q", err, tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.at+": "):
				t.Fatalf("update refused with\n  %v\nwant the refusal to point at %s", err, tc.at)
			case err != nil:
				t.Logf("refused as expected: %v", err)
			}
		})
	}
}

// TestStatusWritesAreNotBlockedBySpecRules makes sure rules that guard spec
// edits do not refuse the operator's status writes on a valid object.
func TestStatusWritesAreNotBlockedBySpecRules(t *testing.T) {
	ns := cp.NewNamespace(t)
	dc := dynamicClient(t)
	obj := object(t, minimalGroup)
	apply(t, obj, set("spec.backup", "{profiles: ["+s3Profile+"]}"),
		set("spec.initFromBackup", "{source: {backupRef: {name: b}}, pointInTime: {stopTime: '2026-04-15T09:30:00Z', archiveProfileName: nightly}}"),
		set("spec.restoreInPlace", "{confirm: '2026-04-15T09:30:00Z', source: {backupRef: {name: b}}}"))
	stored, err := create(t, dc, ns, obj)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, stored, set("status", "{activeSite: iad, topologyGeneration: 1, restoreInPlace: {phase: Succeeded, confirmTokenUsed: '2026-04-15T09:30:00Z'}}"))
	if _, err := dc.Resource(resources["MysqlFailoverGroup"]).Namespace(ns).UpdateStatus(ctx(t), stored, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("status write refused: %v", err)
	}
}
