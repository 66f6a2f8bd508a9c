package mysqlsim

import "net"

// Privilege checks (docs/mysql-simulator.md, "Accounts and privileges").
// Every statement that MySQL guards by a privilege asks one of these
// functions; the answer comes from the account's grants (accounts.go).
//
// As in MySQL ("When Privilege Changes Take Effect"), a session's global
// privileges are those its account had when it connected; database and
// table privileges follow GRANT and REVOKE at once (MySQL: at the next
// statement or USE). Partial revokes (partialrevokes.go) are recorded in
// mysql.user with the global privileges and, like them, are taken at
// login.

// sessionPrivs is what a session may do.
type sessionPrivs struct {
	global privSet            // static and dynamic privileges ON *.*
	dbs    map[string]privSet // ON db.*
	tables map[string]privSet // ON db.table, keyed db + "." + table
	// restricted are the partial revokes of global privileges: db ->
	// privileges the global grant does not give on that database.
	restricted restrictionSet
}

// loginPrivs is the privilege snapshot of a session that logs in as a.
func loginPrivs(a *account) *sessionPrivs {
	p := &sessionPrivs{global: privSet{}}
	for k, v := range a.global {
		p.global[k] = v
	}
	for k := range a.dynamic {
		p.global[k] = true
	}
	if a.globalWith {
		p.global["GRANT OPTION"] = true
	}
	p.dbs, p.tables = levelPrivs(a.dbs), levelPrivs(a.tables)
	p.restricted = a.restrictions.clone()
	return p
}

func levelPrivs(m map[string]*levelGrant) map[string]privSet {
	out := map[string]privSet{}
	for k, g := range m {
		ps := copyPrivs(g.privs)
		if g.with {
			ps["GRANT OPTION"] = true
		}
		out[k] = ps
	}
	return out
}

// refreshSessionPrivsLocked gives every session of a changed account its
// new database and table privileges (global ones stay as at login).
func (s *Server) refreshSessionPrivsLocked() {
	for _, sess := range s.sessions {
		old := sess.privs.Load()
		if old == nil || sess.system {
			continue
		}
		a := s.st.accounts[accountKey(sess.user.Name, sess.acctHost)]
		if a == nil {
			continue // a dropped account's sessions keep what they had, as in MySQL
		}
		fresh := loginPrivs(a)
		fresh.global, fresh.restricted = old.global, old.restricted
		sess.privs.Store(fresh)
	}
}

// hasPrivilege reports whether the session holds the global privilege p,
// named as MySQL names it in upper case ("REPLICATION SLAVE",
// "CONNECTION_ADMIN", "SUPER", ...). System sessions (replication applier,
// recovery, first-boot scripts) hold every privilege.
func (sess *session) hasPrivilege(p string) bool {
	if sess.system {
		return true
	}
	ps := sess.privs.Load()
	return ps != nil && ps.global[p]
}

// hasAnyPrivilege reports whether the session holds at least one of ps, as
// MySQL's "you need (at least one of) the X or Y privilege(s)" checks do.
func (sess *session) hasAnyPrivilege(ps ...string) bool {
	for _, p := range ps {
		if sess.hasPrivilege(p) {
			return true
		}
	}
	return false
}

// hasSchemaPrivilege reports whether the session holds the privilege p
// ("SELECT", "INSERT", "DELETE", "CREATE", "DROP", ...) on the database db,
// from a grant ON *.* that no partial revoke takes back on db, or ON db.*.
func (sess *session) hasSchemaPrivilege(db, p string) bool {
	if sess.system {
		return true
	}
	ps := sess.privs.Load()
	return ps != nil && ((ps.global[p] && !ps.restricted.has(db, p)) || ps.dbs[db][p])
}

// hasTablePrivilege is hasSchemaPrivilege or a grant ON db.table.
func (sess *session) hasTablePrivilege(db, table, p string) bool {
	if sess.hasSchemaPrivilege(db, p) {
		return true
	}
	ps := sess.privs.Load()
	return ps != nil && ps.tables[db+"."+table][p]
}

// systemSession is a session of the server itself (MySQL's system threads):
// every privilege check passes and read_only/super_read_only do not apply.
func (s *Server) systemSession(name string) *session {
	return &session{user: User{Name: name}, acctHost: "localhost", system: true, gtidNext: "AUTOMATIC", killed: make(chan struct{})}
}

// checkWritePrivilege applies the privilege a data change needs (manual:
// "Privileges Provided by MySQL"): CREATE/DROP DATABASE answer 1044
// without it, table changes 1142, as MySQL's check_access does.
func (sess *session) checkWritePrivilege(op writeOp) error {
	verb := map[opKind]string{opCreateDB: "CREATE", opDropDB: "DROP", opCreateTable: "CREATE", opInsert: "INSERT", opDelete: "DELETE"}[op.kind]
	if verb == "" || sess.hasTablePrivilege(op.db, op.table, verb) {
		return nil
	}
	switch op.kind {
	case opCreateDB, opDropDB:
		return errDBAccessDenied(sess, op.db)
	}
	return errTableAccessDenied(sess, verb, op.table)
}

// accountHost is the host part of the session's account, as error
// messages and CURRENT_USER() name it.
func (sess *session) accountHost() string {
	if sess.acctHost == "" {
		return "%"
	}
	return sess.acctHost
}

// clientHost is the client's address without the port (USER()).
func (sess *session) clientHost() string {
	if h, _, err := net.SplitHostPort(sess.host); err == nil {
		return h
	}
	return sess.host
}
