package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/logschema"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	framework.Main(m, framework.Options{CRDDir: "deploy/crds"}, &cp)
}

func needControlPlane(t *testing.T) {
	if cp == nil {
		t.Skip("integration test: needs the control plane (not run with -short)")
	}
}

// Leader-election timings short enough for quick handovers, long enough
// that a loaded CI machine (several API servers on two cores) still renews.
const (
	leaseDuration = 10 * time.Second
	renewDeadline = 7 * time.Second
	retryPeriod   = time.Second
	leaseName     = "bloodraven-leader"
)

// buildOperator compiles this command into a fresh directory.
func buildOperator(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bloodraven")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// operatorProc is one operator child process on free loopback ports.
type operatorProc struct {
	identity                string
	metrics, probe, aux, tl string
	cmd                     *exec.Cmd
	stdout, stderr          framework.SyncBuffer
	done                    chan struct{}
	exitCode                int
}

func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(p)
}

func startOperator(t *testing.T, bin, ns, identity, certDir string, extra ...string) *operatorProc {
	t.Helper()
	o := &operatorProc{identity: identity, metrics: freeAddr(t), probe: freeAddr(t), aux: freeAddr(t), tl: freeAddr(t), done: make(chan struct{})}
	args := append([]string{
		"--kubeconfig=" + cp.KubeconfigPath,
		"--namespaces=" + ns,
		"--leader-elect-namespace=" + ns,
		"--leader-elect-identity=" + identity,
		"--leader-elect-lease-duration=" + leaseDuration.String(),
		"--leader-elect-renew-deadline=" + renewDeadline.String(),
		"--leader-elect-retry-period=" + retryPeriod.String(),
		"--metrics-addr=" + o.metrics, "--probe-addr=" + o.probe, "--auxiliary-addr=" + o.aux,
		"--tls-cert-file=" + filepath.Join(certDir, "tls.crt"), "--tls-key-file=" + filepath.Join(certDir, "tls.key"),
		"--deploy-api-enabled",
		"--shutdown-grace-period=10s",
	}, extra...)
	o.cmd = exec.Command(bin, args...)
	o.cmd.Env = append(os.Environ(), "BLOODRAVEN_ESCROW_TLS_ADDR="+o.tl, "BLOODRAVEN_SIDECAR_IMAGE=sidecar:test")
	o.cmd.Stdout, o.cmd.Stderr = &o.stdout, &o.stderr
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := o.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := o.cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			o.exitCode = ee.ExitCode()
		}
		close(o.done)
	}()
	t.Cleanup(func() {
		if o.running() {
			_ = o.cmd.Process.Kill() // by PID: exactly the process this test started
			<-o.done
		}
		if t.Failed() {
			t.Logf("%s stdout:\n%s\nstderr:\n%s", identity, o.stdout.String(), o.stderr.String())
		}
	})
	return o
}

func (o *operatorProc) running() bool {
	select {
	case <-o.done:
		return false
	default:
		return true
	}
}

func (o *operatorProc) waitExit(t *testing.T, within time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case <-o.done:
		return o.exitCode, time.Since(start)
	case <-time.After(within):
		t.Fatalf("%s did not exit within %s", o.identity, within)
		return 0, 0
	}
}

var insecureTLS = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
var plain = &http.Client{Timeout: 5 * time.Second}

func get(c *http.Client, url string) (int, string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// leading reads the process's bloodraven_leader gauge.
func (o *operatorProc) leading() bool {
	code, body, err := get(plain, "http://"+o.metrics+"/metrics")
	return err == nil && code == 200 && strings.Contains(body, "\nbloodraven_leader 1\n")
}

func waitUntil(t *testing.T, what string, within time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

func leaseHolder(t *testing.T, ns string) string {
	t.Helper()
	l, err := cp.Client().CoordinationV1().Leases(ns).Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// exactlyOneLeader waits for a leader among procs, checks for a while that
// no other process claims to lead, and returns the leader and a follower.
func exactlyOneLeader(t *testing.T, ns string, procs ...*operatorProc) (leader, follower *operatorProc) {
	t.Helper()
	waitUntil(t, "a leader", 30*time.Second, func() bool {
		for _, p := range procs {
			if p.leading() {
				return true
			}
		}
		return false
	})
	for range 6 { // across more than one renew period
		var leaders []*operatorProc
		for _, p := range procs {
			if p.leading() {
				leaders = append(leaders, p)
			} else {
				follower = p
			}
		}
		if len(leaders) != 1 {
			t.Fatalf("%d processes claim to lead", len(leaders))
		}
		leader = leaders[0]
		if h := leaseHolder(t, ns); h != leader.identity {
			t.Fatalf("Lease holder %q, but %s claims to lead", h, leader.identity)
		}
		time.Sleep(retryPeriod)
	}
	return leader, follower
}

func assertNotLeader(t *testing.T, o *operatorProc) {
	t.Helper()
	before := notLeaderRecords(o)
	for _, path := range []string{"/deploy/v1/groups/orders", "/deploy/v1/groups/orders/leases"} {
		code, body, err := get(insecureTLS, "https://"+o.tl+path)
		if err != nil {
			t.Fatalf("%s %s: %v", o.identity, path, err)
		}
		var e map[string]string
		if code != http.StatusServiceUnavailable || json.Unmarshal([]byte(body), &e) != nil || e["error"] != "not_leader" {
			t.Fatalf("follower %s %s = %d %q, want 503 {\"error\":\"not_leader\"}", o.identity, path, code, body)
		}
	}
	// Refused requests are logged too: one "deploy api" record each.
	waitUntil(t, o.identity+" logging its refusals", 5*time.Second, func() bool { return notLeaderRecords(o) == before+2 })
}

// notLeaderRecords counts the "deploy api" log records of 503 not_leader
// answers.
func notLeaderRecords(o *operatorProc) int {
	n := 0
	sc := bufio.NewScanner(strings.NewReader(o.stdout.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Msg    string  `json:"msg"`
			Status float64 `json:"status"`
			Error  string  `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "deploy api" && rec.Status == http.StatusServiceUnavailable && rec.Error == "not_leader" {
			n++
		}
	}
	return n
}

func assertServing(t *testing.T, o *operatorProc) {
	t.Helper()
	// Generous: on a loaded 2-core machine (CI runs packages in parallel)
	// the informers' first lists of a fresh process can take a while.
	waitUntil(t, o.identity+" ready", 90*time.Second, func() bool {
		code, _, err := get(plain, "http://"+o.probe+"/readyz")
		return err == nil && code == 200
	})
	for _, url := range []string{"http://" + o.probe + "/healthz", "http://" + o.aux + "/healthz"} {
		if code, body, err := get(plain, url); err != nil || code != 200 {
			t.Errorf("%s %s = %d %q %v", o.identity, url, code, body, err)
		}
	}
	_, body, err := get(plain, "http://"+o.metrics+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`workqueue_adds_total{name="database"}`, `rest_client_requests_total{`, "process_resident_memory_bytes", "bloodraven_leader "} {
		if !strings.Contains(body, want) {
			t.Errorf("%s /metrics lacks %s", o.identity, want)
		}
	}
}

// lowerCamelKey is the project's log key spelling. duration_ms, the deploy
// API's per-request field, is the one exception: its spelling is part of
// the deploy API's log contract (docs/deploy-api.md, Logs).
var lowerCamelKey = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// badKeys returns the keys of obj (and of nested objects) that are not
// lowerCamelCase.
func badKeys(obj map[string]any) []string {
	var bad []string
	for k, v := range obj {
		if !lowerCamelKey.MatchString(k) && k != "duration_ms" {
			bad = append(bad, k)
		}
		if nested, ok := v.(map[string]any); ok {
			bad = append(bad, badKeys(nested)...)
		}
	}
	return bad
}

// assertJSONLogs checks that every line the process printed is a JSON
// object with time, level and msg, and lowerCamelCase keys.
func assertJSONLogs(t *testing.T, o *operatorProc) {
	t.Helper()
	n := 0
	for _, stream := range []struct{ name, text string }{{"stdout", o.stdout.String()}, {"stderr", o.stderr.String()}} {
		sc := bufio.NewScanner(strings.NewReader(stream.text))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			n++
			var obj map[string]any
			if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
				t.Errorf("%s %s line is not JSON: %q", o.identity, stream.name, sc.Text())
				continue
			}
			for _, k := range []string{"time", "level", "msg"} {
				if _, ok := obj[k]; !ok {
					t.Errorf("%s log line lacks %q: %s", o.identity, k, sc.Text())
				}
			}
			if bad := badKeys(obj); len(bad) > 0 {
				t.Errorf("%s log line has keys that are not lowerCamelCase %q: %s", o.identity, bad, sc.Text())
			}
		}
	}
	if n == 0 {
		t.Errorf("%s printed no log lines", o.identity)
	}
	// And every record as docs/logs.md lists it.
	schema, err := logschema.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{o.stdout.String(), o.stderr.String()} {
		ps, err := schema.CheckLines(logschema.Operator, strings.NewReader(text))
		if err != nil {
			t.Error(err)
		}
		for _, p := range ps {
			t.Errorf("%s log record not in docs/logs.md: %s", o.identity, p)
		}
	}
}

func rssKiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	return -1
}

func TestTwoOperatorsLeaderElectionAndHandover(t *testing.T) {
	needControlPlane(t)
	bin := buildOperator(t)
	ns := cp.NewNamespace(t)
	certs := writeCert(t)
	a := startOperator(t, bin, ns, "op-a", certs)
	b := startOperator(t, bin, ns, "op-b", certs)

	leader, follower := exactlyOneLeader(t, ns, a, b)
	assertServing(t, a)
	assertServing(t, b)
	assertNotLeader(t, follower)
	if code, body, err := get(insecureTLS, "https://"+leader.tl+"/deploy/v1/groups/orders"); err != nil || code == http.StatusServiceUnavailable {
		t.Fatalf("leader /deploy/v1 = %d %q %v; a leader never answers not_leader", code, body, err)
	}
	t.Logf("RSS after sync: %s %d KiB, %s %d KiB", a.identity, rssKiB(a.cmd.Process.Pid), b.identity, rssKiB(b.cmd.Process.Pid))

	// Kill the leader outright: the follower takes over once the Lease expires.
	killed := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	leader.waitExit(t, 5*time.Second)
	handover := waitUntil(t, "the follower to lead", 4*leaseDuration, follower.leading)
	if h := leaseHolder(t, ns); h != follower.identity {
		t.Fatalf("Lease holder after handover = %q, want %s", h, follower.identity)
	}
	t.Logf("handover after SIGKILL of the leader: %s (lease duration %s, retry period %s)", time.Since(killed).Round(time.Millisecond), leaseDuration, retryPeriod)
	_ = handover
	if code, _, _ := get(insecureTLS, "https://"+follower.tl+"/deploy/v1/groups/orders"); code == http.StatusServiceUnavailable {
		t.Fatal("the new leader still answers not_leader")
	}
	assertJSONLogs(t, a)
	assertJSONLogs(t, b)
}

func TestSIGTERMReleasesTheLeaseAndExitsCleanly(t *testing.T) {
	needControlPlane(t)
	bin := buildOperator(t)
	ns := cp.NewNamespace(t)
	certs := writeCert(t)
	a := startOperator(t, bin, ns, "op-a", certs)
	b := startOperator(t, bin, ns, "op-b", certs)
	leader, follower := exactlyOneLeader(t, ns, a, b)
	assertServing(t, follower)

	start := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, took := leader.waitExit(t, 10*time.Second) // --shutdown-grace-period
	if code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
	// The Lease was released, so the follower need not wait for it to expire:
	// without the release it could not lead before leaseDuration-retryPeriod.
	waitUntil(t, "the follower to lead before the Lease could expire", leaseDuration/2, follower.leading)
	handover := time.Since(start)
	t.Logf("SIGTERM: leader exited in %s; follower led %s after the signal", took.Round(time.Millisecond), handover.Round(time.Millisecond))
	if !strings.Contains(leader.stdout.String(), `"msg":"shutdown complete"`) {
		t.Error("the leader did not log a complete shutdown")
	}
	// The follower is also a process that must shut down cleanly.
	if err := follower.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, _ := follower.waitExit(t, 10*time.Second); code != 0 {
		t.Fatalf("second process exit code = %d", code)
	}
	assertJSONLogs(t, a)
	assertJSONLogs(t, b)
}

// A leader that cannot renew its Lease (here: someone else holds it) must
// exit instead of continuing to work.
func TestLosingTheLeaseExitsTheProcess(t *testing.T) {
	needControlPlane(t)
	bin := buildOperator(t)
	ns := cp.NewNamespace(t)
	o := startOperator(t, bin, ns, "op-a", writeCert(t))
	waitUntil(t, "op-a to lead", 30*time.Second, o.leading)

	ctx := context.Background()
	leases := cp.Client().CoordinationV1().Leases(ns)
	l, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	intruder, dur := "intruder", int32(600)
	now := metav1.NewMicroTime(time.Now())
	l.Spec = coordinationv1.LeaseSpec{HolderIdentity: &intruder, LeaseDurationSeconds: &dur, AcquireTime: &now, RenewTime: &now}
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	code, _ := o.waitExit(t, renewDeadline+leaseDuration+5*time.Second)
	if code != 1 {
		t.Fatalf("exit code after losing the Lease = %d, want 1", code)
	}
	t.Logf("process exited %s after its Lease was taken (renew deadline %s)", time.Since(taken).Round(time.Millisecond), renewDeadline)
	if !strings.Contains(o.stdout.String(), "leader election lost") {
		t.Error("no log line explains the exit")
	}
	if h := leaseHolder(t, ns); h != intruder {
		t.Fatalf("Lease holder = %q; the deposed process must not write it", h)
	}
	assertJSONLogs(t, o)
}

func TestInvalidConfigurationFailsAtStartNamingTheFlag(t *testing.T) {
	bin := buildOperator(t)
	cases := []struct {
		name string
		args []string
		env  []string
		code int
		want string
	}{
		{"lease shorter than renew deadline", []string{"--leader-elect-namespace=x", "--leader-elect-lease-duration=5s"}, []string{"BLOODRAVEN_SIDECAR_IMAGE=s"}, 2, "--leader-elect-lease-duration (5s) must be longer than --leader-elect-renew-deadline (10s)"},
		{"bad env", []string{"--leader-elect-namespace=x"}, []string{"BLOODRAVEN_SIDECAR_IMAGE=s", "BLOODRAVEN_ESCROW_TLS_ADDR=8443", "BLOODRAVEN_TLS_CERT_FILE=/a", "BLOODRAVEN_TLS_KEY_FILE=/b"}, 2, `--escrow-tls-addr: \"8443\" is not host:port`},
		{"missing kubeconfig", []string{"--leader-elect-namespace=x", "--kubeconfig=/nonexistent/kubeconfig", "--metrics-addr=127.0.0.1:0", "--probe-addr=127.0.0.1:0", "--auxiliary-addr=127.0.0.1:0"}, []string{"BLOODRAVEN_SIDECAR_IMAGE=s"}, 1, "--kubeconfig"},
		{"unreadable site map", []string{"--leader-elect-namespace=x", "--kubeconfig=" + writeKubeconfig(t), "--dev-site-addresses=/nonexistent/sites", "--metrics-addr=127.0.0.1:0", "--probe-addr=127.0.0.1:0", "--auxiliary-addr=127.0.0.1:0"}, []string{"BLOODRAVEN_SIDECAR_IMAGE=s"}, 1, "--dev-site-addresses"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, c.args...)
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, c.env...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != c.code {
				t.Fatalf("err = %v, want exit code %d\nstdout: %s\nstderr: %s", err, c.code, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), c.want) {
				t.Fatalf("output lacks %q:\n%s", c.want, out.String())
			}
			var obj map[string]any
			if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &obj); err != nil || obj["level"] != "ERROR" {
				t.Fatalf("the refusal is not one JSON ERROR line: %q", out.String())
			}
		})
	}
}

func writeKubeconfig(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	err := os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// writeCert writes a self-signed key pair for 127.0.0.1 and returns its directory.
func writeCert(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bloodraven"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
