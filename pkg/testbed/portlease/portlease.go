// Package portlease hands test servers loopback ports that stay theirs
// across a restart.
//
// A server that must come back on the same port after a crash (a
// simulated mysqld, whose address is in the replicas' and the operator's
// configuration) cannot take a kernel-chosen port: once it stops, the
// kernel may give that port to any other ":0" listener or to any outgoing
// connection's local end, and the restart fails with "address already in
// use" (stop 34's clean-clone CI failed on exactly this). A lease is a
// port outside the kernel's ephemeral range, which the kernel never hands
// out by itself, locked with flock(2) on a file named after it, so no
// other process that leases here takes it while the holder lives. The
// lock goes with the process, so a crashed test leaks nothing.
package portlease

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Lease is one leased port. The zero Lease holds nothing.
type Lease struct {
	Port int
	lock *os.File
	once sync.Once
}

// Addr is the lease's loopback host:port.
func (l *Lease) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Port)) }

// Release gives the port back: another lease may take it from then on.
func (l *Lease) Release() {
	if l == nil || l.lock == nil {
		return
	}
	l.once.Do(func() { l.lock.Close() }) // closing the file drops the flock
}

// attempts bounds the search; with ten thousand candidates and a few
// hundred ports in use at once, it is never reached in practice.
const attempts = 500

// candidate picks the next port to try; tests replace it.
var candidate = randomCandidate

// lockDir holds the lock files; tests replace it.
var lockDir = filepath.Join(os.TempDir(), "bloodraven-port-leases")

// Take leases a free loopback port.
func Take() (*Lease, error) {
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return nil, fmt.Errorf("portlease: %w", err)
	}
	low, high := ephemeralRange()
	for range attempts {
		port, ok := candidate(low, high)
		if !ok {
			return nil, fmt.Errorf("portlease: no port outside the ephemeral range %d-%d", low, high)
		}
		if l, err := tryPort(port); err == nil {
			return l, nil
		} else if !errors.Is(err, errTaken) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("portlease: no free port after %d attempts", attempts)
}

var errTaken = errors.New("port taken")

// tryPort locks port's file, then checks that nothing listens on the
// port (a process that does not lease here may hold it).
func tryPort(port int) (*Lease, error) {
	f, err := os.OpenFile(filepath.Join(lockDir, strconv.Itoa(port)+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("portlease: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, errTaken
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		f.Close()
		return nil, errTaken
	}
	ln.Close()
	return &Lease{Port: port, lock: f}, nil
}

// span is how far below the ephemeral range leases go.
const span = 10000

// randomCandidate picks a port in the span below the ephemeral range, or
// above it when the range starts too low to leave one.
func randomCandidate(low, high int) (int, bool) {
	if low-span >= 1024 {
		return low - span + rand.IntN(span), true
	}
	if high < 65535-1024 {
		return high + 1 + rand.IntN(65535-high), true
	}
	return 0, false
}

// ephemeralRange is the kernel's local port range (Linux's
// net.ipv4.ip_local_port_range), or Linux's default when unreadable.
func ephemeralRange() (low, high int) {
	low, high = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return low, high
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return low, high
	}
	l, err1 := strconv.Atoi(f[0])
	h, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || l > h {
		return low, high
	}
	return l, h
}

// AddrForTest leases a loopback host:port for the whole of t, for a child
// process that may be restarted on it; it fails t when none is left.
func AddrForTest(t testing.TB) string {
	t.Helper()
	l, err := Take()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Release)
	return l.Addr()
}
