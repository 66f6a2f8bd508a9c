// Package framework starts a real Kubernetes control plane (etcd and
// kube-apiserver, optionally kube-controller-manager) for integration tests.
//
// The binaries are built from Go modules by scripts/build-controlplane.sh into
// bin/ (`make tools`). Every control plane lives in a fresh temporary
// directory, listens on free loopback ports, and is stopped by the PIDs it
// started. One control plane serves a whole test package (see Main); tests
// isolate themselves with a namespace each (see NewNamespace).
package framework

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/portlease"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Audience is the TokenReview audience the deploy API uses by default.
const Audience = "bloodraven-deploy"

// Options choose what a control plane runs besides etcd and kube-apiserver.
type Options struct {
	// ControllerManager also starts kube-controller-manager, for tests that
	// need default ServiceAccounts, garbage collection, namespace deletion or
	// workload controllers.
	ControllerManager bool
	// CRDDir, if set, is a directory (absolute or relative to the repository
	// root) whose CRD YAML files are installed and waited for until Established.
	CRDDir string
}

// ControlPlane is a running etcd + kube-apiserver (+ kube-controller-manager).
type ControlPlane struct {
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// KubeconfigPath is a kubeconfig file with the same admin credentials.
	KubeconfigPath string
	// Dir is the temporary directory holding data, certificates and logs.
	Dir string
	// APIServerURL is https://127.0.0.1:<port>.
	APIServerURL string

	client    kubernetes.Interface
	certs     *pki
	processes []*process // in start order; stopped in reverse
	stopOnce  sync.Once
}

// dirPrefix names the temporary directories; the PID in the name lets a later
// run remove the directory of a test binary that was killed before cleanup.
const dirPrefix = "bloodraven-cp-"

// Start brings up a control plane. On error everything it started is stopped.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	removeStaleDirs()
	bin := BinDir()
	for _, b := range requiredBinaries(opts) {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("control-plane binary %s is missing in %s: run `make tools` first", b, bin)
		}
	}
	dir, err := os.MkdirTemp("", dirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Dir: dir}
	if err := cp.bringUp(ctx, opts); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

// bringUp starts the processes and installs the CRDs; on error the caller
// stops whatever was started.
func (cp *ControlPlane) bringUp(ctx context.Context, opts Options) error {
	dir := cp.Dir

	certs, err := writePKI(dir)
	if err != nil {
		return fmt.Errorf("write certificates: %w", err)
	}
	cp.certs = certs
	etcdURL, err := cp.startEtcd(ctx)
	if err != nil {
		return err
	}
	if err := cp.startAPIServer(ctx, certs, etcdURL); err != nil {
		return err
	}
	if opts.ControllerManager {
		if err := cp.startControllerManager(certs); err != nil {
			return err
		}
	}
	if opts.CRDDir != "" {
		crdDir := opts.CRDDir
		if !filepath.IsAbs(crdDir) {
			crdDir = filepath.Join(RepoRoot(), crdDir)
		}
		if err := cp.InstallCRDs(ctx, crdDir); err != nil {
			return err
		}
	}
	return nil
}

func requiredBinaries(opts Options) []string {
	bins := []string{"etcd", "kube-apiserver", "kubectl"}
	if opts.ControllerManager {
		bins = append(bins, "kube-controller-manager")
	}
	return bins
}

// Stop stops every process the control plane started, by PID, in reverse
// order, and removes its directory. It is safe to call more than once.
func (cp *ControlPlane) Stop() {
	cp.stopOnce.Do(func() {
		for i := len(cp.processes) - 1; i >= 0; i-- {
			_ = cp.processes[i].stop(10 * time.Second)
		}
		if cp.Dir != "" {
			_ = os.RemoveAll(cp.Dir)
		}
	})
}

// Client returns an admin clientset.
func (cp *ControlPlane) Client() kubernetes.Interface { return cp.client }

// PIDs returns the process IDs of everything the control plane started.
func (cp *ControlPlane) PIDs() map[string]int {
	pids := map[string]int{}
	for _, p := range cp.processes {
		pids[p.name] = p.cmd.Process.Pid
	}
	return pids
}

func (cp *ControlPlane) start(name, binary string, args ...string) (*process, error) {
	p, err := startProcess(name, filepath.Join(BinDir(), binary), args, filepath.Join(cp.Dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cp.processes = append(cp.processes, p)
	return p, nil
}

func (cp *ControlPlane) startEtcd(ctx context.Context) (string, error) {
	ports, err := freePorts(2)
	if err != nil {
		return "", err
	}
	client := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	p, err := cp.start("etcd", "etcd",
		"--name=test",
		"--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=test="+peer,
		"--unsafe-no-fsync", "--log-level=warn",
	)
	if err != nil {
		return "", err
	}
	err = poll(ctx, 30*time.Second, p, func() bool {
		resp, err := httpGet(client + "/health")
		return err == nil && resp == 200
	})
	if err != nil {
		return "", fmt.Errorf("etcd did not become healthy: %w\n%s", err, p.tail(2000))
	}
	return client, nil
}

func (cp *ControlPlane) startAPIServer(ctx context.Context, certs *pki, etcdURL string) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	cp.APIServerURL = "https://127.0.0.1:" + strconv.Itoa(ports[0])
	token := randomToken()
	tokenFile := filepath.Join(cp.Dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return err
	}
	p, err := cp.start("kube-apiserver", "kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[0]),
		"--cert-dir="+filepath.Join(cp.Dir, "apiserver-certs"),
		"--tls-cert-file="+certs.servingCert,
		"--tls-private-key-file="+certs.servingKey,
		"--service-cluster-ip-range=10.0.0.0/16", // room for the Services of a whole test package: without kube-controller-manager deleted namespaces keep theirs
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+certs.serviceAccountPub,
		"--service-account-signing-key-file="+certs.serviceAccountKey,
		"--token-auth-file="+tokenFile,
		"--authorization-mode=RBAC",
		// kwok's nodes carry a Hostname address nothing resolves here; their
		// kubelet endpoint (kwok's server, see StartKwok) is at the InternalIP.
		"--kubelet-preferred-address-types=InternalIP",
		"--allow-privileged=true",
		"--disable-admission-plugins=ServiceAccount",
		"--profiling=false",
		"--v=0",
	)
	if err != nil {
		return err
	}
	cp.Config = &rest.Config{
		Host:            cp.APIServerURL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte(certs.caPEM)},
		QPS:             200,
		Burst:           400,
	}
	if cp.client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return err
	}
	cp.KubeconfigPath = filepath.Join(cp.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(cp.KubeconfigPath, cp.APIServerURL, certs.caCert, token); err != nil {
		return err
	}
	err = poll(ctx, 60*time.Second, p, func() bool {
		body, err := cp.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok"
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w\n%s", err, p.tail(4000))
	}
	return nil
}

func (cp *ControlPlane) startControllerManager(certs *pki) error {
	_, err := cp.start("kube-controller-manager", "kube-controller-manager",
		"--kubeconfig="+cp.KubeconfigPath,
		"--controllers=*",
		"--leader-elect=false",
		"--secure-port=0",
		"--service-account-private-key-file="+certs.serviceAccountKey,
		"--root-ca-file="+certs.caCert,
		"--use-service-account-credentials=false",
		"--concurrent-namespace-syncs=4",
		"--v=0",
	)
	return err
}

// poll calls ready until it returns true, the process exits, or timeout.
func poll(ctx context.Context, timeout time.Duration, p *process, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if ready() {
			return nil
		}
		if done, err := p.exited(); done {
			return fmt.Errorf("%s exited: %v", p.name, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s", p.name, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePorts leases n distinct loopback ports (portlease) for the rest of
// this process's life. Leased ports lie outside the kernel's ephemeral
// range, so a server restarted on its port (a playground mysqld after a
// crash) does not find it taken by some other ":0" listener or outgoing
// connection, and no other test process leases them meanwhile.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := portlease.Take()
		if err != nil {
			return nil, err
		}
		heldLeases.Lock()
		heldLeases.all = append(heldLeases.all, l)
		heldLeases.Unlock()
		ports = append(ports, l.Port)
	}
	return ports, nil
}

// heldLeases keeps freePorts' leases reachable: a collected lease's file
// would be closed by its finalizer, and its lock with it.
var heldLeases struct {
	sync.Mutex
	all []*portlease.Lease
}

// FreePort returns one free loopback port.
func FreePort() (int, error) {
	p, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// RepoRoot is the repository root, found from this source file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BinDir is where scripts/build-controlplane.sh puts the binaries
// ($BIN_DIR if set, else <repo>/bin).
func BinDir() string {
	if d := os.Getenv("BIN_DIR"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "bin")
}

// removeStaleDirs deletes control-plane directories left by test binaries
// that died before they could clean up (their PID is no longer alive).
func removeStaleDirs() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, m := range matches {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(m), dirPrefix+"%d-", &pid); err != nil || pid <= 0 {
			continue
		}
		if pid == os.Getpid() || processAlive(pid) {
			continue
		}
		_ = os.RemoveAll(m)
	}
}

func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, os.ErrPermission)
}

// Kubectl runs bin/kubectl with the admin kubeconfig.
func (cp *ControlPlane) Kubectl(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, filepath.Join(BinDir(), "kubectl"), append([]string{"--kubeconfig=" + cp.KubeconfigPath}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}
