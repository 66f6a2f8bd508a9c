package mysqlsim

import (
	"fmt"
	"net"
)

// adminListener is MySQL's administrative connection interface
// (admin_address/admin_port; manual, "Administrative Connection
// Management"): the same protocol on its own port, not counted against
// max_connections, open only to accounts with SERVICE_CONNECTION_ADMIN.
// Guarded by Server.mu.
type adminListener struct {
	ln   net.Listener
	addr string // kept across restarts, like admin_port in my.cnf
}

// AdminAddr is the administrative interface's host:port, empty when
// Config.AdminAddr is unset (mysqld maintains no administrative interface
// without admin_address).
func (s *Server) AdminAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admin.addr
}

// startAdminLocked opens the administrative interface when configured.
func (s *Server) startAdminLocked() error {
	addr := s.cfg.AdminAddr
	if addr == "" {
		return nil
	}
	if s.admin.addr != "" {
		addr = s.admin.addr
	}
	if err := checkLoopback(addr); err != nil {
		return err
	}
	ln, err := s.listenKeepingPort(addr)
	if err != nil {
		return fmt.Errorf("mysqlsim %s: listen %s (admin interface): %w", s.cfg.Name, addr, err)
	}
	s.admin.ln, s.admin.addr = ln, ln.Addr().String()
	s.wg.Add(1)
	go s.adminAcceptLoop(ln)
	s.log.Info("administrative interface listening", "adminAddr", s.admin.addr)
	return nil
}

func (s *Server) stopAdminLocked() {
	if s.admin.ln != nil {
		s.admin.ln.Close()
		s.admin.ln = nil
	}
}

func (s *Server) adminAcceptLoop(ln net.Listener) {
	defer s.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go s.serveConn(conn, true)
	}
}
