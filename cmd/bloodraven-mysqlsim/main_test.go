package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// TestBinaryServesAndStopsOnSIGTERM builds the binary, starts it on a free
// loopback port, queries it through the driver and stops it with SIGTERM.
func TestBinaryServesAndStopsOnSIGTERM(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mysqlsim")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	usersFile := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(usersFile, []byte("# test accounts\nop:pw:mysql_native_password:admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const uuid = "11111111-2222-4333-8444-555555555555"
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-name", "iad", "-server-id", "7", "-server-uuid", uuid,
		"-users-file", usersFile, "-super-read-only", "-control-addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	addrCh, controlCh := make(chan string, 1), make(chan string, 1)
	go func() {
		scanStartupLog(stderr, addrCh, controlCh)
		exited <- cmd.Wait()
	}()
	var addr string
	select {
	case addr = <-addrCh:
	case <-time.After(20 * time.Second):
		t.Fatal("the simulator did not report its address")
	}
	db, err := sql.Open("mysql", "op:pw@tcp("+addr+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var gotUUID string
	var id, sro int64
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.server_uuid, @@GLOBAL.server_id, @@GLOBAL.super_read_only").Scan(&gotUUID, &id, &sro); err != nil {
		t.Fatal(err)
	}
	if gotUUID != uuid || id != 7 || sro != 1 {
		t.Fatalf("got uuid=%s id=%d super_read_only=%d", gotUUID, id, sro)
	}
	control := <-controlCh
	resp, err := http.Post("http://"+control+"/errant?count=2", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("control API: %s", resp.Status)
	}
	var executed string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_executed").Scan(&executed); err != nil {
		t.Fatal(err)
	}
	if executed != uuid+":1-2" {
		t.Fatalf("gtid_executed after injecting 2 errant transactions = %q", executed)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not exit after SIGTERM")
	}
}

func TestFlagErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-server-uuid", "11111111-2222-4333-8444-555555555555", "-user", "a:b"}, "-server-id"},
		{[]string{"-server-id", "1", "-user", "a:b"}, "-server-uuid"},
		{[]string{"-server-id", "1", "-server-uuid", "11111111-2222-4333-8444-555555555555"}, "-user"},
		{[]string{"-server-id", "1", "-server-uuid", "11111111-2222-4333-8444-555555555555", "-user", "a:b", "-tls-cert", "x"}, "-tls-key"},
		{[]string{"-server-id", "1", "-server-uuid", "11111111-2222-4333-8444-555555555555", "-user", "a:b", "-resolve", "nohost"}, "-resolve"},
		{[]string{"-listen", "0.0.0.0:0", "-server-id", "1", "-server-uuid", "11111111-2222-4333-8444-555555555555", "-user", "a:b"}, "loopback"},
	} {
		err := run(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%v) = %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}

func TestResolverUsesFlagsThenSiteMap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sites")
	k := siteaddr.SiteKey{Namespace: "shop", Group: "orders", Site: "iad"}
	m, err := devsitemap.New(devsitemap.Entry{Site: k, MySQL: "127.0.0.1:13306"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	r, err := buildResolver(path, []string{"donor=127.0.0.1:2000", "db.example:3307=127.0.0.1:3000"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		port int
		want string
	}{
		{k.InternalServiceFQDN(), 3306, "127.0.0.1:13306"},
		{"donor", 3306, "127.0.0.1:2000"},
		{"db.example", 3307, "127.0.0.1:3000"},
		{"127.0.0.1", 4000, "127.0.0.1:4000"},
	} {
		if got := r(tc.host, tc.port); got != tc.want {
			t.Errorf("resolve(%s, %d) = %s, want %s", tc.host, tc.port, got, tc.want)
		}
	}
}

// scanStartupLog reads the simulator's JSON log until it ends and passes
// on the listening and control addresses as the process announces them.
func scanStartupLog(stderr io.Reader, addrCh, controlCh chan<- string) {
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		switch rec["msg"] {
		case "listening":
			addrCh <- rec["addr"].(string)
		case "control API listening":
			controlCh <- rec["controlAddr"].(string)
		}
	}
}
