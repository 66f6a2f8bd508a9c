package mysqlsim

import (
	"errors"
	"net"
	"strconv"
	"syscall"

	"github.com/shipstream/bloodraven/pkg/testbed/portlease"
)

// listenKeepingPort listens on addr. A port of 0 becomes a leased port
// (portlease), not a kernel-chosen one: a restart listens on the same port
// again, as a restarted mysqld does, and the kernel could otherwise give a
// freed ephemeral port to another listener or an outgoing connection in
// between. The lease is kept in s.leases until Close. Called with s.mu held.
func (s *Server) listenKeepingPort(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != "0" {
		return net.Listen("tcp", addr)
	}
	// A process that does not lease may bind the port between the lease's
	// check and this listen (a CI run's concurrent test packages: "address
	// already in use"); on a first listen nothing depends on the port yet,
	// so another lease is taken.
	for attempt := 1; ; attempt++ {
		l, err := portlease.Take()
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(l.Port)))
		if err == nil {
			s.leases = append(s.leases, l)
			return ln, nil
		}
		l.Release()
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == firstListenAttempts {
			return nil, err
		}
	}
}

// firstListenAttempts bounds the leased ports a first listen tries.
const firstListenAttempts = 5

// releasePortsLocked gives the leased ports back once the server is closed
// for good.
func (s *Server) releasePortsLocked() {
	for _, l := range s.leases {
		l.Release()
	}
	s.leases = nil
}
