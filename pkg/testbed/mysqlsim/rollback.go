package mysqlsim

import (
	"fmt"
	"net/http"
	"time"
)

// rollbackFault models a large transaction's rollback (guarded by
// Server.mu): InnoDB undoes a transaction's changes row by row, so a session
// killed (or disconnected) in the middle of a big write transaction stays in
// the processlist as Killed and keeps its locks until the rollback ends. A
// read_only/super_read_only change keeps waiting for it all that time.
type rollbackFault struct {
	d time.Duration
}

// SetRollbackTime makes every session that ends with an open transaction
// that wrote roll back for d before it goes away; zero restores an instant
// rollback. KILL on a session already rolling back changes nothing, as in
// MySQL.
func (s *Server) SetRollbackTime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rollback.d = d
}

// markKilledLocked shows a session hit by KILL CONNECTION as MySQL does from
// the moment the KILL returns (manual, "Thread Command Values": Killed), and
// as rolling back if its open write transaction will take the configured
// rollback time; the session's own goroutine ends it later (endSession).
// A second KILL changes nothing, the time shown included.
func (s *Server) markKilledLocked(sess *session) {
	if sess.command != "Killed" {
		sess.command, sess.since = "Killed", time.Now()
	}
	if s.rollsBackSlowlyLocked(sess) {
		sess.state = "rolling back"
	}
}

// rollsBackSlowlyLocked reports whether sess, ending now, would hold its
// locks for the configured rollback time: its open transaction wrote.
func (s *Server) rollsBackSlowlyLocked(sess *session) bool {
	return s.rollback.d > 0 && s.running && sess.inTxn && len(sess.txnOps) > 0
}

// rollBackLocked holds an ending session for the configured rollback time
// if its transaction wrote, then discards the transaction. A crash or
// shutdown ends the rollback at once (the data is recovered at start).
func (s *Server) rollBackLocked(sess *session) {
	d := s.rollback.d
	if !s.rollsBackSlowlyLocked(sess) {
		return
	}
	s.markKilledLocked(sess) // a disconnect shows as a KILL does
	s.log.Info("session rolling back", "id", sess.id, "user", sess.user.Name, "duration", d.String())
	stopped := s.stopped
	s.mu.Unlock()
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-stopped:
	}
	t.Stop()
	s.mu.Lock()
	sess.inTxn, sess.txnOps = false, nil
}

// setRollbackTime serves POST /rollback-time?duration=D of the control API.
func setRollbackTime(s *Server, r *http.Request) error {
	d, err := time.ParseDuration(r.URL.Query().Get("duration"))
	if err != nil || d < 0 {
		return fmt.Errorf("duration: want a non-negative Go duration such as 5s")
	}
	s.SetRollbackTime(d)
	return nil
}
