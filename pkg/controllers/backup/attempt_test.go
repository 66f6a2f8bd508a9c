package backup

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/backup/stamp"
	"github.com/shipstream/bloodraven/pkg/backup/upload"
)

func pod(phase corev1.PodPhase, failures string) corev1.Pod {
	p := corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
	if failures != "" {
		p.Annotations = map[string]string{batchv1.JobIndexFailureCountAnnotation: failures}
	}
	return p
}

func TestSucceededAttempt(t *testing.T) {
	for _, c := range []struct {
		name string
		pods []corev1.Pod
		want int
		ok   bool
	}{
		{"first pod", []corev1.Pod{pod(corev1.PodSucceeded, "0")}, 0, true},
		{"a retry", []corev1.Pod{pod(corev1.PodFailed, "0"), pod(corev1.PodFailed, "1"), pod(corev1.PodSucceeded, "2")}, 2, true},
		{"none succeeded", []corev1.Pod{pod(corev1.PodFailed, "0"), pod(corev1.PodRunning, "1")}, 0, false},
		{"no pods", nil, 0, false},
		{"no annotation", []corev1.Pod{pod(corev1.PodSucceeded, "")}, 0, false},
		{"not a count", []corev1.Pod{pod(corev1.PodSucceeded, "-1")}, 0, false},
	} {
		n, ok := SucceededAttempt(c.pods)
		if n != c.want || ok != c.ok {
			t.Errorf("%s: %d, %v; want %d, %v", c.name, n, ok, c.want, c.ok)
		}
	}
}

// The Job is one index retried per pod, and the upload step's attempt is
// the pod's failure count: the container's args reference the variable
// the downward API fills from that annotation.
func TestJobNumbersEachPodsAttempt(t *testing.T) {
	in := claimed(v1alpha1.PhasePending, nil)
	g := in.Group
	g.Spec.Backup.BackoffLimit = ptr.To(int32(3))
	g.Spec.Backup.Profiles[0].Storage.S3.Prefix = "prod/x"
	j, err := RenderJob(JobInput{Backup: in.Backup, Group: g, Profile: &g.Spec.Backup.Profiles[0], Image: "bloodraven:test"})
	if err != nil {
		t.Fatal(err)
	}
	s := j.Spec
	if ptr.Deref(s.CompletionMode, "") != batchv1.IndexedCompletion || ptr.Deref(s.Completions, 0) != 1 || ptr.Deref(s.Parallelism, 0) != 1 ||
		ptr.Deref(s.BackoffLimitPerIndex, -1) != 3 || s.BackoffLimit != nil {
		t.Fatalf("completionMode %v, completions %v, parallelism %v, backoffLimitPerIndex %v, backoffLimit %v",
			s.CompletionMode, s.Completions, s.Parallelism, s.BackoffLimitPerIndex, s.BackoffLimit)
	}
	up := s.Template.Spec.Containers[0]
	var ref string
	for _, ev := range up.Env {
		if ev.Name == AttemptEnv && ev.ValueFrom != nil && ev.ValueFrom.FieldRef != nil {
			ref = ev.ValueFrom.FieldRef.FieldPath
		}
	}
	if ref != "metadata.annotations['batch.kubernetes.io/job-index-failure-count']" {
		t.Fatalf("%s comes from %q", AttemptEnv, ref)
	}
	a, err := upload.Parse(expandAttempt(up.Args, "2"))
	if err != nil || a.Attempt != 2 {
		t.Fatalf("the args with the attempt expanded: %+v, %v", a, err)
	}
}

// A retry's stamp confirms the backup at its own location; a stamp of
// another attempt than the succeeded pod's does not.
func TestOutcomeOfARetry(t *testing.T) {
	complete := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}
	in := claimed(v1alpha1.PhaseRunning, ownJob(complete))
	in.Attempt = 1
	s := goodStamp()
	s.Attempt = 1
	v, retry := Outcome(in, FromStamp(s), nil)
	want := "s3://b/prod/x/nightly-1-0a4c902a-c1b5-4714-a4d6-092fc1f2c71a/1"
	if retry != nil || v.Status.Phase != v1alpha1.PhaseSucceeded || v.Status.ArtifactStorage.Location != want ||
		v.Status.ArtifactStorage.Type != v1alpha1.BackupStorageS3 || !strings.Contains(ready(t, v.Status).Message, want) {
		t.Fatalf("retry: %+v / %v", v.Status, retry)
	}
	s.Attempt = 0
	v, _ = Outcome(in, FromStamp(s), nil)
	if r := ready(t, v.Status); v.Status.Phase != v1alpha1.PhaseFailed || r.Reason != ReasonStampInvalid || !strings.Contains(r.Message, "is of attempt 0, not 1") {
		t.Fatalf("attempt 0's stamp for attempt 1: %+v", r)
	}
	if in.Backup.Status.ArtifactStorage.Location != strings.TrimSuffix(want, "1")+"0" {
		t.Fatalf("the claim records %s", in.Backup.Status.ArtifactStorage.Location)
	}
}

// With the Job's pods gone, the attempt is the one location holding a
// stamp; two stamps, no stamp, and an unanswering store each end
// differently.
func TestOnlyStampedAttempt(t *testing.T) {
	unreachable := errors.New("dial tcp: connection refused")
	missing := fmt.Errorf("%w: does not exist", ErrStampInvalid)
	reads := func(results ...error) func(int) (stamp.Stamp, error) {
		return func(n int) (stamp.Stamp, error) {
			if results[n] != nil {
				return stamp.Stamp{}, results[n]
			}
			return stamp.Stamp{Attempt: n}, nil
		}
	}
	if n, s, err := onlyStampedAttempt(2, reads(missing, nil, missing)); err != nil || n != 1 || s.Attempt != 1 {
		t.Fatalf("one stamp: %d, %+v, %v", n, s, err)
	}
	_, _, err := onlyStampedAttempt(2, reads(nil, missing, nil))
	if !errors.Is(err, ErrStampInvalid) || !strings.Contains(err.Error(), "attempts [0 2] each hold a stamp") {
		t.Fatalf("two stamps: %v", err)
	}
	if _, _, err := onlyStampedAttempt(1, reads(missing, missing)); !errors.Is(err, missing) {
		t.Fatalf("no stamp: %v", err)
	}
	if _, _, err := onlyStampedAttempt(2, reads(missing, unreachable, nil)); !errors.Is(err, unreachable) || errors.Is(err, ErrStampInvalid) {
		t.Fatalf("a store that does not answer is retried, not failed: %v", err)
	}
}

// forcePathStyle reaches the upload step as --s3-bucket-lookup=path, and
// only when it is set (objstore.S3Config.PathStyle).
func TestJobPassesForcePathStyle(t *testing.T) {
	for _, force := range []bool{true, false} {
		in := claimed(v1alpha1.PhasePending, nil)
		g := in.Group
		g.Spec.Backup.Profiles[0].Storage.S3.ForcePathStyle = force
		g.Spec.Backup.Profiles[0].Storage.S3.Prefix = "prod/x"
		j, err := RenderJob(JobInput{Backup: in.Backup, Group: g, Profile: &g.Spec.Backup.Profiles[0], Image: "bloodraven:test"})
		if err != nil {
			t.Fatal(err)
		}
		a, err := upload.Parse(expandAttempt(j.Spec.Template.Spec.Containers[0].Args, "0"))
		if err != nil {
			t.Fatal(err)
		}
		if got := a.S3BucketLookup == upload.S3BucketLookupPath; got != force {
			t.Errorf("forcePathStyle %v: --s3-bucket-lookup=%q", force, a.S3BucketLookup)
		}
	}
}
