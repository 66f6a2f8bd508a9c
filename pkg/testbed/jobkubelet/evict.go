package jobkubelet

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// evictEvery is how often emptyDir usage is measured; the kubelet's
// eviction manager measures every housekeeping interval (10 s), the test
// bed sooner so that a test waits less.
const evictEvery = 200 * time.Millisecond

// evictor watches the pod's emptyDir volumes with a sizeLimit and, when
// one holds more, kills the pod's processes as the kubelet's eviction
// manager does; reason is then the pod's Evicted message.
type evictor struct {
	mu     sync.Mutex
	reason string
}

func (e *evictor) evicted() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reason
}

// watch measures until ctx ends; on a volume over its limit it records the
// kubelet's message and calls kill.
func (e *evictor) watch(ctx context.Context, p *corev1.Pod, vols map[string]string, kill func()) {
	t := time.NewTicker(evictEvery)
	defer t.Stop()
	for {
		for _, v := range p.Spec.Volumes {
			if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.IsZero() {
				continue
			}
			if du(vols[v.Name]) > v.EmptyDir.SizeLimit.Value() {
				e.mu.Lock()
				// The kubelet's eviction message for an emptyDir over its limit.
				e.reason = fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", v.Name, v.EmptyDir.SizeLimit.String())
				e.mu.Unlock()
				kill()
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// du is the bytes the files under dir hold.
func du(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}
