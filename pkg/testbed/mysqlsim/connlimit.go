package mysqlsim

import (
	"encoding/binary"
	"net"
)

// ErConCount is ER_CON_COUNT_ERROR, "Too many connections".
const ErConCount = 1040

// DefaultMaxConnections is MySQL's default max_connections.
const DefaultMaxConnections = 151

// connLimit is max_connections (guarded by Server.mu). Zero means the
// default.
type connLimit struct {
	max int64
}

func (s *Server) maxConnectionsLocked() int64 {
	if s.conns.max > 0 {
		return s.conns.max
	}
	return DefaultMaxConnections
}

// SetMaxConnections sets max_connections, as SET GLOBAL max_connections
// does. It never drops sessions already connected.
func (s *Server) SetMaxConnections(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns.max = n
}

// setMaxConnectionsLocked is SET GLOBAL max_connections: 1 to 100000.
func (s *Server) setMaxConnectionsLocked(v any) error {
	n, ok := v.(int64)
	if !ok || n < 1 || n > 100000 {
		return myErr(ErWrongValueForVar, "Variable 'max_connections' can't be set to the value of '%v'", v)
	}
	s.conns.max = n
	return nil
}

// clientConnectionsLocked counts the sessions on the ordinary interface:
// administrative connections do not count against max_connections (manual,
// "Administrative Connection Management").
func (s *Server) clientConnectionsLocked() int64 {
	var n int64
	for _, o := range s.sessions {
		if !o.viaAdmin {
			n++
		}
	}
	return n
}

// refuseOverLimit answers a new connection on the ordinary interface that
// would exceed max_connections + 1 as mysqld does before its handshake: an
// error packet 1040 and the connection closed. It reports whether the
// connection was refused. The one connection beyond max_connections is
// admitted here and judged after authentication (admitLocked).
func (s *Server) refuseOverLimit(sess *session) bool {
	s.mu.Lock()
	over := !sess.viaAdmin && s.clientConnectionsLocked() > s.maxConnectionsLocked()+1
	s.mu.Unlock()
	if !over {
		return false
	}
	writePreHandshakeError(sess.conn, ErConCount, "Too many connections")
	return true
}

// writePreHandshakeError sends an error packet in place of the server
// greeting (sequence 0, no SQL state: no capabilities are agreed yet).
func writePreHandshakeError(conn net.Conn, code uint16, msg string) {
	body := make([]byte, 0, 3+len(msg))
	body = append(body, 0xff, byte(code), byte(code>>8))
	body = append(body, msg...)
	hdr := make([]byte, 4)
	binary.LittleEndian.PutUint32(hdr, uint32(len(body)))
	hdr[3] = 0
	_, _ = conn.Write(append(hdr, body...))
}

// admitLocked applies what mysqld checks once it knows the account: on the
// administrative interface only accounts with SERVICE_CONNECTION_ADMIN are
// admitted (1227); on the ordinary interface the one connection beyond
// max_connections is reserved for CONNECTION_ADMIN (or SUPER) holders
// (1040).
func (s *Server) admitLocked(sess *session) error {
	if err := s.secureTransportLocked(sess); err != nil { // transport.go
		return err
	}
	if sess.viaAdmin {
		if !sess.hasPrivilege("SERVICE_CONNECTION_ADMIN") {
			return errNeedPrivilege("SERVICE_CONNECTION_ADMIN")
		}
		return nil
	}
	if !sess.hasAnyPrivilege("CONNECTION_ADMIN", "SUPER") && s.clientConnectionsLocked() > s.maxConnectionsLocked() {
		return myErr(ErConCount, "Too many connections")
	}
	return nil
}
