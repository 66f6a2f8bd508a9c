// Package accounts is what the group's MySQL accounts are: one per role of
// spec.credentials (docs/credentials.md), the privileges each holds, and the
// statements that create an account, restore its grants when they drifted
// and rotate its password. Pure: no I/O; the init script (pkg/render) and
// the topology manager send what it returns.
package accounts

import (
	"fmt"
	"strings"
)

// Role is one account's job in the group.
type Role string

// The roles of spec.credentials.
const (
	// RoleOperator is the operator's and the sidecars' account.
	RoleOperator Role = "operator"
	// RoleReplication streams the binary log to replicas and is the clone
	// donor account (MYSQL_REPLICATION_USER; the operator account when
	// unset).
	RoleReplication Role = "replication"
	// RoleApp is the application's read-write account.
	RoleApp Role = "app"
	// RoleReadOnly is the application's read-only account.
	RoleReadOnly Role = "readOnly"
	// RoleMonitor is the Prometheus exporter's account.
	RoleMonitor Role = "monitor"
	// RoleBackup is the backup and restore Jobs' account.
	RoleBackup Role = "backup"
)

// Roles lists every role in the order the init script creates them.
func Roles() []Role {
	return []Role{RoleOperator, RoleReplication, RoleApp, RoleReadOnly, RoleMonitor, RoleBackup}
}

// Host is the host part of every account: the sites' clients connect
// through Services from pod addresses that change.
const Host = "%"

// Account is one MySQL account of a role.
type Account struct {
	Role           Role
	User, Password string
}

// Grant is one GRANT statement's parts: privileges on one level.
type Grant struct {
	// Privileges in upper case, as SHOW GRANTS prints them.
	Privileges []string
	// On is the level as SHOW GRANTS prints it: *.*, `db`.* or `db`.`t`.
	On string
	// WithGrantOption: the account may grant what it holds at this level.
	WithGrantOption bool
}

// GlobalLevel is the level *.*.
const GlobalLevel = "*.*"

// AppPrivileges are the application account's privileges: the data and
// schema privileges of ALL PRIVILEGES, and nothing else. Not ALL itself: at
// the global level ALL also grants SUPER and every dynamic privilege, among
// them what lets a session write on a fenced site or unfence it
// (CONNECTION_ADMIN, SUPER, SYSTEM_VARIABLES_ADMIN: super_read_only, read_only
// and offline_mode), hide its writes from replication (SESSION_VARIABLES_ADMIN:
// sql_log_bin and gtid_next; BINLOG_ADMIN: PURGE BINARY LOGS;
// REPLICATION_SLAVE_ADMIN, REPLICATION_APPLIER: the channels), or kill the
// operator's sessions (CONNECTION_ADMIN, SUPER: KILL of another user's
// session). Excluded static privileges for the same reasons: SHUTDOWN,
// RELOAD (RESET BINARY LOGS AND GTIDS, FLUSH), FILE, PROCESS, CREATE USER,
// REPLICATION SLAVE and REPLICATION CLIENT, CREATE TABLESPACE, CREATE ROLE
// and DROP ROLE, SHOW DATABASES (read-only, but not the application's
// business). ExcludedFromApp lists them all; docs/credentials.md says what
// each exclusion prevents.
var AppPrivileges = []string{"SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "REFERENCES", "INDEX",
	"ALTER", "CREATE TEMPORARY TABLES", "LOCK TABLES", "EXECUTE", "CREATE VIEW", "SHOW VIEW", "CREATE ROUTINE",
	"ALTER ROUTINE", "EVENT", "TRIGGER"}

// ExcludedFromApp are the privileges of ALL PRIVILEGES the application
// account does not hold because each lets it write on a fenced site,
// unfence it, hide writes from replication or stop the operator (see
// AppPrivileges); the ones the issue names first.
var ExcludedFromApp = []string{"SUPER", "SYSTEM_VARIABLES_ADMIN", "SESSION_VARIABLES_ADMIN", "CONNECTION_ADMIN",
	"BINLOG_ADMIN", "REPLICATION_SLAVE_ADMIN", "REPLICATION_APPLIER", "SYSTEM_USER", "SET_ANY_DEFINER",
	"GROUP_REPLICATION_ADMIN", "PERSIST_RO_VARIABLES_ADMIN", "SERVICE_CONNECTION_ADMIN", "TRANSACTION_GTID_TAG",
	"ROLE_ADMIN", "SHUTDOWN", "RELOAD", "FILE", "PROCESS", "CREATE USER", "REPLICATION SLAVE",
	"REPLICATION CLIENT", "CREATE TABLESPACE", "CREATE ROLE", "DROP ROLE", "GRANT OPTION", "CLONE_ADMIN", "ALLOW_NONEXISTENT_DEFINER", "INNODB_REDO_LOG_ENABLE"}

// Grants is what role r holds (docs/credentials.md; the CRD reference's
// grants, narrowed for the application account as AppPrivileges says).
func Grants(r Role) []Grant {
	switch r {
	case RoleOperator:
		return []Grant{{Privileges: []string{"ALL PRIVILEGES"}, On: GlobalLevel, WithGrantOption: true}}
	case RoleReplication:
		return []Grant{{Privileges: []string{"REPLICATION SLAVE", "REPLICATION CLIENT", "BACKUP_ADMIN", "CLONE_ADMIN"}, On: GlobalLevel}}
	case RoleApp:
		return []Grant{{Privileges: append([]string(nil), AppPrivileges...), On: GlobalLevel}}
	case RoleReadOnly:
		return []Grant{{Privileges: []string{"SELECT", "SHOW VIEW", "SHOW DATABASES", "PROCESS"}, On: GlobalLevel}}
	case RoleMonitor:
		return []Grant{
			{Privileges: []string{"PROCESS", "REPLICATION CLIENT"}, On: GlobalLevel},
			{Privileges: []string{"SELECT"}, On: "`performance_schema`.*"},
		}
	case RoleBackup:
		return []Grant{{Privileges: []string{"SELECT", "LOCK TABLES", "SHOW VIEW", "EVENT", "TRIGGER", "RELOAD",
			"BACKUP_ADMIN", "REPLICATION CLIENT"}, On: GlobalLevel}}
	}
	return nil
}

// Name is the account name user@'%' as a statement writes it.
func Name(user string) string { return Quote(user) + "@" + Quote(Host) }

// Statement is g as a GRANT statement to user.
func (g Grant) Statement(user string) string {
	s := "GRANT " + strings.Join(g.Privileges, ", ") + " ON " + g.On + " TO " + Name(user)
	if g.WithGrantOption {
		s += " WITH GRANT OPTION"
	}
	return s
}

// CreateStatements create a's account with its role's grants. IF NOT
// EXISTS is deliberately absent: an account that already exists is one the
// caller did not expect (convergence creates only what SHOW GRANTS did not
// find), and failing says so instead of leaving its password unknown.
func CreateStatements(a Account) []string {
	out := []string{"CREATE USER " + Name(a.User) + " IDENTIFIED BY " + Quote(a.Password)}
	for _, g := range Grants(a.Role) {
		out = append(out, g.Statement(a.User))
	}
	return append(out, revokeStatements(a)...) // partial.go
}

// Quote is v as a MySQL string literal (backslash escapes: the server runs
// without NO_BACKSLASH_ESCAPES, docs/api.md mysqlConf notwithstanding, as
// the image's init script runs with the default sql_mode).
func Quote(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`, "\n", `\n`, "\r", `\r`, "\x1a", `\Z`)
	return "'" + r.Replace(v) + "'"
}

// Validate refuses a set of accounts the group cannot run with: an empty
// user or password, the image's own root account, and two roles sharing
// one username (one password and one grant set cannot serve two roles; the
// replication role sharing the operator's account is expressed by leaving
// it out). Errors name roles, never a password.
func Validate(accts []Account) error {
	seen := map[string]Role{}
	for _, a := range accts {
		switch {
		case a.User == "":
			return fmt.Errorf("the %s account has no username", a.Role)
		case a.Password == "":
			return fmt.Errorf("the %s account %q has no password", a.Role, a.User)
		case a.User == "root":
			return fmt.Errorf("the %s account may not be named root: root is the image's own account (MYSQL_ROOT_PASSWORD)", a.Role)
		case len(a.User) > 32:
			return fmt.Errorf("the %s account's username is %d characters long; MySQL allows at most 32", a.Role, len(a.User))
		}
		if r, ok := seen[a.User]; ok {
			return fmt.Errorf("the %s and %s accounts have the same username %q; each role needs its own", r, a.Role, a.User)
		}
		seen[a.User] = a.Role
	}
	return nil
}
