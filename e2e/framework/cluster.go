package framework

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// This file adds what a whole local cluster needs on top of a control plane:
// kube-scheduler, kwok (fake nodes) and tracked child processes of any
// binary. The playground and the e2e suite use it.

// KwokNodeAnnotation marks the nodes kwok manages (kwok's own convention).
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// StartScheduler starts kube-scheduler against the control plane. It is
// stopped with the control plane.
func (cp *ControlPlane) StartScheduler(ctx context.Context) error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	p, err := cp.start("kube-scheduler", "kube-scheduler",
		"--kubeconfig="+cp.KubeconfigPath,
		"--authentication-kubeconfig="+cp.KubeconfigPath,
		"--authorization-kubeconfig="+cp.KubeconfigPath,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--v=0",
	)
	if err != nil {
		return err
	}
	return poll(ctx, 30*time.Second, p, func() bool {
		// /healthz of the scheduler needs no authentication.
		code, err := httpsGetInsecure(fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
		return err == nil && code == 200
	})
}

// StartKwok starts kwok managing the nodes annotated KwokNodeAnnotation=fake,
// with only the node stages (initialize, heartbeat with Lease): kwok keeps
// those nodes Ready but leaves pods alone, so something else (a node agent)
// plays the kubelet for them. kwok also serves the kubelet API for its nodes
// on a loopback port (the nodes' kubelet endpoint, with the API server's own
// serving certificate), so the API server's pods/portforward reaches it; where
// a pod's ports lead is declared per pod with kwok's PortForward objects,
// whose CRD this installs. It is stopped with the control plane.
func (cp *ControlPlane) StartKwok(ctx context.Context) error {
	stages := filepath.Join(BinDir(), "kwok-stages", "node")
	initialize := filepath.Join(stages, "fast", "node-initialize.yaml")
	heartbeat := filepath.Join(stages, "heartbeat-with-lease", "node-heartbeat-with-lease.yaml")
	crds := filepath.Join(BinDir(), "kwok-crds")
	for _, f := range []string{initialize, heartbeat, crds} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("kwok file %s is missing: run `make tools` first", f)
		}
	}
	if err := cp.InstallCRDs(ctx, crds); err != nil {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	_, err = cp.start("kwok", "kwok",
		"--kubeconfig="+cp.KubeconfigPath,
		"--config="+initialize, "--config="+heartbeat,
		"--manage-nodes-with-annotation-selector="+KwokNodeAnnotation+"=fake",
		"--node-lease-duration-seconds=40",
		"--node-ip=127.0.0.1",
		"--node-port="+strconv.Itoa(port),
		"--server-address=127.0.0.1:"+strconv.Itoa(port),
		"--tls-cert-file="+cp.certs.servingCert,
		"--tls-private-key-file="+cp.certs.servingKey,
		"--enable-crds=PortForward",
	)
	return err
}

// Process is a child process started with StartProcess. Like the control
// plane's own processes it dies with the process that started it
// (Pdeathsig), and Stop signals only its own PID.
type Process struct{ p *process }

// StartProcess starts bin (a path, or a name in BinDir) with args and extra
// environment variables, logging stdout and stderr to logPath. The child
// inherits this process's environment except BLOODRAVEN_* variables, so a
// shell that sourced a playground env file cannot reconfigure it.
func StartProcess(name, bin string, args, env []string, logPath string) (*Process, error) {
	if !filepath.IsAbs(bin) {
		bin = filepath.Join(BinDir(), bin)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BLOODRAVEN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	p, err := launch(name, cmd, logFile, logPath)
	if err != nil {
		return nil, err
	}
	return &Process{p: p}, nil
}

// Name is the name given at start.
func (p *Process) Name() string { return p.p.name }

// PID is the process ID.
func (p *Process) PID() int { return p.p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.p.done }

// Exited reports whether the process has ended, and its wait error.
func (p *Process) Exited() (bool, error) { return p.p.exited() }

// Stop sends SIGTERM, waits up to grace, then SIGKILLs; it returns once the
// process is gone.
func (p *Process) Stop(grace time.Duration) error { return p.p.stop(grace) }

// Signal sends sig to the process (by its PID only).
func (p *Process) Signal(sig os.Signal) error {
	if done, _ := p.p.exited(); done {
		return errors.New(p.p.name + " has exited")
	}
	return p.p.cmd.Process.Signal(sig)
}

// Tail returns the last n bytes of the process log.
func (p *Process) Tail(n int64) string { return p.p.tail(n) }

// httpsGetInsecure probes a loopback health endpoint whose self-signed
// certificate nobody distributes (kube-scheduler's).
func httpsGetInsecure(url string) (int, error) {
	c := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe only
	}}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
