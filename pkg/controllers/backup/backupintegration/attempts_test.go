package backupintegration

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/backup/stamp"
	"github.com/shipstream/bloodraven/pkg/backup/upload"
)

// A pod that fails mid-upload leaves dump files and no stamp in its
// attempt's location; the Job controller's retry pod counts that failure
// (its job-index-failure-count annotation), so its upload step stores in
// attempt 1's location and succeeds, attempt 0's partial output is left
// exactly as it was, and the backup records attempt 1.
func TestRetriedPodStoresInItsOwnAttempt(t *testing.T) {
	e := newEnv(t)
	e.group([]v1alpha1.BackupProfile{e.profile("nightly")}) // backoffLimit: the default 2
	b := e.backup("nightly-1", "nightly")
	b = e.wait(b.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	j := e.job(b.Name)
	root := "prod/" + e.ns + "/"
	first := e.pod(j)
	if got := first.Annotations[batchv1.JobIndexFailureCountAnnotation]; got != "0" {
		t.Fatalf("the first pod's failure count %q, want 0", got)
	}
	// Pod 0: the real upload step runs, and the pod dies after the dump
	// files and before the stamp (its stamp is taken away, as if the pod
	// was killed just before writing it).
	if _, err := e.runPodAs(first, false); err != nil {
		t.Fatalf("pod 0's upload: %v", err)
	}
	stamp0 := root + upload.StampKey(b.Name, string(b.UID), 0)
	if err := e.s3.Client().RemoveObject(context.Background(), bucket, stamp0, minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	e.finish(first, 1, "killed mid-upload")
	partial := e.contents(root + upload.AttemptDir(b.Name, string(b.UID), 0))
	if len(partial) < 4 {
		t.Fatalf("attempt 0 holds %d objects", len(partial))
	}

	// Pod 1: the Job controller's retry.
	second := e.pod(j)
	if second.Name == first.Name || second.Annotations[batchv1.JobIndexFailureCountAnnotation] != "1" {
		t.Fatalf("retry pod %s has failure count %q, want 1", second.Name, second.Annotations[batchv1.JobIndexFailureCountAnnotation])
	}
	if out, err := e.runPodAs(second, true); err != nil {
		t.Fatalf("the retry's upload: %v\n%s", err, out)
	}
	b = e.wait(b.Name, v1alpha1.PhaseSucceeded, "", v1alpha1.ReasonSucceeded, "")
	dir1 := root + upload.AttemptDir(b.Name, string(b.UID), 1)
	if want := "s3://" + bucket + "/" + strings.TrimSuffix(dir1, "/"); b.Status.ArtifactStorage == nil || b.Status.ArtifactStorage.Location != want {
		t.Errorf("artifactStorage %+v, want %s", b.Status.ArtifactStorage, want)
	}
	var s stamp.Stamp
	if err := json.Unmarshal(e.object(dir1+stamp.Name), &s); err != nil || s.Attempt != 1 {
		t.Fatalf("attempt 1's stamp: attempt %d, %v", s.Attempt, err)
	}
	if after := e.contents(root + upload.AttemptDir(b.Name, string(b.UID), 0)); !maps.Equal(after, partial) {
		t.Errorf("attempt 0's partial output changed:\nbefore %v\nafter  %v", partial, after)
	}
	var size int64
	for k, n := range e.objects(dir1) {
		if !strings.HasSuffix(k, stamp.Name) {
			size += n
		}
	}
	if b.Status.SizeBytes != size {
		t.Errorf("sizeBytes %d; attempt 1 holds %d bytes of dump files", b.Status.SizeBytes, size)
	}
}

// With the Job's pods gone (deleted, or collected before a restarted
// operator looked), the controller reads each attempt location the Job
// could have used and takes the one valid stamp: here attempt 1's, after
// pod 0 failed in the dump step and wrote nothing.
func TestTheSucceededAttemptIsFoundWithoutItsPods(t *testing.T) {
	e := newEnv(t)
	e.group([]v1alpha1.BackupProfile{e.profile("nightly")})
	b := e.backup("nightly-1", "nightly")
	b = e.wait(b.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	j := e.job(b.Name)
	e.finishSteps(e.pod(j), 2, 0, "mysqlsh: dump failed")
	second := e.pod(j)
	e.stop() // no controller sees the Job complete while its pods exist
	if out, err := e.runPodAs(second, true); err != nil {
		t.Fatalf("the retry's upload: %v\n%s", err, out)
	}
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + j.Name}
	deadline := time.Now().Add(30 * time.Second)
	for {
		cur, err := e.ke.Kube.BatchV1().Jobs(e.ns).Get(ctx, j.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cur.Status.Succeeded == 1 && len(cur.Status.UncountedTerminatedPods.Succeeded)+len(cur.Status.UncountedTerminatedPods.Failed) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Job %s never counted its succeeded pod: %+v", j.Name, cur.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := e.ke.Kube.CoreV1().Pods(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}, sel); err != nil {
		t.Fatal(err)
	}
	for {
		pods, err := e.ke.Kube.CoreV1().Pods(e.ns).List(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pods of Job %s are still there", len(pods.Items), j.Name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.start()
	b = e.wait(b.Name, v1alpha1.PhaseSucceeded, "", v1alpha1.ReasonSucceeded, "")
	want := "s3://" + bucket + "/prod/" + e.ns + "/" + strings.TrimSuffix(upload.AttemptDir(b.Name, string(b.UID), 1), "/")
	if b.Status.ArtifactStorage == nil || b.Status.ArtifactStorage.Location != want {
		t.Errorf("artifactStorage %+v, want %s", b.Status.ArtifactStorage, want)
	}
}

// contents maps each object under prefix to the SHA-256 of its bytes.
func (e *env) contents(prefix string) map[string][32]byte {
	e.t.Helper()
	out := map[string][32]byte{}
	for k := range e.objects(prefix) {
		out[k] = sha256.Sum256(e.object(k))
	}
	return out
}
