// Package jobkubelet plays the kubelet for run-to-completion pods (a Job's
// pods) in the test bed: it lays out the pod's volumes as per-pod
// directories (emptyDir, Secret files in the kubelet's layout, and
// persistentVolumeClaim volumes whose claim must exist: one persistent
// directory per claim under Root, bind-mounted onto the volume's path in a
// private mount namespace of each container that mounts it, so the path is
// a mount point as in a real pod), resolves each container's environment,
// expands $(VAR) references in its command and arguments as the kubelet
// does, rewrites container paths (mounts, the terminationMessagePath) to
// those directories and files, runs the init containers in order and then
// the containers, each as a local process mapped from its image or command,
// evicts a pod whose emptyDir outgrows its sizeLimit, and reports exit
// codes, termination messages and the pod's phase in its status so that the
// real Job controller does the rest. Claim volumes need root (mount) and
// util-linux's unshare. Development tooling only.
package jobkubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Config says how containers map to local programs.
type Config struct {
	Kube kubernetes.Interface
	// Root holds one directory per pod (its volumes, deleted when the pod
	// ends), the containers' logs (kept, logs/<pod>/<container>.log) and
	// each claim's data (kept, ClaimDir).
	Root string
	// Images maps an image (its name without tag or digest) to the local
	// binary that is its entrypoint, for containers without a command.
	Images map[string]string
	// Programs maps a container's executable to a local one: an absolute
	// container path ("/bin/sh") is the command itself; a bare name
	// ("mysqlsh") is put on the container's PATH.
	Programs map[string]string
	// Network maps a host and port a container dials (a Service name) to
	// the loopback address that stands for it; ok false leaves it as given.
	Network func(host string, port int) (string, int, bool)
}

// Kubelet runs pods, each once, in its own goroutine.
type Kubelet struct {
	cfg Config
	mu  sync.Mutex
	// running are the pods started and not ended, by UID, with the cancel
	// that kills their processes.
	running map[types.UID]context.CancelFunc
	done    map[types.UID]bool
	wg      sync.WaitGroup
}

// New makes a Kubelet.
func New(cfg Config) *Kubelet {
	return &Kubelet{cfg: cfg, running: map[types.UID]context.CancelFunc{}, done: map[types.UID]bool{}}
}

// Sync starts every bound, unfinished pod of pods not started yet, and
// stops the processes of a started pod that is being deleted or is gone.
func (k *Kubelet) Sync(ctx context.Context, pods []corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	present := map[types.UID]bool{}
	for i := range pods {
		p := pods[i].DeepCopy()
		present[p.UID] = true
		if cancel, ok := k.running[p.UID]; ok && p.DeletionTimestamp != nil {
			cancel()
		}
		if k.done[p.UID] || k.running[p.UID] != nil || !startable(p) {
			continue
		}
		pctx, cancel := context.WithCancel(ctx)
		k.running[p.UID] = cancel
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			k.run(pctx, p)
			k.mu.Lock()
			delete(k.running, p.UID)
			k.done[p.UID] = true
			k.mu.Unlock()
			cancel()
		}()
	}
	for uid, cancel := range k.running {
		if !present[uid] {
			cancel()
		}
	}
}

// Wait waits for every started pod's processes to end (after ctx of Sync
// ended or the pods were deleted).
func (k *Kubelet) Wait() { k.wg.Wait() }

func startable(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.DeletionTimestamp == nil &&
		p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// RunPod runs one pod to its end and reports it (for tests that drive a
// pod themselves).
func (k *Kubelet) RunPod(ctx context.Context, p *corev1.Pod) error { return k.run(ctx, p) }

func (k *Kubelet) run(ctx context.Context, p *corev1.Pod) error {
	dir := filepath.Join(k.cfg.Root, string(p.UID))
	defer os.RemoveAll(dir) // the volumes: Secret files and the staging data
	logDir := filepath.Join(k.cfg.Root, "logs", p.Name)
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return err
	}
	start := metav1.Now()
	if err := k.report(ctx, p, func(st *corev1.PodStatus) { running(p, st, start) }); err != nil {
		return err
	}
	vols, err := k.layout(ctx, p, dir)
	if err != nil {
		return k.report(ctx, p, func(st *corev1.PodStatus) { failedToStart(p, st, start, "CreateContainerConfigError", err.Error()) })
	}
	runCtx, kill := context.WithCancel(ctx)
	defer kill()
	var ev evictor
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); ev.watch(watchCtx, p, vols, kill) }()
	inits, mains := k.runAll(runCtx, p, vols, dir, logDir)
	stopWatch()
	<-watched
	end := metav1.Now()
	return k.report(context.WithoutCancel(ctx), p, func(st *corev1.PodStatus) {
		finished(p, st, start, end, inits, mains)
		if msg := ev.evicted(); msg != "" {
			st.Phase, st.Reason, st.Message = corev1.PodFailed, "Evicted", msg
		}
	})
}

// runAll runs the init containers in order, each only after the one
// before exited 0, then the containers.
func (k *Kubelet) runAll(ctx context.Context, p *corev1.Pod, vols map[string]string, dir, logDir string) (inits, mains []corev1.ContainerStatus) {
	for _, c := range p.Spec.InitContainers {
		s := k.runContainer(ctx, p, c, vols, dir, logDir)
		inits = append(inits, s)
		if s.State.Terminated.ExitCode != 0 {
			return inits, nil
		}
	}
	return inits, k.runMains(ctx, p, vols, dir, logDir)
}

// runMains runs the pod's containers side by side, as a kubelet does.
func (k *Kubelet) runMains(ctx context.Context, p *corev1.Pod, vols map[string]string, dir, logDir string) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, len(p.Spec.Containers))
	var wg sync.WaitGroup
	for i, c := range p.Spec.Containers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = k.runContainer(ctx, p, c, vols, dir, logDir)
		}()
	}
	wg.Wait()
	return out
}

func allZero(ss []corev1.ContainerStatus) bool {
	for _, s := range ss {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			return false
		}
	}
	return true
}

// report writes the pod's status, retried on a conflict (the Job
// controller updates its pods too). A pod that is gone is no error.
func (k *Kubelet) report(ctx context.Context, p *corev1.Pod, set func(*corev1.PodStatus)) error {
	for range 10 {
		cur, err := k.cfg.Kube.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if cur.UID != p.UID {
			return nil
		}
		set(&cur.Status)
		_, err = k.cfg.Kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return errors.New("pod status: too many conflicts")
}

func wrap(what string, err error) error { return fmt.Errorf("%s: %w", what, err) }
