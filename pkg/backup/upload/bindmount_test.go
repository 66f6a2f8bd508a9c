package upload

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/backup/objstore"
)

// childArgsEnv carries a child process's step arguments (Argv, one a
// line) in TestPVCOnABindMount.
const childArgsEnv = "UPLOAD_TEST_BINDMOUNT_ARGV"

// TestPVCOnABindMount runs the public Run in a child process of this test
// binary whose private mount namespace has a directory bind-mounted onto
// the mount path, as a kubelet mounts a claim into a container: the
// step's mount-point check passes and the dump lands in the bound
// directory, where it is judged; the same path without the bind is
// refused at start. The bind never shows in this process's mounts.
func TestPVCOnABindMount(t *testing.T) {
	if raw := os.Getenv(childArgsEnv); raw != "" {
		a, err := Parse(strings.Split(raw, "\n"))
		if err == nil {
			err = Run(context.Background(), a, os.Stderr)
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and util-linux's unshare to bind-mount in a private mount namespace")
	}
	claimDir, mountPath := t.TempDir(), t.TempDir()
	wd := fileWorld(t, claimDir, Args{StoreType: StorePVC, PVCClaim: "orders-backups", PVCMountPath: mountPath},
		func(a Args) (objstore.Store, error) { return openStore(a, true) })
	f := writeDump(t, false)
	a := wd.argsFor(t, f, step{attempt: 0, passphrase: testPassphrase})
	child := func(bind bool) (string, error) {
		script := `shift 2 && exec "$@"`
		if bind {
			script = `mount --bind "$1" "$2" && ` + script
		}
		argv := []string{unshare, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "sh", claimDir, mountPath}
		argv = append(argv, os.Args[0], "-test.run=^TestPVCOnABindMount$", "-test.count=1")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(a.Argv(), "\n"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	if out, err := child(false); err == nil || !strings.Contains(out, "is not a mount point") {
		t.Fatalf("without the bind mount the step %v:\n%s", err, out)
	}
	if out, err := child(true); err != nil {
		t.Fatalf("on the bind mount: %v\n%s", err, out)
	}
	wd.checkStored(t, a, f, testPassphrase)
	if isMountPoint(t, mountPath) {
		t.Error("the child's bind mount shows in the test's own mount namespace")
	}
	if ents, _ := os.ReadDir(mountPath); len(ents) != 0 {
		t.Errorf("the mount path itself holds %d entries: the step wrote past the bind", len(ents))
	}
}
