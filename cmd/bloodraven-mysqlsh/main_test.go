package main

import (
	"bytes"
	"database/sql"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/backup/dump"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// TestBinaryAsAJobRunsIt builds the stand-in and runs it as a process with
// the command line and stdin a backup Job's dump step gives it: the exit
// code and stderr are what a kubelet would report.
func TestBinaryAsAJobRunsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "mysqlsh")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	srv := simtest.Start(t, mysqlsim.Config{})
	db, err := sql.Open("mysql", simtest.AdminUser+":"+simtest.AdminPass+"@tcp("+srv.Addr()+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"CREATE DATABASE shop", "CREATE TABLE shop.orders (id BIGINT)", "INSERT INTO shop.orders VALUES (1), (2)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	host, port, _ := net.SplitHostPort(srv.Addr())
	runBin := func(out string) (int, string) {
		cmd := exec.Command(bin, "--host", host, "--port", port, "--user", simtest.AdminUser, "--passwords-from-stdin",
			"--ssl-mode=DISABLED", "--", "util", "dump-instance", out, "--threads=2", "--consistent=true", "--users=false")
		cmd.Stdin = strings.NewReader(simtest.AdminPass + "\n")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), stderr.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, stderr.String()
	}
	out := filepath.Join(t.TempDir(), "dump")
	if code, stderr := runBin(out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m, err := dump.Read(out)
	if err != nil || !m.Complete || m.GTIDExecuted != srv.Snapshot().Executed.OneLine() {
		t.Fatalf("dump %+v, %v; server executed %s", m, err, srv.Snapshot().Executed.OneLine())
	}
	// The same directory again: not empty, refused with mysqlsh's exit code
	// for an argument error.
	if code, stderr := runBin(out); code != 10 || !strings.Contains(stderr, "is not empty") {
		t.Fatalf("second run into the same directory: exit %d, %s", code, stderr)
	}
	if entries, _ := os.ReadDir(out); len(entries) != len(m.Files) {
		t.Fatalf("the refused run changed the directory: %d entries, %d before", len(entries), len(m.Files))
	}
}
