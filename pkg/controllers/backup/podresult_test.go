package backup

import (
	"errors"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/backup/stamp"
	"github.com/shipstream/bloodraven/pkg/backup/upload"
)

// goodResult is what the upload step of attempt reports for testBackup on
// the claim "backups".
func goodResult(attempt int) upload.Result {
	s := goodStamp()
	return upload.Result{Backup: s.Backup, Group: s.Group, Attempt: attempt, Encryption: stamp.EncryptionNone,
		Stamp: upload.StampRef{Location: "pvc://backups/" + upload.StampKey("nightly-1", "0a4c902a-c1b5-4714-a4d6-092fc1f2c71a", attempt),
			SHA256: strings.Repeat("5e", 32)},
		GTIDExecuted: s.GTIDExecuted, BinlogPosition: s.BinlogPosition, SizeBytes: 42, Files: 2}
}

// resultPod is a pod of the Job in phase, of attempt, whose upload
// container terminated with message.
func resultPod(phase corev1.PodPhase, attempt, message string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly-1-pod-" + attempt, Annotations: map[string]string{batchv1.JobIndexFailureCountAnnotation: attempt}},
		Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerUpload,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: message}}}}},
	}
}

func encodeResult(t *testing.T, r upload.Result) string {
	t.Helper()
	data, err := upload.EncodeResult(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// pvcOutcome is Outcome for a claimed PVC backup whose Job completed, with
// what PodResult made of pods.
func pvcOutcome(t *testing.T, pods ...corev1.Pod) (Verdict, error) {
	t.Helper()
	in := input(claimProfile)
	in.Backup.Status = Decide(in).Status
	in.Backup.Status.Phase = v1alpha1.PhaseRunning
	in.Job = ownJob(batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue})
	n, c, err := PodResult(pods)
	in.Attempt = n
	return Outcome(in, c, err)
}

// TestPVCResultConfirmsTheBackup: the succeeded pod's result (a failed
// earlier attempt's log tail beside it) confirms the backup at that
// attempt's location, and status carries what the result says.
func TestPVCResultConfirmsTheBackup(t *testing.T) {
	v, retry := pvcOutcome(t, resultPod(corev1.PodFailed, "0", "encrypt-upload: failed: boom"), resultPod(corev1.PodSucceeded, "1", encodeResult(t, goodResult(1))))
	st := v.Status
	want := "pvc://backups/nightly-1-0a4c902a-c1b5-4714-a4d6-092fc1f2c71a/1"
	if retry != nil || st.Phase != v1alpha1.PhaseSucceeded || st.ArtifactStorage.Location != want || st.SizeBytes != 42 ||
		st.GTIDExecuted != goodStamp().GTIDExecuted || *st.BinlogPosition != (v1alpha1.BinlogPosition{File: "binlog.000002", Position: 157}) ||
		!strings.Contains(ready(t, st).Message, "2 files, 42 bytes") {
		t.Fatalf("status %+v (%v)", st, retry)
	}
}

// TestPVCResultRefused: a result that is not this attempt's, not whole, or
// gone never makes a backup Succeeded, and each says why.
func TestPVCResultRefused(t *testing.T) {
	result := func(mutate func(*upload.Result)) corev1.Pod {
		r := goodResult(0)
		mutate(&r)
		return resultPod(corev1.PodSucceeded, "0", encodeResult(t, r))
	}
	whole := encodeResult(t, goodResult(0))
	for _, c := range []struct {
		name   string
		pods   []corev1.Pod
		reason string
		msg    string
	}{
		{"another backup", []corev1.Pod{result(func(r *upload.Result) { r.Backup.UID = "old-uid" })}, ReasonStampInvalid, "names backup nightly-1 (uid old-uid), not this one"},
		{"another group", []corev1.Pod{result(func(r *upload.Result) { r.Group.Name = "payments" })}, ReasonStampInvalid, "names group payments"},
		{"another attempt than the pod's", []corev1.Pod{result(func(r *upload.Result) {
			*r = goodResult(1)
		})}, ReasonStampInvalid, "is of attempt 1, not 0"},
		{"encryption", []corev1.Pod{result(func(r *upload.Result) { r.Encryption = "AES-256-GCM" })}, ReasonStampInvalid, "says encryption AES-256-GCM"},
		{"another claim", []corev1.Pod{result(func(r *upload.Result) {
			r.Stamp.Location = strings.Replace(r.Stamp.Location, "pvc://backups/", "pvc://other/", 1)
		})},
			ReasonStampInvalid, "names the stamp pvc://other/"},
		{"cut short", []corev1.Pod{resultPod(corev1.PodSucceeded, "0", whole[:len(whole)-20])}, ReasonStampInvalid, "is not a backup result"},
		{"a log line", []corev1.Pod{resultPod(corev1.PodSucceeded, "0", "stored 3 files")}, ReasonStampInvalid, `"stored 3 files"`},
		{"no message", []corev1.Pod{resultPod(corev1.PodSucceeded, "0", "")}, ReasonResultUnavailable, "container encrypt-upload of pod nightly-1-pod-0 has no termination message"},
		{"pods gone", nil, ReasonResultUnavailable, "the Job's succeeded pod is gone"},
		{"only a failed pod", []corev1.Pod{resultPod(corev1.PodFailed, "0", whole)}, ReasonResultUnavailable, "succeeded pod is gone"},
	} {
		v, retry := pvcOutcome(t, c.pods...)
		if retry != nil {
			t.Errorf("%s: retried (%v)", c.name, retry)
			continue
		}
		if r := ready(t, v.Status); v.Status.Phase != v1alpha1.PhaseFailed || r.Reason != c.reason || !strings.Contains(r.Message, c.msg) {
			t.Errorf("%s: %s %s: %s", c.name, v.Status.Phase, r.Reason, r.Message)
		}
	}
	if _, _, err := PodResult(nil); !errors.Is(err, ErrResultUnavailable) {
		t.Errorf("no pods: %v", err)
	}
}
