package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/backup/stamp"
	"github.com/shipstream/bloodraven/pkg/backup/upload"
)

// TestEncryptUploadCommand runs the built binary as the backup Job's upload
// step: the subcommand takes over from the operator, and its exit codes
// separate a bad command line (2) from a failed upload (1).
func TestEncryptUploadCommand(t *testing.T) {
	bin := buildOperator(t)
	staging := t.TempDir()
	writeMinimalDump(t, staging)
	pvc := func(root string) upload.Args {
		return upload.Args{StagingDir: staging, StoreType: upload.StorePVC, PVCClaim: "backups", PVCMountPath: root,
			BackupName: "nightly", BackupUID: randomUUID(t), GroupName: "orders",
			GroupUID: "5c0e4b8a-2f6d-4e1a-9b7c-3d2e1f0a9b8c", Attempt: 1}
	}
	t.Run("bad command line", func(t *testing.T) {
		code, stderr := runStep(t, bin, append(pvc("/backup").Argv(), "--s3-insecure"))
		if code != 2 || !strings.Contains(stderr, "s3-insecure") {
			t.Errorf("exit %d, stderr %q; want 2 naming the flag", code, stderr)
		}
	})
	t.Run("claim not mounted", func(t *testing.T) {
		root := t.TempDir()
		code, stderr := runStep(t, bin, pvc(root).Argv())
		if code != 1 || !strings.Contains(stderr, "not a mount point") {
			t.Errorf("exit %d, stderr %q; want 1 saying the path is not a mount point", code, stderr)
		}
		if entries, _ := os.ReadDir(root); len(entries) > 0 {
			t.Errorf("the step wrote %d entries into %s", len(entries), root)
		}
	})
	t.Run("stored on a mount point", func(t *testing.T) {
		const root = "/dev/shm"
		if !mountPoint(t, root) {
			t.Skip(root + " is not a mount point on this machine")
		}
		a := pvc(root)
		t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(root, a.BackupName+"-"+a.BackupUID)) })
		code, stderr := runStep(t, bin, a.Argv())
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(upload.StampKey(a.BackupName, a.BackupUID, a.Attempt))))
		if err != nil {
			t.Fatalf("no stamp after a successful step: %v", err)
		}
		st, err := stamp.Decode(data)
		if err != nil || st.Backup.UID != a.BackupUID || len(st.Files) != 3 {
			t.Errorf("stamp %+v (%v), want backup UID %s and 3 files", st, err, a.BackupUID)
		}
	})
}

func runStep(t *testing.T, bin string, argv []string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, argv...)
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// writeMinimalDump writes the smallest dump mysqlsh's layout allows: the
// dump-wide metadata and one schema file.
func writeMinimalDump(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		"@.json":      `{"dumper":"mysqlsh Ver 9.7.0","version":"2.0.1","origin":"dumpInstance","schemas":["shop"],"consistent":true,"gtidExecuted":"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5","binlogFile":"binlog.000001","binlogPosition":157,"begin":"2026-12-01 23:00:00"}`,
		"@.done.json": `{"end":"2026-12-01 23:00:01","dataBytes":0,"chunkFileBytes":{}}`,
		"shop.sql":    "CREATE DATABASE IF NOT EXISTS `shop`;\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// randomUUID is a random version-4 UUID, as Kubernetes UIDs are.
func randomUUID(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}

// mountPoint reports whether path is a mount point here (the fifth field of
// /proc/self/mountinfo).
func mountPoint(t *testing.T, path string) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Skipf("no /proc/self/mountinfo: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && fields[4] == path {
			return true
		}
	}
	return false
}
