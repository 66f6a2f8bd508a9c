package mysqlsim

import (
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// The applier applies relay-log transactions: row events by column
// position into the replica's tables, Query events (DDL, account
// statements) by running their text as a system session in the event's
// default database under the transaction's GTID; GTIDs already executed are
// skipped. Original commit times are kept.

// trxStamp is a transaction as the performance_schema replication tables
// show it: GTID and timestamps (zero when none).
type trxStamp struct {
	gtid                string
	original, immediate time.Time
	start, end          time.Time
}

// relayPoint is a relay log position.
type relayPoint struct {
	file string
	pos  int64
}

// replStats are the channel's performance_schema figures; memory only, as
// the performance_schema is.
type replStats struct {
	heartbeats    int64
	lastHeartbeat time.Time
	lastQueued    trxStamp
	queueing      trxStamp
	queueingStart relayPoint // where the transaction being received starts
	lastApplied   trxStamp
	applying      trxStamp
	applyErr      string
}

// applyRelayed applies the first relay-log transaction t and moves the
// applier past it. The lock is not held across a Query event's statement.
func (s *Server) applyRelayed(ch *channel, stop chan struct{}, t relayTxn) *myError {
	s.mu.Lock()
	start := time.Now()
	ch.stats.applying = trxStamp{gtid: t.gtid.String(), original: t.committed, immediate: t.immediate, start: start}
	var err *myError
	if !s.st.executed.Contains(t.gtid) {
		if len(t.query) > 0 {
			s.mu.Unlock()
			err = s.applyQueryEvents(t)
			s.mu.Lock()
		} else {
			err = s.applyRowsLocked(t)
		}
	}
	defer s.mu.Unlock()
	if err != nil {
		return err
	}
	if len(ch.relay) == 0 || ch.relay[0].gtid != t.gtid {
		return nil // the relay log was reset or lost under the statement
	}
	ch.relay = ch.relay[1:]
	ch.applier = applierPos{RelayFile: t.file, RelayPos: t.end, SourceFile: t.srcFile, SourcePos: t.srcEnd}
	s.redoApplierLocked(ch.applier)
	ch.stats.lastApplied = ch.stats.applying
	ch.stats.lastApplied.end = time.Now()
	ch.stats.applying = trxStamp{}
	if ch.sqlStop == stop {
		s.purgeRelayLogsLocked()
	}
	s.notifyLocked()
	return nil
}

// applyRowsLocked applies a transaction of row changes.
func (s *Server) applyRowsLocked(t relayTxn) *myError {
	for _, op := range t.ops {
		if err := s.st.check(op); err != nil {
			return err.(*myError)
		}
	}
	s.applyTxnLocked(t.txn) // an empty transaction still takes its GTID
	return nil
}

// applyQueryEvents runs a transaction's statement as the replication
// applier's system session, in the event's default database, with
// gtid_next set to the transaction's GTID (contract 3 of session 6).
func (s *Server) applyQueryEvents(t relayTxn) *myError {
	if len(t.query) != 1 || len(t.ops) > 0 {
		return myErr(ErNotSupportedYet, "This version of MySQL doesn't yet support 'transactions mixing statements and row events in the Bloodraven MySQL simulator'")
	}
	op := t.query[0]
	sess := s.systemSession("system user")
	sess.db, sess.gtidNext = op.DB, t.gtid.String()
	s.mu.Lock()
	sess.gen = s.gen // commits only into this run of the server
	s.mu.Unlock()
	if _, err := s.exec(sess, op.Query, false); err != nil {
		if me, ok := err.(*myError); ok {
			return me
		}
		return myErr(1105, "%s", err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.st.executed.Contains(t.gtid) { // a statement that logs nothing (e.g. IF NOT EXISTS of an existing object)
		s.applyTxnLocked(txn{gtid: t.gtid, committed: t.committed})
	}
	return nil
}

// commitTimeLocked is a transaction's original commit time: the source's
// for the one the applier is applying, now for everything else.
func (s *Server) commitTimeLocked(sess *session, g gtid.GTID) time.Time {
	if ch := s.st.repl; sess.system && ch != nil && len(ch.relay) > 0 && ch.relay[0].gtid == g {
		return ch.relay[0].committed
	}
	return time.Now()
}
