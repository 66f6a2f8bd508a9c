package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadOptionFileStopsTheBinary: an option file mysqld would refuse makes
// the process exit non-zero with mysqld's message, as a rendering mistake
// makes the mysqld container crash-loop.
func TestBadOptionFileStopsTheBinary(t *testing.T) {
	bin := simBinary(t)
	for _, tc := range []struct{ name, cnf, want string }{
		{"unknown option", "[mysqld]\nserver-id = 3\nno_such_option = 1\n", "unknown variable 'no-such-option=1'"},
		{"bad value", "[mysqld]\nserver-id = 3\nsuper-read-only = perhaps\n", "Error while setting value 'perhaps' to 'super_read_only'"},
		{"malformed file", "server-id = 3\n", "Found option without preceding group in config file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "etc/my.cnf"), []byte(tc.cnf), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "-listen", "127.0.0.1:0", "-root", root, "-defaults-file", "/etc/my.cnf",
				"-datadir", t.TempDir(), "-user", "op:pw")
			out, err := cmd.CombinedOutput()
			if err == nil || cmd.ProcessState == nil || cmd.ProcessState.ExitCode() == 0 {
				t.Fatalf("the binary did not fail: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}

// TestBinaryFirstBootFromFiles: the binary started as the playground
// starts it (root, option file, env file, init directory) creates root
// and runs the init script once.
func TestBinaryFirstBootFromFiles(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"etc/my.cnf":                       "[mysqld]\ndatadir=/var/lib/mysql\n!includedir /etc/mysql/conf.d/\n",
		"etc/mysql/conf.d/a.cnf":           "[mysqld]\nserver-id = 5\nplugin-load-add = mysql_clone.so\n",
		"docker-entrypoint-initdb.d/1.sql": "CREATE DATABASE fromscript;\n",
		"env":                              "MYSQL_ROOT_PASSWORD=rootpw\n",
	}
	for p, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-root", root, "-defaults-file", "/etc/my.cnf", "-env-file", filepath.Join(root, "env"),
		"-initdb-dir", "/docker-entrypoint-initdb.d", "-server-uuid", killTestUUID}
	p := startSimArgs(t, args)
	db := p.dbAs(t, "root", "rootpw")
	var n int
	if err := db.QueryRow("SELECT @@server_id").Scan(&n); err != nil || n != 5 {
		t.Fatalf("server_id = %d, %v; want 5 from the option file", n, err)
	}
	if _, err := db.Exec("CREATE DATABASE fromscript"); err == nil || !strings.Contains(err.Error(), "1007") {
		t.Fatalf("CREATE DATABASE fromscript: %v, want 1007 (the init script created it)", err)
	}
}
