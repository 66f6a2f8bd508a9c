package mysqlsim

import "time"

// execShutdown is SHUTDOWN (manual "SHUTDOWN Statement"): it needs the
// SHUTDOWN privilege (1227), answers OK and then stops the server cleanly,
// as mysqld does. mysqld then exits; a container runtime starts it again,
// which the simulator does by itself when Config.Unsupervised says there
// is no supervisor but a kubelet (as after a CLONE); otherwise it stays
// stopped until Start or Restart.
func (s *Server) execShutdown(sess *session, c *cursor) error {
	if err := c.expectEnd(); err != nil {
		return err
	}
	if !sess.hasPrivilege("SHUTDOWN") {
		return errNeedPrivilege("SHUTDOWN")
	}
	s.log.Info("SHUTDOWN statement", "user", sess.user.Name)
	go func() {
		time.Sleep(20 * time.Millisecond) // after the OK has been written
		s.mu.Lock()
		if !s.running || s.closed {
			s.mu.Unlock()
			return
		}
		s.shutdownLocked(true)
		if err := s.peekLocked(); err != nil {
			s.log.Error("reading the data directory after SHUTDOWN failed", "err", err.Error())
		}
		unsupervised := s.cfg.Unsupervised
		s.mu.Unlock()
		if unsupervised {
			time.Sleep(100 * time.Millisecond)
			if err := s.Start(); err != nil {
				s.log.Error("start after SHUTDOWN failed", "err", err.Error())
			}
		}
	}()
	return nil
}
