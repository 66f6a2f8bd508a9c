package render

import (
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/protocol"
)

// TestPodProvidesTheSidecarsFence: what the sidecar's fencing sequence needs
// from the pod (docs/sidecar.md, "What the fence needs from the pod") is
// rendered, consistently between my.cnf, the sidecar's environment and the
// pod spec, and a mysqlConf entry cannot take it away.
func TestPodProvidesTheSidecarsFence(t *testing.T) {
	g := minimal(t)
	g.Spec.MySQLConf = map[string]string{"admin_port": "4444", "pid-file": "/tmp/x.pid", "admin-address": "0.0.0.0"}
	r, err := RenderSite(g, 0, Config{SidecarImage: testSidecarImage, OperatorEndpoint: testOperatorEndpoint})
	if err != nil {
		t.Fatal(err)
	}
	cnf := r.ConfigMap.Data[MyCnfKey]
	for _, line := range []string{
		"read-only = ON\n", // super_read_only is persisted by the init script (TestInitScript...)
		"pid-file = " + MySQLPIDFile + "\n",
		"admin-address = 127.0.0.1\n",
		fmt.Sprintf("admin-port = %d\n", protocol.MySQLAdminPort),
		"create-admin-listener-thread = ON\n",
	} {
		if !strings.Contains(cnf, line) {
			t.Errorf("my.cnf lacks %q:\n%s", line, cnf)
		}
	}
	if strings.Contains(cnf, "4444") || strings.Contains(cnf, "/tmp/x.pid") || strings.Contains(cnf, "0.0.0.0") {
		t.Errorf("a mysqlConf entry overrode an option the fence needs:\n%s", cnf)
	}
	if len(r.IgnoredOptions) != 3 {
		t.Errorf("ignored options = %v, want the three fence options reported", r.IgnoredOptions)
	}

	pod := r.StatefulSet.Spec.Template.Spec
	if pod.ShareProcessNamespace == nil || !*pod.ShareProcessNamespace {
		t.Error("the pod does not share its process namespace: the sidecar cannot stop mysqld")
	}
	for _, c := range pod.Containers {
		if c.Name != ContainerSidecar {
			continue
		}
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		if want := fmt.Sprintf("127.0.0.1:%d", protocol.MySQLAdminPort); env[protocol.EnvMySQLAdminAddr] != want {
			t.Errorf("%s = %q, want %q", protocol.EnvMySQLAdminAddr, env[protocol.EnvMySQLAdminAddr], want)
		}
		if env[protocol.EnvMySQLPIDFile] != MySQLPIDFile {
			t.Errorf("%s = %q, want my.cnf's pid-file %s", protocol.EnvMySQLPIDFile, env[protocol.EnvMySQLPIDFile], MySQLPIDFile)
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			if m.Name == DataVolumeName && m.MountPath == path.Dir(MySQLPIDFile) && m.ReadOnly {
				mounted = true
			}
		}
		if !mounted {
			t.Errorf("the sidecar does not mount %s read-only: it cannot read the pid file", path.Dir(MySQLPIDFile))
		}
		sc := c.SecurityContext
		if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != MySQLUID || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("sidecar securityContext = %+v, want mysqld's user %d (kill(2) needs the same user)", sc, MySQLUID)
		}
		return
	}
	t.Fatal("no sidecar container")
}
