package backup

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/shipstream/bloodraven/pkg/backup/upload"
)

// PodResult is the result a PVC profile's Job reported: the attempt of its
// succeeded pod and the upload container's termination message, decoded
// strictly. The operator mounts no claims, so this message, written by the
// step after it verified the stamp on the claim (upload.Result), is what it
// confirms the backup by. A succeeded pod gone, or a container without a
// message, is ErrResultUnavailable; a message that is not a whole result
// (a log tail, a result cut short) is ErrStampInvalid.
func PodResult(pods []corev1.Pod) (attempt int, c Confirmed, err error) {
	p := succeededPod(pods)
	if p == nil {
		return 0, Confirmed{}, fmt.Errorf("%w: the Job's succeeded pod is gone, and with it the result its upload step reported", ErrResultUnavailable)
	}
	attempt, ok := PodAttempt(p)
	if !ok {
		return 0, Confirmed{}, fmt.Errorf("%w: pod %s has no attempt number (annotation %s)", ErrStampInvalid, p.Name, attemptAnnotation)
	}
	msg, ok := uploadMessage(p)
	if !ok {
		return 0, Confirmed{}, fmt.Errorf("%w: container %s of pod %s has no termination message", ErrResultUnavailable, ContainerUpload, p.Name)
	}
	r, err := upload.DecodeResult([]byte(msg))
	if err != nil {
		return 0, Confirmed{}, fmt.Errorf("%w: the termination message of container %s of pod %s is not a backup result (%v): %q",
			ErrStampInvalid, ContainerUpload, p.Name, err, clip(msg, 200))
	}
	return attempt, FromResult(r), nil
}

func succeededPod(pods []corev1.Pod) *corev1.Pod {
	for i := range pods {
		if pods[i].Status.Phase == corev1.PodSucceeded {
			return &pods[i]
		}
	}
	return nil
}

// uploadMessage is the upload container's termination message, when it
// terminated with one.
func uploadMessage(p *corev1.Pod) (string, bool) {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == ContainerUpload && s.State.Terminated != nil && strings.TrimSpace(s.State.Terminated.Message) != "" {
			return s.State.Terminated.Message, true
		}
	}
	return "", false
}

// clip bounds a message quoted in a condition.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
