package accounts

import (
	"reflect"
	"sort"
	"strings"
	"testing"
)

// showRevokes renders partial revokes as SHOW GRANTS prints them.
func showRevokes(user string, gs ...Grant) []string {
	var out []string
	for _, g := range gs {
		out = append(out, "REVOKE "+strings.Join(g.Privileges, ", ")+" ON "+g.On+" FROM `"+user+"`@`%`")
	}
	return out
}

// TestAppPartialRevokesCoverTheMySQLSchema: the application holds none of
// its privileges on mysql, and on sys nothing that changes an object; the
// other roles have no partial revokes.
func TestAppPartialRevokesCoverTheMySQLSchema(t *testing.T) {
	pr := PartialRevokes(RoleApp)
	if len(pr) != 2 || pr[0].On != "`mysql`.*" || !reflect.DeepEqual(pr[0].Privileges, AppPrivileges) || pr[1].On != "`sys`.*" {
		t.Fatalf("app partial revokes %v", pr)
	}
	kept := map[string]bool{}
	for _, p := range AppPrivileges {
		kept[p] = true
	}
	for _, p := range pr[1].Privileges {
		delete(kept, p)
	}
	if got := strings.Join(sortedKeys(kept), ","); got != "EXECUTE,SELECT,SHOW VIEW" {
		t.Errorf("app keeps on sys %s, want EXECUTE,SELECT,SHOW VIEW", got)
	}
	for _, r := range Roles() {
		if r != RoleApp && len(PartialRevokes(r)) != 0 {
			t.Errorf("%s has partial revokes %v", r, PartialRevokes(r))
		}
	}
	stmts := CreateStatements(Account{Role: RoleApp, User: "a", Password: "p"})
	if last := stmts[len(stmts)-1]; !strings.HasPrefix(last, "REVOKE ") || !strings.Contains(last, " ON `sys`.* FROM 'a'@'%'") {
		t.Errorf("CreateStatements does not end with the partial revokes: %q", stmts)
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestDriftRestoresPartialRevokes: a lost partial revoke is revoked again,
// after the grants (a global GRANT lifts restrictions); one the role does
// not have is lifted by a schema-level GRANT; REVOKE ALL PRIVILEGES, as a
// SHOW GRANTS row could print a whole schema, reads as every privilege.
func TestDriftRestoresPartialRevokes(t *testing.T) {
	global := showGrants("a", Grants(RoleApp)...)
	sys := showRevokes("a", PartialRevokes(RoleApp)[1])
	got, err := Drift(RoleApp, "a", append(append([]string{}, global...), sys...))
	if err != nil {
		t.Fatal(err)
	}
	sorted := append([]string(nil), AppPrivileges...)
	sort.Strings(sorted)
	if want := []string{Grant{Privileges: sorted, On: "`mysql`.*"}.RevokeStatement("a")}; !reflect.DeepEqual(got, want) {
		t.Fatalf("lost mysql partial revoke: got %q, want %q", got, want)
	}

	lines := append([]string{"GRANT SELECT ON *.* TO `a`@`%`"}, showRevokes("a", PartialRevokes(RoleApp)...)...)
	lines = append(lines, "REVOKE SELECT ON `shop`.* FROM `a`@`%`")
	got, err = Drift(RoleApp, "a", lines)
	if err != nil {
		t.Fatal(err)
	}
	last := got[len(got)-1]
	if !strings.HasPrefix(got[0], "GRANT ") || !strings.Contains(strings.Join(got, "\n"), "GRANT SELECT ON `shop`.* TO 'a'@'%'") || strings.HasPrefix(last, "REVOKE ") {
		t.Fatalf("extra partial revoke on shop: %q", got)
	}

	all := append(append([]string{}, global...), "REVOKE ALL PRIVILEGES ON `mysql`.* FROM `a`@`%`")
	all = append(all, sys...)
	if got, err := Drift(RoleApp, "a", all); err != nil || len(got) != 0 {
		t.Fatalf("REVOKE ALL PRIVILEGES ON mysql: drift %q, %v; want none", got, err)
	}
}
