package mysqlsim

import (
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// execSet implements SET [GLOBAL|SESSION|PERSIST|LOCAL] var = value[, ...],
// SET @@[global.]var = value, SET NAMES, SET CHARACTER SET and SET TRANSACTION.
func (s *Server) execSet(sess *session, c *cursor) error {
	if c.acceptKw("NAMES") || c.acceptKw("CHARACTER", "SET") || c.acceptKw("CHARSET") {
		c.next()
		if c.acceptKw("COLLATE") {
			c.next()
		}
		return c.expectEnd()
	}
	if c.peek().isKw("TRANSACTION") || c.acceptKw("SESSION", "TRANSACTION") {
		return nil // isolation level and access mode are accepted and not modelled
	}
	type assignment struct {
		name    string
		sc      scope
		val     any
		persist bool
	}
	var assigns []assignment
	for {
		sc := scopeDefault
		persist := false
		switch {
		case c.acceptKw("GLOBAL"):
			sc = scopeGlobal
		case c.acceptKw("PERSIST"), c.acceptKw("PERSIST_ONLY"):
			sc, persist = scopeGlobal, true
		case c.acceptKw("SESSION"), c.acceptKw("LOCAL"):
			sc = scopeSession
		}
		t := c.next()
		var name string
		switch {
		case t.kind == tSysVar:
			e, err := (&cursor{sql: c.sql, toks: []token{t}}).parseExpr()
			if err != nil {
				return err
			}
			name = e.text
			if e.sc != scopeDefault {
				sc = e.sc
			}
		case t.kind == tIdent && strings.HasPrefix(t.text, "@"):
			name = "@" + t.text[1:] // user variable (dump.go)
		case t.kind == tIdent || t.kind == tQIdent:
			name = strings.ToLower(t.text)
		default:
			c.i--
			return c.errHere()
		}
		if !c.acceptPunct("=") && !(c.peek().kind == tPunct && c.peek().text == ":" && c.acceptPunct(":") && c.acceptPunct("=")) {
			return c.errHere()
		}
		e, err := c.parseExpr()
		if err != nil {
			return err
		}
		var val any
		switch {
		case e.kind == eColumn: // bare words like ON, OFF, DEFAULT
			val = strings.ToUpper(e.text)
		default:
			if val, _, err = s.eval(sess, e); err != nil {
				return err
			}
		}
		if name != "" {
			assigns = append(assigns, assignment{name, sc, val, persist})
		}
		if !c.acceptPunct(",") {
			break
		}
	}
	if err := c.expectEnd(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range assigns {
		if strings.HasPrefix(a.name, "@") {
			sess.setUserVarLocked(a.name[1:], a.val)
			continue
		}
		if err := s.setVarLocked(sess, a.name, a.sc, a.val); err != nil {
			return err
		}
		if a.persist { // mysqld-auto.cnf, applied at every start
			s.st.persisted[a.name] = newPersisted(a.val, sess.user.Name)
			if err := writePersisted(s.disk, s.st.persisted); err != nil {
				return myErr(ErWrongValueForVar, "Variable '%s' could not be persisted: %v", a.name, err)
			}
		}
	}
	return nil
}

func (s *Server) setVarLocked(sess *session, name string, sc scope, val any) error {
	def, ok := sysVars[name]
	if !ok {
		return myErr(ErUnknownSystemVariable, "Unknown system variable '%s'", name)
	}
	if def.readOnly {
		return myErr(ErIncorrectGlobalLocalVar, "Variable '%s' is a read only variable", name)
	}
	if sc == scopeDefault {
		sc = scopeSession
	}
	if sc == scopeSession && def.kind == globalOnly {
		return myErr(ErGlobalVariable, "Variable '%s' is a GLOBAL variable and should be set with SET GLOBAL", name)
	}
	if sc == scopeGlobal && def.kind == sessionOnly {
		return myErr(1228, "Variable '%s' is a SESSION variable and can't be used with SET GLOBAL", name)
	}
	if sc == scopeGlobal {
		if !sess.hasAnyPrivilege("SYSTEM_VARIABLES_ADMIN", "SUPER") {
			return errNeedPrivilege("SUPER or SYSTEM_VARIABLES_ADMIN")
		}
		return s.setGlobalLocked(sess, name, val)
	}
	switch name {
	case "gtid_next":
		return s.setGTIDNextLocked(sess, val)
	case "lock_wait_timeout":
		n, ok := val.(int64)
		if !ok || n < 1 || n > 31536000 {
			return myErr(ErWrongValueForVar, "Variable 'lock_wait_timeout' can't be set to the value of '%v'", val)
		}
		sess.lockWaitTimeout = time.Duration(n) * time.Second
	case "sql_log_bin":
		if !sess.hasAnyPrivilege("SYSTEM_VARIABLES_ADMIN", "SESSION_VARIABLES_ADMIN", "SUPER") {
			return errNeedPrivilege("SUPER, SYSTEM_VARIABLES_ADMIN or SESSION_VARIABLES_ADMIN")
		}
		on, err := parseBoolValue(name, val)
		if err != nil {
			return err
		}
		sess.sqlLogBinOff = !on // account statements honour it (grants.go)
	}
	return nil // other session variables are accepted and not modelled
}

// setGTIDNextLocked implements SET gtid_next = 'AUTOMATIC' | 'uuid[:tag]:n':
// the next transaction commits with exactly that GTID (or is skipped if it was
// already executed). Setting it needs SYSTEM_VARIABLES_ADMIN or REPLICATION_APPLIER.
func (s *Server) setGTIDNextLocked(sess *session, val any) error {
	if !sess.hasAnyPrivilege("SYSTEM_VARIABLES_ADMIN", "SESSION_VARIABLES_ADMIN", "REPLICATION_APPLIER", "SUPER") {
		return errNeedPrivilege("SUPER, SYSTEM_VARIABLES_ADMIN, SESSION_VARIABLES_ADMIN or REPLICATION_APPLIER")
	}
	str := strings.TrimSpace(argString(val))
	if strings.EqualFold(str, "AUTOMATIC") {
		sess.gtidNext = "AUTOMATIC"
		return nil
	}
	g, err := gtid.ParseGTID(str)
	if err != nil {
		return myErr(1774, "Malformed GTID specification '%s'.", str)
	}
	if sess.inTxn {
		return myErr(1790, "@@SESSION.GTID_NEXT cannot be changed by a client that owns a GTID. The client owns %s. Ownership is released on COMMIT or ROLLBACK.", sess.gtidNext)
	}
	sess.gtidNext = g.String()
	sess.gtidNextUsed = false
	return nil
}
