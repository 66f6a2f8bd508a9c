package backupintegration

import (
	"context"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/backup/upload"
	"github.com/shipstream/bloodraven/pkg/controllers/backup"
)

// The Job as the API server stores it: the profile's limits, deadline,
// retries and pull secrets; hardened security contexts with the group's
// override merged on; a capped staging volume; the owner reference; and no
// value of any Secret of the namespace anywhere in a command, an argument
// or an environment variable.
func TestJobSpec(t *testing.T) {
	e := newEnv(t)
	limits := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	staging := resource.MustParse("20Gi")
	g := e.group([]v1alpha1.BackupProfile{e.profile("nightly", encrypted, func(p *v1alpha1.BackupProfile) {
		p.Dump = &v1alpha1.DumpOptions{Threads: ptr.To(int32(8)), BytesPerChunk: "128M", Compression: "gzip",
			IncludeSchemas: []string{"shop", "odd,name"}, ExcludeSchemas: []string{"scratch"}, Consistent: ptr.To(true)}
	})}, func(g *v1alpha1.MysqlFailoverGroup) {
		b := g.Spec.Backup
		b.Image = "registry.example.com/mysql/community-server:9.7.1"
		b.Resources, b.StagingVolumeSizeLimit = &limits, &staging
		b.ActiveDeadlineSeconds, b.BackoffLimit = ptr.To(int64(900)), ptr.To(int32(0))
		b.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-creds"}}
		b.PodSecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(27))}
	})
	bk := e.backup("nightly-1", "nightly")
	bk = e.wait(bk.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	j := e.job(bk.Name)

	if ref := metav1.GetControllerOf(j); ref == nil || ref.UID != bk.UID || ref.Kind != "MysqlBackup" {
		t.Errorf("owner %+v, want the MysqlBackup", ref)
	}
	if j.Name != bk.Status.JobName || j.Name != backup.JobName(bk) {
		t.Errorf("Job %s, status.jobName %s", j.Name, bk.Status.JobName)
	}
	if j.Annotations[backup.AnnotationTriggeredBy] != "test "+t.Name() {
		t.Errorf("triggered-by on the Job: %q", j.Annotations[backup.AnnotationTriggeredBy])
	}
	// One index, its retries counted per pod (the attempt each stores under).
	if ptr.Deref(j.Spec.ActiveDeadlineSeconds, 0) != 900 || ptr.Deref(j.Spec.BackoffLimitPerIndex, -1) != 0 ||
		ptr.Deref(j.Spec.CompletionMode, "") != batchv1.IndexedCompletion || ptr.Deref(j.Spec.Completions, 0) != 1 || ptr.Deref(j.Spec.Parallelism, 0) != 1 {
		t.Errorf("activeDeadlineSeconds %v, backoffLimitPerIndex %v, completionMode %v, completions %v, parallelism %v",
			j.Spec.ActiveDeadlineSeconds, j.Spec.BackoffLimitPerIndex, j.Spec.CompletionMode, j.Spec.Completions, j.Spec.Parallelism)
	}
	ps := j.Spec.Template.Spec
	if ps.RestartPolicy != corev1.RestartPolicyNever || len(ps.ImagePullSecrets) != 1 || ps.ImagePullSecrets[0].Name != "registry-creds" {
		t.Errorf("pod: restartPolicy %s, pull secrets %v", ps.RestartPolicy, ps.ImagePullSecrets)
	}
	if ptr.Deref(ps.AutomountServiceAccountToken, true) {
		t.Error("the pod mounts a ServiceAccount token it never uses")
	}
	psc := ps.SecurityContext
	if psc == nil || ptr.Deref(psc.RunAsUser, 0) != 27 || !ptr.Deref(psc.RunAsNonRoot, false) || ptr.Deref(psc.FSGroup, 0) != 999 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v: want the override's runAsUser 27 merged onto the hardened defaults", psc)
	}
	for _, v := range ps.Volumes {
		if v.Name == "staging" && (v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Cmp(staging) != 0) {
			t.Errorf("staging volume %+v, want an emptyDir capped at 20Gi", v.VolumeSource)
		}
	}
	if len(ps.InitContainers) != 1 || len(ps.Containers) != 1 {
		t.Fatalf("%d init containers, %d containers", len(ps.InitContainers), len(ps.Containers))
	}
	dump, up := ps.InitContainers[0], ps.Containers[0]
	for _, c := range []corev1.Container{dump, up} {
		sc := c.SecurityContext
		if sc == nil || ptr.Deref(sc.AllowPrivilegeEscalation, true) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || !ptr.Deref(sc.RunAsNonRoot, false) ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || ptr.Deref(sc.Privileged, true) {
			t.Errorf("container %s security context %+v is not hardened", c.Name, sc)
		}
	}
	if dump.Image != "registry.example.com/mysql/community-server:9.7.1" || bk.Status.MySQLImage != dump.Image {
		t.Errorf("dump image %s, status.mysqlImage %s", dump.Image, bk.Status.MySQLImage)
	}
	if !equalResources(dump.Resources, limits) {
		t.Errorf("dump resources %+v, want the group's spec.backup.resources", dump.Resources)
	}
	if up.Image != uploadImage {
		t.Errorf("upload image %s", up.Image)
	}

	// The dump step: MySQL Shell's own command line.
	if !slices.Equal(dump.Command, []string{"/bin/sh", "-c", backup.DumpScript, "mysqlsh"}) {
		t.Errorf("dump command %q", dump.Command)
	}
	wantArgs := []string{"--host=orders-pdx-internal." + e.ns + ".svc", "--port=3306", "--passwords-from-stdin", "--ssl-mode=PREFERRED", "--get-server-public-key",
		"--", "util", "dump-instance", "/staging/dump", "--threads=8", "--bytesPerChunk=128M", "--compression=gzip",
		`--includeSchemas=["shop","odd,name"]`, `--excludeSchemas=["scratch"]`, "--consistent=true", "--users=false"}
	if !slices.Equal(dump.Args, wantArgs) {
		t.Errorf("mysqlsh args\n got %q\nwant %q", dump.Args, wantArgs)
	}
	// The upload step: exactly upload.Args' command line, its attempt a
	// $(VAR) of the pod's failure count, which parses back once expanded in
	// the Job controller's first pod (attempt 0).
	pod := e.pod(j)
	a, err := upload.Parse(expandedArgs(pod, pod.Spec.Containers[0]))
	if err != nil {
		t.Fatalf("upload.Parse of the container's args: %v", err)
	}
	want := upload.Args{StagingDir: "/staging/dump", StoreType: "S3", S3Endpoint: e.s3.Endpoint(), S3Region: "us-east-1", S3Bucket: bucket,
		S3Prefix: "prod/" + e.ns, S3CredentialsDir: backup.S3SecretDir, S3BucketLookup: upload.S3BucketLookupPath, PassphraseFile: backup.PassphraseDir + "/" + backup.PassphraseKey,
		BackupName: bk.Name, BackupUID: string(bk.UID), GroupName: g.Name, GroupUID: string(g.UID)}
	argv := want
	argv.AttemptEnv = backup.AttemptEnv
	if a != want || !slices.Equal(up.Args, argv.Argv()) {
		t.Errorf("upload args\n got %+v\nwant %+v", a, want)
	}

	// No Secret value of the namespace in any command, argument or
	// environment variable, and no environment variable from a Secret.
	secrets, err := e.ke.Kube.CoreV1().Secrets(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, s := range secrets.Items {
		for _, v := range s.Data {
			if v := strings.TrimSpace(string(v)); len(v) >= 6 {
				values = append(values, v)
			}
		}
	}
	if len(values) < 5 {
		t.Fatalf("only %d Secret values to look for", len(values))
	}
	for _, c := range []corev1.Container{dump, up} {
		var texts []string
		texts = append(append(texts, c.Command...), c.Args...)
		for _, ev := range c.Env {
			texts = append(texts, ev.Value)
			if ev.ValueFrom != nil && ev.ValueFrom.SecretKeyRef != nil {
				t.Errorf("container %s takes %s from Secret %s", c.Name, ev.Name, ev.ValueFrom.SecretKeyRef.Name)
			}
		}
		if len(c.EnvFrom) > 0 {
			t.Errorf("container %s has envFrom %+v", c.Name, c.EnvFrom)
		}
		for _, txt := range texts {
			for _, v := range values {
				if strings.Contains(txt, v) {
					t.Errorf("container %s carries a Secret value in %q", c.Name, txt)
				}
			}
		}
	}
	// The Secrets it does mount are files, read-only, with the key snapshot
	// (not the profile's live Secret) for the passphrase.
	mounted := map[string]bool{}
	for _, v := range ps.Volumes {
		if v.Secret != nil {
			mounted[v.Secret.SecretName] = true
			if ptr.Deref(v.Secret.DefaultMode, 0o644)&0o007 != 0 {
				t.Errorf("Secret volume %s is readable by others (mode %o)", v.Name, *v.Secret.DefaultMode)
			}
		}
	}
	if !mounted[backupSecret] || !mounted[s3Secret] || !mounted[bk.Status.Encryption.KeySecretName] || mounted[passSecret] {
		t.Errorf("mounted Secrets %v", mounted)
	}
}

func equalResources(a, b corev1.ResourceRequirements) bool {
	eq := func(x, y corev1.ResourceList) bool {
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || v.Cmp(w) != 0 {
				return false
			}
		}
		return true
	}
	return eq(a.Requests, b.Requests) && eq(a.Limits, b.Limits)
}
