package mysqlsim

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// Partial revokes (manual: "Privilege Restriction Using Partial Revokes").
// With partial_revokes=ON, REVOKE of a schema-level privilege that an
// account holds only globally records a restriction instead of failing
// with 1141: the account keeps the global privilege except on that schema.
// Restrictions live in mysql.user (User_attributes "Restrictions"; here
// account.restrictions), so they are in the checkpoint, copied by CLONE and
// replicated with the REVOKE statement that made them. Every schema-level
// privilege check honours them (privileges.go). As global privileges, a
// session takes them at login (manual, "When Privilege Changes Take
// Effect": mysql.user is the global level).

// ErPartialRevokesExist is ER_PARTIAL_REVOKES_EXIST: partial_revokes
// cannot be turned OFF while an account has a restriction.
const ErPartialRevokesExist = 3896

// restrictionSet is an account's restrictions: database -> privileges.
type restrictionSet map[string]privSet

func (r restrictionSet) clone() restrictionSet {
	out := restrictionSet{}
	for db, ps := range r {
		out[db] = copyPrivs(ps)
	}
	return out
}

func (r restrictionSet) add(db, p string) {
	if r[db] == nil {
		r[db] = privSet{}
	}
	r[db][p] = true
}

func (r restrictionSet) remove(db, p string) {
	if ps := r[db]; ps != nil {
		delete(ps, p)
		if len(ps) == 0 {
			delete(r, db)
		}
	}
}

// removeEverywhere drops p from every database: revoking a privilege
// globally, or granting it globally by a grantor without restrictions.
func (r restrictionSet) removeEverywhere(p string) {
	for db := range r {
		r.remove(db, p)
	}
}

// has reports whether p is restricted on db.
func (r restrictionSet) has(db, p string) bool { return r[db][p] }

// accountContext is what an account statement's effect depends on besides
// the statement: partial_revokes at the server that ran it and the
// grantor's restrictions (a global GRANT passes them on). It travels with
// the op (cols[1]) so that the journal's replay and the checks before
// commit reach the same result as the statement did; the binary log holds
// only the statement's text, and a replica runs it under its own
// partial_revokes, as in MySQL.
type accountContext struct {
	PartialRevokes bool                `json:"partialRevokes,omitempty"`
	Grantor        map[string][]string `json:"grantorRestrictions,omitempty"`
}

// accountOpOf is the op that commits st with its context.
func accountOpOf(st *accountStmt) writeOp {
	op := accountOp(st.text())
	ctx := accountContext{PartialRevokes: st.partialRevokes, Grantor: restrictionLists(st.grantor)}
	if ctx.PartialRevokes || len(ctx.Grantor) > 0 {
		b, _ := json.Marshal(ctx)
		op.cols = append(op.cols, string(b))
	}
	return op
}

// accountStmtOf parses an account op with its context.
func (op writeOp) accountStmtOf() (*accountStmt, error) {
	st, err := parseAccountStmt(op.stmtText())
	if err != nil || len(op.cols) < 2 {
		return st, err
	}
	var ctx accountContext
	if err := json.Unmarshal([]byte(op.cols[1]), &ctx); err != nil {
		return nil, err
	}
	st.partialRevokes, st.grantor = ctx.PartialRevokes, restrictionsFromLists(ctx.Grantor)
	return st, nil
}

func restrictionLists(r restrictionSet) map[string][]string {
	if len(r) == 0 {
		return nil
	}
	out := map[string][]string{}
	for db, ps := range r {
		out[db] = privList(ps)
	}
	return out
}

func restrictionsFromLists(m map[string][]string) restrictionSet {
	r := restrictionSet{}
	for db, ps := range m {
		for _, p := range ps {
			r.add(db, p)
		}
	}
	return r
}

// diskRestriction is one entry of User_attributes "Restrictions", as
// MySQL writes it: {"Database": "world", "Privileges": ["INSERT"]}.
type diskRestriction struct {
	Database   string   `json:"Database"`
	Privileges []string `json:"Privileges"`
}

func toDiskRestrictions(r restrictionSet) []diskRestriction {
	var out []diskRestriction
	for _, db := range sortedDBs(r) {
		out = append(out, diskRestriction{Database: db, Privileges: orderedPrivs(r[db])})
	}
	return out
}

func fromDiskRestrictions(ds []diskRestriction) restrictionSet {
	r := restrictionSet{}
	for _, d := range ds {
		for _, p := range d.Privileges {
			r.add(d.Database, p)
		}
	}
	return r
}

func sortedDBs(r restrictionSet) []string {
	dbs := make([]string, 0, len(r))
	for db := range r {
		dbs = append(dbs, db)
	}
	sort.Strings(dbs)
	return dbs
}

// orderedPrivs is ps in the order SHOW GRANTS prints privileges.
func orderedPrivs(ps privSet) []string {
	var out []string
	for _, p := range staticPrivs {
		if ps[p] {
			out = append(out, p)
		}
	}
	return out
}

// revokeLines are the restrictions as SHOW GRANTS prints them: one
// REVOKE ... ON `db`.* FROM line per database, in database order.
func (a *account) revokeLines() []string {
	var lines []string
	for _, db := range sortedDBs(a.restrictions) {
		lines = append(lines, "REVOKE "+strings.Join(orderedPrivs(a.restrictions[db]), ", ")+" ON "+quoteIdent(db)+".* FROM `"+a.user+"`@`"+a.host+"`")
	}
	return lines
}

// partialRevokeSplit is how MySQL divides a schema-level REVOKE of privs
// from a (DB_restrictions_aggregator_db_revoke): when the database grant
// holds them all, the database grant loses them; otherwise those the
// account holds globally but not on the database become restrictions and
// the rest is left to the database grant (which must then exist).
func (a *account) partialRevokeSplit(db string, privs []string) (restrict, rest []string) {
	g := a.dbs[db]
	all := g != nil
	for _, p := range privs {
		all = all && g.privs[p]
	}
	if all {
		return nil, privs
	}
	for _, p := range privs {
		if a.global[p] && !(g != nil && g.privs[p]) {
			restrict = append(restrict, p)
		} else {
			rest = append(rest, p)
		}
	}
	return restrict, rest
}

// schemaLevelPrivs is the privileges a schema-level GRANT or REVOKE names,
// ALL expanded to every database privilege.
func schemaLevelPrivs(privs []string) []string {
	var out []string
	for _, p := range privs {
		if p != "ALL" {
			out = append(out, p)
			continue
		}
		for _, q := range staticPrivs {
			if dbPrivs[q] {
				out = append(out, q)
			}
		}
	}
	return out
}

// grantGlobalRestrictions is what a global GRANT of p does to the
// grantee's restrictions: a grantor restricted on a database passes the
// restriction on unless the grantee already held p there (globally
// without that restriction, or by a database grant); an unrestricted
// grantor lifts the grantee's restrictions on p.
func (a *account) grantGlobalRestrictions(p string, heldBefore bool, grantor restrictionSet) {
	for _, db := range sortedDBs(a.restrictions) {
		if !grantor.has(db, p) {
			a.restrictions.remove(db, p)
		}
	}
	for db, ps := range grantor {
		if !ps[p] || (heldBefore && !a.restrictions.has(db, p)) || (a.dbs[db] != nil && a.dbs[db].privs[p]) {
			continue
		}
		a.restrictions.add(db, p)
	}
}

// anyRestrictions reports whether some account has a partial revoke.
func (set accountSet) anyRestrictions() bool {
	for _, a := range set {
		if len(a.restrictions) > 0 {
			return true
		}
	}
	return false
}

func errPartialRevokesExist() error {
	return myErr(ErPartialRevokesExist, "At least one partial revoke exists on a database. The system variable '@@partial_revokes' must be set to ON.")
}

// bootPartialRevokesLocked sets partial_revokes from the options at a
// start; OFF while an account has restrictions is refused with an error in
// the log and the variable is ON (manual, "Disabling Partial Revokes").
func (s *Server) bootPartialRevokesLocked() {
	v, _ := s.startupOptionLocked("partial-revokes")
	s.ext.partialRevokes = v == "true"
	if !s.ext.partialRevokes && s.st.accounts.anyRestrictions() {
		s.log.Error(errPartialRevokesExist().Error() + " partial_revokes is set to ON.")
		s.ext.partialRevokes = true
	}
}

// setPartialRevokesLocked is SET GLOBAL partial_revokes.
func (s *Server) setPartialRevokesLocked(v any) error {
	b, err := parseBoolValue("partial_revokes", v)
	if err != nil {
		return err
	}
	if !b && s.st.accounts.anyRestrictions() {
		return errPartialRevokesExist()
	}
	s.ext.partialRevokes = b
	return nil
}

// partialRevokesOption is the partial-revokes option: stored as "true" or
// "false" for bootPartialRevokesLocked.
func partialRevokesOption(b *optionBuild, v optValue) error {
	b.opts.values["partial-revokes"] = strconv.FormatBool(v.b)
	return nil
}
