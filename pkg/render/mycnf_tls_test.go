package render

import (
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/protocol"
)

// TestMyCnfTLSIsOperatorOwned: with spec.tls, mysqld serves the mounted
// Secret and requires secure transport; a mysqlConf entry that would turn
// that off or point at other files is ignored and reported; the sidecar
// mounts the same Secret and is told where. Without spec.tls none of it.
func TestMyCnfTLSIsOperatorOwned(t *testing.T) {
	g := minimal(t)
	g.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "orders-tls"}
	g.Spec.MySQLConf = map[string]string{"require_secure_transport": "OFF", "ssl_cert": "/tmp/other.crt"}
	cnf, ignored, err := MyCnf(g, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"ssl-ca = /etc/mysql/tls/ca.crt\n", "ssl-cert = /etc/mysql/tls/tls.crt\n",
		"ssl-key = /etc/mysql/tls/tls.key\n", "require-secure-transport = ON\n"} {
		if !strings.Contains(cnf, line) {
			t.Errorf("my.cnf lacks %q:\n%s", line, cnf)
		}
	}
	if strings.Contains(cnf, "OFF") || strings.Contains(cnf, "/tmp/other.crt") {
		t.Errorf("my.cnf keeps a mysqlConf TLS override:\n%s", cnf)
	}
	if got, want := strings.Join(ignored, ","), "spec.mysqlConf.require-secure-transport,spec.mysqlConf.ssl-cert"; got != want {
		t.Errorf("ignored = %s, want %s", got, want)
	}
	sc := sidecarContainer(g, 0, Config{OperatorEndpoint: "op:8082"})
	var dir string
	for _, e := range sc.Env {
		if e.Name == protocol.EnvMySQLTLSDir {
			dir = e.Value
		}
	}
	mounted := false
	for _, m := range sc.VolumeMounts {
		mounted = mounted || (m.Name == TLSVolumeName && m.MountPath == TLSDir && m.ReadOnly)
	}
	if dir != TLSDir || !mounted {
		t.Errorf("sidecar: %s=%q, TLS Secret mounted read-only at %s: %v", protocol.EnvMySQLTLSDir, dir, TLSDir, mounted)
	}

	g.Spec.TLS = nil
	cnf, _, _ = MyCnf(g, 0)
	if strings.Contains(cnf, "ssl-") || strings.Contains(cnf, "require-secure-transport") {
		t.Errorf("my.cnf without spec.tls names TLS options:\n%s", cnf)
	}
	for _, e := range sidecarContainer(g, 0, Config{OperatorEndpoint: "op:8082"}).Env {
		if e.Name == protocol.EnvMySQLTLSDir {
			t.Errorf("sidecar without spec.tls gets %s", e.Name)
		}
	}
}
