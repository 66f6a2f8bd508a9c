package accounts

import (
	"fmt"
	"sort"
	"strings"
)

// Partial revokes (MySQL manual, "Privilege Restriction Using Partial
// Revokes"; docs/credentials.md, "What the application account cannot
// do"). The application's privileges are granted ON *.*, which includes the
// mysql schema, and MySQL accepts INSERT, UPDATE and DELETE there in place
// of CREATE USER (CREATE, ALTER, DROP USER, and INSTALL/UNINSTALL PLUGIN
// through mysql.plugin) and, in MySQL, direct edits of the grant tables. On
// the active site that would let the application change the password of
// every account without SYSTEM_USER and log in as it. With
// partial_revokes=ON (pkg/render's my.cnf) a REVOKE at the schema level
// takes those privileges back on that schema only; SHOW GRANTS prints it as
// a REVOKE line, and it is part of the role (Drift restores it).

// appSysRevoked are the application's privileges taken back on the sys
// schema: everything that creates, changes or drops its objects. sys's
// views and routines run with the invoker's privileges (SQL SECURITY
// INVOKER), so one the application replaced would run with the privileges
// of whoever calls it next, a DBA or the operator. Reading sys (SELECT,
// SHOW VIEW, EXECUTE of its routines, which run as the application itself)
// stays allowed.
var appSysRevoked = []string{"INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "REFERENCES", "INDEX", "ALTER",
	"CREATE TEMPORARY TABLES", "LOCK TABLES", "CREATE VIEW", "CREATE ROUTINE", "ALTER ROUTINE", "EVENT", "TRIGGER"}

// PartialRevokes is what role r holds globally but not on some schemas:
// each Grant names the privileges taken back on one schema level. The
// application holds none of its privileges on mysql (reading mysql.user
// would show every account's password hash) and only the reading ones on
// sys.
func PartialRevokes(r Role) []Grant {
	if r != RoleApp {
		return nil
	}
	return []Grant{
		{Privileges: append([]string(nil), AppPrivileges...), On: "`mysql`.*"},
		{Privileges: append([]string(nil), appSysRevoked...), On: "`sys`.*"},
	}
}

// RevokeStatement is g as the REVOKE statement that makes it a partial
// revoke of user's global privileges.
func (g Grant) RevokeStatement(user string) string {
	return "REVOKE " + strings.Join(g.Privileges, ", ") + " ON " + g.On + " FROM " + Name(user)
}

// revokeStatements are the partial revokes of a's role, sent after its
// grants: a global GRANT by an account without restrictions lifts them.
func revokeStatements(a Account) []string {
	var out []string
	for _, g := range PartialRevokes(a.Role) {
		out = append(out, g.RevokeStatement(a.User))
	}
	return out
}

// parseRevokeLine reads a SHOW GRANTS row REVOKE privs ON `db`.* FROM
// account (a partial revoke); ok is false for any other row.
func parseRevokeLine(line string) (g Grant, ok bool, err error) {
	rest, isRevoke := strings.CutPrefix(strings.TrimSpace(line), "REVOKE ")
	if !isRevoke {
		return Grant{}, false, nil
	}
	on := strings.Index(rest, " ON ")
	from := strings.LastIndex(rest, " FROM ")
	if on < 0 || from < on {
		return Grant{}, true, fmt.Errorf("cannot read the SHOW GRANTS row %q: not a partial revoke", line)
	}
	g.On = rest[on+len(" ON ") : from]
	if !strings.HasPrefix(g.On, "`") || !strings.HasSuffix(g.On, ".*") {
		return Grant{}, true, fmt.Errorf("cannot read the SHOW GRANTS row %q: a partial revoke is on a schema", line)
	}
	for _, p := range strings.Split(rest[:on], ",") {
		if p = strings.ToUpper(strings.TrimSpace(p)); p != "" {
			g.Privileges = append(g.Privileges, p)
		}
	}
	return g, true, nil
}

// partialDrift restores the role's partial revokes from what SHOW GRANTS
// printed (have): a missing one is revoked again, one the role does not
// have is lifted by a schema-level GRANT (which, with the privilege held
// globally, removes the restriction and records no schema grant).
func partialDrift(r Role, user string, have []Grant) (stmts []string) {
	want, got := levels{}, levels{}
	for _, g := range PartialRevokes(r) {
		want.add(g)
	}
	for _, g := range have {
		got.add(g)
	}
	var lifts, revokes []string
	for _, on := range sortedLevels(got, want) {
		if extra := minus(got.at(on), want.at(on)); len(extra) > 0 {
			lifts = append(lifts, Grant{Privileges: extra, On: on}.Statement(user))
		}
		if missing := minus(want.at(on), got.at(on)); len(missing) > 0 {
			sort.Strings(missing)
			revokes = append(revokes, Grant{Privileges: missing, On: on}.RevokeStatement(user))
		}
	}
	return append(lifts, revokes...)
}
