package framework

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// process is one child process the framework started. It is stopped by its
// own PID only: the framework never signals anything it did not start.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
}

// starter runs every exec on one OS thread that never exits. Pdeathsig is
// delivered when the *thread* that forked the child dies, so pinning the forks
// to a permanent thread makes "test binary died" (panic, timeout, SIGKILL)
// reliably kill the children too, instead of leaving an apiserver behind.
var starter = make(chan func())

func init() {
	go func() {
		runtime.LockOSThread()
		for f := range starter {
			f()
		}
	}()
}

// startProcess launches bin with args, sending stdout and stderr to logPath.
func startProcess(name, bin string, args []string, logPath string) (*process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	return launch(name, exec.Command(bin, args...), logFile, logPath)
}

// launch starts cmd from the starter thread (so Pdeathsig holds) with its
// output in logFile, and reaps it in the background.
func launch(name string, cmd *exec.Cmd, logFile *os.File, logPath string) (*process, error) {
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	errc := make(chan error, 1)
	starter <- func() { errc <- cmd.Start() }
	if err := <-errc; err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has already ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process (by PID), waits up to grace, then SIGKILLs it.
func (p *process) stop(grace time.Duration) error {
	if done, _ := p.exited(); done {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s (pid %d): %w", p.name, p.cmd.Process.Pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return nil
}

// tail returns the last n bytes of the process log, for failure messages.
func (p *process) tail(n int64) string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(-n, 2)
	}
	buf := make([]byte, n)
	k, _ := f.Read(buf)
	return string(buf[:k])
}
