package mysqlsim

import (
	"strings"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// exec runs one statement for a session. Errors are bare *MyError values so
// the client sees MySQL's error numbers.
func (s *Server) exec(sess *session, sql string, binaryProto bool) (*gomysql.Result, error) {
	toks, err := lex(sql)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, myErr(1065, "Query was empty")
	}
	if err := s.holdIfCutOff(sess); err != nil {
		return nil, err
	}
	s.mu.Lock()
	sess.command, sess.info, sess.state, sess.since = "Query", redactSecrets(sql, toks), "executing", time.Now()
	sess.queryKil = make(chan struct{})
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if sess.command == "Query" {
			sess.command, sess.info, sess.state, sess.since = "Sleep", "", "", time.Now()
		}
		s.mu.Unlock()
	}()
	c := &cursor{sql: sql, toks: toks}
	first := c.next()
	res, tbl, err := s.dispatch(sess, first, c)
	if err != nil {
		return nil, err
	}
	if tbl != nil {
		return tbl.build(binaryProto)
	}
	if res == nil {
		res = okResult(0)
	}
	return res, nil
}

// dispatch picks the statement by its first keyword(s).
func (s *Server) dispatch(sess *session, first token, c *cursor) (*gomysql.Result, *table, error) {
	switch {
	case first.isKw("SELECT"):
		t, err := s.execSelect(sess, c)
		return nil, t, err
	case first.isKw("SET"):
		return nil, nil, s.execSet(sess, c)
	case first.isKw("SHOW") && c.acceptKw("GRANTS"):
		t, err := s.execShowGrants(sess, c) // grants.go
		return nil, t, err
	case isAccountStmt(first, c): // grants.go: CREATE/ALTER/DROP USER, GRANT, REVOKE
		return nil, nil, s.execAccountStmt(sess, first, c)
	case first.isKw("SHOW"):
		t, err := s.execShow(sess, c)
		return nil, t, err
	case first.isKw("KILL"):
		return nil, nil, s.execKill(sess, c)
	case first.isKw("USE"):
		return nil, nil, s.execUse(sess, c)
	case first.isKw("CHANGE"):
		return nil, nil, s.execChangeSource(sess, c)
	case first.isKw("START") && c.peek().isKw("TRANSACTION"):
		c.next()
		return nil, nil, s.execBegin(sess, c)
	case first.isKw("BEGIN"):
		c.acceptKw("WORK")
		return nil, nil, s.execBegin(sess, c)
	case first.isKw("COMMIT"):
		c.acceptKw("WORK")
		return nil, nil, s.execCommit(sess, c)
	case first.isKw("ROLLBACK"):
		c.acceptKw("WORK")
		return nil, nil, s.execRollback(sess, c)
	case first.isKw("START"):
		return nil, nil, s.execStartReplica(sess, c)
	case first.isKw("STOP"):
		return nil, nil, s.execStopReplica(sess, c)
	case first.isKw("RESET"):
		return nil, nil, s.execReset(sess, c)
	case first.isKw("SIMULATOR"):
		t, err := s.execSimulator(sess, c)
		return nil, t, err
	case first.isKw("CLONE"):
		return nil, nil, s.execClone(sess, c)
	case first.isKw("SHUTDOWN"): // shutdown.go
		return nil, nil, s.execShutdown(sess, c)
	case first.isKw("CREATE"), first.isKw("DROP"), first.isKw("INSERT"), first.isKw("DELETE"):
		res, err := s.execWrite(sess, first, c)
		return res, nil, err
	case first.isKw("DO"):
		// DO evaluates expressions and discards the result (e.g. DO SLEEP(1)).
		_, err := s.selectExprs(sess, c)
		return nil, nil, err
	case first.isKw("FLUSH") && isFlushTables(c): // backuplocks.go
		return nil, nil, s.execFlushTables(sess, c)
	case first.isKw("UNLOCK") && c.acceptKw("TABLES"):
		return nil, nil, s.execUnlockTables(sess, c)
	case first.isKw("UNLOCK") && c.acceptKw("INSTANCE"):
		return nil, nil, s.execUnlockInstance(sess, c)
	case first.isKw("LOCK") && c.peek().isKw("INSTANCE"):
		return nil, nil, s.execLockInstance(sess, c)
	case first.isKw("FLUSH") && c.peek().isKw("BINARY", "LOCAL", "NO_WRITE_TO_BINLOG"):
		return nil, nil, s.execFlushBinaryLogs(sess, c)
	case first.isKw("PURGE"):
		return nil, nil, s.execPurgeBinaryLogs(sess, c)
	case first.isKw("INSTALL") && c.peek().isKw("PLUGIN"): // plugins.go
		return nil, nil, s.execInstallPlugin(sess, c)
	case first.isKw("UNINSTALL") && c.peek().isKw("PLUGIN"):
		return nil, nil, s.execUninstallPlugin(sess, c)
	case first.isKw("ALTER") && c.peek().isKw("INSTANCE"): // transport.go
		return nil, nil, s.execAlterInstance(sess, c)
	case first.isKw("UPDATE", "REPLACE", "ALTER", "TRUNCATE", "RENAME", "GRANT", "REVOKE", "FLUSH",
		"PURGE", "LOCK", "UNLOCK", "INSTALL", "ANALYZE", "OPTIMIZE", "CALL", "LOAD", "HANDLER", "XA"):
		return nil, nil, errNotSupported(strings.ToUpper(first.text) + " in the Bloodraven MySQL simulator")
	}
	return nil, nil, errParse(c.sql[first.pos:])
}

func (s *Server) execUse(sess *session, c *cursor) error {
	db, err := c.ident()
	if err != nil {
		return err
	}
	if err := c.expectEnd(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.st.dbs[db]; !ok {
		return myErr(ErBadDB, "Unknown database '%s'", db)
	}
	sess.db = db
	return nil
}

// execKill implements KILL [CONNECTION | QUERY] processlist_id.
func (s *Server) execKill(sess *session, c *cursor) error {
	query := false
	if c.acceptKw("QUERY") {
		query = true
	} else {
		c.acceptKw("CONNECTION")
	}
	id, err := c.intLit()
	if err != nil {
		return err
	}
	if err := c.expectEnd(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	target, ok := s.sessions[uint64(id)]
	if !ok {
		return myErr(ErNoSuchThread, "Unknown thread id: %d", id)
	}
	if target.user.Name != sess.user.Name && !sess.hasAnyPrivilege("CONNECTION_ADMIN", "SUPER") {
		return myErr(ErKillDenied, "You are not owner of thread %d", id)
	}
	// Manual "KILL Statement": to affect a session running with
	// SYSTEM_USER, the killer must hold SYSTEM_USER too (MySQL answers
	// 1095 as for any thread the killer may not affect).
	if target.hasPrivilege("SYSTEM_USER") && !sess.hasPrivilege("SYSTEM_USER") {
		return myErr(ErKillDenied, "You are not owner of thread %d", id)
	}
	if query {
		if target.command == "Query" && target.queryKil != nil && target != sess {
			close(target.queryKil)
			target.queryKil = nil
		}
		return nil
	}
	s.log.Info("session killed", "id", id, "user", target.user.Name, "by", sess.user.Name)
	target.kill()
	s.markKilledLocked(target)
	if target == sess {
		return myErr(ErQueryInterrupted, "Query execution was interrupted")
	}
	return nil
}

// redactSecrets hides passwords in statement text shown in the processlist,
// as MySQL rewrites them (SOURCE_PASSWORD = <secret>, IDENTIFIED BY <secret>).
func redactSecrets(sql string, toks []token) string {
	var sb strings.Builder
	last := 0
	for i, t := range toks {
		if t.kind != tString || i < 2 {
			continue
		}
		prev, prev2 := toks[i-1], toks[i-2]
		secret := prev.isPunct("=") && prev2.kind == tIdent && strings.HasSuffix(strings.ToUpper(prev2.text), "PASSWORD") ||
			prev.isKw("BY") && (prev2.isKw("IDENTIFIED") || i >= 4 && toks[i-3].isKw("WITH")) || // IDENTIFIED WITH plugin BY
			prev.isKw("REPLACE") // ALTER USER ... REPLACE 'current password
		if !secret {
			continue
		}
		sb.WriteString(sql[last:t.pos])
		sb.WriteString("<secret>")
		last = t.end
	}
	if last == 0 {
		return sql
	}
	sb.WriteString(sql[last:])
	return sb.String()
}
