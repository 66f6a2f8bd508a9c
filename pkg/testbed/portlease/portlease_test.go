package portlease

import (
	"net"
	"testing"
)

// fixedCandidates makes Take try ports in the given order, then fail.
func fixedCandidates(t *testing.T, ports ...int) {
	t.Helper()
	old, oldDir := candidate, lockDir
	lockDir = t.TempDir()
	i := 0
	candidate = func(int, int) (int, bool) {
		if i >= len(ports) {
			return 0, false
		}
		i++
		return ports[i-1], true
	}
	t.Cleanup(func() { candidate, lockDir = old, oldDir })
}

// twoFreePorts finds two ports nothing listens on (kernel-chosen ones,
// released: the test only needs them free for its own moment).
func twoFreePorts(t *testing.T) (int, int) {
	t.Helper()
	var ports []int
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		defer ln.Close()
	}
	return ports[0], ports[1]
}

func TestALeasedPortIsNotLeasedAgainUntilReleased(t *testing.T) {
	p, q := twoFreePorts(t)
	fixedCandidates(t, p, p, q, p)
	first, err := Take()
	if err != nil {
		t.Fatal(err)
	}
	second, err := Take()
	if err != nil {
		t.Fatal(err)
	}
	if first.Port != p || second.Port != q {
		t.Fatalf("leases %d and %d; want %d, then %d (the held %d skipped)", first.Port, second.Port, p, q, p)
	}
	first.Release()
	third, err := Take()
	if err != nil {
		t.Fatal(err)
	}
	if third.Port != p {
		t.Fatalf("after release, lease %d; want the released %d", third.Port, p)
	}
}

func TestAPortSomeoneListensOnIsSkipped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().(*net.TCPAddr).Port
	free, _ := twoFreePorts(t)
	fixedCandidates(t, busy, free)
	l, err := Take()
	if err != nil {
		t.Fatal(err)
	}
	if l.Port != free {
		t.Fatalf("lease %d; want %d (%d has a listener that holds no lease)", l.Port, free, busy)
	}
}

func TestTakeFailsWhenNoCandidateIsLeft(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fixedCandidates(t, ln.Addr().(*net.TCPAddr).Port)
	if l, err := Take(); err == nil {
		t.Fatalf("lease %d of a port in use", l.Port)
	}
}

func TestLeasesLieOutsideTheEphemeralRange(t *testing.T) {
	low, high := ephemeralRange()
	for range 50 {
		l, err := Take()
		if err != nil {
			t.Fatal(err)
		}
		if l.Port >= low && l.Port <= high {
			t.Fatalf("lease %d inside the kernel's ephemeral range %d-%d", l.Port, low, high)
		}
		ln, err := net.Listen("tcp", l.Addr())
		if err != nil {
			t.Fatalf("the leased %s cannot be bound: %v", l.Addr(), err)
		}
		ln.Close()
		l.Release()
	}
}

func TestRandomCandidateAvoidsTheRange(t *testing.T) {
	for _, c := range []struct{ low, high int }{{32768, 60999}, {1024, 40000}, {11024, 65535}} {
		for range 1000 {
			p, ok := randomCandidate(c.low, c.high)
			if !ok {
				t.Fatalf("range %d-%d: no candidate", c.low, c.high)
			}
			if p < 1024 || p > 65535 || p >= c.low && p <= c.high {
				t.Fatalf("range %d-%d: candidate %d", c.low, c.high, p)
			}
		}
	}
	if p, ok := randomCandidate(1024, 65000); ok {
		t.Fatalf("range 1024-65000 leaves no room, yet candidate %d", p)
	}
}
