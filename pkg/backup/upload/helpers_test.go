package upload

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// isMountPoint reports whether path is a mount point in this process's
// mount namespace (the fifth field of /proc/self/mountinfo).
func isMountPoint(t *testing.T, path string) bool {
	t.Helper()
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

func hexString(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// randomUUID is a random version-4 UUID, as Kubernetes UIDs are.
func randomUUID(t *testing.T) string {
	t.Helper()
	h := hexString(t, 16)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}

// readCreds reads the S3 credentials a's step will use.
func readCreds(t *testing.T, a Args) (access, secret string) {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(a.S3CredentialsDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	return read(AccessKeyFile), read(SecretKeyFile)
}
