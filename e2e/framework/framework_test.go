package framework

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests start their own control planes (not through Main) because
// what they check is the framework's own lifecycle.

func requireBinaries(t *testing.T) {
	t.Helper()
	for _, b := range requiredBinaries(Options{}) {
		if _, err := os.Stat(filepath.Join(BinDir(), b)); err != nil {
			t.Fatalf("%s missing in %s: run `make tools`", b, BinDir())
		}
	}
}

func TestStopEndsEveryProcessAndRemovesDir(t *testing.T) {
	requireBinaries(t)
	cp, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	pids, dir := cp.PIDs(), cp.Dir
	if len(pids) != 2 {
		t.Fatalf("started %v, want etcd and kube-apiserver", pids)
	}
	cp.Stop()
	for name, pid := range pids {
		if processAlive(pid) {
			t.Errorf("%s (pid %d) still alive after Stop", name, pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("directory %s still exists after Stop (err=%v)", dir, err)
	}
}

type childReport struct {
	PIDs map[string]int
	Dir  string
}

// TestPanickingTestLeavesNothing runs a child test binary that starts a
// control plane and then panics, as a broken test would. Its processes must
// die with it, and the next framework start must remove its directory.
func TestPanickingTestLeavesNothing(t *testing.T) {
	if report := os.Getenv("FRAMEWORK_PANIC_CHILD_REPORT"); report != "" {
		panicChild(report)
		return
	}
	requireBinaries(t)
	reportPath := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanickingTestLeavesNothing$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FRAMEWORK_PANIC_CHILD_REPORT="+reportPath)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("child test binary should have panicked; output:\n%s", out)
	}
	data, rerr := os.ReadFile(reportPath)
	if rerr != nil {
		t.Fatalf("child did not report its control plane (%v); output:\n%s", rerr, out)
	}
	var rep childReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for name, pid := range rep.PIDs {
		for processAlive(pid) && !isZombie(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if processAlive(pid) && !isZombie(pid) {
			t.Errorf("%s (pid %d) outlived the panicking test binary", name, pid)
			_ = syscall.Kill(pid, syscall.SIGKILL) // ours: the child we started started it
		}
	}
	removeStaleDirs()
	if _, err := os.Stat(rep.Dir); !os.IsNotExist(err) {
		t.Errorf("directory %s of the dead test binary was not removed", rep.Dir)
		_ = os.RemoveAll(rep.Dir)
	}
}

func panicChild(reportPath string) {
	cp, err := Start(context.Background(), Options{})
	if err != nil {
		panic(err)
	}
	data, _ := json.Marshal(childReport{PIDs: cp.PIDs(), Dir: cp.Dir})
	if err := os.WriteFile(reportPath, data, 0o600); err != nil {
		panic(err)
	}
	panic("simulated test failure")
}

// isZombie reports whether pid has exited but not been reaped (it is then
// re-parented to init, which reaps it shortly).
func isZombie(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// Format: pid (comm) state ...; comm may contain spaces, so find the last ')'.
	for i := len(data) - 1; i >= 0; i-- {
		if data[i] == ')' && i+2 < len(data) {
			return data[i+2] == 'Z'
		}
	}
	return false
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestFailedStartStopsWhatItStarted makes Start fail after etcd and
// kube-apiserver are up (a CRD directory without CRDs): the error must say
// why, and nothing it started may be left running or on disk.
func TestFailedStartStopsWhatItStarted(t *testing.T) {
	requireBinaries(t)
	before := childPIDs()
	cp, err := Start(context.Background(), Options{CRDDir: t.TempDir()})
	if err == nil {
		cp.Stop()
		t.Fatal("Start with an empty CRD directory succeeded")
	}
	if !strings.Contains(err.Error(), "no CustomResourceDefinition found") {
		t.Fatalf("error = %v, want it to say no CRD was found", err)
	}
	for pid := range childPIDs() {
		if !before[pid] {
			t.Errorf("child process %d is still running after a failed Start", pid)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+strconv.Itoa(os.Getpid())+"-*"))
	if len(dirs) > 0 {
		t.Errorf("failed Start left %v behind", dirs)
	}
}

// childPIDs lists the live (non-zombie) direct children of this process.
func childPIDs() map[int]bool {
	kids := map[int]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(data), ')')
		fields := strings.Fields(string(data[i+1:]))
		if len(fields) > 1 && fields[0] != "Z" && fields[1] == strconv.Itoa(os.Getpid()) {
			kids[pid] = true
		}
	}
	return kids
}
