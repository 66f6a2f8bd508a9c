package s3server

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// TestServerServesS3AndStopsByPID: a started server stores an object in its data directory,
// refuses other credentials, keeps its credentials out of its argv, and is gone after Stop.
func TestServerServesS3AndStopsByPID(t *testing.T) {
	s := StartT(t)
	if !strings.HasPrefix(s.Endpoint(), "http://127.0.0.1:") {
		t.Fatalf("endpoint %q is not on 127.0.0.1", s.Endpoint())
	}
	if err := s.Bucket("smoke"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	body := []byte("hello versitygw\n")
	if _, err := s.Client().PutObject(ctx, "smoke", "a/b.txt", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	onDisk, err := os.ReadFile(filepath.Join(s.DataDir(), "smoke", "a", "b.txt"))
	if err != nil || !bytes.Equal(onDisk, body) {
		t.Fatalf("object on disk: %q, %v; want %q", onDisk, err, body)
	}

	host := strings.TrimPrefix(s.Endpoint(), "http://")
	other, err := minio.New(host, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, "wrong-"+s.SecretKey, ""), Region: Region})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.StatObject(ctx, "smoke", "a/b.txt", minio.StatObjectOptions{}); err == nil {
		t.Fatal("a wrong secret key could read the object's metadata")
	}

	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(s.PID()), "cmdline"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(cmdline, []byte(s.SecretKey)) || bytes.Contains(cmdline, []byte(s.AccessKey)) {
		t.Fatalf("credentials in argv: %q", cmdline)
	}

	pid := s.PID()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if !s.Exited() {
		t.Fatal("server still running after Stop")
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("pid %d still exists after Stop", pid)
	}
}

// TestStartTStopsServerWhenTestFails runs this test binary again as a child whose test starts a
// server and fails; once the child is done, the server it started must be gone.
func TestStartTStopsServerWhenTestFails(t *testing.T) {
	pidFile := os.Getenv("S3SERVER_CHILD_PID_FILE")
	if pidFile != "" {
		s := StartT(t)
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(s.PID())), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Fatal("failing on purpose, with the server running")
	}
	if testing.Short() {
		t.Skip("needs bin/versitygw")
	}
	pidFile = filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command(os.Args[0], "-test.run=^TestStartTStopsServerWhenTestFails$", "-test.count=1")
	cmd.Env = append(os.Environ(), "S3SERVER_CHILD_PID_FILE="+pidFile)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "failing on purpose") {
		t.Fatalf("the child test did not fail as planned (%v):\n%s", err, out)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the child wrote no PID: %v\n%s", err, out)
	}
	pid, _ := strconv.Atoi(string(data))
	if pid <= 0 {
		t.Fatalf("bad PID %q", data)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("versitygw (pid %d) still runs after its failed test ended", pid)
	}
}
