package mysqlsim

import (
	"encoding/hex"
	"sort"
	"strings"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// Account statements (manual: "Account Management Statements"): CREATE
// USER, ALTER USER, DROP USER, GRANT, REVOKE, SHOW GRANTS, and the privilege
// names MySQL 9.7 knows (manual: "Privileges Provided by MySQL").

// Error numbers of account management and privilege checks (MySQL's
// include/mysqld_error.h).
const (
	ErDBAccessDenied          = 1044 // ER_DBACCESS_DENIED_ERROR
	ErPasswordNoMatch         = 1133 // ER_PASSWORD_NO_MATCH
	ErNonexistingGrant        = 1141 // ER_NONEXISTING_GRANT
	ErWrongUsage              = 1221 // ER_WRONG_USAGE
	ErCannotUser              = 1396 // ER_CANNOT_USER
	ErCantCreateUserWithGrant = 1410 // ER_CANT_CREATE_USER_WITH_GRANT
	ErAccountLocked           = 3118 // ER_ACCOUNT_HAS_BEEN_LOCKED
	ErIllegalPrivilegeLevel   = 3619 // ER_ILLEGAL_PRIVILEGE_LEVEL
)

func init() {
	for _, c := range []uint16{ErDBAccessDenied, ErPasswordNoMatch, ErNonexistingGrant, ErCantCreateUserWithGrant} {
		sqlStates[c] = "42000"
	}
}

func errDBAccessDenied(sess *session, db string) *gomysql.MyError {
	return myErr(ErDBAccessDenied, "Access denied for user '%s'@'%s' to database '%s'", sess.user.Name, sess.accountHost(), db)
}

func errTableAccessDenied(sess *session, verb, table string) *gomysql.MyError {
	return myErr(ErTableAccessDenied, "%s command denied to user '%s'@'%s' for table '%s'", verb, sess.user.Name, sess.accountHost(), table)
}

// staticPrivs are the static privileges in the order SHOW GRANTS prints
// them; dbPrivs those also grantable ON db.* (and ON db.table, tablePrivs).
var (
	staticPrivs = []string{"SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "RELOAD", "SHUTDOWN", "PROCESS",
		"FILE", "REFERENCES", "INDEX", "ALTER", "SHOW DATABASES", "SUPER", "CREATE TEMPORARY TABLES", "LOCK TABLES",
		"EXECUTE", "REPLICATION SLAVE", "REPLICATION CLIENT", "CREATE VIEW", "SHOW VIEW", "CREATE ROUTINE",
		"ALTER ROUTINE", "CREATE USER", "EVENT", "TRIGGER", "CREATE TABLESPACE", "CREATE ROLE", "DROP ROLE"}
	dbPrivs = privSet{"SELECT": true, "INSERT": true, "UPDATE": true, "DELETE": true, "CREATE": true, "DROP": true,
		"REFERENCES": true, "INDEX": true, "ALTER": true, "CREATE TEMPORARY TABLES": true, "LOCK TABLES": true,
		"EXECUTE": true, "CREATE VIEW": true, "SHOW VIEW": true, "CREATE ROUTINE": true, "ALTER ROUTINE": true,
		"EVENT": true, "TRIGGER": true}
	tablePrivs = privSet{"SELECT": true, "INSERT": true, "UPDATE": true, "DELETE": true, "CREATE": true, "DROP": true,
		"REFERENCES": true, "INDEX": true, "ALTER": true, "CREATE VIEW": true, "SHOW VIEW": true, "TRIGGER": true}
	// dynamicPrivs are the dynamic privileges of a MySQL 9.7 server with
	// the plugins the product loads, as SHOW GRANTS prints them for an
	// account with ALL PRIVILEGES.
	dynamicPrivs = []string{"ALLOW_NONEXISTENT_DEFINER", "APPLICATION_PASSWORD_ADMIN", "AUDIT_ABORT_EXEMPT", "AUDIT_ADMIN",
		"AUTHENTICATION_POLICY_ADMIN", "BACKUP_ADMIN", "BINLOG_ADMIN", "BINLOG_ENCRYPTION_ADMIN", "CLONE_ADMIN",
		"CONNECTION_ADMIN", "ENCRYPTION_KEY_ADMIN", "FIREWALL_EXEMPT", "FLUSH_OPTIMIZER_COSTS", "FLUSH_PRIVILEGES",
		"FLUSH_STATUS", "FLUSH_TABLES", "FLUSH_USER_RESOURCES", "GROUP_REPLICATION_ADMIN", "GROUP_REPLICATION_STREAM",
		"INNODB_REDO_LOG_ARCHIVE", "INNODB_REDO_LOG_ENABLE", "OPTIMIZE_LOCAL_TABLE", "PASSWORDLESS_USER_ADMIN",
		"PERSIST_RO_VARIABLES_ADMIN", "REPLICATION_APPLIER", "REPLICATION_SLAVE_ADMIN", "RESOURCE_GROUP_ADMIN",
		"RESOURCE_GROUP_USER", "ROLE_ADMIN", "SENSITIVE_VARIABLES_OBSERVER", "SERVICE_CONNECTION_ADMIN",
		"SESSION_VARIABLES_ADMIN", "SET_ANY_DEFINER", "SHOW_ROUTINE", "SYSTEM_USER", "SYSTEM_VARIABLES_ADMIN",
		"TABLE_ENCRYPTION_ADMIN", "TELEMETRY_LOG_ADMIN", "TRANSACTION_GTID_TAG", "XA_RECOVER_ADMIN"}
	isDynamic = func() map[string]bool {
		m := map[string]bool{}
		for _, p := range dynamicPrivs {
			m[p] = true
		}
		return m
	}()
	isStatic = func() map[string]bool {
		m := map[string]bool{}
		for _, p := range staticPrivs {
			m[p] = true
		}
		return m
	}()
)

// accountStmt is a parsed account statement.
type accountStmt struct {
	verb      string // CREATE USER, ALTER USER, DROP USER, GRANT, REVOKE
	ifExists  bool   // IF [NOT] EXISTS
	users     []userSpec
	privs     []string // upper case; ALL for ALL [PRIVILEGES]
	grantOpt  bool     // GRANT OPTION among the privileges (REVOKE) or WITH GRANT OPTION (GRANT)
	db, table string   // level: "*" "*" for *.*, db "*" for db.*
	lock      *bool    // ACCOUNT LOCK / UNLOCK
	allFrom   bool     // REVOKE ALL [PRIVILEGES], GRANT OPTION FROM: every privilege at every level
	// partialRevokes is partial_revokes where the statement runs, grantor
	// the restrictions of the account that runs it (partialrevokes.go).
	partialRevokes bool
	grantor        restrictionSet
}

type userSpec struct {
	user, host string
	plugin     string  // IDENTIFIED WITH; empty when not given
	password   *string // IDENTIFIED BY: plaintext, replaced by authString before logging
	authString *string // IDENTIFIED WITH plugin AS 'auth string'
	retain     bool    // RETAIN CURRENT PASSWORD
	discard    bool    // DISCARD OLD PASSWORD
}

func (u userSpec) name() string { return "'" + u.user + "'@'" + u.host + "'" }

func parseAccountStmt(sql string) (*accountStmt, error) {
	toks, err := lex(sql)
	if err != nil {
		return nil, err
	}
	c := &cursor{sql: sql, toks: toks}
	first := c.next()
	return parseAccountStmtAfter(first, c)
}

func parseAccountStmtAfter(first token, c *cursor) (*accountStmt, error) {
	st := &accountStmt{}
	var err error
	switch {
	case first.isKw("CREATE") && c.acceptKw("USER"):
		st.verb = "CREATE USER"
		st.ifExists = c.acceptKw("IF", "NOT", "EXISTS")
		err = c.parseUserList(st, true)
	case first.isKw("ALTER") && c.acceptKw("USER"):
		st.verb = "ALTER USER"
		st.ifExists = c.acceptKw("IF", "EXISTS")
		err = c.parseUserList(st, true)
	case first.isKw("DROP") && c.acceptKw("USER"):
		st.verb = "DROP USER"
		st.ifExists = c.acceptKw("IF", "EXISTS")
		err = c.parseUserList(st, false)
	case first.isKw("GRANT"), first.isKw("REVOKE"):
		st.verb = strings.ToUpper(first.text)
		err = c.parseGrant(st)
	default:
		return nil, c.errHere()
	}
	if err != nil {
		return nil, err
	}
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	return st, nil
}

// isAccountStmt reports whether a statement starting with first is one of
// the account statements (CREATE/ALTER/DROP USER, GRANT, REVOKE).
func isAccountStmt(first token, c *cursor) bool {
	return first.isKw("GRANT", "REVOKE") || first.isKw("CREATE", "ALTER", "DROP") && c.peek().isKw("USER")
}

// accountName reads 'user'@'host' (quoted or bare parts); no host is '%'.
func (c *cursor) accountName() (string, string, error) {
	t := c.next()
	if t.kind != tString && t.kind != tIdent && t.kind != tQIdent {
		c.i--
		return "", "", c.errHere()
	}
	user, host := t.text, "%"
	if t.kind == tIdent && strings.Contains(t.text, "@") { // bare user@host
		i := strings.IndexByte(t.text, '@')
		return t.text[:i], t.text[i+1:], nil
	}
	p := c.peek()
	switch {
	case p.kind == tIdent && p.text == "@":
		c.next()
		h := c.next()
		if h.kind != tString && h.kind != tIdent && h.kind != tQIdent {
			c.i--
			return "", "", c.errHere()
		}
		host = h.text
	case p.kind == tIdent && strings.HasPrefix(p.text, "@") && p.pos == t.end:
		c.next()
		host = p.text[1:]
	}
	return user, host, nil
}

func (c *cursor) parseUserList(st *accountStmt, withAuth bool) error {
	for {
		var u userSpec
		var err error
		if u.user, u.host, err = c.accountName(); err != nil {
			return err
		}
		if withAuth {
			if err := c.parseAuthOption(&u, st.verb == "ALTER USER"); err != nil {
				return err
			}
		}
		st.users = append(st.users, u)
		if !c.acceptPunct(",") {
			break
		}
	}
	if !withAuth {
		return nil
	}
	for !c.done() {
		switch {
		case c.acceptKw("ACCOUNT", "LOCK"):
			t := true
			st.lock = &t
		case c.acceptKw("ACCOUNT", "UNLOCK"):
			f := false
			st.lock = &f
		case c.acceptKw("REQUIRE", "NONE"), c.acceptKw("PASSWORD", "EXPIRE", "NEVER"), c.acceptKw("PASSWORD", "EXPIRE", "DEFAULT"):
		default:
			return errNotSupported("this account option in the Bloodraven MySQL simulator")
		}
	}
	return nil
}

// parseAuthOption reads IDENTIFIED BY 'pw' | IDENTIFIED WITH plugin [BY 'pw'
// | AS 'auth'] [RETAIN CURRENT PASSWORD], or DISCARD OLD PASSWORD.
func (c *cursor) parseAuthOption(u *userSpec, alter bool) error {
	if alter && c.acceptKw("DISCARD", "OLD", "PASSWORD") {
		u.discard = true
		return nil
	}
	if !c.acceptKw("IDENTIFIED") {
		return nil
	}
	if c.acceptKw("WITH") {
		t := c.next()
		if t.kind != tString && t.kind != tIdent && t.kind != tQIdent {
			c.i--
			return c.errHere()
		}
		u.plugin = strings.ToLower(t.text)
		if u.plugin != CachingSHA2Password && u.plugin != NativePassword {
			return myErr(1524, "Plugin '%s' is not loaded", t.text)
		}
	}
	switch {
	case c.acceptKw("BY"):
		pw, err := c.stringLit()
		if err != nil {
			return err
		}
		u.password = &pw
	case u.plugin != "" && c.acceptKw("AS"):
		t := c.next()
		var a string
		switch {
		case t.kind == tString:
			a = t.text
		case t.kind == tIdent && strings.HasPrefix(strings.ToLower(t.text), "0x"):
			b, err := hex.DecodeString(t.text[2:])
			if err != nil {
				return errParse(t.text)
			}
			a = string(b)
		default:
			c.i--
			return c.errHere()
		}
		u.authString = &a
	case u.plugin == "":
		return c.errHere()
	}
	if alter && c.acceptKw("RETAIN", "CURRENT", "PASSWORD") {
		u.retain = true
	}
	return nil
}

// parseGrant reads GRANT privs ON level TO users [WITH GRANT OPTION] and
// REVOKE privs ON level FROM users (also REVOKE ALL, GRANT OPTION FROM).
func (c *cursor) parseGrant(st *accountStmt) error {
	for {
		var words []string
		for !c.done() && !c.peek().isPunct(",") && !c.peek().isKw("ON") && !c.peek().isKw("FROM") {
			t := c.next()
			if t.kind != tIdent {
				c.i--
				return c.errHere()
			}
			words = append(words, strings.ToUpper(t.text))
		}
		p := strings.Join(words, " ")
		switch p {
		case "":
			return c.errHere()
		case "ALL", "ALL PRIVILEGES":
			p = "ALL"
		case "REPLICATION REPLICA":
			p = "REPLICATION SLAVE"
		}
		if p == "GRANT OPTION" {
			st.grantOpt = true
		} else if p != "USAGE" {
			if p != "ALL" && !isStatic[p] && !isDynamic[p] {
				return errParse(strings.ToLower(p))
			}
			st.privs = append(st.privs, p)
		}
		if !c.acceptPunct(",") {
			break
		}
	}
	st.db, st.table = "*", "*"
	if c.acceptKw("ON") {
		var err error
		if st.db, st.table, err = c.grantLevel(); err != nil {
			return err
		}
	} else if st.verb == "GRANT" || !(len(st.privs) == 1 && st.privs[0] == "ALL" && st.grantOpt) {
		return c.errHere()
	} else {
		st.allFrom = true
	}
	if st.verb == "GRANT" {
		if err := c.expectKw("TO"); err != nil {
			return err
		}
	} else if err := c.expectKw("FROM"); err != nil {
		return err
	}
	if err := c.parseUserList(st, false); err != nil {
		return err
	}
	if st.verb == "GRANT" && c.acceptKw("WITH", "GRANT", "OPTION") {
		st.grantOpt = true
	}
	return nil
}

// grantLevel reads *.*, db.*, db.table, * or table; an empty db means the
// session's database, filled in by the caller.
func (c *cursor) grantLevel() (string, string, error) {
	part := func() (string, error) {
		if c.acceptPunct("*") {
			return "*", nil
		}
		return c.ident()
	}
	a, err := part()
	if err != nil {
		return "", "", err
	}
	if !c.acceptPunct(".") {
		return "", a, nil
	}
	b, err := part()
	if err != nil {
		return "", "", err
	}
	if a == "*" && b != "*" {
		return "", "", c.errHere()
	}
	return a, b, nil
}

// text is the statement as MySQL writes it to the binary log: accounts
// quoted, passwords as IDENTIFIED WITH 'plugin' AS 'auth string' (hex when
// the string holds bytes that are not printable), never the plaintext.
func (st *accountStmt) text() string {
	var b strings.Builder
	b.WriteString(st.verb)
	switch st.verb {
	case "CREATE USER":
		if st.ifExists {
			b.WriteString(" IF NOT EXISTS")
		}
	case "ALTER USER", "DROP USER":
		if st.ifExists {
			b.WriteString(" IF EXISTS")
		}
	case "GRANT", "REVOKE":
		privs := append([]string(nil), st.privs...)
		for i, p := range privs {
			if p == "ALL" {
				privs[i] = "ALL PRIVILEGES"
			}
		}
		if st.verb == "REVOKE" && st.grantOpt {
			privs = append(privs, "GRANT OPTION")
		}
		if len(privs) == 0 {
			privs = []string{"USAGE"}
		}
		b.WriteString(" " + strings.Join(privs, ", "))
		if !st.allFrom {
			b.WriteString(" ON " + levelText(st.db, st.table))
		}
		if st.verb == "GRANT" {
			b.WriteString(" TO")
		} else {
			b.WriteString(" FROM")
		}
	}
	for i, u := range st.users {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(" " + u.name())
		if u.discard {
			b.WriteString(" DISCARD OLD PASSWORD")
		}
		if u.plugin != "" {
			b.WriteString(" IDENTIFIED WITH '" + u.plugin + "'")
			if u.authString != nil && *u.authString != "" {
				b.WriteString(" AS " + authLiteral(*u.authString))
			}
		}
		if u.retain {
			b.WriteString(" RETAIN CURRENT PASSWORD")
		}
	}
	if st.verb == "GRANT" && st.grantOpt {
		b.WriteString(" WITH GRANT OPTION")
	}
	if st.lock != nil {
		if *st.lock {
			b.WriteString(" ACCOUNT LOCK")
		} else {
			b.WriteString(" ACCOUNT UNLOCK")
		}
	}
	return b.String()
}

func authLiteral(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e || s[i] == '\'' || s[i] == '\\' {
			return "0x" + strings.ToUpper(hex.EncodeToString([]byte(s)))
		}
	}
	return "'" + s + "'"
}

func levelText(db, table string) string {
	q := func(s string) string {
		if s == "*" {
			return s
		}
		return quoteIdent(s)
	}
	return q(db) + "." + q(table)
}

// hashPasswords turns every IDENTIFIED BY into IDENTIFIED WITH ... AS, the
// form that is logged and applied; ALTER USER without a plugin keeps the
// account's.
func (st *accountStmt) hashPasswords(accounts accountSet) {
	for i := range st.users {
		u := &st.users[i]
		if u.password == nil {
			if u.plugin != "" && u.authString == nil {
				empty := ""
				u.authString = &empty
			}
			continue
		}
		if u.plugin == "" {
			u.plugin = CachingSHA2Password
			if a := accounts[accountKey(u.user, u.host)]; a != nil && st.verb == "ALTER USER" {
				u.plugin = a.plugin
			}
		}
		h := hashPassword(u.plugin, *u.password)
		u.authString, u.password = &h, nil
	}
}

// check validates the statement against the accounts without changing
// them, with MySQL's errors.
func (set accountSet) check(st *accountStmt) error {
	var failed []string
	for _, u := range st.users {
		a := set[accountKey(u.user, u.host)]
		switch st.verb {
		case "CREATE USER":
			if a != nil && !st.ifExists {
				failed = append(failed, u.name())
			}
		case "ALTER USER", "DROP USER":
			if a == nil && !st.ifExists {
				failed = append(failed, u.name())
			}
		case "GRANT":
			if a == nil {
				return myErr(ErCantCreateUserWithGrant, "You are not allowed to create a user with GRANT")
			}
		case "REVOKE":
			if a == nil {
				return myErr(ErNonexistingGrant, "There is no such grant defined for user '%s' on host '%s'", u.user, u.host)
			}
			if st.db != "*" && !st.allFrom && a.level(st.db, st.table) == nil && !st.allPartial(a) {
				return myErr(ErNonexistingGrant, "There is no such grant defined for user '%s' on host '%s'", u.user, u.host)
			}
		}
	}
	if len(failed) > 0 {
		return myErr(ErCannotUser, "Operation %s failed for %s", st.verb, strings.Join(failed, ","))
	}
	if st.verb == "GRANT" || st.verb == "REVOKE" {
		return checkPrivLevel(st)
	}
	return nil
}

// checkPrivLevel refuses privileges granted at a level they do not exist
// at: dynamic privileges are global only (3619), global static ones
// (SUPER, PROCESS, REPLICATION SLAVE, ...) cannot be granted on a database
// (1221).
func checkPrivLevel(st *accountStmt) error {
	if st.db == "*" {
		return nil
	}
	allowed := dbPrivs
	if st.table != "*" {
		allowed = tablePrivs
	}
	for _, p := range st.privs {
		switch {
		case p == "ALL":
		case isDynamic[p]:
			return myErr(ErIllegalPrivilegeLevel, "Illegal privilege level specified for %s", p)
		case !allowed[p]:
			if st.table != "*" {
				return myErr(1144, "Illegal GRANT/REVOKE command; please consult the manual to see which privileges can be used")
			}
			return myErr(ErWrongUsage, "Incorrect usage of DB GRANT and GLOBAL PRIVILEGES")
		}
	}
	return nil
}

// apply changes the accounts; st passed check.
func (set accountSet) apply(st *accountStmt) {
	switch st.verb {
	case "CREATE USER":
		for _, u := range st.users {
			if set[accountKey(u.user, u.host)] != nil {
				continue // IF NOT EXISTS
			}
			a := newAccount(u.user, u.host)
			if u.plugin != "" {
				a.plugin = u.plugin
			}
			if u.authString != nil {
				a.authString = *u.authString
			}
			if st.lock != nil {
				a.locked = *st.lock
			}
			set[a.key()] = a
		}
	case "ALTER USER":
		for _, u := range st.users {
			if a := set[accountKey(u.user, u.host)]; a != nil {
				a.alter(u, st.lock)
			}
		}
	case "DROP USER":
		for _, u := range st.users {
			delete(set, accountKey(u.user, u.host))
		}
	case "GRANT":
		_ = set.applyGrant(st)
	case "REVOKE":
		set.applyRevoke(st)
	}
}

func (a *account) alter(u userSpec, lock *bool) {
	if u.discard {
		a.secondary = ""
	}
	if u.authString != nil {
		old := a.authString
		if u.plugin != "" && u.plugin != a.plugin {
			old = "" // a secondary password only survives a change of password, not of plugin
			a.plugin = u.plugin
		}
		if u.retain {
			a.secondary = old
		} else {
			a.secondary = ""
		}
		a.authString = *u.authString
		a.pwChanged = time.Now().UTC().Truncate(time.Second)
	}
	if lock != nil {
		a.locked = *lock
	}
}

// level returns the grant row for db.table (db.* when table is "*").
func (a *account) level(db, table string) *levelGrant {
	if table == "*" {
		return a.dbs[db]
	}
	return a.tables[db+"."+table]
}

func (set accountSet) applyGrant(st *accountStmt) error {
	for _, u := range st.users {
		a := set[accountKey(u.user, u.host)]
		if a == nil {
			return myErr(ErCantCreateUserWithGrant, "You are not allowed to create a user with GRANT")
		}
		if st.db == "*" {
			for _, p := range expandAll(st.privs, true) {
				if isDynamic[p] {
					a.dynamic[p] = a.dynamic[p] || st.grantOpt
				} else {
					a.grantGlobalRestrictions(p, a.global[p], st.grantor)
					a.global[p] = true
				}
			}
			a.globalWith = a.globalWith || st.grantOpt
			continue
		}
		m, k := a.dbs, st.db
		if st.table != "*" {
			m, k = a.tables, st.db+"."+st.table
		}
		g := m[k]
		if g == nil {
			g = &levelGrant{privs: privSet{}}
			m[k] = g
		}
		allowed := dbPrivs
		if st.table != "*" {
			allowed = tablePrivs
		}
		for _, p := range st.privs {
			if p == "ALL" {
				for q := range allowed {
					g.privs[q] = true
				}
				continue
			}
			g.privs[p] = true
		}
		g.with = g.with || st.grantOpt
		if st.table == "*" {
			a.liftSchemaRestrictions(st.db, g)
		}
	}
	return nil
}

// liftSchemaRestrictions: a schema-level GRANT of a privilege the account
// has restricted on that schema removes the restriction and records no
// database grant for it (manual, "Privilege Restriction Using Partial
// Revokes"; DB_restrictions_aggregator_db_grant).
func (a *account) liftSchemaRestrictions(db string, g *levelGrant) {
	for p := range a.restrictions[db] {
		if g.privs[p] {
			delete(g.privs, p)
			a.restrictions.remove(db, p)
		}
	}
	if len(g.privs) == 0 && !g.with {
		delete(a.dbs, db)
	}
}

// allPartial reports whether a schema-level REVOKE becomes restrictions
// only, so that it needs no database grant row.
func (st *accountStmt) allPartial(a *account) bool {
	if !st.partialRevokes || st.table != "*" || st.grantOpt {
		return false
	}
	restrict, rest := a.partialRevokeSplit(st.db, schemaLevelPrivs(st.privs))
	return len(restrict) > 0 && len(rest) == 0
}

func (set accountSet) applyRevoke(st *accountStmt) {
	for _, u := range st.users {
		a := set[accountKey(u.user, u.host)]
		if a == nil {
			continue
		}
		if st.allFrom {
			*a = *newAccountLike(a)
			continue
		}
		if st.db == "*" {
			for _, p := range expandAll(st.privs, true) {
				delete(a.global, p)
				delete(a.dynamic, p)
				a.restrictions.removeEverywhere(p) // revoking globally lifts its restrictions
			}
			if st.grantOpt {
				a.globalWith = false
				for p := range a.dynamic {
					a.dynamic[p] = false
				}
			}
			continue
		}
		m, k := a.dbs, st.db
		privs := st.privs
		if st.table != "*" {
			m, k = a.tables, st.db+"."+st.table
		} else if st.partialRevokes {
			var restrict []string
			restrict, privs = a.partialRevokeSplit(st.db, schemaLevelPrivs(st.privs))
			for _, p := range restrict {
				a.restrictions.add(st.db, p)
			}
		}
		g := m[k]
		if g == nil {
			continue
		}
		for _, p := range privs {
			if p == "ALL" {
				g.privs = privSet{}
			}
			delete(g.privs, p)
		}
		if st.grantOpt {
			g.with = false
		}
		if len(g.privs) == 0 && !g.with {
			delete(m, k)
		}
	}
}

// newAccountLike is a with its authentication but no privileges (REVOKE
// ALL PRIVILEGES, GRANT OPTION FROM).
func newAccountLike(a *account) *account {
	b := newAccount(a.user, a.host)
	b.plugin, b.authString, b.secondary, b.locked, b.pwChanged = a.plugin, a.authString, a.secondary, a.locked, a.pwChanged
	return b
}

// expandAll replaces ALL by every static privilege and, at the global level,
// every dynamic one, as GRANT ALL ON *.* does in MySQL 8+.
func expandAll(privs []string, global bool) []string {
	var out []string
	for _, p := range privs {
		if p != "ALL" {
			out = append(out, p)
			continue
		}
		out = append(out, staticPrivs...)
		if global {
			out = append(out, dynamicPrivs...)
		}
	}
	return out
}

// showGrants is SHOW GRANTS' output for a: the global static privileges (or
// USAGE), the dynamic ones on their own line (with and without GRANT
// OPTION apart), then database and table grants, as MySQL 8+ prints them.
func (a *account) showGrants() []string {
	to := " TO `" + a.user + "`@`" + a.host + "`"
	var lines []string
	var static []string
	for _, p := range staticPrivs {
		if a.global[p] {
			static = append(static, p)
		}
	}
	if len(static) == 0 {
		static = []string{"USAGE"}
	}
	with := ""
	if a.globalWith {
		with = " WITH GRANT OPTION"
	}
	lines = append(lines, "GRANT "+strings.Join(static, ", ")+" ON *.*"+to+with)
	var dynWith, dynPlain []string
	for _, p := range dynamicPrivs {
		if w, ok := a.dynamic[p]; ok {
			if w {
				dynWith = append(dynWith, p)
			} else {
				dynPlain = append(dynPlain, p)
			}
		}
	}
	if len(dynPlain) > 0 {
		lines = append(lines, "GRANT "+strings.Join(dynPlain, ",")+" ON *.*"+to)
	}
	if len(dynWith) > 0 {
		lines = append(lines, "GRANT "+strings.Join(dynWith, ",")+" ON *.*"+to+" WITH GRANT OPTION")
	}
	lines = append(lines, a.revokeLines()...) // partial revokes, before the database grants
	lines = append(lines, levelLines(a.dbs, dbPrivs, to, false)...)
	lines = append(lines, levelLines(a.tables, tablePrivs, to, true)...)
	return lines
}

func levelLines(m map[string]*levelGrant, all privSet, to string, table bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var lines []string
	for _, k := range keys {
		g := m[k]
		var privs []string
		for _, p := range staticPrivs {
			if g.privs[p] {
				privs = append(privs, p)
			}
		}
		if len(privs) == len(all) {
			privs = []string{"ALL PRIVILEGES"}
		}
		if len(privs) == 0 {
			privs = []string{"USAGE"}
		}
		on := "`" + k + "`.*"
		if table {
			i := strings.IndexByte(k, '.')
			on = "`" + k[:i] + "`.`" + k[i+1:] + "`"
		}
		with := ""
		if g.with {
			with = " WITH GRANT OPTION"
		}
		lines = append(lines, "GRANT "+strings.Join(privs, ", ")+" ON "+on+to+with)
	}
	return lines
}

// execAccountStmt runs CREATE/ALTER/DROP USER, GRANT and REVOKE: checks the
// privilege, validates against the accounts, and commits the change as a
// transaction of its own (an implicit commit first, as DDL) logged as a
// Query event with MySQL's text; with sql_log_bin=0 it changes the
// accounts without a GTID or binary log event.
func (s *Server) execAccountStmt(sess *session, first token, c *cursor) error {
	st, err := parseAccountStmtAfter(first, c)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.db == "" && (st.verb == "GRANT" || st.verb == "REVOKE") {
		if sess.db == "" {
			return myErr(ErNoDB, "No database selected")
		}
		st.db = sess.db
	}
	if err := s.checkAccountPrivilege(sess, st); err != nil {
		return err
	}
	if err := s.waitBehindFenceLocked(sess); err != nil {
		return err
	}
	op := writeOp{kind: opAccount}
	if err := s.waitForWriteLocksLocked(sess, op); err != nil { // backuplocks.go
		return err
	}
	if err := s.checkWritableLocked(sess, op); err != nil {
		return err
	}
	st.hashPasswords(s.st.accounts)
	st.partialRevokes = s.ext.partialRevokes
	if ps := sess.privs.Load(); ps != nil && !sess.system {
		st.grantor = ps.restricted
	}
	if err := s.st.accounts.check(st); err != nil {
		return err
	}
	if sess.inTxn { // implicit commit
		if err := s.commitLocked(sess, sess.txnOps); err != nil {
			return err
		}
		sess.inTxn, sess.txnOps = false, nil
	}
	for _, u := range st.users {
		if st.verb == "ALTER USER" || st.verb == "DROP USER" {
			delete(s.sha2Cache, accountKey(u.user, u.host))
		}
	}
	if sess.sqlLogBinOff {
		s.st.accounts.apply(st)
		s.refreshSessionPrivsLocked()
		s.saveLocked()
		s.notifyLocked()
		return nil
	}
	return s.commitLocked(sess, []writeOp{accountOpOf(st)})
}

// checkAccountPrivilege is the privilege each account statement needs
// (manual: "CREATE USER Statement", "GRANT Statement", "REVOKE
// Statement", "ALTER USER Statement"): CREATE USER for account changes
// (none to change one's own password), GRANT OPTION and the privileges
// themselves to grant or revoke them.
//
// The mysql schema's privilege stands in for CREATE USER as the manual
// says: INSERT for CREATE USER, UPDATE for ALTER USER, DELETE for DROP
// USER. And an account with SYSTEM_USER (a system account: the operator's,
// with ALL PRIVILEGES) can be changed only by a session that has
// SYSTEM_USER too (manual "Account Categories"): 1227.
func (s *Server) checkAccountPrivilege(sess *session, st *accountStmt) error {
	if err := s.checkAccountStmtPrivilege(sess, st); err != nil {
		return err
	}
	return s.checkSystemAccounts(sess, st)
}

func (s *Server) checkAccountStmtPrivilege(sess *session, st *accountStmt) error {
	switch st.verb {
	case "CREATE USER", "DROP USER":
		if !sess.hasPrivilege("CREATE USER") && !sess.hasSchemaPrivilege("mysql", map[string]string{"CREATE USER": "INSERT", "DROP USER": "DELETE"}[st.verb]) {
			return errNeedPrivilege("CREATE USER")
		}
	case "ALTER USER":
		self := st.lock == nil
		for _, u := range st.users {
			self = self && u.user == sess.user.Name && strings.EqualFold(u.host, sess.accountHost())
		}
		if !self && !sess.hasPrivilege("CREATE USER") && !sess.hasSchemaPrivilege("mysql", "UPDATE") {
			return errNeedPrivilege("CREATE USER")
		}
	case "GRANT", "REVOKE":
		// REVOKE ALL PRIVILEGES, GRANT OPTION FROM: CREATE USER, or UPDATE
		// on the mysql schema (manual "REVOKE Statement").
		if st.allFrom && (sess.hasPrivilege("CREATE USER") || sess.hasSchemaPrivilege("mysql", "UPDATE")) {
			return nil
		}
		return s.checkGrantor(sess, st)
	}
	return nil
}

// checkSystemAccounts refuses a session without SYSTEM_USER a statement
// naming an account that holds SYSTEM_USER. Changing one's own password
// stays allowed (ALTER USER of the session's own account).
func (s *Server) checkSystemAccounts(sess *session, st *accountStmt) error {
	if sess.hasPrivilege("SYSTEM_USER") {
		return nil
	}
	for _, u := range st.users {
		self := u.user == sess.user.Name && strings.EqualFold(u.host, sess.accountHost())
		if st.verb == "ALTER USER" && self && st.lock == nil {
			continue
		}
		if a := s.st.accounts[accountKey(u.user, u.host)]; a != nil {
			if _, sys := a.dynamic["SYSTEM_USER"]; sys {
				return errNeedPrivilege("SYSTEM_USER")
			}
		}
	}
	return nil
}

func (s *Server) checkGrantor(sess *session, st *accountStmt) error {
	has := func(p string) bool {
		if st.db == "*" {
			return sess.hasPrivilege(p)
		}
		if st.table == "*" {
			return sess.hasSchemaPrivilege(st.db, p)
		}
		return sess.hasTablePrivilege(st.db, st.table, p)
	}
	ok := has("GRANT OPTION")
	for _, p := range expandAll(st.privs, st.db == "*") {
		if st.db != "*" && !dbPrivs[p] && !tablePrivs[p] {
			continue // refused by checkPrivLevel with its own error
		}
		ok = ok && has(p)
	}
	if ok {
		return nil
	}
	switch {
	case st.db == "*":
		for _, p := range st.privs {
			if isDynamic[p] {
				return errNeedPrivilege("GRANT OPTION")
			}
		}
		return myErr(ErAccessDenied, "Access denied for user '%s'@'%s' (using password: YES)", sess.user.Name, sess.accountHost())
	case st.table == "*":
		return errDBAccessDenied(sess, st.db)
	}
	return errTableAccessDenied(sess, st.verb, st.table)
}

// execShowGrants is SHOW GRANTS [FOR user | FOR CURRENT_USER[()]]; another
// account's grants need SELECT on the mysql schema (1044).
func (s *Server) execShowGrants(sess *session, c *cursor) (*table, error) {
	user, host := sess.user.Name, sess.accountHost()
	if c.acceptKw("FOR") {
		if c.acceptKw("CURRENT_USER") {
			if c.acceptPunct("(") {
				if err := c.expectPunct(")"); err != nil {
					return nil, err
				}
			}
		} else {
			var err error
			if user, host, err = c.accountName(); err != nil {
				return nil, err
			}
		}
	}
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	self := user == sess.user.Name && strings.EqualFold(host, sess.accountHost())
	if !self && !sess.hasSchemaPrivilege("mysql", "SELECT") {
		return nil, errDBAccessDenied(sess, "mysql")
	}
	a := s.st.accounts[accountKey(user, host)]
	if a == nil {
		return nil, myErr(ErNonexistingGrant, "There is no such grant defined for user '%s' on host '%s'", user, host)
	}
	t := &table{cols: []column{{"Grants for " + user + "@" + host, colString}}}
	for _, l := range a.showGrants() {
		t.rows = append(t.rows, []any{l})
	}
	return t, nil
}

func (c *cursor) expectPunct(p string) error {
	if !c.acceptPunct(p) {
		return c.errHere()
	}
	return nil
}

// mysqlUserColumns are the columns of mysql.user the simulator has.
var mysqlUserColumns = []column{
	{"Host", colString}, {"User", colString}, {"plugin", colString}, {"authentication_string", colString},
	{"account_locked", colString}, {"password_last_changed", colString},
	{"Super_priv", colString}, {"Create_user_priv", colString}, {"Repl_slave_priv", colString}, {"Repl_client_priv", colString},
}

// selectMySQLUser answers SELECT ... FROM mysql.user (SELECT on the mysql
// schema needed, 1142). Rows are in MySQL's primary key order (Host, User).
func (s *Server) selectMySQLUser(sess *session, items []selItem) (*table, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !sess.hasTablePrivilege("mysql", "user", "SELECT") {
		return nil, errTableAccessDenied(sess, "SELECT", "user")
	}
	yn := func(b bool) string {
		if b {
			return "Y"
		}
		return "N"
	}
	accts := make([]*account, 0, len(s.st.accounts))
	for _, a := range s.st.accounts {
		accts = append(accts, a)
	}
	sort.Slice(accts, func(i, j int) bool {
		if accts[i].host != accts[j].host {
			return accts[i].host < accts[j].host
		}
		return accts[i].user < accts[j].user
	})
	var rows [][]any
	for _, a := range accts {
		rows = append(rows, []any{a.host, a.user, a.plugin, a.authString, yn(a.locked),
			a.pwChanged.Format("2006-01-02 15:04:05"), yn(a.global["SUPER"]), yn(a.global["CREATE USER"]),
			yn(a.global["REPLICATION SLAVE"]), yn(a.global["REPLICATION CLIENT"])})
	}
	return project(mysqlUserColumns, rows, items)
}
