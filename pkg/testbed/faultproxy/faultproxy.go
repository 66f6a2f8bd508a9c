// Package faultproxy is a TCP proxy that can cut the link it stands on.
// The playground and the e2e suite put one on each link between processes
// (operator to mysqld, operator to sidecar, sidecar to sidecar, sidecar to
// operator) through the development address maps, so a test can partition
// any one of them the way a network would.
package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Mode is how a cut link behaves.
type Mode int

const (
	// Open forwards traffic.
	Open Mode = iota
	// Blackhole accepts connections and drops everything, in both
	// directions, without closing: peers see timeouts, as with a partition.
	Blackhole
	// Refuse closes every connection at once: peers see resets, as with a
	// dead host that still answers with RST.
	Refuse
)

func (m Mode) String() string {
	switch m {
	case Open:
		return "open"
	case Blackhole:
		return "blackhole"
	case Refuse:
		return "refuse"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Proxy forwards connections from its listener to one target address.
type Proxy struct {
	name   string
	target string
	ln     net.Listener

	mu     sync.Mutex
	mode   Mode
	conns  map[*link]struct{}
	closed bool
	wg     sync.WaitGroup
}

// link is one proxied connection pair.
type link struct{ client, server net.Conn }

func (l *link) close() {
	l.client.Close()
	if l.server != nil {
		l.server.Close()
	}
}

// New listens on listen (a loopback host:port; port 0 picks one) and
// forwards to target.
func New(name, listen, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("faultproxy %s: %w", name, err)
	}
	p := &Proxy{name: name, target: target, ln: ln, conns: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Name is the link's name.
func (p *Proxy) Name() string { return p.name }

// Addr is the listening address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the forwarded-to address.
func (p *Proxy) Target() string { return p.target }

// Mode is the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Set changes the mode. Cutting (Blackhole or Refuse) ends every
// established connection's forwarding at once: Refuse closes them,
// Blackhole stops copying but keeps them open until healed or closed.
func (p *Proxy) Set(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	if m == Open {
		return
	}
	for l := range p.conns {
		if m == Refuse {
			l.close()
			delete(p.conns, l)
		} else if l.server != nil {
			// Data already in flight to the far side is dropped with it.
			l.server.Close()
			l.server = nil
		}
	}
}

// Close stops the listener and every connection, and waits for them.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for l := range p.conns {
		l.close()
	}
	p.conns = map[*link]struct{}{}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	l := &link{client: c}
	p.mu.Lock()
	mode, closed := p.mode, p.closed
	if mode == Refuse || closed {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.conns[l] = struct{}{}
	p.mu.Unlock()
	defer p.forget(l)
	if mode == Blackhole {
		// Hold the connection, reading and dropping, until it closes.
		_, _ = io.Copy(io.Discard, c)
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.mode != Open || p.closed {
		// Cut while dialing.
		p.mu.Unlock()
		s.Close()
		if p.Mode() == Blackhole {
			_, _ = io.Copy(io.Discard, c)
		}
		c.Close()
		return
	}
	l.server = s
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
	<-done
	// One direction ended: if the link was blackholed, keep the client
	// hanging; otherwise end both sides.
	if p.Mode() == Blackhole {
		_, _ = io.Copy(io.Discard, c)
	}
	c.Close()
	s.Close()
	<-done
}

func (p *Proxy) forget(l *link) {
	p.mu.Lock()
	delete(p.conns, l)
	p.mu.Unlock()
}

// ParseMode reads a mode name.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "open", "heal":
		return Open, nil
	case "blackhole", "partition":
		return Blackhole, nil
	case "refuse":
		return Refuse, nil
	}
	return Open, errors.New("mode: want open, blackhole or refuse, got " + s)
}
