package playground

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/render"
	"github.com/shipstream/bloodraven/pkg/testbed/jobkubelet"
)

// NodeAgent plays the kubelet for the group's MySQL pods on the fake (kwok)
// nodes: a bound pod gets its site's simulated mysqld and a real sidecar
// process, a deleted pod loses them (the simulator is killed; its data
// directory is on the pod's volume, so the next pod's mysqld recovers from
// it), and the pod's Ready condition follows the sidecar's /health. It also binds each Pending claim of the group to a
// fresh PersistentVolume, standing in for a storage provisioner.
type NodeAgent struct {
	kube      kubernetes.Interface
	namespace string
	group     string
	dir       string
	mapPath   string
	operator  string // host:port of the operator's auxiliary listener
	log       *slog.Logger
	interval  time.Duration

	// sidecarMaps and sidecarOperator, when set (fault proxies), give each
	// site's sidecar its own address map and operator address.
	sidecarMaps     map[string]string
	sidecarOperator map[string]string

	mu    sync.Mutex
	sites map[string]*siteRuntime // by site name

	jobs *jobkubelet.Kubelet // the backup Job pods' kubelet (jobpods.go)
}

// siteRuntime is one site's processes and the pod they belong to.
type siteRuntime struct {
	plan    SitePlan
	sim     *framework.Process
	sidecar *framework.Process
	podUID  types.UID // the pod the processes run for; empty when none
	// held is set by the fault API's crash: the killed simulator stays
	// down until /restart or a new pod (simcontrol.go).
	held bool
	// dataDir is the simulator's data directory on the pod's volume;
	// simControl the private address of its own fault API; simAdmin its
	// administrative interface (admin_address:admin_port), chosen once so
	// that it stays what the sidecar was told across restarts.
	dataDir, simControl, simAdmin string
	// fs is the mysqld container's filesystem of the pod (podfs.go).
	fs    *podFS
	ready bool
	// restarts counts data-plane (re)starts, for the e2e tests.
	starts int
}

// AgentConfig configures a NodeAgent.
type AgentConfig struct {
	Kube      kubernetes.Interface
	Namespace string
	Group     string
	Sites     []SitePlan
	// Dir receives the processes' logs.
	Dir string
	// AddressMapPath is the development site-address map every process reads.
	AddressMapPath string
	// OperatorAuxiliaryAddr is the operator's :8082 listener for sidecars.
	OperatorAuxiliaryAddr string
	Logger                *slog.Logger
}

// NewNodeAgent builds an agent; Run drives it.
func NewNodeAgent(cfg AgentConfig) *NodeAgent {
	a := &NodeAgent{
		kube: cfg.Kube, namespace: cfg.Namespace, group: cfg.Group, dir: cfg.Dir,
		mapPath: cfg.AddressMapPath, operator: cfg.OperatorAuxiliaryAddr,
		log: cfg.Logger, interval: 300 * time.Millisecond, sites: map[string]*siteRuntime{},
	}
	for _, s := range cfg.Sites {
		a.sites[s.Name] = &siteRuntime{plan: s}
	}
	return a
}

// Run syncs pods, claims and processes until ctx ends, then stops every
// process the agent started.
func (a *NodeAgent) Run(ctx context.Context) {
	defer a.stopAll()
	defer a.waitJobPods()
	a.serveControlFronts(ctx)
	t := time.NewTicker(a.interval)
	defer t.Stop()
	var refreshed time.Time
	for {
		if err := a.syncClaims(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("node agent: claims", "err", err.Error())
		}
		if err := a.syncPods(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("node agent: pods", "err", err.Error())
		}
		if err := a.syncJobPods(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("node agent: Job pods", "err", err.Error())
		}
		if time.Since(refreshed) >= volumeRefreshInterval {
			a.refreshVolumes(ctx)
			refreshed = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Starts reports how many times site's data plane was started.
func (a *NodeAgent) Starts(site string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sites[site]; s != nil {
		return s.starts
	}
	return 0
}

// PIDs lists the processes the agent runs now, by name.
func (a *NodeAgent) PIDs() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for _, s := range a.sites {
		for _, p := range []*framework.Process{s.sim, s.sidecar} {
			if p != nil {
				if done, _ := p.Exited(); !done {
					out[p.Name()] = p.PID()
				}
			}
		}
	}
	return out
}

func (a *NodeAgent) selector() string { return render.LabelGroup + "=" + a.group }

func (a *NodeAgent) syncPods(ctx context.Context) error {
	pods, err := a.kube.CoreV1().Pods(a.namespace).List(ctx, metav1.ListOptions{LabelSelector: a.selector()})
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var errs []error
	for i := range pods.Items {
		pod := &pods.Items[i]
		site := a.sites[pod.Labels[render.LabelSite]]
		if site == nil {
			continue
		}
		seen[site.plan.Name] = true
		if err := a.syncPod(ctx, site, pod); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", pod.Name, err))
		}
	}
	// A site whose pod vanished without our seeing its deletion.
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, s := range a.sites {
		if !seen[name] && s.podUID != "" {
			a.stopSiteLocked(s)
		}
	}
	return errors.Join(errs...)
}

func (a *NodeAgent) syncPod(ctx context.Context, s *siteRuntime, pod *corev1.Pod) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if pod.DeletionTimestamp != nil {
		if s.podUID == pod.UID {
			a.stopSiteLocked(s)
		}
		// As the kubelet does once the containers are gone.
		err := a.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptrInt64(0), Preconditions: &metav1.Preconditions{UID: &pod.UID},
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	if pod.Spec.NodeName == "" {
		return nil // not scheduled yet
	}
	if s.podUID != pod.UID {
		if s.podUID != "" {
			a.stopSiteLocked(s)
		}
		if err := a.startSiteLocked(ctx, s, pod); err != nil {
			return err
		}
	} else if err := a.keepRunningLocked(ctx, s, pod); err != nil {
		return err
	}
	s.ready = sidecarHealthy(s.plan.SidecarAddr)
	return a.writeStatus(ctx, pod, s.plan.PodIP, s.ready)
}

// keepRunningLocked restarts a process that exited by itself, as a
// kubelet restarts a container (restartPolicy Always).
func (a *NodeAgent) keepRunningLocked(ctx context.Context, s *siteRuntime, pod *corev1.Pod) error {
	if exitedOrNil(s.sim) && !s.held {
		if err := a.startSimLocked(s); err != nil {
			return err
		}
	}
	if exitedOrNil(s.sidecar) {
		return a.startSidecarLocked(ctx, s, pod)
	}
	return nil
}

func exitedOrNil(p *framework.Process) bool {
	if p == nil {
		return true
	}
	done, _ := p.Exited()
	return done
}

func (a *NodeAgent) startSiteLocked(ctx context.Context, s *siteRuntime, pod *corev1.Pod) error {
	// A new pod's containers start: mysqld recovers from the data
	// directory on the pod's volume.
	if err := a.killSimLocked(s, false); err != nil {
		return err
	}
	s.held, s.dataDir = false, a.podDataDir(pod)
	fs, err := a.preparePodFS(ctx, pod, s.dataDir)
	if err != nil {
		return err
	}
	s.fs = fs
	if err := a.startSimLocked(s); err != nil {
		return err
	}
	if err := a.startSidecarLocked(ctx, s, pod); err != nil {
		return err
	}
	if err := a.declarePortForward(ctx, s, pod); err != nil { // portforward.go
		return err
	}
	s.podUID = pod.UID
	s.starts++
	a.log.Info("node agent: site started for pod", "site", s.plan.Name, "pod", pod.Name, "podUID", string(pod.UID), "node", pod.Spec.NodeName)
	return nil
}

// stopSiteLocked stops the sidecar and kills the simulated mysqld with
// SIGKILL (the pod is gone; its data directory stays, as on the volume).
func (a *NodeAgent) stopSiteLocked(s *siteRuntime) {
	if s.sidecar != nil {
		_ = s.sidecar.Stop(5 * time.Second)
		s.sidecar = nil
	}
	if err := a.killSimLocked(s, false); err != nil {
		a.log.Warn("node agent: kill simulated mysqld", "site", s.plan.Name, "err", err.Error())
	}
	if s.fs != nil { // the container's files, its env file with the root password among them
		if err := os.RemoveAll(filepath.Dir(s.fs.root)); err != nil {
			a.log.Warn("node agent: remove the pod's files", "site", s.plan.Name, "err", err.Error())
		}
		s.fs = nil
	}
	s.podUID, s.dataDir = "", ""
	s.ready = false
	a.log.Info("node agent: site stopped", "site", s.plan.Name)
}

func (a *NodeAgent) stopAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.sites {
		for _, p := range []*framework.Process{s.sidecar, s.sim} {
			if p != nil {
				_ = p.Stop(5 * time.Second)
			}
		}
		s.sidecar, s.sim, s.podUID = nil, nil, ""
	}
}

func (a *NodeAgent) startSimLocked(s *siteRuntime) error {
	if s.fs == nil {
		return errors.New("the pod's mysqld files are not laid out")
	}
	port, err := framework.FreePort()
	if err != nil {
		return err
	}
	s.simControl = fmt.Sprintf("127.0.0.1:%d", port)
	if s.simAdmin == "" {
		admin, err := framework.FreePort()
		if err != nil {
			return err
		}
		s.simAdmin = fmt.Sprintf("127.0.0.1:%d", admin)
	}
	args := []string{
		// What the pod gives mysqld (podfs.go): the image's /etc/my.cnf,
		// which includes the rendered ConfigMap, the mounted Secrets, the
		// data volume, the container's environment and the image's init
		// directory. Everything mysqld is configured with comes from there.
		"-root", s.fs.root, "-defaults-file", "/etc/my.cnf", "-env-file", s.fs.envFile,
		"-initdb-dir", render.InitDBDir,
		// What only the playground needs: host ports in place of the pod's
		// network (port 3306 and my.cnf's admin_address:admin_port), the
		// address map, the fault API, a name for the logs and a fixed
		// server_uuid (auto.cnf's at first boot).
		"-listen", s.plan.MySQLAddr, "-admin-addr", s.simAdmin,
		"-name", s.plan.Name, "-server-uuid", s.plan.ServerUUID, "-site-addresses", a.mapPath,
		"-control-addr", s.simControl, // behind the agent's fault API (simcontrol.go)
		// No supervisor in a container: a clone ends with 3707 and a
		// restart, as the kubelet restarts the mysqld container.
		"-unsupervised",
	}
	p, err := framework.StartProcess("mysqlsim-"+s.plan.Name, "bloodraven-mysqlsim", args, nil,
		filepath.Join(a.dir, "mysqlsim-"+s.plan.Name+".log"))
	if err != nil {
		return err
	}
	s.sim, s.held = p, false
	return waitHTTP("http://"+s.simControl+"/state", 10*time.Second, p)
}

func (a *NodeAgent) startSidecarLocked(ctx context.Context, s *siteRuntime, pod *corev1.Pod) error {
	env, err := a.sidecarEnv(ctx, pod)
	if err != nil {
		return err
	}
	mapPath, operator := a.mapPath, a.operator
	if m := a.sidecarMaps[s.plan.Name]; m != "" {
		mapPath = m
	}
	if o := a.sidecarOperator[s.plan.Name]; o != "" {
		operator = o
	}
	env = append(env,
		"BLOODRAVEN_LISTEN_ADDR="+s.plan.SidecarAddr,
		"BLOODRAVEN_OPERATOR_ENDPOINT="+operator,
		devsitemap.EnvVar+"="+mapPath,
		// The fence (docs/sidecar.md) goes through the simulator's
		// administrative interface; its pid file is the command's default
		// in the data directory, and a simulator the sidecar stops is
		// restarted like a killed container.
		"BLOODRAVEN_MYSQL_ADMIN_ADDR="+s.simAdmin,
		"BLOODRAVEN_MYSQL_PID_FILE="+filepath.Join(s.dataDir, "mysqld.pid"),
	)
	// The pod's TLS Secret volume, shared with mysqld as in a pod, and the
	// sidecars' password Secret: the path on the host of what the sidecar
	// container mounts (podfs.go).
	for _, name := range []string{protocol.EnvMySQLTLSDir, protocol.EnvMySQLPasswordDir} {
		for _, e := range env {
			if strings.HasPrefix(e, name+"=") {
				env = append(env, name+"="+filepath.Join(s.fs.root, strings.TrimPrefix(e, name+"=")))
				break
			}
		}
	}
	p, err := framework.StartProcess("sidecar-"+s.plan.Name, "bloodraven-sidecar", nil, env,
		filepath.Join(a.dir, "sidecar-"+s.plan.Name+".log"))
	if err != nil {
		return err
	}
	s.sidecar = p
	return nil
}

// sidecarEnv resolves the pod's sidecar container environment as a
// kubelet would: literal values, the pod's own fields, Secret keys.
func (a *NodeAgent) sidecarEnv(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == render.ContainerSidecar {
			c = &pod.Spec.Containers[i]
		}
	}
	if c == nil {
		return nil, fmt.Errorf("no %s container", render.ContainerSidecar)
	}
	return a.containerEnv(ctx, pod, c)
}

// containerEnv resolves a container's environment as a kubelet would.
func (a *NodeAgent) containerEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container) ([]string, error) {
	var out []string
	for _, e := range c.Env {
		v, err := a.envValue(ctx, pod, e)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

func (a *NodeAgent) envValue(ctx context.Context, pod *corev1.Pod, e corev1.EnvVar) (string, error) {
	switch {
	case e.ValueFrom == nil:
		return e.Value, nil
	case e.ValueFrom.FieldRef != nil:
		switch e.ValueFrom.FieldRef.FieldPath {
		case "metadata.namespace":
			return pod.Namespace, nil
		case "metadata.name":
			return pod.Name, nil
		case "metadata.uid":
			return string(pod.UID), nil
		}
		return "", fmt.Errorf("field %s is not supported by the playground", e.ValueFrom.FieldRef.FieldPath)
	case e.ValueFrom.SecretKeyRef != nil:
		ref := e.ValueFrom.SecretKeyRef
		sec, err := a.kube.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		v, ok := sec.Data[ref.Key]
		if !ok {
			return "", fmt.Errorf("secret %s has no key %s", ref.Name, ref.Key)
		}
		return string(v), nil
	}
	return "", errors.New("unsupported valueFrom")
}

// writeStatus reports the pod Running with its containers' readiness, only
// when something changed.
func (a *NodeAgent) writeStatus(ctx context.Context, pod *corev1.Pod, ip string, ready bool) error {
	want := podStatus(pod, ip, ready)
	if statusEqual(pod.Status, want) {
		return nil
	}
	p := pod.DeepCopy()
	p.Status = want
	_, err := a.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // the next pass sees the new pod
	}
	return err
}

// podStatus is the status of a running pod. Its IP is a made-up cluster
// address (Endpoints refuse loopback ones); nothing dials it, every process
// finds the site through the address map.
func podStatus(pod *corev1.Pod, ip string, ready bool) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	now := metav1.Now()
	if st.StartTime == nil {
		st.StartTime = &now
	}
	st.Phase = corev1.PodRunning
	st.HostIP, st.PodIP = ip, ip
	st.HostIPs, st.PodIPs = []corev1.HostIP{{IP: ip}}, []corev1.PodIP{{IP: ip}}
	readyStatus := corev1.ConditionFalse
	if ready {
		readyStatus = corev1.ConditionTrue
	}
	setCondition(&st, corev1.PodInitialized, corev1.ConditionTrue, now)
	setCondition(&st, corev1.ContainersReady, readyStatus, now)
	setCondition(&st, corev1.PodReady, readyStatus, now)
	var cs []corev1.ContainerStatus
	for _, c := range pod.Spec.Containers {
		started := st.StartTime
		for _, old := range st.ContainerStatuses {
			if old.Name == c.Name && old.State.Running != nil {
				started = &old.State.Running.StartedAt
			}
		}
		cs = append(cs, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "playground://" + c.Image,
			ContainerID: "playground://" + string(pod.UID) + "/" + c.Name,
			Ready:       ready, Started: ptrBool(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *started}},
		})
	}
	st.ContainerStatuses = cs
	return st
}

func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, s corev1.ConditionStatus, now metav1.Time) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			if st.Conditions[i].Status != s {
				st.Conditions[i].Status, st.Conditions[i].LastTransitionTime = s, now
			}
			return
		}
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now})
}

func statusEqual(a, b corev1.PodStatus) bool {
	if a.Phase != b.Phase || a.PodIP != b.PodIP || len(a.ContainerStatuses) != len(b.ContainerStatuses) {
		return false
	}
	for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		if conditionStatus(a, t) != conditionStatus(b, t) {
			return false
		}
	}
	for i := range a.ContainerStatuses {
		if a.ContainerStatuses[i].Ready != b.ContainerStatuses[i].Ready {
			return false
		}
	}
	return true
}

func conditionStatus(st corev1.PodStatus, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func sidecarHealthy(addr string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + addr + protocol.PathHealth)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitHTTP waits until url answers 200, or p exits.
func waitHTTP(url string, timeout time.Duration, p *framework.Process) error {
	deadline := time.Now().Add(timeout)
	c := http.Client{Timeout: time.Second}
	for {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if done, werr := p.Exited(); done {
			return fmt.Errorf("%s exited: %v\n%s", p.Name(), werr, p.Tail(2000))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not answering after %s", p.Name(), url, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ptrInt64(v int64) *int64 { return &v }
func ptrBool(v bool) *bool    { return &v }

// volumeRefreshInterval is how often mounted ConfigMaps and Secrets are
// brought up to date: the kubelet's sync period is about a minute; the
// playground is faster so that a renewed certificate shows soon.
const volumeRefreshInterval = 5 * time.Second

// refreshVolumes re-projects the mounted ConfigMaps and Secrets of every
// running site whose objects changed (podfs.go).
func (a *NodeAgent) refreshVolumes(ctx context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.sites {
		if s.fs == nil || s.podUID == "" {
			continue
		}
		if err := a.refreshPodFS(ctx, a.namespace, s.fs); err != nil && ctx.Err() == nil {
			a.log.Warn("node agent: refresh mounted volumes", "site", s.plan.Name, "err", err.Error())
		}
	}
}
