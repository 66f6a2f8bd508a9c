package mysqlsim

import (
	"time"
)

// The locks and the read view a consistent dump relies on (manual: "FLUSH
// Statement", "LOCK INSTANCE FOR BACKUP and UNLOCK INSTANCE Statements",
// "Statements That Cause an Implicit Commit", "Consistent Nonlocking
// Reads"), as MySQL Shell's util.dumpInstance uses them: FLUSH
// NO_WRITE_TO_BINLOG TABLES, FLUSH TABLES WITH READ LOCK, START TRANSACTION
// WITH CONSISTENT SNAPSHOT in every session that will read, the server's
// gtid_executed and binary log position read while the lock holds, LOCK
// INSTANCE FOR BACKUP, UNLOCK TABLES; then the sessions read their
// snapshots while writes go on.
//
// State lives on the session (globalReadLock, backupLock, snapshot), so a
// session that ends releases what it held: endSession removes it and wakes
// every waiter.

// MySQL error numbers of the lock statements.
const (
	erCantUpdateWithReadlock = 1223 // ER_CANT_UPDATE_WITH_READLOCK
	erLockWaitTimeout        = 1205 // ER_LOCK_WAIT_TIMEOUT
	erTableDefChanged        = 1412 // ER_TABLE_DEF_CHANGED
)

// Processlist states of a statement waiting behind these locks (MySQL's
// stage names).
const (
	stateWaitGlobalReadLock = "Waiting for global read lock"
	stateWaitCommitLock     = "Waiting for commit lock"
	stateWaitBackupLock     = "Waiting for backup lock"
)

// isFlushTables reports whether the FLUSH statement at c is one of FLUSH
// TABLES' forms, without consuming anything.
func isFlushTables(c *cursor) bool {
	i := c.i
	if i < len(c.toks) && c.toks[i].isKw("NO_WRITE_TO_BINLOG", "LOCAL") {
		i++
	}
	return i < len(c.toks) && c.toks[i].isKw("TABLES", "TABLE")
}

// execFlushTables is FLUSH [NO_WRITE_TO_BINLOG | LOCAL] {TABLE | TABLES}
// [WITH READ LOCK]; c is just after FLUSH. Both need RELOAD or FLUSH_TABLES
// (the FLUSH_TABLES privilege allows FLUSH TABLES without RELOAD) and, as
// every FLUSH, commit the session's open transaction first. A plain FLUSH
// TABLES without NO_WRITE_TO_BINLOG is written to the binary log by MySQL
// (with a GTID of its own); the simulator does not log it, so it refuses
// that form rather than answer as if nothing were logged. Table lists and
// FOR EXPORT are not modelled.
func (s *Server) execFlushTables(sess *session, c *cursor) error {
	noLog := c.acceptKw("NO_WRITE_TO_BINLOG") || c.acceptKw("LOCAL")
	if !c.acceptKw("TABLES") && !c.acceptKw("TABLE") {
		return c.errHere()
	}
	withReadLock := c.acceptKw("WITH", "READ", "LOCK")
	if !c.done() {
		return errNotSupported("FLUSH TABLES with a table list or FOR EXPORT in the Bloodraven MySQL simulator")
	}
	if !withReadLock && !noLog {
		return errNotSupported("FLUSH TABLES written to the binary log in the Bloodraven MySQL simulator (use FLUSH NO_WRITE_TO_BINLOG TABLES)")
	}
	if !sess.hasAnyPrivilege("RELOAD", "FLUSH_TABLES") {
		return errNeedPrivilege("RELOAD or FLUSH_TABLES")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.implicitCommitLocked(sess); err != nil {
		return err
	}
	if withReadLock {
		// Compatible with other sessions' global read locks; an open
		// transaction elsewhere that already wrote does not hold it off
		// (its COMMIT waits instead), as MySQL's commit lock works.
		sess.globalReadLock = true
	}
	return nil
}

// execUnlockTables is UNLOCK TABLES: it releases the session's global read
// lock. It commits nothing: an open transaction stays open, because FLUSH
// TABLES WITH READ LOCK takes no table-level locks (manual, "Statements That
// Cause an Implicit Commit"), which is what lets a dump start its snapshot
// under the lock and read it after. LOCK TABLES is not modelled.
func (s *Server) execUnlockTables(sess *session, c *cursor) error {
	if err := c.expectEnd(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess.globalReadLock {
		sess.globalReadLock = false
		s.notifyLocked()
	}
	return nil
}

// execLockInstance is LOCK INSTANCE FOR BACKUP; c is just after LOCK. It
// needs BACKUP_ADMIN; many sessions may hold the backup lock at once. It
// does not end the session's transaction.
func (s *Server) execLockInstance(sess *session, c *cursor) error {
	if err := c.expectKw("INSTANCE"); err != nil {
		return err
	}
	if err := c.expectKw("FOR"); err != nil {
		return err
	}
	if err := c.expectKw("BACKUP"); err != nil {
		return err
	}
	if err := c.expectEnd(); err != nil {
		return err
	}
	if !sess.hasPrivilege("BACKUP_ADMIN") {
		return errNeedPrivilege("BACKUP_ADMIN")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess.backupLock = true
	return nil
}

// execUnlockInstance is UNLOCK INSTANCE: it releases the session's backup
// lock (none held is not an error).
func (s *Server) execUnlockInstance(sess *session, c *cursor) error {
	if err := c.expectEnd(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess.backupLock {
		sess.backupLock = false
		s.notifyLocked()
	}
	return nil
}

// implicitCommitLocked commits the session's open transaction, as the
// statements that cause an implicit commit do.
func (s *Server) implicitCommitLocked(sess *session) error {
	if !sess.inTxn {
		return nil
	}
	ops := sess.txnOps
	sess.inTxn, sess.txnOps, sess.snapshot = false, nil, nil
	if err := s.waitForCommitLockLocked(sess, ops); err != nil {
		return err
	}
	return s.commitLocked(sess, ops)
}

// otherHoldsLocked reports whether a session other than sess holds the
// global read lock (grl) or the backup lock.
func (s *Server) otherHoldsLocked(sess *session, grl bool) bool {
	for _, o := range s.sessions {
		if o == sess {
			continue
		}
		if grl && o.globalReadLock || !grl && o.backupLock {
			return true
		}
	}
	return false
}

// globalReadLockHeldLocked reports whether any client session holds FLUSH
// TABLES WITH READ LOCK; the replication applier waits behind it as MySQL's
// does ("Waiting for global read lock" in SHOW REPLICA STATUS).
func (s *Server) globalReadLockHeldLocked() bool {
	return s.otherHoldsLocked(nil, true)
}

// waitForWriteLocksLocked is what a data change or account statement meets
// before it runs: its own global read lock refuses it (1223); another
// session's holds it until released; a statement that creates or removes
// files (CREATE/DROP DATABASE, CREATE TABLE) or an account statement waits
// too while another session holds the backup lock. Bounded by the session's
// lock_wait_timeout (1205); KILL ends the wait (1317).
func (s *Server) waitForWriteLocksLocked(sess *session, op writeOp) error {
	if sess.system { // the applier waits before it starts a transaction (runApplier)
		return nil
	}
	if sess.globalReadLock {
		return myErr(erCantUpdateWithReadlock, "Can't execute the query because you have a conflicting read lock")
	}
	ddl := op.kind == opCreateDB || op.kind == opDropDB || op.kind == opCreateTable || op.kind == opAccount
	return s.waitWhileLocked(sess, func() (bool, string) {
		if s.otherHoldsLocked(sess, true) {
			return true, stateWaitGlobalReadLock
		}
		if ddl && s.otherHoldsLocked(sess, false) {
			return true, stateWaitBackupLock
		}
		return false, ""
	})
}

// waitForCommitLockLocked holds the COMMIT of a transaction that wrote while
// another session holds the global read lock (MySQL's commit lock); the
// holder's own commit is refused (1223). A transaction without writes
// commits at once.
func (s *Server) waitForCommitLockLocked(sess *session, ops []writeOp) error {
	if len(ops) == 0 || sess.system {
		return nil
	}
	if sess.globalReadLock {
		return myErr(erCantUpdateWithReadlock, "Can't execute the query because you have a conflicting read lock")
	}
	return s.waitWhileLocked(sess, func() (bool, string) {
		if s.otherHoldsLocked(sess, true) {
			return true, stateWaitCommitLock
		}
		return false, ""
	})
}

// waitWhileLocked releases the server lock until blocked reports false,
// showing its state in the processlist meanwhile.
func (s *Server) waitWhileLocked(sess *session, blocked func() (bool, string)) error {
	wait, state := blocked()
	if !wait {
		return nil
	}
	deadline := time.NewTimer(sess.lockWait())
	defer deadline.Stop()
	for wait {
		sess.state = state
		changed, qk := s.changed, sess.queryKil
		s.mu.Unlock()
		var err error
		select {
		case <-changed:
		case <-deadline.C:
			err = myErr(erLockWaitTimeout, "Lock wait timeout exceeded; try restarting transaction")
		case <-sess.killed:
			err = myErr(ErQueryInterrupted, "Query execution was interrupted")
		case <-qk:
			err = myErr(ErQueryInterrupted, "Query execution was interrupted")
		}
		s.mu.Lock()
		if err != nil {
			return err
		}
		wait, state = blocked()
	}
	sess.state = "executing"
	return nil
}

// startSnapshotLocked gives the session's new transaction its read view
// (START TRANSACTION WITH CONSISTENT SNAPSHOT): from now to its end, its
// reads of tables see the data as it is at this moment, whatever commits
// meanwhile.
func (s *Server) startSnapshotLocked(sess *session) {
	sess.snapshot = s.st.cloneData()
}

// readTableLocked is the table a session's read sees: in a transaction with
// a read view, the table as it was when the view was taken. A table that
// exists now but did not then is InnoDB's 1412 (a consistent read cannot
// see a table created after its snapshot); one dropped since is 1146.
func (s *Server) readTableLocked(sess *session, db, name string) (*dataTable, error) {
	t, err := s.st.table(db, name)
	if err != nil || !sess.inTxn || sess.snapshot == nil {
		return t, err
	}
	if d, ok := sess.snapshot[db]; ok {
		if st, ok := d.tables[name]; ok {
			return st, nil
		}
	}
	return nil, myErr(erTableDefChanged, "Table definition has changed, please retry transaction")
}
