package accounts

import (
	"fmt"
	"sort"
	"strings"
)

// Drift compares what SHOW GRANTS FOR user printed (one line per row) with
// what role r holds and returns the GRANT and REVOKE statements that
// restore the role: every missing privilege granted, every extra one
// (another level, GRANT OPTION, a role granted to the account) revoked.
// REVOKE comes first in the returned order, so that a revoke of a level
// never takes back what the grants just restored.
//
// The operator role is not diffed (an error): it holds ALL PRIVILEGES WITH
// GRANT OPTION, which SHOW GRANTS prints as the server's list of every
// privilege, and an operator that lost any of them could not restore it.
// A line Drift cannot read (a column grant, a proxy grant) is an error:
// nothing is sent rather than something wrong. Partial revokes (REVOKE
// lines) are part of the role and restored last (partial.go).
func Drift(r Role, user string, showGrants []string) (stmts []string, err error) {
	if r == RoleOperator {
		return nil, fmt.Errorf("the operator account's grants are not diffed")
	}
	want := levels{}
	for _, g := range Grants(r) {
		want.add(g)
	}
	stmts, revoked, err := compareLevels(user, want, showGrants)
	if err != nil {
		return nil, err
	}
	return append(stmts, partialDrift(r, user, revoked)...), nil
}

// compareLevels reads SHOW GRANTS lines and returns the REVOKE then GRANT
// statements that turn them into want, and the partial revokes (REVOKE
// lines) the account carries, which the caller judges.
func compareLevels(user string, want levels, showGrants []string) (stmts []string, revoked []Grant, err error) {
	have := levels{}
	var roles []string
	for _, line := range showGrants {
		if g, ok, err := parseRevokeLine(line); ok { // partial.go
			if err != nil {
				return nil, nil, err
			}
			revoked = append(revoked, g)
			continue
		}
		g, role, err := parseGrantLine(line)
		if err != nil {
			return nil, nil, err
		}
		if role != "" {
			roles = append(roles, role)
			continue
		}
		have.add(g)
	}
	var revokes, grants []string
	for _, role := range roles {
		revokes = append(revokes, "REVOKE "+role+" FROM "+Name(user))
	}
	for _, on := range sortedLevels(have, want) {
		h, w := have.at(on), want.at(on)
		if extra := minus(h, w); len(extra) > 0 {
			revokes = append(revokes, "REVOKE "+strings.Join(extra, ", ")+" ON "+on+" FROM "+Name(user))
		}
		if h.grantOption && !w.grantOption {
			revokes = append(revokes, "REVOKE GRANT OPTION ON "+on+" FROM "+Name(user))
		}
		missing := minus(w, h)
		if len(missing) > 0 || (w.grantOption && !h.grantOption) {
			if len(missing) == 0 {
				missing = []string{"USAGE"}
			}
			grants = append(grants, Grant{Privileges: missing, On: on, WithGrantOption: w.grantOption}.Statement(user))
		}
	}
	return append(revokes, grants...), revoked, nil
}

// level is one level's privileges (USAGE never among them).
type level struct {
	privs       map[string]bool
	grantOption bool
}

type levels map[string]*level

// at is on's level, empty when absent.
func (ls levels) at(on string) *level {
	if l := ls[on]; l != nil {
		return l
	}
	return &level{privs: map[string]bool{}}
}

func (ls levels) add(g Grant) {
	l := ls[g.On]
	if l == nil {
		l = &level{privs: map[string]bool{}}
		ls[g.On] = l
	}
	for _, p := range g.Privileges {
		switch p {
		case "USAGE":
		case "ALL PRIVILEGES", "ALL":
			for _, q := range allAt(g.On) {
				l.privs[q] = true
			}
		default:
			l.privs[p] = true
		}
	}
	l.grantOption = l.grantOption || g.WithGrantOption
}

// allAt is what ALL PRIVILEGES means on a database or table level, as SHOW
// GRANTS abbreviates it there (the global level is always printed whole).
func allAt(on string) []string {
	if strings.HasSuffix(on, ".*") {
		return []string{"SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "REFERENCES", "INDEX", "ALTER",
			"CREATE TEMPORARY TABLES", "LOCK TABLES", "EXECUTE", "CREATE VIEW", "SHOW VIEW", "CREATE ROUTINE",
			"ALTER ROUTINE", "EVENT", "TRIGGER"}
	}
	return []string{"SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "REFERENCES", "INDEX", "ALTER",
		"CREATE VIEW", "SHOW VIEW", "TRIGGER"}
}

// minus is a's privileges that b lacks, sorted.
func minus(a, b *level) []string {
	var out []string
	for p := range a.privs {
		if !b.privs[p] {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func sortedLevels(a, b levels) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []levels{a, b} {
		for on := range m {
			if !seen[on] {
				seen[on] = true
				out = append(out, on)
			}
		}
	}
	sort.Strings(out)
	return out
}

// parseGrantLine reads one SHOW GRANTS row: GRANT privs ON level TO
// account [WITH GRANT OPTION], or GRANT role[, role] TO account (the roles
// are returned as written, for a REVOKE).
func parseGrantLine(line string) (g Grant, roles string, err error) {
	bad := func(why string) (Grant, string, error) {
		return Grant{}, "", fmt.Errorf("cannot read the SHOW GRANTS row %q: %s", line, why)
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "GRANT ")
	if !ok {
		return bad("not a GRANT")
	}
	if i := strings.Index(rest, " ON "); i < 0 || strings.Contains(rest[:i], "`@`") {
		to := strings.LastIndex(rest, " TO ")
		if to < 0 {
			return bad("no TO")
		}
		return Grant{}, strings.TrimSpace(rest[:to]), nil
	}
	i := strings.Index(rest, " ON ")
	privText, after := rest[:i], rest[i+len(" ON "):]
	to := strings.Index(after, " TO ")
	if to < 0 {
		return bad("no TO")
	}
	g.On, after = after[:to], after[to+len(" TO "):]
	if strings.HasPrefix(privText, "PROXY") || strings.ContainsAny(privText, "()") {
		return bad("proxy and column grants are not part of any role")
	}
	if g.On != GlobalLevel && !strings.HasPrefix(g.On, "`") {
		return bad("level " + g.On)
	}
	g.WithGrantOption = strings.HasSuffix(after, " WITH GRANT OPTION")
	for _, p := range strings.Split(privText, ",") {
		if p = strings.TrimSpace(p); p != "" {
			g.Privileges = append(g.Privileges, strings.ToUpper(p))
		}
	}
	return g, "", nil
}
