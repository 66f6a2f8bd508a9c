package mysqlsim

import (
	"strconv"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// execWrite parses CREATE/DROP DATABASE, CREATE TABLE, INSERT and DELETE,
// then commits them (or queues them in an open transaction).
func (s *Server) execWrite(sess *session, first token, c *cursor) (*gomysql.Result, error) {
	op, err := s.parseWrite(sess, first, c)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.waitBehindFenceLocked(sess); err != nil {
		return nil, err
	}
	if err := s.waitForWriteLocksLocked(sess, op); err != nil { // backuplocks.go
		return nil, err
	}
	if err := s.checkWritableLocked(sess, op); err != nil {
		return nil, err
	}
	if err := s.st.check(op); err != nil {
		return nil, err
	}
	affected := uint64(len(op.rows))
	if op.kind == opDelete {
		t, _ := s.st.table(op.db, op.table)
		affected = uint64(len(t.rows))
	}
	ddl := op.kind == opCreateDB || op.kind == opDropDB || op.kind == opCreateTable
	if sess.inTxn && !ddl {
		sess.txnOps = append(sess.txnOps, op)
		return okResult(affected), nil
	}
	if sess.inTxn { // DDL commits the open transaction first (implicit commit)
		if err := s.commitLocked(sess, sess.txnOps); err != nil {
			return nil, err
		}
		sess.inTxn, sess.txnOps = false, nil
	}
	if err := s.commitLocked(sess, []writeOp{op}); err != nil {
		return nil, err
	}
	return okResult(affected), nil
}

// checkWritableLocked applies MySQL's read-only rules: super_read_only refuses
// every client write; read_only refuses writes from accounts without
// CONNECTION_ADMIN/SUPER. System sessions (the replication applier, the
// init scripts) are exempt.
func (s *Server) checkWritableLocked(sess *session, op writeOp) error {
	if sess.system { // the applier and the init scripts (contract 1)
		return nil
	}
	if sess.system { // the replication applier: read_only does not apply (applier.go)
		return nil
	}
	// read_only before the privilege: MySQL refuses a data change on a
	// read-only server before it checks the table's privileges
	// (mysql_execute_command's deny_updates_if_read_only_option).
	if s.st.superReadOnly {
		return errReadOnly(true)
	}
	if s.st.readOnly && !sess.hasAnyPrivilege("CONNECTION_ADMIN", "SUPER") {
		return errReadOnly(false)
	}
	return sess.checkWritePrivilege(op)
}

// commitLocked commits ops as one transaction with the session's next GTID.
func (s *Server) commitLocked(sess *session, ops []writeOp) error {
	if len(ops) == 0 {
		return nil
	}
	if !s.running || sess.gen != s.gen { // the server crashed under this statement
		return myErr(ErQueryInterrupted, "Query execution was interrupted")
	}
	if sess.sqlLogBinOff { // sql_log_bin=0: no GTID, no binary log event (firstboot.go)
		return s.commitUnloggedLocked(ops)
	}
	var g gtid.GTID
	if sess.gtidNext == "AUTOMATIC" {
		sid := gtid.SID{UUID: s.cfg.ServerUUID}
		g = gtid.GTID{UUID: sid.UUID, GNO: s.st.executed.NextGNO(sid)}
	} else {
		if sess.gtidNextUsed {
			return myErr(1837, "When @@SESSION.GTID_NEXT is set to a GTID, you must explicitly set it to a different value after a COMMIT or ROLLBACK. Please check GTID_NEXT variable manual page for detailed explanation. Current @@SESSION.GTID_NEXT is '%s'.", sess.gtidNext)
		}
		g, _ = gtid.ParseGTID(sess.gtidNext)
		sess.gtidNextUsed = true
		if s.st.executed.Contains(g) {
			return nil // MySQL skips a transaction whose GTID was already executed
		}
	}
	s.applyTxnLocked(txn{gtid: g, ops: ops, committed: s.commitTimeLocked(sess, g)})
	return nil
}

// applyTxnLocked applies a transaction's changes, records its GTID and writes
// it to the binary log. Local commits and the replication applier share it.
func (s *Server) applyTxnLocked(t txn) {
	// binlog.go; before the changes, so a DELETE logs the rows it removes
	s.appendToBinlogFiles(t)
	s.st.commitTxn(t) // data, gtid_executed and the in-memory s.st.binlog
	for _, op := range t.ops {
		if op.kind == opAccount { // accounts.go: open sessions see database grants at once
			s.refreshSessionPrivsLocked()
			break
		}
	}
	s.redoLocked(redoCommit, &t)
	s.notifyLocked()
}

func (s *Server) execBegin(sess *session, c *cursor) error {
	snapshot := false
	for !c.done() { // WITH CONSISTENT SNAPSHOT, READ WRITE, READ ONLY
		snapshot = snapshot || c.acceptKw("WITH", "CONSISTENT", "SNAPSHOT")
		if !c.done() {
			c.next()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess.inTxn {
		if err := s.waitForCommitLockLocked(sess, sess.txnOps); err != nil { // backuplocks.go
			return err
		}
		if err := s.commitLocked(sess, sess.txnOps); err != nil {
			return err
		}
	}
	sess.inTxn, sess.txnOps, sess.snapshot = true, nil, nil
	if snapshot {
		s.startSnapshotLocked(sess)
	}
	return nil
}

func (s *Server) execCommit(sess *session, c *cursor) error {
	if err := c.expectEnd(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ops := sess.txnOps
	sess.inTxn, sess.txnOps = false, nil
	if len(ops) == 0 {
		return nil
	}
	if err := s.waitForCommitLockLocked(sess, ops); err != nil { // backuplocks.go
		return err
	}
	if err := s.checkWritableLocked(sess, ops[0]); err != nil {
		return err
	}
	for _, op := range ops {
		if err := s.st.check(op); err != nil {
			return err
		}
	}
	return s.commitLocked(sess, ops)
}

func (s *Server) execRollback(sess *session, c *cursor) error {
	if err := c.expectEnd(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess.inTxn, sess.txnOps = false, nil
	return nil
}

func (s *Server) parseWrite(sess *session, first token, c *cursor) (writeOp, error) {
	s.mu.Lock()
	curDB := sess.db
	s.mu.Unlock()
	resolveDB := func(db string) (string, error) {
		if db == "" {
			db = curDB
		}
		if db == "" {
			return "", myErr(ErNoDB, "No database selected")
		}
		return db, nil
	}
	op := writeOp{description: c.sql}
	switch {
	case first.isKw("CREATE", "DROP") && (c.acceptKw("DATABASE") || c.acceptKw("SCHEMA")):
		op.kind = opCreateDB
		if first.isKw("DROP") {
			op.kind = opDropDB
			op.ifExists = c.acceptKw("IF", "EXISTS")
		} else {
			op.ifExists = c.acceptKw("IF", "NOT", "EXISTS")
		}
		name, err := c.ident()
		if err != nil {
			return op, err
		}
		op.db = name
		if op.kind == opDropDB {
			return op, c.expectEnd()
		}
		cs, coll, err := parseSchemaOptions(c) // schemata.go
		if err != nil {
			return op, err
		}
		op.cols = []string{cs, coll}
		return op, nil
	case first.isKw("CREATE") && c.acceptKw("TABLE"):
		op.kind = opCreateTable
		op.ifExists = c.acceptKw("IF", "NOT", "EXISTS")
		db, name, err := c.qualifiedName()
		if err != nil {
			return op, err
		}
		if op.db, err = resolveDB(db); err != nil {
			return op, err
		}
		op.table = name
		if op.cols, err = parseColumnDefs(c); err != nil {
			return op, err
		}
		return op, nil
	case first.isKw("INSERT"):
		c.acceptKw("IGNORE")
		if err := c.expectKw("INTO"); err != nil {
			return op, err
		}
		op.kind = opInsert
		db, name, err := c.qualifiedName()
		if err != nil {
			return op, err
		}
		if op.db, err = resolveDB(db); err != nil {
			return op, err
		}
		op.table = name
		if c.acceptPunct("(") {
			for {
				col, err := c.ident()
				if err != nil {
					return op, err
				}
				op.cols = append(op.cols, col)
				if c.acceptPunct(")") {
					break
				}
				if !c.acceptPunct(",") {
					return op, c.errHere()
				}
			}
		}
		if !c.acceptKw("VALUES") && !c.acceptKw("VALUE") {
			return op, c.errHere()
		}
		for {
			row, err := s.parseValueRow(sess, c)
			if err != nil {
				return op, err
			}
			if len(op.cols) > 0 && len(row) != len(op.cols) {
				return op, myErr(1136, "Column count doesn't match value count at row %d", len(op.rows)+1)
			}
			op.rows = append(op.rows, row)
			if !c.acceptPunct(",") {
				break
			}
		}
		return op, c.expectEnd()
	case first.isKw("DELETE"):
		if err := c.expectKw("FROM"); err != nil {
			return op, err
		}
		op.kind = opDelete
		db, name, err := c.qualifiedName()
		if err != nil {
			return op, err
		}
		if op.db, err = resolveDB(db); err != nil {
			return op, err
		}
		op.table = name
		if !c.done() {
			return op, errNotSupported("DELETE with conditions in the Bloodraven MySQL simulator")
		}
		return op, nil
	}
	return op, errNotSupported(strings.ToUpper(first.text) + " of this kind in the Bloodraven MySQL simulator")
}

func (s *Server) parseValueRow(sess *session, c *cursor) ([]any, error) {
	if !c.acceptPunct("(") {
		return nil, c.errHere()
	}
	var row []any
	for {
		e, err := c.parseExpr()
		if err != nil {
			return nil, err
		}
		v, _, err := s.eval(sess, e)
		if err != nil {
			return nil, err
		}
		if n, ok := v.(uint64); ok {
			v = strconv.FormatUint(n, 10)
		}
		row = append(row, v)
		if c.acceptPunct(")") {
			return row, nil
		}
		if !c.acceptPunct(",") {
			return nil, c.errHere()
		}
	}
}

// parseColumnDefs reads "(col type ..., PRIMARY KEY (...), ...)" and keeps
// the column names; types and constraints are not modelled.
func parseColumnDefs(c *cursor) ([]string, error) {
	if !c.acceptPunct("(") {
		return nil, c.errHere()
	}
	var cols []string
	depth, atItemStart := 1, true
	for depth > 0 {
		if c.done() {
			return nil, c.errHere()
		}
		t := c.next()
		switch {
		case t.isPunct("("):
			depth++
		case t.isPunct(")"):
			depth--
		case t.isPunct(",") && depth == 1:
			atItemStart = true
			continue
		case atItemStart && (t.kind == tIdent || t.kind == tQIdent):
			if t.kind == tQIdent || !t.isKw("PRIMARY", "KEY", "INDEX", "UNIQUE", "CONSTRAINT", "FOREIGN", "CHECK", "FULLTEXT", "SPATIAL") {
				cols = append(cols, t.text)
			}
		}
		atItemStart = false
	}
	if len(cols) == 0 {
		return nil, myErr(1113, "A table must have at least 1 column")
	}
	for !c.done() { // table options
		c.next()
	}
	return cols, nil
}
