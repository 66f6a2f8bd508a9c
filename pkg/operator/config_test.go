package operator

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

var minimal = map[string]string{"POD_NAMESPACE": "bloodraven", "BLOODRAVEN_SIDECAR_IMAGE": "registry.example/sidecar:1"}

func parse(t *testing.T, args []string, vars map[string]string) (Config, error) {
	t.Helper()
	merged := map[string]string{}
	for k, v := range minimal {
		merged[k] = v
	}
	for k, v := range vars {
		merged[k] = v
	}
	return ParseConfig(args, env(merged), io.Discard)
}

func TestDefaults(t *testing.T) {
	c, err := parse(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.EscrowTLSAddr != ":8443" || c.MetricsAddr != ":8080" || c.ProbeAddr != ":8081" || c.AuxiliaryAddr != ":8082" {
		t.Errorf("listener defaults = %s %s %s %s", c.EscrowTLSAddr, c.MetricsAddr, c.ProbeAddr, c.AuxiliaryAddr)
	}
	if c.LeaderElection.Namespace != "bloodraven" || c.LeaderElection.Name != "bloodraven-leader" {
		t.Errorf("lease = %s/%s", c.LeaderElection.Namespace, c.LeaderElection.Name)
	}
	if c.TLSEnabled() || c.DeployAPIEnabled || c.DevSiteAddresses != "" || len(c.Namespaces) != 0 || c.BackupUploadImage != "" {
		t.Errorf("optional features must be off by default: %+v", c)
	}
	if c.DeployAPIAudience != "bloodraven-deploy" {
		t.Errorf("audience = %q", c.DeployAPIAudience)
	}
	if !strings.Contains(c.LeaderElection.Identity, "_") {
		t.Errorf("identity %q lacks a random suffix", c.LeaderElection.Identity)
	}
}

func TestFlagBeatsEnvBeatsDefault(t *testing.T) {
	c, err := parse(t, []string{"--metrics-addr=127.0.0.1:9000", "--namespaces", "a, b,"},
		map[string]string{"BLOODRAVEN_METRICS_ADDR": "127.0.0.1:9100", "BLOODRAVEN_ESCROW_TLS_ADDR": "127.0.0.1:9443",
			"BLOODRAVEN_LEADER_ELECT_LEASE_DURATION": "30s", "BLOODRAVEN_DEPLOY_API_ENABLED": "false"})
	if err != nil {
		t.Fatal(err)
	}
	if c.MetricsAddr != "127.0.0.1:9000" {
		t.Errorf("flag must win over env: %q", c.MetricsAddr)
	}
	if c.EscrowTLSAddr != "127.0.0.1:9443" {
		t.Errorf("env must win over default: %q", c.EscrowTLSAddr)
	}
	if c.LeaderElection.LeaseDuration != 30*time.Second {
		t.Errorf("lease duration = %s", c.LeaderElection.LeaseDuration)
	}
	if strings.Join(c.Namespaces, "|") != "a|b" {
		t.Errorf("namespaces = %q", c.Namespaces)
	}
}

func TestInvalidConfigurationNamesTheFlag(t *testing.T) {
	cases := []struct {
		name string
		args []string
		vars map[string]string
		want string
	}{
		{"no lease namespace", nil, map[string]string{"POD_NAMESPACE": ""}, "--leader-elect-namespace is required"},
		{"renew >= lease", []string{"--leader-elect-lease-duration=10s", "--leader-elect-renew-deadline=10s"}, nil, "--leader-elect-lease-duration (10s) must be longer than --leader-elect-renew-deadline (10s)"},
		{"retry too long", []string{"--leader-elect-retry-period=9s"}, nil, "--leader-elect-renew-deadline (10s) must be longer than 1.2 x --leader-elect-retry-period (9s)"},
		{"margin too small", []string{"--leader-elect-lease-duration=10500ms"}, nil, "minus --leader-elect-renew-deadline (10s) minus --leader-elect-retry-period (2s) is -1.5s, must be at least 1s"},
		// Issue 21, hole 3: lease − renew is 2.5 s, but the leader may act
		// a retry period (2 s) longer than the renew deadline: 0.5 s of
		// real margin, below any statement's deadline.
		{"no real margin once the retry period counts", []string{"--leader-elect-lease-duration=12500ms"}, nil, "minus --leader-elect-retry-period (2s) is 500ms, must be at least 1s"},
		{"bad env duration", nil, map[string]string{"BLOODRAVEN_LEADER_ELECT_RETRY_PERIOD": "2"}, `--leader-elect-retry-period: BLOODRAVEN_LEADER_ELECT_RETRY_PERIOD="2" is not a duration`},
		{"bad env bool", nil, map[string]string{"BLOODRAVEN_DEPLOY_API_ENABLED": "yes please"}, "--deploy-api-enabled: BLOODRAVEN_DEPLOY_API_ENABLED"},
		{"bad address", []string{"--probe-addr=8081"}, nil, `--probe-addr: "8081" is not host:port`},
		{"same port", []string{"--probe-addr=:8080"}, nil, "--metrics-addr and --probe-addr both use port 8080"},
		{"cert without key", []string{"--tls-cert-file=/x"}, nil, "--tls-cert-file and --tls-key-file must be set together"},
		{"deploy api without TLS", []string{"--deploy-api-enabled"}, nil, "--deploy-api-enabled requires the TLS listener"},
		{"no sidecar image", nil, map[string]string{"BLOODRAVEN_SIDECAR_IMAGE": ""}, "--sidecar-image (BLOODRAVEN_SIDECAR_IMAGE) is required"},
		{"upload image with a space", []string{"--backup-upload-image=ghcr.io/x y"}, nil, `--backup-upload-image: "ghcr.io/x y" contains whitespace`},
		{"bad namespace", []string{"--namespaces=Shop"}, nil, `--namespaces: "Shop"`},
		{"bad log level", []string{"--log-level=loud"}, nil, "--log-level: unknown log level"},
		{"workers", []string{"--workers=0"}, nil, "--workers: 0 is outside 1..64"},
		{"grace", []string{"--shutdown-grace-period=10ms"}, nil, "--shutdown-grace-period: 10ms is shorter than 1s"},
		{"positional", []string{"extra"}, nil, `unexpected argument "extra"`},
		{"unknown flag", []string{"--leader-elect=false"}, nil, "flag provided but not defined: -leader-elect"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse(t, c.args, c.vars)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

func TestSafetyMarginAndStatementTimeout(t *testing.T) {
	c, err := parse(t, []string{"--leader-elect-lease-duration=20s", "--leader-elect-renew-deadline=12s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	le := c.LeaderElection
	if le.SafetyMargin() != 6*time.Second {
		t.Fatalf("margin = %s, want 20s-12s-2s", le.SafetyMargin())
	}
	if st := le.StatementTimeout(); st <= 0 || st >= le.SafetyMargin() {
		t.Fatalf("statement timeout %s must be positive and below the margin %s", st, le.SafetyMargin())
	}
}

// KUBECONFIG may be a list, as kubectl reads it: files that do not exist
// are skipped and the first file that sets the current context wins.
func TestKubeconfigList(t *testing.T) {
	dir := t.TempDir()
	write := func(name, server string) string {
		path := filepath.Join(dir, name)
		must(t, os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \""+server+"\"}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"), 0o600))
		return path
	}
	first, second := write("first", "https://127.0.0.1:6443"), write("second", "https://127.0.0.1:7443")
	rc, err := restConfig(filepath.Join(dir, "absent") + string(filepath.ListSeparator) + first + string(filepath.ListSeparator) + second)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://127.0.0.1:6443" {
		t.Errorf("host = %s, want the first existing file's", rc.Host)
	}
	if _, err := restConfig(filepath.Join(dir, "absent")); err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("a single missing file: err = %v, want one naming --kubeconfig", err)
	}
	empty := filepath.Join(dir, "absent") + string(filepath.ListSeparator) + filepath.Join(dir, "also-absent")
	if _, err := restConfig(empty); err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("a list of missing files: err = %v, want one naming --kubeconfig", err)
	}
}
