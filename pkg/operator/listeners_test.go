package operator

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writePair writes a self-signed certificate for 127.0.0.1 with common name cn.
func writePair(t *testing.T, dir, cn string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	must(t, os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// secretVolume lays out a directory the way the kubelet mounts a Secret:
// tls.crt -> ..data/tls.crt, ..data -> ..<timestamp dir>. rotate swaps ..data.
type secretVolume struct {
	t    *testing.T
	root string
	n    int
}

func newSecretVolume(t *testing.T, cn string) *secretVolume {
	v := &secretVolume{t: t, root: t.TempDir()}
	v.rotate(cn)
	for _, f := range []string{"tls.crt", "tls.key"} {
		must(t, os.Symlink(filepath.Join("..data", f), filepath.Join(v.root, f)))
	}
	return v
}

func (v *secretVolume) rotate(cn string) {
	v.n++
	dir := filepath.Join(v.root, "..ts"+strings.Repeat("x", v.n))
	must(v.t, os.Mkdir(dir, 0o700))
	writePair(v.t, dir, cn)
	tmp := filepath.Join(v.root, "..data_tmp")
	must(v.t, os.Symlink(filepath.Base(dir), tmp))
	must(v.t, os.Rename(tmp, filepath.Join(v.root, "..data")))
}

func peerCN(t *testing.T, addr string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
}

func TestCertReloadsWhenTheSecretRotates(t *testing.T) {
	vol := newSecretVolume(t, "first")
	r, err := newCertReloader(filepath.Join(vol.root, "tls.crt"), filepath.Join(vol.root, "tls.key"), 10*time.Millisecond, slog.New(slog.DiscardHandler))
	must(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	srv := &http.Server{Handler: http.NotFoundHandler()}
	go srv.Serve(tlsListener(ln, r.tlsConfig()))
	defer srv.Close()

	if cn := peerCN(t, ln.Addr().String()); cn != "first" {
		t.Fatalf("served %q, want first", cn)
	}
	time.Sleep(20 * time.Millisecond) // distinct modification time
	vol.rotate("second")
	deadline := time.Now().Add(5 * time.Second)
	for peerCN(t, ln.Addr().String()) != "second" {
		if time.Now().After(deadline) {
			t.Fatal("rotated certificate never served")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A broken rotation keeps the last good pair in service.
	time.Sleep(20 * time.Millisecond)
	must(t, os.WriteFile(filepath.Join(vol.root, "..data", "tls.crt"), []byte("garbage"), 0o600))
	time.Sleep(30 * time.Millisecond)
	if cn := peerCN(t, ln.Addr().String()); cn != "second" {
		t.Fatalf("after a broken rotation served %q, want the previous pair", cn)
	}
}

func TestCertReloaderRefusesUnloadablePairAtStart(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "tls.crt"), []byte("x"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "tls.key"), []byte("x"), 0o600))
	_, err := newCertReloader(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), time.Second, slog.Default())
	if err == nil || !strings.Contains(err.Error(), "--tls-cert-file/--tls-key-file") {
		t.Fatalf("err = %v", err)
	}
	_, err = newCertReloader(filepath.Join(dir, "absent.crt"), filepath.Join(dir, "tls.key"), time.Second, slog.Default())
	if err == nil || !strings.Contains(err.Error(), "--tls-cert-file") {
		t.Fatalf("err = %v", err)
	}
}

// fakeKubeconfig lets New build clients without contacting anything.
func fakeKubeconfig(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	return path
}

func testConfig(t *testing.T) Config {
	vol := newSecretVolume(t, "operator")
	return Config{
		Kubeconfig:     fakeKubeconfig(t),
		LeaderElection: LeaderElectionConfig{Namespace: "bloodraven", Name: "l", Identity: "me", LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second},
		MetricsAddr:    "127.0.0.1:0", ProbeAddr: "127.0.0.1:0", AuxiliaryAddr: "127.0.0.1:0", EscrowTLSAddr: "127.0.0.1:0",
		TLSCertFile: filepath.Join(vol.root, "tls.crt"), TLSKeyFile: filepath.Join(vol.root, "tls.key"),
		DeployAPIEnabled: true, DeployAPIAudience: "bloodraven-deploy", SidecarImage: "s:1",
		LogLevel: "info", Workers: 1, TopologyWorkers: 1, ShutdownGracePeriod: 5 * time.Second,
	}
}

func TestListenersAndTheLeaderGuard(t *testing.T) {
	p, err := New(testConfig(t), slog.New(slog.DiscardHandler))
	must(t, err)
	serving := serveAll(p.listeners, p.Log)
	defer func() { shutdownAll(t.Context(), p.listeners); serving.Wait() }()

	https := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	tlsURL := "https://" + p.Addr("--escrow-tls-addr")
	get := func(c *http.Client, url string) (int, string) {
		t.Helper()
		resp, err := c.Get(url)
		must(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// A follower answers every /deploy/v1 path with 503 not_leader.
	for _, path := range []string{"/deploy/v1", "/deploy/v1/groups/orders", "/deploy/v1/groups/orders/leases"} {
		code, body := get(https, tlsURL+path)
		var e map[string]string
		if code != 503 || json.Unmarshal([]byte(body), &e) != nil || e["error"] != "not_leader" {
			t.Errorf("follower %s = %d %q, want 503 {\"error\":\"not_leader\"}", path, code, body)
		}
	}
	// A follower never passes a request to a handler that would act on it...
	var reached []string
	p.SetDeployAPI(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = append(reached, r.URL.Path) }))
	if code, _ := get(https, tlsURL+"/deploy/v1/groups/orders"); code != 503 || len(reached) != 0 {
		t.Errorf("follower with a plain handler = %d, handler reached for %v", code, reached)
	}
	// ...only to one that refuses followers itself (and logs the request).
	p.SetDeployAPI(followerRefuser{refuse: true, reached: &reached})
	if code, body := get(https, tlsURL+"/deploy/v1/groups/orders"); code != 503 || !strings.Contains(body, "not_leader") || len(reached) != 1 {
		t.Errorf("follower with a refusing handler = %d %q, handler reached for %v", code, body, reached)
	}
	p.SetDeployAPI(followerRefuser{refuse: false, reached: &reached})
	if code, _ := get(https, tlsURL+"/deploy/v1/groups/orders"); code != 503 || len(reached) != 1 {
		t.Errorf("follower with a handler that does not refuse = %d, handler reached for %v", code, reached)
	}
	p.deployAPI.Store(nil)

	// Leading without a handler: 404; with one: served.
	p.state.leading.Store(true)
	if code, _ := get(https, tlsURL+"/deploy/v1/groups/orders"); code != 404 {
		t.Errorf("leader without deploy handler = %d, want 404", code)
	}
	p.SetDeployAPI(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "deploy:"+r.URL.Path) }))
	if code, body := get(https, tlsURL+"/deploy/v1/groups/orders"); code != 200 || body != "deploy:/deploy/v1/groups/orders" {
		t.Errorf("leader = %d %q", code, body)
	}

	// Plain text on the TLS port is never served.
	conn, err := net.Dial("tcp", p.Addr("--escrow-tls-addr"))
	must(t, err)
	io.WriteString(conn, "GET /deploy/v1/groups/orders HTTP/1.1\r\nHost: x\r\n\r\n")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	status, _ := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	if strings.Contains(status, "200") || strings.Contains(status, "503") {
		t.Errorf("plain-text request on the TLS port was answered %q", status)
	}

	// Probes: healthy at once, ready only after the caches sync.
	plain := http.DefaultClient
	probe := "http://" + p.Addr("--probe-addr")
	if code, _ := get(plain, probe+"/healthz"); code != 200 {
		t.Errorf("/healthz = %d", code)
	}
	if code, _ := get(plain, probe+"/readyz"); code != 503 {
		t.Errorf("/readyz before sync = %d, want 503", code)
	}
	p.state.synced.Store(true)
	if code, _ := get(plain, probe+"/readyz"); code != 200 {
		t.Errorf("/readyz after sync = %d, want 200", code)
	}
	if code, _ := get(plain, "http://"+p.Addr("--auxiliary-addr")+"/healthz"); code != 200 {
		t.Errorf("auxiliary /healthz = %d", code)
	}
	// The deploy API never appears on the plain auxiliary listener.
	if code, _ := get(plain, "http://"+p.Addr("--auxiliary-addr")+"/deploy/v1/groups/orders"); code != 404 {
		t.Errorf("auxiliary /deploy/v1 = %d, want 404", code)
	}
	if code, body := get(plain, "http://"+p.Addr("--metrics-addr")+"/metrics"); code != 200 || !strings.Contains(body, "bloodraven_leader") {
		t.Errorf("/metrics = %d", code)
	}
}

func TestBindFailureNamesTheFlag(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer busy.Close()
	cfg := testConfig(t)
	cfg.AuxiliaryAddr = busy.Addr().String()
	_, err = New(cfg, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "--auxiliary-addr: cannot listen on") {
		t.Fatalf("err = %v", err)
	}
	// The listeners bound before the failure were closed: binding them again works.
	cfg2 := testConfig(t)
	p, err := New(cfg2, slog.New(slog.DiscardHandler))
	must(t, err)
	p.closeListeners()
}

func TestDeployAPIRouteAbsentWhenDisabled(t *testing.T) {
	cfg := testConfig(t)
	cfg.DeployAPIEnabled = false
	p, err := New(cfg, slog.New(slog.DiscardHandler))
	must(t, err)
	serving := serveAll(p.listeners, p.Log)
	defer func() { shutdownAll(t.Context(), p.listeners); serving.Wait() }()
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get("https://" + p.Addr("--escrow-tls-addr") + "/deploy/v1/groups/orders")
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("disabled deploy API = %d, want 404", resp.StatusCode)
	}
}

// followerRefuser stands for the deploy API handler: it answers not_leader
// itself and records that it was reached.
type followerRefuser struct {
	refuse  bool
	reached *[]string
}

func (f followerRefuser) RefusesFollowers() bool { return f.refuse }

func (f followerRefuser) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	*f.reached = append(*f.reached, r.URL.Path)
	writeJSONError(w, http.StatusServiceUnavailable, "not_leader")
}
