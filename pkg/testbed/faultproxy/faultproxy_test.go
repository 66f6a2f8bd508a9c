package faultproxy

import (
	"bufio"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer echoes lines until closed.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func start(t *testing.T) *Proxy {
	t.Helper()
	p, err := New("test", "127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// roundTrip sends a line and reads it back within d.
func roundTrip(c net.Conn, r *bufio.Reader, d time.Duration) error {
	c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if line != "ping\n" {
		return errors.New("echo mismatch: " + line)
	}
	return nil
}

func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func TestForwardsWhileOpen(t *testing.T) {
	p := start(t)
	c, r := dial(t, p)
	for range 3 {
		if err := roundTrip(c, r, 2*time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// A blackholed link hangs established and new connections (a timeout, not
// a reset), and healing lets new connections through again.
func TestBlackholeHangsThenHeals(t *testing.T) {
	p := start(t)
	c, r := dial(t, p)
	if err := roundTrip(c, r, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Set(Blackhole)
	if err := roundTrip(c, r, 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("established connection through a blackhole: %v, want a timeout", err)
	}
	c2, r2 := dial(t, p)
	if err := roundTrip(c2, r2, 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("new connection through a blackhole: %v, want a timeout", err)
	}
	p.Set(Open)
	c3, r3 := dial(t, p)
	if err := roundTrip(c3, r3, 2*time.Second); err != nil {
		t.Fatalf("after heal: %v", err)
	}
}

// A refusing link closes connections at once: the client sees EOF or a
// reset, never a hang.
func TestRefuseClosesAtOnce(t *testing.T) {
	p := start(t)
	c, r := dial(t, p)
	if err := roundTrip(c, r, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Set(Refuse)
	err := roundTrip(c, r, 2*time.Second)
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("established connection after refuse: %v, want it closed", err)
	}
	c2, r2 := dial(t, p)
	err = roundTrip(c2, r2, 2*time.Second)
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("new connection while refusing: %v, want it closed", err)
	}
}

// Close ends every connection and the listener, and returns only when all
// goroutines are done.
func TestCloseEndsEverything(t *testing.T) {
	p, err := New("test", "127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c, r := dial(t, p)
	if err := roundTrip(c, r, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Set(Blackhole)
	c2, _ := dial(t, p)
	_ = c2
	done := make(chan error)
	go func() { done <- p.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("listener still accepts after Close")
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"open": Open, "heal": Open, "blackhole": Blackhole, "partition": Blackhole, "refuse": Refuse} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseMode("drop"); err == nil {
		t.Error("ParseMode(drop) accepted")
	}
}
