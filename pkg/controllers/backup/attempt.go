package backup

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/backup/stamp"
)

// PodAttempt is the attempt a pod of the backup's Job stored under: the
// failure count the Job controller wrote on it (the number its upload step
// got through AttemptEnv).
func PodAttempt(p *corev1.Pod) (int, bool) {
	n, err := strconv.Atoi(p.Annotations[attemptAnnotation])
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// SucceededAttempt is the attempt of the Job's succeeded pod, if one of
// pods is.
func SucceededAttempt(pods []corev1.Pod) (int, bool) {
	if p := succeededPod(pods); p != nil {
		return PodAttempt(p)
	}
	return 0, false
}

const attemptAnnotation = batchv1.JobIndexFailureCountAnnotation

// readResult reads what the attempt that succeeded stored. On a claim, the
// succeeded pod's reported result (PodResult). On S3, the stamp: the
// succeeded pod names the attempt; when its pods are gone, every attempt
// location the Job could have used is read, and exactly one must hold a
// stamp.
func (c *Controller) readResult(ctx context.Context, in Input, p *v1alpha1.BackupProfile) (Input, Confirmed, error) {
	b := in.Backup
	pods, err := c.kube.CoreV1().Pods(b.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{batchv1.JobNameLabel: in.Job.Name}).String()})
	if err != nil {
		return in, Confirmed{}, err
	}
	if p.Storage.Type == v1alpha1.BackupStoragePVC {
		n, conf, err := PodResult(pods.Items)
		in.Attempt = n
		return in, conf, err
	}
	target := func(n int) Target {
		return Target{Namespace: b.Namespace, Profile: p, Secret: in.Secret, StampKey: stampKey(b, n)}
	}
	if n, ok := SucceededAttempt(pods.Items); ok {
		in.Attempt = n
		s, err := c.opts.Results.ReadStamp(ctx, target(n))
		return in, FromStamp(s), err
	}
	n, s, err := onlyStampedAttempt(int(ptr.Deref(in.Job.Spec.BackoffLimitPerIndex, 0)), func(n int) (stamp.Stamp, error) {
		return c.opts.Results.ReadStamp(ctx, target(n))
	})
	if err == nil {
		in.Attempt = n
	}
	return in, FromStamp(s), err
}

// onlyStampedAttempt finds the attempt that succeeded when the Job's pods
// are gone: of attempts 0 to last, exactly one may hold a stamp. None is
// the first ErrStampInvalid; two or more is ErrStampInvalid naming them (a
// pod the Job controller counted as failed may have finished its upload
// after all, and nothing tells which stamp the Job's success belongs to).
// A store that does not answer is returned as is, to be retried.
func onlyStampedAttempt(last int, read func(attempt int) (stamp.Stamp, error)) (int, stamp.Stamp, error) {
	var found []int
	var stamps []stamp.Stamp
	var first error
	for n := 0; n <= last; n++ {
		s, err := read(n)
		switch {
		case err == nil:
			found, stamps = append(found, n), append(stamps, s)
		case !errors.Is(err, ErrStampInvalid):
			return 0, stamp.Stamp{}, err
		case first == nil:
			first = err
		}
	}
	switch len(found) {
	case 0:
		return 0, stamp.Stamp{}, first
	case 1:
		return found[0], stamps[0], nil
	}
	return 0, stamp.Stamp{}, fmt.Errorf("%w: the Job's pods are gone and attempts %v each hold a stamp, so which one succeeded is unknown", ErrStampInvalid, found)
}
