package accounts

import (
	"fmt"
	"sort"
	"strings"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Schema owners (MysqlDatabase spec.owner, docs/api.md): an account with
// every privilege on its schemas and nothing else. A database level holds
// only the data and schema privileges, so the owner never holds what
// ExcludedFromApp lists (they are global privileges); its grant is written
// as AppPrivileges, the application role's list, so that the two can never
// drift apart and GRANT OPTION is never part of it.

// SchemaLevel is the level `db`.* as SHOW GRANTS prints it.
func SchemaLevel(db string) string { return "`" + strings.ReplaceAll(db, "`", "``") + "`.*" }

// OwnerGrants is what an owner of dbs holds: AppPrivileges on each schema,
// in name order.
func OwnerGrants(dbs []string) []Grant {
	sorted := append([]string(nil), dbs...)
	sort.Strings(sorted)
	var out []Grant
	for i, db := range sorted {
		if i > 0 && db == sorted[i-1] {
			continue
		}
		out = append(out, Grant{Privileges: append([]string(nil), AppPrivileges...), On: SchemaLevel(db)})
	}
	return out
}

// OwnerCreateStatements create user with password and its grant on each
// of dbs (no IF NOT EXISTS: see CreateStatements).
func OwnerCreateStatements(user, password string, dbs []string) []string {
	out := []string{"CREATE USER " + Name(user) + " IDENTIFIED BY " + Quote(password)}
	for _, g := range OwnerGrants(dbs) {
		out = append(out, g.Statement(user))
	}
	return out
}

// OwnerDrift is Drift for an owner of dbs: the REVOKE and GRANT statements
// that bring SHOW GRANTS FOR user back to OwnerGrants(dbs). A privilege on
// another level (a global one, another schema) is revoked: an owner holds
// its schemas and nothing else.
func OwnerDrift(user string, dbs []string, showGrants []string) ([]string, error) {
	want := levels{}
	for _, g := range OwnerGrants(dbs) {
		want.add(g)
	}
	return driftTo(user, want, showGrants)
}

// DropUser drops user's account.
func DropUser(user string) string { return "DROP USER " + Name(user) }

// ManagedUsers are the usernames the group's operator manages (every role
// of spec.credentials whose Secret could be read, and root, the image's own
// account): a schema owner may not be any of them, or applying the owner
// would change that account's password and grants. A Secret that cannot be
// read leaves its role out; the caller judges that case with FromSecrets.
func ManagedUsers(c v1alpha1.CredentialsSpec, get SecretGetter) []string {
	out := []string{"root"}
	for _, r := range Roles() {
		name := SecretOf(c, r)
		if name == "" {
			continue
		}
		data, err := get(name)
		if err != nil {
			continue
		}
		key := SecretKeyUsername
		if r == RoleReplication {
			key = SecretKeyReplicationUser
		}
		if u := string(data[key]); u != "" {
			out = append(out, u)
		}
	}
	sort.Strings(out)
	return out
}

// OwnerCollision is the error for an owner named like an account the
// operator manages, or nil. MySQL compares user names case-sensitively.
func OwnerCollision(owner string, managed []string) error {
	for _, u := range managed {
		if u == owner {
			return fmt.Errorf("owner %q is an account the operator manages for spec.credentials of the group (or the image's root account)", owner)
		}
	}
	return nil
}

// driftTo is Drift's comparison against the levels want (Drift itself is
// keyed by role; owners are keyed by their schemas). An owner holds no
// global privilege, so a partial revoke on it is nothing this package
// wrote: an error, and nothing is sent.
func driftTo(user string, want levels, showGrants []string) ([]string, error) {
	stmts, revoked, err := compareLevels(user, want, showGrants)
	if err != nil {
		return nil, err
	}
	if len(revoked) > 0 {
		return nil, fmt.Errorf("SHOW GRANTS for %s shows a partial revoke on %s, which no owner account holds", Name(user), revoked[0].On)
	}
	return stmts, nil
}
