package objectsintegration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/render"
)

// TestInitScriptSecretFollowsTheCredentials: the group's first-boot init
// script is a Secret the group controls, rendered from the operator and
// app Secrets, mounted by every site's mysqld at /docker-entrypoint-initdb.d
// with MYSQL_ROOT_PASSWORD from the operator Secret; a changed password
// reaches the script.
func TestInitScriptSecretFollowsTheCredentials(t *testing.T) {
	installDNSCRD(t)
	e := newEnv(t)
	g := e.createGroup(sample(t))
	var script string
	eventually(t, waitFor, "init script Secret rendered", func() error {
		sec, err := e.kube.CoreV1().Secrets(e.ns).Get(context.Background(), render.InitDBSecretName(g.Name), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !metav1.IsControlledBy(sec, e.group(g.Name)) {
			return fmt.Errorf("Secret %s is not controlled by the group", sec.Name)
		}
		script = string(sec.Data[render.InitDBKey])
		return nil
	})
	for _, want := range []string{
		"SET SESSION sql_log_bin = 0;", "CREATE USER 'bloodraven'@'%' IDENTIFIED BY 'bloodraven-pw';",
		"GRANT ALL PRIVILEGES ON *.* TO 'bloodraven'@'%' WITH GRANT OPTION;", "CREATE USER 'app'@'%' IDENTIFIED BY 'app-pw';",
		"SET PERSIST super_read_only = ON;",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("init script lacks %q:\n%s", want, script)
		}
	}
	for _, site := range []string{"iad", "pdx", "reader"} {
		sts, err := e.statefulSet(g.Name, site)
		if err != nil {
			t.Fatal(err)
		}
		checkInitMount(t, sts.Spec.Template.Spec, g.Spec.Credentials.OperatorSecretName, render.InitDBSecretName(g.Name))
	}

	op, err := e.kube.CoreV1().Secrets(e.ns).Get(context.Background(), g.Spec.Credentials.OperatorSecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	op.Data["password"] = []byte("rotated-pw")
	if _, err := e.kube.CoreV1().Secrets(e.ns).Update(context.Background(), op, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "init script follows the operator Secret", func() error {
		sec, err := e.kube.CoreV1().Secrets(e.ns).Get(context.Background(), render.InitDBSecretName(g.Name), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !strings.Contains(string(sec.Data[render.InitDBKey]), "IDENTIFIED BY 'rotated-pw'") {
			return fmt.Errorf("the script still has the old password")
		}
		return nil
	})
}

func checkInitMount(t *testing.T, pod corev1.PodSpec, operatorSecret, initSecret string) {
	t.Helper()
	vol := ""
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == initSecret {
			vol = v.Name
		}
	}
	if vol == "" {
		t.Fatalf("no volume of Secret %s", initSecret)
	}
	for _, c := range pod.Containers {
		if c.Name != render.ContainerMySQL {
			continue
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || m.Name == vol && m.MountPath == "/docker-entrypoint-initdb.d"
		}
		if !mounted {
			t.Errorf("mysqld does not mount %s at /docker-entrypoint-initdb.d", initSecret)
		}
		root := false
		for _, ev := range c.Env {
			root = root || ev.Name == "MYSQL_ROOT_PASSWORD" && ev.ValueFrom != nil && ev.ValueFrom.SecretKeyRef != nil &&
				ev.ValueFrom.SecretKeyRef.Name == operatorSecret && ev.ValueFrom.SecretKeyRef.Key == "MYSQL_ROOT_PASSWORD"
		}
		if !root {
			t.Errorf("mysqld's MYSQL_ROOT_PASSWORD does not come from %s's MYSQL_ROOT_PASSWORD", operatorSecret)
		}
		return
	}
	t.Fatal("no mysqld container")
}
