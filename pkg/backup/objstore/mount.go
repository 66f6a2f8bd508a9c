package objstore

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// mountInfoPath is the kernel's list of this process's mounts (proc(5), /proc/pid/mountinfo).
const mountInfoPath = "/proc/self/mountinfo"

// isMountPoint reports whether path (symlinks resolved) is where a filesystem is mounted. It reads
// mountinfo, which also lists bind mounts (how the kubelet mounts a volume into a container) that
// a device-number comparison with the parent directory cannot see; without /proc it falls back
// to that comparison.
func isMountPoint(path string) (bool, error) {
	f, err := os.Open(mountInfoPath)
	if errors.Is(err, fs.ErrNotExist) {
		return differentDevice(path)
	}
	if err != nil {
		return false, err
	}
	defer func() { _ = f.Close() }()
	return mountInfoHas(bufio.NewScanner(f), path)
}

// mountInfoHas scans mountinfo lines for one whose mount point (the fifth field) is path.
func mountInfoHas(sc *bufio.Scanner, path string) (bool, error) {
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if unescapeMountField(fields[4]) == path {
			return true, nil
		}
	}
	return false, sc.Err()
}

// unescapeMountField undoes mountinfo's octal escapes (\040 for a space, \011, \012, \134).
func unescapeMountField(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func differentDevice(path string) (bool, error) {
	var st, parent syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return false, err
	}
	if err := syscall.Stat(filepath.Dir(path), &parent); err != nil {
		return false, fmt.Errorf("parent of %s: %w", path, err)
	}
	return st.Dev != parent.Dev || st.Ino == parent.Ino, nil
}
