package backup

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/backup/upload"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// Labels of the objects the controller makes for a backup.
const (
	LabelBackup    = "bloodraven.shipstream.io/backup"
	LabelGroup     = "bloodraven.shipstream.io/failover-group"
	labelManagedBy = "app.kubernetes.io/managed-by"
	labelComponent = "app.kubernetes.io/component"
)

// Container names of the backup Job's pod: the dump runs first (an init
// container), the upload after it.
const (
	ContainerDump   = "dump"
	ContainerUpload = "encrypt-upload"
)

// Where the pod mounts what it needs. Secrets are files, never arguments or
// environment values.
const (
	StagingDir     = "/staging"
	DumpDir        = StagingDir + "/dump"
	tmpDir         = "/tmp"
	secretsRoot    = "/var/run/secrets/bloodraven"
	MySQLSecretDir = secretsRoot + "/mysql"
	TLSDir         = secretsRoot + "/tls"
	S3SecretDir    = secretsRoot + "/s3"
	PassphraseDir  = secretsRoot + "/passphrase"
	PassphraseKey  = "passphrase"
	StoreMountPath = "/backup-store"
	// ResultPath is the upload container's terminationMessagePath (the
	// kubelet's default), where a PVC profile's step writes its result.
	ResultPath       = corev1.TerminationMessagePathDefault
	dumpScriptHelper = "mysqlsh"
)

// AttemptEnv is the upload container's variable holding the pod's attempt
// (its job-index-failure-count annotation, through the downward API).
const AttemptEnv = "BLOODRAVEN_BACKUP_ATTEMPT"

// Keys of the Secrets the Job mounts.
const (
	keyUsername       = "username"
	keyPassword       = "password"
	keyS3AccessKey    = "AWS_ACCESS_KEY_ID"
	keyS3SecretKey    = "AWS_SECRET_ACCESS_KEY"
	keyCACert         = "ca.crt"
	defaultPassphrase = "passphrase"
)

// DumpScript runs mysqlsh with the Job's arguments ("$@"), the account's
// user name read from its mounted file and its password on standard input
// (--passwords-from-stdin): neither is in the pod's spec, and the password
// is in no process's arguments.
const DumpScript = `exec mysqlsh --user="$(cat ` + MySQLSecretDir + `/` + keyUsername + `)" "$@" < ` + MySQLSecretDir + `/` + keyPassword

// JobName is the backup's Job: the backup's name (shortened when needed)
// and a digest of its UID, so that a backup recreated under the same name
// never finds its predecessor's Job, and the name is known before the Job
// exists.
func JobName(b *v1alpha1.MysqlBackup) string { return suffixed(b.Name, b, 63) }

// KeySnapshotName is the Secret holding the passphrase an encrypted backup
// was written with, copied from the profile's Secret when the Job starts:
// rotating the profile's Secret later never strands this backup.
func KeySnapshotName(b *v1alpha1.MysqlBackup) string {
	return suffixed("mysql-dump-key-"+b.Name, b, 253)
}

func suffixed(base string, b *v1alpha1.MysqlBackup, max int) string {
	sum := sha256.Sum256([]byte(b.UID))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	if len(base)+len(suffix) > max {
		base = strings.TrimRight(base[:max-len(suffix)], "-.")
	}
	return base + suffix
}

// secretProblem names the first Secret the Job would mount that is missing
// a key it needs, or "".
func secretProblem(get SecretGetter, g *v1alpha1.MysqlFailoverGroup, p *v1alpha1.BackupProfile) string {
	type need struct {
		what, name string
		keys       []string
	}
	needs := []need{{"the backup account (spec.credentials.backupSecretName)", g.Spec.Credentials.BackupSecretName, []string{keyUsername, keyPassword}}}
	if g.Spec.TLS != nil {
		needs = append(needs, need{"the TLS Secret (spec.tls.secretName)", g.Spec.TLS.SecretName, []string{keyCACert}})
	}
	if s3 := p.Storage.S3; p.Storage.Type == v1alpha1.BackupStorageS3 && s3 != nil {
		if s3.CredentialsSecretName == "" {
			return fmt.Sprintf("profile %s has no storage.s3.credentialsSecretName: the upload step needs static S3 credentials", p.Name)
		}
		needs = append(needs, need{"the S3 credentials of profile " + p.Name, s3.CredentialsSecretName, []string{keyS3AccessKey, keyS3SecretKey}})
	}
	if e := p.Encryption; e != nil {
		needs = append(needs, need{"the passphrase of profile " + p.Name, e.PassphraseSecretKeyRef.Name, []string{passphraseKey(e)}})
	}
	for _, n := range needs {
		if n.name == "" {
			return n.what + " is not set"
		}
		data, ok := get(n.name)
		if !ok {
			return fmt.Sprintf("Secret %s (%s) does not exist", n.name, n.what)
		}
		for _, k := range n.keys {
			if len(strings.TrimSpace(string(data[k]))) == 0 {
				return fmt.Sprintf("Secret %s (%s) has no key %s, or it is empty", n.name, n.what, k)
			}
		}
	}
	return ""
}

func passphraseKey(e *v1alpha1.BackupEncryptionSpec) string {
	if e.PassphraseSecretKeyRef.Key != "" {
		return e.PassphraseSecretKeyRef.Key
	}
	return defaultPassphrase
}

// JobInput is what the Job is rendered from. Backup carries the stored
// claim (jobName, sourceSite, encryption).
type JobInput struct {
	Backup  *v1alpha1.MysqlBackup
	Group   *v1alpha1.MysqlFailoverGroup
	Profile *v1alpha1.BackupProfile
	// Image is the Bloodraven image whose entrypoint runs encrypt-upload.
	Image string
}

// RenderJob is the backup Job.
func RenderJob(in JobInput) (*batchv1.Job, error) {
	b, g, p := in.Backup, in.Group, in.Profile
	spec := g.Spec.Backup
	if spec == nil {
		spec = &v1alpha1.BackupSpec{}
	}
	podSC, err := mergeJSON(defaultPodSecurityContext(), spec.PodSecurityContext)
	if err != nil {
		return nil, fmt.Errorf("spec.backup.podSecurityContext: %w", err)
	}
	containerSC, err := mergeJSON(defaultContainerSecurityContext(), spec.ContainerSecurityContext)
	if err != nil {
		return nil, fmt.Errorf("spec.backup.containerSecurityContext: %w", err)
	}
	args, err := uploadArgs(in)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{LabelBackup: b.Name, LabelGroup: g.Name, labelManagedBy: "bloodraven", labelComponent: "backup"}
	annotations := map[string]string{}
	if v, ok := b.Annotations[AnnotationTriggeredBy]; ok {
		annotations[AnnotationTriggeredBy] = v
	}
	dump := corev1.Container{
		Name: ContainerDump, Image: image(g),
		Command:         []string{"/bin/sh", "-c", DumpScript, dumpScriptHelper},
		Args:            MysqlshArgs(g, p, b.Status.SourceSite, b.Namespace),
		Env:             []corev1.EnvVar{{Name: "MYSQLSH_USER_CONFIG_HOME", Value: tmpDir + "/mysqlsh"}},
		SecurityContext: containerSC,
		VolumeMounts: []corev1.VolumeMount{
			{Name: "staging", MountPath: StagingDir}, {Name: "tmp", MountPath: tmpDir},
			{Name: "mysql-account", MountPath: MySQLSecretDir, ReadOnly: true},
		},
	}
	if spec.Resources != nil {
		dump.Resources = *spec.Resources
	}
	if g.Spec.TLS != nil {
		dump.VolumeMounts = append(dump.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: TLSDir, ReadOnly: true})
	}
	up := corev1.Container{
		Name: ContainerUpload, Image: in.Image, Args: args.Argv(),
		// The pod's attempt, which the container's args reference as
		// $(AttemptEnv): the Job controller numbers each pod of the index
		// by the failures before it, so a retry stores in its own location.
		Env: []corev1.EnvVar{{Name: AttemptEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.annotations['" + batchv1.JobIndexFailureCountAnnotation + "']"}}}},
		SecurityContext: containerSC.DeepCopy(),
		VolumeMounts:    []corev1.VolumeMount{{Name: "staging", MountPath: StagingDir, ReadOnly: true}, {Name: "tmp", MountPath: tmpDir}},
		// A PVC profile's step writes its result here (--result-file); a
		// failed step's message is its log's tail, which says why.
		TerminationMessagePath:   ResultPath,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	vols := []corev1.Volume{
		{Name: "staging", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: spec.StagingVolumeSizeLimit}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(tmpSizeLimit)}}},
		secretVolume("mysql-account", g.Spec.Credentials.BackupSecretName, map[string]string{keyUsername: keyUsername, keyPassword: keyPassword}),
	}
	if g.Spec.TLS != nil {
		vols = append(vols, secretVolume("tls", g.Spec.TLS.SecretName, map[string]string{keyCACert: keyCACert}))
	}
	switch {
	case p.Storage.Type == v1alpha1.BackupStorageS3:
		vols = append(vols, secretVolume("s3-credentials", p.Storage.S3.CredentialsSecretName,
			map[string]string{keyS3AccessKey: upload.AccessKeyFile, keyS3SecretKey: upload.SecretKeyFile}))
		up.VolumeMounts = append(up.VolumeMounts, corev1.VolumeMount{Name: "s3-credentials", MountPath: S3SecretDir, ReadOnly: true})
	default:
		vols = append(vols, corev1.Volume{Name: "store", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimName(p, g.Name)}}})
		up.VolumeMounts = append(up.VolumeMounts, corev1.VolumeMount{Name: "store", MountPath: StoreMountPath})
	}
	if b.Status.Encryption != nil {
		vols = append(vols, secretVolume("passphrase", b.Status.Encryption.KeySecretName, map[string]string{PassphraseKey: PassphraseKey}))
		up.VolumeMounts = append(up.VolumeMounts, corev1.VolumeMount{Name: "passphrase", MountPath: PassphraseDir, ReadOnly: true})
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: b.Status.JobName, Namespace: b.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(b, v1alpha1.SchemeGroupVersion.WithKind("MysqlBackup"))},
		},
		// One index, retried up to backoffLimit times: an Indexed Job with
		// backoffLimitPerIndex, because only then does the Job controller
		// count each pod's earlier failures in its annotation.
		Spec: batchv1.JobSpec{
			CompletionMode:        ptr.To(batchv1.IndexedCompletion),
			Completions:           ptr.To(int32(1)),
			Parallelism:           ptr.To(int32(1)),
			BackoffLimitPerIndex:  ptr.To(ptr.Deref(spec.BackoffLimit, 2)),
			ActiveDeadlineSeconds: ptr.To(ptr.Deref(spec.ActiveDeadlineSeconds, 7200)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					ImagePullSecrets:             spec.ImagePullSecrets,
					SecurityContext:              podSC,
					InitContainers:               []corev1.Container{dump},
					Containers:                   []corev1.Container{up},
					Volumes:                      vols,
				},
			},
		},
	}
	return job, nil
}

// tmpSizeLimit bounds the scratch directory mysqlsh keeps its own files in.
var tmpSizeLimit = mustQuantity("64Mi")

// MysqlshArgs is MySQL Shell's command line after the user name: the
// connection to the source site's internal Service, then util
// dump-instance into the staging directory with the profile's dump options.
func MysqlshArgs(g *v1alpha1.MysqlFailoverGroup, p *v1alpha1.BackupProfile, site, namespace string) []string {
	key := siteaddr.SiteKey{Namespace: namespace, Group: g.Name, Site: site}
	args := []string{"--host=" + key.InternalServiceFQDN(), "--port=" + strconv.Itoa(siteaddr.MySQLPort), "--passwords-from-stdin"}
	if g.Spec.TLS != nil {
		args = append(args, "--ssl-mode=VERIFY_IDENTITY", "--ssl-ca="+TLSDir+"/"+keyCACert)
	} else {
		// Without spec.tls no client of the product checks which server
		// answers (docs/tls.md): TLS when mysqld offers it, and the
		// server's RSA key for caching_sha2_password otherwise, as the
		// replication receiver does (GET_SOURCE_PUBLIC_KEY = 1).
		args = append(args, "--ssl-mode=PREFERRED", "--get-server-public-key")
	}
	args = append(args, "--", "util", "dump-instance", DumpDir)
	d := p.Dump
	if d == nil {
		d = &v1alpha1.DumpOptions{}
	}
	args = append(args, "--threads="+strconv.Itoa(int(ptr.Deref(d.Threads, 4))))
	if d.BytesPerChunk != "" {
		args = append(args, "--bytesPerChunk="+d.BytesPerChunk)
	}
	compression := string(d.Compression)
	if compression == "" {
		compression = "zstd"
	}
	args = append(args, "--compression="+compression)
	if len(d.IncludeSchemas) > 0 {
		args = append(args, "--includeSchemas="+listArg(d.IncludeSchemas))
	}
	if len(d.ExcludeSchemas) > 0 {
		args = append(args, "--excludeSchemas="+listArg(d.ExcludeSchemas))
	}
	args = append(args, "--consistent="+strconv.FormatBool(ptr.Deref(d.Consistent, true)), "--users=false")
	if d.OCIMDS {
		args = append(args, "--ocimds=true")
	}
	return args
}

// listArg writes a list option as a JSON array, which MySQL Shell's
// command line reads for list options and which keeps a schema name with a
// comma whole.
func listArg(xs []string) string {
	b, _ := json.Marshal(xs)
	return string(b)
}

// uploadArgs is the upload step's configuration.
func uploadArgs(in JobInput) (upload.Args, error) {
	b, g, p := in.Backup, in.Group, in.Profile
	a := upload.Args{
		StagingDir: DumpDir, StoreType: string(p.Storage.Type),
		BackupName: b.Name, BackupUID: string(b.UID), GroupName: g.Name, GroupUID: string(g.UID), AttemptEnv: AttemptEnv,
	}
	switch {
	case p.Storage.Type == v1alpha1.BackupStorageS3 && p.Storage.S3 != nil:
		s3 := p.Storage.S3
		a.S3Endpoint, a.S3Region, a.S3Bucket, a.S3Prefix, a.S3CredentialsDir = s3.EndpointURL, s3.Region, s3.Bucket, s3.Prefix, S3SecretDir
		if s3.ForcePathStyle {
			a.S3BucketLookup = upload.S3BucketLookupPath
		}
	case ClaimName(p, g.Name) != "":
		// The operator cannot mount the claim to read the stamp: the step
		// reports it through the termination message (result.go).
		a.PVCClaim, a.PVCMountPath, a.ResultFile = ClaimName(p, g.Name), StoreMountPath, ResultPath
	default:
		return a, fmt.Errorf("profile %s: storage of type %s has no usable location", p.Name, p.Storage.Type)
	}
	if b.Status.Encryption != nil {
		a.PassphraseFile = PassphraseDir + "/" + PassphraseKey
	}
	return a, a.Validate()
}

func secretVolume(name, secret string, items map[string]string) corev1.Volume {
	var ks []corev1.KeyToPath
	for _, k := range sortedKeys(items) {
		ks = append(ks, corev1.KeyToPath{Key: k, Path: items[k]})
	}
	// Readable by the pod's group (fsGroup) and no one else.
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, Items: ks, DefaultMode: ptr.To(int32(0o440))}}}
}

// The hardened defaults spec.backup's security contexts are merged onto:
// MySQL's user (the backup image's mysqlsh runs as it), no privilege
// escalation, no capabilities, a read-only root filesystem (mysqlsh and the
// upload write only the staging and scratch volumes), the runtime's
// seccomp profile.
func defaultPodSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(mysqlUID)), RunAsGroup: ptr.To(int64(mysqlUID)), FSGroup: ptr.To(int64(mysqlUID)),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func defaultContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), Privileged: ptr.To(false),
		Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// mysqlUID is the mysql user of the official MySQL image.
const mysqlUID = 999

// mergeJSON overlays the fields set in override onto def, recursively by
// field: an override that sets runAsUser keeps every other default.
func mergeJSON[T any](def *T, override *T) (*T, error) {
	if override == nil {
		return def, nil
	}
	var base, over map[string]any
	for _, x := range []struct {
		v   *T
		out *map[string]any
	}{{def, &base}, {override, &over}} {
		raw, err := json.Marshal(x.v)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, x.out); err != nil {
			return nil, err
		}
	}
	raw, err := json.Marshal(overlay(base, over))
	if err != nil {
		return nil, err
	}
	out := new(T)
	return out, json.Unmarshal(raw, out)
}

func overlay(base, over map[string]any) map[string]any {
	for k, v := range over {
		if bm, ok := base[k].(map[string]any); ok {
			if om, ok := v.(map[string]any); ok {
				base[k] = overlay(bm, om)
				continue
			}
		}
		base[k] = v
	}
	return base
}
