package jobkubelet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// claim creates a PersistentVolumeClaim in the bed's namespace.
func (b *bed) claim(name string) {
	b.t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.ke.Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := b.ke.Kube.CoreV1().PersistentVolumeClaims(b.ke.Namespace).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		b.t.Fatal(err)
	}
}

// shJob is a one-pod Job running script in a shell with volumes, its
// container mounting mounts, and OUT set to the bed's output directory.
func (b *bed) shJob(name, script string, c func(*corev1.Container), volumes []corev1.Volume, mounts ...corev1.VolumeMount) {
	b.t.Helper()
	ctr := corev1.Container{Name: "main", Image: "busybox:1", Command: []string{"/bin/sh", "-c", script}, VolumeMounts: mounts,
		Env: []corev1.EnvVar{{Name: "OUT", Value: b.out}}}
	if c != nil {
		c(&ctr)
	}
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.ke.Namespace},
		Spec: batchv1.JobSpec{BackoffLimit: ptr(int32(0)), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, NodeName: b.node, Containers: []corev1.Container{ctr}, Volumes: volumes,
		}}},
	}
	if _, err := b.ke.Kube.BatchV1().Jobs(b.ke.Namespace).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		b.t.Fatal(err)
	}
}

func claimVolume(claim string) []corev1.Volume {
	return []corev1.Volume{{Name: "store", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
}

// mountInfoLists reports whether this process's mountinfo has a mount at
// path or below it.
func mountInfoLists(t *testing.T, path string) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], path) {
			return true
		}
	}
	return false
}

// A claim volume is a mount point at its path for the container that
// mounts it (as the kubelet's bind mount is), holding the claim's data: a
// second pod on the same claim sees the first one's file, the test reads it
// in the claim's directory, and no mount is left in this process's
// namespace.
func TestClaimVolumeIsTheClaimsDataMounted(t *testing.T) {
	b := newBed(t)
	b.claim("backups")
	mount := corev1.VolumeMount{Name: "store", MountPath: "/backup-store"}
	b.shJob("write", `grep -F " /backup-store " /proc/self/mountinfo > "$OUT/mountinfo" && echo first > /backup-store/f && echo done`, nil, claimVolume("backups"), mount)
	b.waitJob("write", batchv1.JobComplete)
	if got := b.read("mountinfo"); got == "" {
		t.Fatal("the claim's volume path is not a mount point in the container")
	}
	b.shJob("read", `cat /backup-store/f > "$OUT/seen"`, nil, claimVolume("backups"), mount)
	b.waitJob("read", batchv1.JobComplete)
	if got := b.read("seen"); got != "first\n" {
		t.Errorf("the second pod on the claim read %q, the first wrote %q", got, "first\n")
	}
	data, err := os.ReadFile(filepath.Join(b.k.ClaimDir(b.ke.Namespace, "backups"), "f"))
	if err != nil || string(data) != "first\n" {
		t.Errorf("the claim's directory holds %q (%v)", data, err)
	}
	if mountInfoLists(t, b.k.cfg.Root) {
		t.Error("a bind mount of a claim is left in the test's mount namespace")
	}
	// A container of the pod that does not mount the claim sees a plain
	// directory, not the claim's data.
	b.shJob("nomount", `if grep -qF " /backup-store " /proc/self/mountinfo; then echo mounted > "$OUT/nomount"; else echo plain > "$OUT/nomount"; fi`, nil, claimVolume("backups"))
	b.waitJob("nomount", batchv1.JobComplete)
	if got := b.read("nomount"); got != "plain\n" {
		t.Errorf("a container that does not mount the claim saw %q", got)
	}
}

// A pod whose claim does not exist is never started: it fails with the
// kubelet's message, and the Job fails.
func TestMissingClaimFailsThePod(t *testing.T) {
	b := newBed(t)
	b.shJob("noclaim", `touch "$OUT/ran"`, nil, claimVolume("nope"), corev1.VolumeMount{Name: "store", MountPath: "/backup-store"})
	b.waitJob("noclaim", batchv1.JobFailed)
	ps := b.pods("noclaim")
	if len(ps) != 1 || ps[0].Status.Phase != corev1.PodFailed || !strings.Contains(ps[0].Status.Message, `persistentvolumeclaim "nope" not found`) {
		t.Fatalf("pods %+v", ps)
	}
	if _, err := os.Stat(filepath.Join(b.out, "ran")); !os.IsNotExist(err) {
		t.Errorf("the container ran: %v", err)
	}
}

// The termination-message file becomes the container's message as the
// kubelet reads it: the file's content (at most 4096 bytes) wins over the
// log, at the default path and at one the container names; the log's tail
// is used only under FallbackToLogsOnError, when the file is empty and the
// container failed.
func TestTerminationMessage(t *testing.T) {
	b := newBed(t)
	fallback := func(c *corev1.Container) { c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError }
	long := strings.Repeat("r", 5000)
	cases := []struct {
		name, script string
		c            func(*corev1.Container)
		cond         batchv1.JobConditionType
		want         string
	}{
		{"file", `echo a log line; printf result > /dev/termination-log`, nil, batchv1.JobComplete, "result"},
		{"own-path", `printf mine > /run/msg/result`, func(c *corev1.Container) { c.TerminationMessagePath = "/run/msg/result" }, batchv1.JobComplete, "mine"},
		{"file-wins", `echo the log; printf why > /dev/termination-log; exit 3`, fallback, batchv1.JobFailed, "why"},
		{"log-on-error", `echo the log says why; exit 3`, fallback, batchv1.JobFailed, "the log says why\n"},
		{"no-log-on-success", `echo the log`, fallback, batchv1.JobComplete, ""},
		{"no-log-without-fallback", `echo the log; exit 3`, nil, batchv1.JobFailed, ""},
		{"truncated", `printf ` + long + ` > /dev/termination-log`, nil, batchv1.JobComplete, long[:4096]},
	}
	for _, c := range cases {
		b.shJob(c.name, c.script, c.c, nil)
	}
	for _, c := range cases {
		b.waitJob(c.name, c.cond)
		ps := b.pods(c.name)
		if len(ps) != 1 || len(ps[0].Status.ContainerStatuses) != 1 || ps[0].Status.ContainerStatuses[0].State.Terminated == nil {
			t.Fatalf("%s: pods %+v", c.name, ps)
		}
		if got := ps[0].Status.ContainerStatuses[0].State.Terminated.Message; got != c.want {
			t.Errorf("%s: message %q, want %q", c.name, clipped(got), clipped(c.want))
		}
	}
}

func clipped(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
