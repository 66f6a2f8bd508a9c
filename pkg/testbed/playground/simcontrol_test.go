package playground

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/e2e/framework"
)

// The site's fault API crashes mysqld as a process kill: POST /crash sends
// SIGKILL to the bloodraven-mysqlsim process, which stays down (GET /state
// says so, other faults get 503) until POST /restart starts a new process
// that recovers from the site's data directory.
func TestFaultAPICrashKillsAndRestartRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs bloodraven-mysqlsim")
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/bloodraven-mysqlsim").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	t.Setenv("BIN_DIR", bin)
	ports := make([]int, 2)
	for i := range ports {
		p, err := framework.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	plan := SitePlan{Name: "iad", ServerID: 1, ServerUUID: uuidFor("test/iad"),
		MySQLAddr: fmt.Sprintf("127.0.0.1:%d", ports[0]), ControlAddr: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	a := NewNodeAgent(AgentConfig{Sites: []SitePlan{plan}, Dir: t.TempDir(),
		Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); a.stopAll() })
	a.serveControlFronts(ctx)
	s := a.sites["iad"]
	a.mu.Lock()
	s.dataDir = filepath.Join(a.dir, "volumes", "data-iad", "mysql")
	s.fs = testPodFS(t, s.dataDir)
	err := a.startSimLocked(s)
	first := s.sim
	a.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", "op:pw@tcp("+plan.MySQLAddr+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{"SET GLOBAL super_read_only = OFF", "CREATE DATABASE kept"} { // started fenced, as the rendered my.cnf
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	if code, body := call(t, http.MethodPost, plan.ControlURL()+"/crash"); code != http.StatusOK {
		t.Fatalf("/crash: %d %s", code, body)
	}
	done, werr := first.Exited()
	if !done || werr == nil || !strings.Contains(werr.Error(), "killed") {
		t.Fatalf("after /crash the process (pid %d) exited=%v with %v; want killed by SIGKILL", first.PID(), done, werr)
	}
	if code, body := call(t, http.MethodGet, plan.ControlURL()+"/state"); code != http.StatusOK || !strings.Contains(body, `"running":false`) {
		t.Fatalf("/state while down: %d %s", code, body)
	}
	if code, _ := call(t, http.MethodPost, plan.ControlURL()+"/freeze"); code != http.StatusServiceUnavailable {
		t.Fatalf("/freeze while down: %d, want 503", code)
	}

	if code, body := call(t, http.MethodPost, plan.ControlURL()+"/restart"); code != http.StatusOK {
		t.Fatalf("/restart: %d %s", code, body)
	}
	a.mu.Lock()
	second := s.sim
	a.mu.Unlock()
	if second == nil || second.PID() == first.PID() {
		t.Fatal("/restart did not start a new process")
	}
	code, body := call(t, http.MethodGet, plan.ControlURL()+"/state")
	var st struct{ Running bool }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil || !st.Running {
		t.Fatalf("/state after restart: %d %s", code, body)
	}
	var executed string
	var sro int
	if err := db.QueryRow("SELECT @@GLOBAL.gtid_executed, @@GLOBAL.super_read_only").Scan(&executed, &sro); err != nil || executed != plan.ServerUUID+":1" || sro != 1 {
		t.Fatalf("after the restart gtid_executed = %q, super_read_only = %d (%v); want %s:1 from the data directory and the configured fence", executed, sro, err, plan.ServerUUID)
	}
}

func call(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// testPodFS lays out a pod's mysqld filesystem as preparePodFS would from
// the rendered objects: the image's my.cnf, a my.cnf in conf.d, an init
// script creating the test's account and fencing the server, the root
// password, and the data volume.
func testPodFS(t *testing.T, dataDir string) *podFS {
	t.Helper()
	base := t.TempDir()
	fs := &podFS{root: filepath.Join(base, "root"), envFile: filepath.Join(base, "mysqld.env")}
	for path, text := range map[string]string{
		"etc/my.cnf":                        imageMyCnf,
		"etc/mysql/conf.d/site.cnf":         "[mysqld]\nserver-id = 1\nread-only = ON\nskip-replica-start = ON\npid-file = /var/lib/mysql/mysqld.pid\n",
		"docker-entrypoint-initdb.d/10.sql": "SET sql_log_bin = 0;\nCREATE USER 'op'@'%' IDENTIFIED BY 'pw';\nGRANT ALL ON *.* TO 'op'@'%' WITH GRANT OPTION;\nSET PERSIST super_read_only = ON;\n",
	} {
		if err := writeFile(filepath.Join(fs.root, path), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeFile(fs.envFile, []byte("MYSQL_ROOT_PASSWORD=rootpw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(fs.root, "var/lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dataDir, filepath.Join(fs.root, "var/lib/mysql")); err != nil {
		t.Fatal(err)
	}
	return fs
}
