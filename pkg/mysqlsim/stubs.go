package mysqlsim

import "net"

type faults struct{}

func (s *Server) frozenOrRefused(net.Conn) bool            { return false }
func (s *Server) startReplicationLocked()                  {}
func (s *Server) stopReplicationThreadsLocked()            {}
func (s *Server) stopReceiverLocked(ch *channel)           { ch.ioRunning, ch.ioState = "No", "" }
func (s *Server) stopApplierLocked(ch *channel)            { ch.sqlRunning = false }
func (s *Server) replicationProcesslistLocked() [][]any    { return nil }
func (s *Server) execClone(sess *session, c *cursor) error { return errNotSupported("CLONE") }
