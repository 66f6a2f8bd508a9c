package sidecar

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// mysqldProcess is the local mysqld's process, named by its pid file
// (MySQL's pid-file option). The sidecar sees it through the pod's shared
// process namespace and may signal it because it runs as mysqld's user
// (docs/sidecar.md, "What the fence needs from the pod").
type mysqldProcess struct {
	pidFile string
}

// pid reads the pid file. A missing file is an error, not "no process": a
// wrong path must never pass for a stopped mysqld.
func (p mysqldProcess) pid() (int, error) {
	b, err := os.ReadFile(p.pidFile)
	if err != nil {
		return 0, fmt.Errorf("mysqld pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 || pid == os.Getpid() {
		return 0, fmt.Errorf("mysqld pid file %s: %q is not another process's id", p.pidFile, strings.TrimSpace(string(b)))
	}
	return pid, nil
}

// stop sends SIGKILL: nothing mysqld does can delay it, and no write
// commits after it (the connections close with the process).
func (p mysqldProcess) stop(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop mysqld (pid %d): %w", pid, err)
	}
	return nil
}

// gone reports whether process pid has ended: no such process, or one that
// has exited and waits only to be reaped (a zombie holds no sockets).
func gone(pid int) (bool, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err == nil {
		// The state follows the command name, which is in parentheses and
		// may itself contain ") ".
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
			switch b[i+2] {
			case 'Z', 'X', 'x':
				return true, nil
			}
			return false, nil
		}
	}
	// No procfs: ask the kernel.
	switch err := syscall.Kill(pid, 0); {
	case errors.Is(err, syscall.ESRCH):
		return true, nil
	case err == nil, errors.Is(err, syscall.EPERM):
		return false, nil
	default:
		return false, err
	}
}
