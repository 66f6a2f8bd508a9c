package sidecar

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestMysqldProcess: the pid file is read strictly (a missing file or a
// value that is not another process's id is an error, never "gone"), a
// running process is not gone, and one that was killed is gone as soon as
// it has exited, before anyone reaps it (a zombie holds no sockets).
func TestMysqldProcess(t *testing.T) {
	dir := t.TempDir()
	p := mysqldProcess{pidFile: filepath.Join(dir, "mysqld.pid")}
	if _, err := p.pid(); err == nil {
		t.Fatal("a missing pid file gave a pid")
	}
	for _, bad := range []string{"", "abc", "1", "0", strconv.Itoa(os.Getpid())} {
		os.WriteFile(p.pidFile, []byte(bad+"\n"), 0o644)
		if pid, err := p.pid(); err == nil {
			t.Errorf("pid file %q gave pid %d", bad, pid)
		}
	}

	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill() // our own child, by its PID
			_ = cmd.Wait()
		}
	})
	os.WriteFile(p.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	pid, err := p.pid()
	if err != nil || pid != cmd.Process.Pid {
		t.Fatalf("pid = %d (%v), want %d", pid, err, cmd.Process.Pid)
	}
	if done, err := gone(pid); done || err != nil {
		t.Fatalf("a running process: gone = %v (%v)", done, err)
	}
	if err := p.stop(pid); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		done, err := gone(pid)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			break // not reaped yet: a zombie
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed process never counted as gone before it was reaped")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Wait()
	waited = true
	if done, err := gone(pid); !done || err != nil {
		t.Errorf("a reaped process: gone = %v (%v)", done, err)
	}
	if err := p.stop(pid); err != nil {
		t.Errorf("stopping a process that is gone: %v", err)
	}
}
