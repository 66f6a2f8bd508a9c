package accounts

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEveryRoleHasGrants(t *testing.T) {
	for _, r := range Roles() {
		if len(Grants(r)) == 0 {
			t.Errorf("role %s has no grants", r)
		}
	}
	if Grants("nobody") != nil {
		t.Errorf("an unknown role has grants")
	}
}

func TestReplicationRoleIsWhatReplicasAndCloneNeed(t *testing.T) {
	got := Grants(RoleReplication)
	want := []Grant{{Privileges: []string{"REPLICATION SLAVE", "REPLICATION CLIENT", "BACKUP_ADMIN", "CLONE_ADMIN"}, On: "*.*"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("replication grants = %v, want %v", got, want)
	}
}

// The application account holds none of the exclusions, at any level, and
// no GRANT OPTION.
func TestAppHoldsNoExcludedPrivilege(t *testing.T) {
	for _, g := range Grants(RoleApp) {
		if g.WithGrantOption {
			t.Errorf("app has GRANT OPTION on %s", g.On)
		}
		for _, p := range g.Privileges {
			if p == "ALL" || p == "ALL PRIVILEGES" {
				t.Errorf("app holds ALL on %s", g.On)
			}
			for _, x := range ExcludedFromApp {
				if p == x {
					t.Errorf("app holds excluded %s on %s", p, g.On)
				}
			}
		}
	}
	for _, x := range []string{"SUPER", "SYSTEM_VARIABLES_ADMIN", "SESSION_VARIABLES_ADMIN", "CONNECTION_ADMIN", "BINLOG_ADMIN", "REPLICATION_SLAVE_ADMIN"} {
		found := false
		for _, e := range ExcludedFromApp {
			found = found || e == x
		}
		if !found {
			t.Errorf("ExcludedFromApp misses %s", x)
		}
	}
}

func TestCreateStatementsQuoteAndGrant(t *testing.T) {
	got := CreateStatements(Account{Role: RoleMonitor, User: "mon", Password: `p'w\x`})
	want := []string{
		`CREATE USER 'mon'@'%' IDENTIFIED BY 'p\'w\\x'`,
		"GRANT PROCESS, REPLICATION CLIENT ON *.* TO 'mon'@'%'",
		"GRANT SELECT ON `performance_schema`.* TO 'mon'@'%'",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	op := CreateStatements(Account{Role: RoleOperator, User: "bloodraven", Password: "x"})
	if op[1] != "GRANT ALL PRIVILEGES ON *.* TO 'bloodraven'@'%' WITH GRANT OPTION" {
		t.Fatalf("operator grant = %q", op[1])
	}
}

func TestQuoteEscapesEverySpecialByte(t *testing.T) {
	if got := Quote("a\x00b\nc\rd\x1ae'f\\"); got != `'a\0b\nc\rd\Ze\'f\\'` {
		t.Fatalf("Quote = %s", got)
	}
}

func TestValidate(t *testing.T) {
	ok := []Account{{RoleOperator, "op", "a"}, {RoleApp, "app", "b"}}
	if err := Validate(ok); err != nil {
		t.Fatalf("valid accounts refused: %v", err)
	}
	for name, c := range map[string]struct {
		accts []Account
		want  string
	}{
		"root":          {[]Account{{RoleApp, "root", "x"}}, "root"},
		"shared name":   {[]Account{{RoleOperator, "u", "a"}, {RoleMonitor, "u", "b"}}, "same username"},
		"empty user":    {[]Account{{RoleBackup, "", "a"}}, "no username"},
		"empty pw":      {[]Account{{RoleBackup, "b", ""}}, "no password"},
		"name too long": {[]Account{{RoleApp, strings.Repeat("a", 33), "x"}}, "at most 32"},
	} {
		err := Validate(c.accts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one saying %q", name, err, c.want)
		}
		for _, a := range c.accts {
			if a.Password != "" && err != nil && strings.Contains(err.Error(), "'"+a.Password+"'") {
				t.Errorf("%s: the error names a password", name)
			}
		}
	}
}

// showGrants renders what SHOW GRANTS prints for grants (MySQL 8+ form:
// static privileges, then dynamic ones on their own line, levels apart).
func showGrants(user string, gs ...Grant) []string {
	var out []string
	for _, g := range gs {
		s := "GRANT " + strings.Join(g.Privileges, ", ") + " ON " + g.On + " TO `" + user + "`@`%`"
		if g.WithGrantOption {
			s += " WITH GRANT OPTION"
		}
		out = append(out, s)
	}
	return out
}

func TestDriftNoneWhenGrantsMatch(t *testing.T) {
	for _, r := range Roles() {
		if r == RoleOperator {
			continue
		}
		lines := append([]string{"GRANT USAGE ON *.* TO `u`@`%`"}, showGrants("u", Grants(r)...)...)
		lines = append(lines, showRevokes("u", PartialRevokes(r)...)...) // partial_test.go
		got, err := Drift(r, "u", lines)
		if err != nil || len(got) != 0 {
			t.Errorf("%s: matching grants give %v, %v", r, got, err)
		}
	}
}

func TestDriftSplitsStaticAndDynamicLikeShowGrants(t *testing.T) {
	lines := []string{"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `r`@`%`", "GRANT BACKUP_ADMIN,CLONE_ADMIN ON *.* TO `r`@`%`"}
	if got, err := Drift(RoleReplication, "r", lines); err != nil || len(got) != 0 {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestDriftRestoresMissingAndRevokesExtra(t *testing.T) {
	lines := []string{
		"GRANT SELECT, SUPER ON *.* TO `ro`@`%`",
		"GRANT ALL PRIVILEGES ON `shop`.* TO `ro`@`%` WITH GRANT OPTION",
		"GRANT `admin`@`%` TO `ro`@`%`",
	}
	got, err := Drift(RoleReadOnly, "ro", lines)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"REVOKE `admin`@`%` FROM 'ro'@'%'",
		"REVOKE SUPER ON *.* FROM 'ro'@'%'",
		"REVOKE ALTER, ALTER ROUTINE, CREATE, CREATE ROUTINE, CREATE TEMPORARY TABLES, CREATE VIEW, DELETE, DROP, EVENT, EXECUTE, INDEX, INSERT, LOCK TABLES, REFERENCES, SELECT, SHOW VIEW, TRIGGER, UPDATE ON `shop`.* FROM 'ro'@'%'",
		"REVOKE GRANT OPTION ON `shop`.* FROM 'ro'@'%'",
		"GRANT PROCESS, SHOW DATABASES, SHOW VIEW ON *.* TO 'ro'@'%'",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDriftRestoresAWholeMissingLevel(t *testing.T) {
	got, err := Drift(RoleMonitor, "m", []string{"GRANT PROCESS, REPLICATION CLIENT ON *.* TO `m`@`%`"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"GRANT SELECT ON `performance_schema`.* TO 'm'@'%'"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestDriftRefusesWhatItCannotRead(t *testing.T) {
	for _, line := range []string{
		"GRANT SELECT (`a`) ON `db`.`t` TO `u`@`%`",
		"GRANT PROXY ON ``@`` TO `u`@`%`",
		"REVOKE INSERT ON `db`.`t` FROM `u`@`%`", // partial revokes are on schemas only
		"GRANT SELECT ON `db`.* FROM `u`@`%`",
	} {
		if got, err := Drift(RoleApp, "u", []string{line}); err == nil {
			t.Errorf("%q read as %v", line, got)
		}
	}
	if _, err := Drift(RoleOperator, "op", nil); err == nil {
		t.Errorf("operator drift computed")
	}
}

func TestRotationRunsThroughEveryPhase(t *testing.T) {
	t0 := time.Unix(1000, 0)
	o := Observed{Desired: "new", Now: t0, Overlap: time.Minute}
	r := Rotation{Current: "old"}
	if Plan(r, Observed{Desired: "old"}) != StepNone || Plan(r, Observed{}) != StepNone {
		t.Fatal("a rotation begins without a changed, non-empty Secret")
	}
	if Plan(r, o) != StepBegin {
		t.Fatal("a changed Secret does not begin")
	}
	r = r.Begin("new", "2026-01-01 00:00:00")
	if r.Use() != "old" || r.Fallback() != "" {
		t.Fatal("before the ALTER only the old password works")
	}
	o.AuthNow = "2026-01-01 00:00:00"
	if Plan(r, o) != StepAlter {
		t.Fatal("not altered yet, but Plan does not alter")
	}
	o.AuthNow = "2026-02-02 00:00:00"
	if Plan(r, o) != StepMarkRetained {
		t.Fatal("an applied ALTER would be sent again (and drop the old password)")
	}
	r = r.Retained()
	if r.Use() != "new" || r.Fallback() != "old" {
		t.Fatal("after the ALTER consumers use the new one, the old as fallback")
	}
	if Plan(r, o) != StepAwaitReplicas {
		t.Fatal("consumers move before the replicas have the ALTER")
	}
	o.Replicated = true
	if Plan(r, o) != StepMoveConsumers {
		t.Fatal("no move once replicated")
	}
	r = r.Moved(t0)
	o.Now = t0.Add(59 * time.Second)
	if Plan(r, o) != StepAwaitOverlap {
		t.Fatal("discarded before the overlap elapsed")
	}
	o.Desired = "newer"
	if Plan(r, o) != StepAwaitOverlap {
		t.Fatal("a second change during the overlap cut it short")
	}
	o.Now = t0.Add(time.Minute)
	if Plan(r, o) != StepDiscard {
		t.Fatal("not discarded after the overlap")
	}
	r = r.Discarded()
	if r != (Rotation{Current: "new"}) || Plan(r, o) != StepBegin {
		t.Fatalf("after the discard: %+v, next %s", r, Plan(r, o))
	}
}

func TestRotationStatements(t *testing.T) {
	if got := AlterRetain("app", "n'w"); got != `ALTER USER 'app'@'%' IDENTIFIED BY 'n\'w' RETAIN CURRENT PASSWORD` {
		t.Fatal(got)
	}
	if got := Discard("app"); got != "ALTER USER 'app'@'%' DISCARD OLD PASSWORD" {
		t.Fatal(got)
	}
}
