package jobkubelet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/testbed/kubeenv"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{ControllerManager: true}, &cp)
}

const secretValue = "s3cr3t-value\n"

// bed is a namespace with a node, a Secret and a running Kubelet that
// syncs the namespace's pods; out is a host directory the containers
// write what they saw into (not a volume, so never rewritten).
type bed struct {
	t    *testing.T
	ke   *kubeenv.Env
	node string
	out  string
	k    *Kubelet
}

func newBed(t *testing.T) *bed {
	t.Helper()
	ke := kubeenv.New(t, cp)
	b := &bed{t: t, ke: ke, node: "jobkubelet-" + ke.Namespace, out: t.TempDir()}
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: b.node}}
	if _, err := ke.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ke.Kube.CoreV1().Nodes().Delete(context.Background(), b.node, metav1.DeleteOptions{}) })
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ke.Namespace}, StringData: map[string]string{"password": secretValue}}
	if _, err := ke.Kube.CoreV1().Secrets(ke.Namespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k := New(Config{Kube: ke.Kube, Root: t.TempDir(), Programs: map[string]string{"/bin/sh": "/bin/sh"}})
	b.k = k
	runCtx, cancel := context.WithCancel(context.Background())
	go func() {
		for runCtx.Err() == nil {
			pods, err := ke.Kube.CoreV1().Pods(ke.Namespace).List(runCtx, metav1.ListOptions{})
			if err == nil {
				k.Sync(runCtx, pods.Items)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); k.Wait() })
	return b
}

// job is an Indexed Job (one completion, backoffLimitPerIndex as given)
// whose init container stages a file in an emptyDir from a Secret volume
// and whose container runs script with the staged file under /staging and
// ATTEMPT set from the pod's failure-count annotation.
func (b *bed) job(name string, perIndex int32, initScript, script string) *batchv1.Job {
	b.t.Helper()
	indexed := batchv1.IndexedCompletion
	sh := func(n, s string, mounts ...corev1.VolumeMount) corev1.Container {
		return corev1.Container{Name: n, Image: "busybox:1", Command: []string{"/bin/sh", "-c", s, n}, VolumeMounts: mounts,
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			Env: []corev1.EnvVar{
				{Name: "ATTEMPT", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['batch.kubernetes.io/job-index-failure-count']"}}},
				{Name: "OUT", Value: b.out}, {Name: "WHERE", Value: "$(OUT)/attempt-$(ATTEMPT)"},
			}}
	}
	main := sh("main", script, corev1.VolumeMount{Name: "staging", MountPath: "/staging", ReadOnly: true})
	main.Args = []string{"$(ATTEMPT)", "/staging/copied"}
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.ke.Namespace},
		Spec: batchv1.JobSpec{
			Completions: ptr(int32(1)), Parallelism: ptr(int32(1)), CompletionMode: &indexed, BackoffLimitPerIndex: &perIndex,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, NodeName: b.node,
				InitContainers: []corev1.Container{sh("stage", initScript,
					corev1.VolumeMount{Name: "staging", MountPath: "/staging"}, corev1.VolumeMount{Name: "creds", MountPath: "/secrets/creds", ReadOnly: true})},
				Containers: []corev1.Container{main},
				Volumes: []corev1.Volume{
					{Name: "staging", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds",
						Items: []corev1.KeyToPath{{Key: "password", Path: "pw"}}}}},
				},
			}},
		},
	}
	j, err := b.ke.Kube.BatchV1().Jobs(b.ke.Namespace).Create(context.Background(), j, metav1.CreateOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	return j
}

func ptr[T any](v T) *T { return &v }

// waitJob waits for the real Job controller to end the Job with condition.
func (b *bed) waitJob(name string, cond batchv1.JobConditionType) *batchv1.Job {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		j, err := b.ke.Kube.BatchV1().Jobs(b.ke.Namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			b.t.Fatal(err)
		}
		for _, c := range j.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				if c.Type != cond {
					b.t.Fatalf("Job %s ended %s (%s: %s), want %s", name, c.Type, c.Reason, c.Message, cond)
				}
				return j
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.t.Fatalf("Job %s did not end %s in 60s", name, cond)
	return nil
}

func (b *bed) pods(job string) []corev1.Pod {
	b.t.Helper()
	list, err := b.ke.Kube.CoreV1().Pods(b.ke.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
	if err != nil {
		b.t.Fatal(err)
	}
	return list.Items
}

func (b *bed) read(name string) string {
	b.t.Helper()
	data, err := os.ReadFile(filepath.Join(b.out, name))
	if err != nil {
		b.t.Fatal(err)
	}
	return string(data)
}

// A pod runs as a kubelet runs it: the init container first, reading the
// Secret volume's file, then the container, which sees the init
// container's output in the shared emptyDir; the real Job controller
// completes the Job from the reported status.
func TestJobPodRunsToCompletion(t *testing.T) {
	b := newBed(t)
	b.job("ok", 0, `cat /secrets/creds/pw > /staging/copied && ls -a /secrets/creds > "$OUT/listing"`,
		`cp "$2" "$WHERE" && echo "$1" > "$OUT/arg"`)
	b.waitJob("ok", batchv1.JobComplete)
	if got := b.read("attempt-0"); got != secretValue {
		t.Errorf("the container saw %q through the init container's emptyDir, the Secret holds %q", got, secretValue)
	}
	if got := b.read("arg"); got != "0\n" {
		t.Errorf("$(ATTEMPT) in args expanded to %q, the pod's failure count is 0", got)
	}
	if got := b.read("listing"); !strings.Contains(got, "..data") || !strings.Contains(got, "pw") {
		t.Errorf("the Secret volume is not in the kubelet's layout: %q", got)
	}
	ps := b.pods("ok")
	if len(ps) != 1 || ps[0].Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pods %+v", ps)
	}
	for _, s := range append(ps[0].Status.InitContainerStatuses, ps[0].Status.ContainerStatuses...) {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 || s.State.Terminated.Reason != "Completed" {
			t.Errorf("container %s: %+v", s.Name, s.State)
		}
	}
}

// A failing container fails its pod with its exit code and log as the
// message; the Job controller makes a new pod whose failure-count
// annotation (through the downward API and $(VAR)) is 1, and that one
// succeeds.
func TestFailedPodIsRetriedWithItsFailureCount(t *testing.T) {
	b := newBed(t)
	b.job("retry", 1, `cat /secrets/creds/pw > /staging/copied`,
		`if [ "$1" = 0 ]; then echo "first attempt fails" >&2; exit 3; fi; cp "$2" "$WHERE"`)
	b.waitJob("retry", batchv1.JobComplete)
	if got := b.read("attempt-1"); got != secretValue {
		t.Errorf("attempt 1 copied %q", got)
	}
	if _, err := os.Stat(filepath.Join(b.out, "attempt-0")); !os.IsNotExist(err) {
		t.Errorf("attempt 0 wrote its file: %v", err)
	}
	var failed, succeeded int
	for _, p := range b.pods("retry") {
		st := p.Status.ContainerStatuses
		switch p.Status.Phase {
		case corev1.PodFailed:
			failed++
			if len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 3 ||
				!strings.Contains(st[0].State.Terminated.Message, "first attempt fails") {
				t.Errorf("failed pod's container status %+v", st)
			}
		case corev1.PodSucceeded:
			succeeded++
		}
	}
	if failed != 1 || succeeded != 1 {
		t.Errorf("%d failed and %d succeeded pods, want 1 and 1", failed, succeeded)
	}
}

// A failed init container fails the pod without running the container,
// and the Job fails.
func TestFailedInitContainerFailsThePod(t *testing.T) {
	b := newBed(t)
	b.job("initfail", 0, `exit 7`, `touch "$WHERE"`)
	b.waitJob("initfail", batchv1.JobFailed)
	ps := b.pods("initfail")
	if len(ps) != 1 || ps[0].Status.Phase != corev1.PodFailed {
		t.Fatalf("pods %+v", ps)
	}
	init, main := ps[0].Status.InitContainerStatuses, ps[0].Status.ContainerStatuses
	if len(init) != 1 || init[0].State.Terminated == nil || init[0].State.Terminated.ExitCode != 7 {
		t.Errorf("init container status %+v", init)
	}
	if len(main) != 1 || main[0].State.Waiting == nil {
		t.Errorf("the container ran after its init container failed: %+v", main)
	}
	if _, err := os.Stat(filepath.Join(b.out, "attempt-0")); !os.IsNotExist(err) {
		t.Errorf("the container ran: %v", err)
	}
}

// A container that fills an emptyDir past its sizeLimit has its pod
// evicted as the kubelet's eviction manager does: its processes killed,
// the pod Failed with reason Evicted and the kubelet's message, and the
// Job controller fails the Job.
func TestEmptyDirOverItsSizeLimitEvictsThePod(t *testing.T) {
	b := newBed(t)
	limit := resource.MustParse("1Mi")
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "full", Namespace: b.ke.Namespace},
		Spec: batchv1.JobSpec{BackoffLimit: ptr(int32(0)), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, NodeName: b.node,
			Containers: []corev1.Container{{Name: "fill", Image: "busybox:1", Command: []string{"/bin/sh", "-c",
				`head -c 2097152 /dev/zero > /staging/big && sleep 30 && touch "$0/not-killed"`, b.out},
				VolumeMounts: []corev1.VolumeMount{{Name: "staging", MountPath: "/staging"}}}},
			Volumes: []corev1.Volume{{Name: "staging", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}}},
		}}},
	}
	if _, err := b.ke.Kube.BatchV1().Jobs(b.ke.Namespace).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b.waitJob("full", batchv1.JobFailed)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the Job failed after %s: the container was not killed at the limit", d)
	}
	ps := b.pods("full")
	if len(ps) != 1 || ps[0].Status.Phase != corev1.PodFailed || ps[0].Status.Reason != "Evicted" ||
		ps[0].Status.Message != `Usage of EmptyDir volume "staging" exceeds the limit "1Mi". ` {
		t.Fatalf("pods %+v", ps)
	}
	if st := ps[0].Status.ContainerStatuses; len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 137 {
		t.Errorf("container status %+v, want terminated by SIGKILL (137)", st)
	}
	if _, err := os.Stat(filepath.Join(b.out, "not-killed")); !os.IsNotExist(err) {
		t.Errorf("the container ran on past the limit: %v", err)
	}
}
