package main

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/auxiliary"
	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
	"github.com/shipstream/bloodraven/pkg/testbed/portlease"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigurationErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{protocol.EnvNamespace: "shop", protocol.EnvGroup: "orders", protocol.EnvSite: "iad", protocol.EnvOperatorEndpoint: "op.ns.svc:8082",
		protocol.EnvMySQLUser: "bloodraven", protocol.EnvMySQLPassword: "pw"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		m[k] = v
		return m
	}
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--lease-timeout", "soon"}, base, `--lease-timeout "soon"`},
		{nil, with(protocol.EnvPeerCheckInterval, "20s"), "peer check interval 20s must be shorter than the lease timeout 15s"},
		{nil, with(protocol.EnvOperatorEndpoint, "op.ns.svc"), "operator endpoint"},
		{nil, with(protocol.EnvSite, ""), "site is required"},
		{[]string{"--mysql-password-file", empty}, base, "--mysql-password-file: " + empty + " is empty"},
		{[]string{"--mysql-password-file", filepath.Join(dir, "missing")}, base, "--mysql-password-file"},
		{[]string{"--peer-sites", "iad"}, base, `peer "iad": listed twice or names this sidecar's own site`},
		{[]string{"--dev-site-addresses", filepath.Join(dir, "missing")}, base, "--dev-site-addresses"},
		{[]string{"--log-level", "loud"}, base, "--log-level"},
		{[]string{"--mysql-admin-addr", "localhost"}, base, "mysql admin address"},
		{[]string{"stray"}, base, "unexpected arguments"},
	}
	for _, c := range cases {
		o, err := parse(c.args, env(c.env))
		if err == nil {
			_, err = o.sidecarConfig()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("args %v: err = %v, want it to contain %q", c.args, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("error leaks the password: %v", err)
		}
	}
}

func TestClusterAddressesAndSecretFiles(t *testing.T) {
	dir := t.TempDir()
	userFile, passFile := filepath.Join(dir, "username"), filepath.Join(dir, "password")
	os.WriteFile(userFile, []byte("bloodraven\n"), 0o600)
	os.WriteFile(passFile, []byte("s3cret\n"), 0o600)
	o, err := parse([]string{"--mysql-user-file", userFile, "--mysql-password-file", passFile, "--peer-sites", "dfw, sjc"},
		env(map[string]string{protocol.EnvNamespace: "shop", protocol.EnvGroup: "orders", protocol.EnvSite: "iad", protocol.EnvOperatorEndpoint: "bloodraven-aux.ops.svc:8082",
			protocol.EnvLeaseTimeout: "10s", protocol.EnvPeerCheckInterval: "1s"}))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.sidecarConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MySQL.User != "bloodraven" || cfg.MySQL.Password != "s3cret" || cfg.MySQL.Addr != "127.0.0.1:3306" {
		t.Errorf("mysql = %s@%s (password %d bytes)", cfg.MySQL.User, cfg.MySQL.Addr, len(cfg.MySQL.Password))
	}
	if cfg.LeaseTimeout != 10*time.Second || cfg.PeerCheckInterval != time.Second {
		t.Errorf("timers = %s %s", cfg.LeaseTimeout, cfg.PeerCheckInterval)
	}
	// In a pod the fence uses mysqld's administrative interface; without a
	// pid file there is no process stop.
	if cfg.MySQLAdminAddr != "127.0.0.1:33062" || cfg.MySQLPIDFile != "" {
		t.Errorf("admin address %q, pid file %q; want 127.0.0.1:33062 and none", cfg.MySQLAdminAddr, cfg.MySQLPIDFile)
	}
	o2, err := parse(nil, env(map[string]string{protocol.EnvNamespace: "shop", protocol.EnvGroup: "orders", protocol.EnvSite: "iad",
		protocol.EnvOperatorEndpoint: "op:8082", protocol.EnvMySQLUser: "u", protocol.EnvMySQLAdminAddr: "127.0.0.1:4444",
		protocol.EnvMySQLPIDFile: "/var/lib/mysql/mysqld.pid"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg2, err := o2.sidecarConfig(); err != nil || cfg2.MySQLAdminAddr != "127.0.0.1:4444" || cfg2.MySQLPIDFile != "/var/lib/mysql/mysqld.pid" {
		t.Errorf("from the environment: admin address %q, pid file %q (%v)", cfg2.MySQLAdminAddr, cfg2.MySQLPIDFile, err)
	}
	want := []string{"dfw=orders-dfw-internal.shop.svc:8089", "sjc=orders-sjc-internal.shop.svc:8089"}
	if got := peerList(cfg.Peers); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("peers = %v, want %v", got, want)
	}
}

// freeAddr leases a loopback port for a child process for the whole test
// (portlease): a restarted child listens on it again.
func freeAddr(t *testing.T) string {
	return portlease.AddrForTest(t)
}

type groupSource struct {
	mu sync.Mutex
	g  *v1alpha1.MysqlFailoverGroup
}

func (s *groupSource) Groups() ([]*v1alpha1.MysqlFailoverGroup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []*v1alpha1.MysqlFailoverGroup{s.g.DeepCopy()}, nil
}
func (s *groupSource) Group(ns, name string) (*v1alpha1.MysqlFailoverGroup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ns != s.g.Namespace || name != s.g.Name {
		return nil, auxiliary.ErrGroupNotFound
	}
	return s.g.DeepCopy(), nil
}
func (s *groupSource) Synced() bool { return true }

// TestBinary runs the built sidecar against a simulated mysqld and the real
// auxiliary handler, configured the playground way (development address map,
// credentials in files), and stops it with SIGTERM.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bloodraven-sidecar")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=1.7.0-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	iad := simtest.Start(t, mysqlsim.Config{Name: "iad"})
	dfw := simtest.Start(t, mysqlsim.Config{Name: "dfw", SuperReadOnly: true})
	src := &groupSource{g: &v1alpha1.MysqlFailoverGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}}}
	src.g.Status.ActiveSite, src.g.Status.TopologyGeneration = "iad", 1
	opLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opSrv := &http.Server{Handler: auxiliary.New(auxiliary.Options{Source: src, IsLeader: func() bool { return true }}), ReadHeaderTimeout: time.Second}
	go opSrv.Serve(opLn)
	t.Cleanup(func() { opSrv.Close() })

	sidecarAddr := freeAddr(t)
	m, err := devsitemap.New(
		devsitemap.Entry{Site: siteaddr.SiteKey{Namespace: "shop", Group: "orders", Site: "iad"}, MySQL: iad.Addr(), Sidecar: sidecarAddr},
		// dfw's sidecar is not running: an unreachable peer.
		devsitemap.Entry{Site: siteaddr.SiteKey{Namespace: "shop", Group: "orders", Site: "dfw"}, MySQL: dfw.Addr(), Sidecar: freeAddr(t)},
	)
	if err != nil {
		t.Fatal(err)
	}
	mapFile := filepath.Join(dir, "sites")
	if err := m.WriteFile(mapFile); err != nil {
		t.Fatal(err)
	}
	passFile := filepath.Join(dir, "password")
	os.WriteFile(passFile, []byte(simtest.AdminPass+"\n"), 0o600)

	var stdout, stderr framework.SyncBuffer
	cmd := exec.Command(bin, "--listen-addr", sidecarAddr, "--operator-endpoint", opLn.Addr().String(),
		"--mysql-password-file", passFile, "--dev-site-addresses", mapFile)
	cmd.Env = append(os.Environ(), protocol.EnvNamespace+"=shop", protocol.EnvGroup+"=orders", protocol.EnvSite+"=iad", protocol.EnvMySQLUser+"="+simtest.AdminUser,
		protocol.EnvLeaseTimeout+"=2s", protocol.EnvPeerCheckInterval+"=500ms")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	client := &http.Client{Timeout: 2 * time.Second}
	getStatus := func() (protocol.SiteStatus, bool) {
		var st protocol.SiteStatus
		resp, err := client.Get("http://" + sidecarAddr + protocol.PathSidecarStatus)
		if err != nil {
			return st, false
		}
		defer resp.Body.Close()
		return st, resp.StatusCode == 200 && protocol.Decode(resp.Body, &st) == nil
	}
	wait := func(what string, cond func(protocol.SiteStatus) bool) protocol.SiteStatus {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			if st, ok := getStatus(); ok && cond(st) {
				return st
			}
			if time.Now().After(deadline) {
				st, _ := getStatus()
				t.Fatalf("timed out waiting for %s; status %+v\nstderr: %s\nstdout: %s", what, st, stderr.String(), stdout.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	st := wait("the operator's confirmation", func(st protocol.SiteStatus) bool {
		return st.Fencing != nil && st.Fencing.LastDecision == "OperatorConfirms"
	})
	if st.SidecarVersion != "1.7.0-test" || st.MySQL == nil || st.MySQL.ServerUUID != iad.ServerUUID() || st.MySQL.Role != protocol.RoleSource {
		t.Errorf("status = %+v mysql %+v", st, st.MySQL)
	}

	// The operator records another active site: the binary fences mysqld.
	src.mu.Lock()
	src.g.Status.ActiveSite, src.g.Status.TopologyGeneration = "dfw", 2
	src.g.Status.LastFailover = &v1alpha1.LastFailover{Time: metav1.Now(), Target: "dfw"}
	src.mu.Unlock()
	wait("self-fence", func(st protocol.SiteStatus) bool { return st.Fencing != nil && st.Fencing.SelfFenceCount > 0 })
	if !iad.Snapshot().SuperReadOnly {
		t.Error("sidecar reports a self-fence but mysqld is writable")
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("exit after SIGTERM: %v\nstderr: %s", waitErr, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sidecar did not exit within 10s of SIGTERM")
	}
	logs := stdout.String()
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if !strings.HasPrefix(line, "{") {
			t.Errorf("log line is not JSON: %s", line)
		}
	}
	for _, want := range []string{`"msg":"sidecar listening"`, `"msg":"mysqld self-fenced: super_read_only=ON"`, `"reason":"OperatorNamesOtherSite"`, `"msg":"sidecar stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, simtest.AdminPass) || strings.Contains(stderr.String(), simtest.AdminPass) {
		t.Error("the MySQL password appears in the sidecar's output")
	}
}
