package mysql_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/mysql"
)

// exerciseAccounts runs every account statement of the catalog against the
// simulator through admin (TestCatalogAgainstSimulator) and returns their
// names: create an account with a role's grants, find it, drift and
// restore its grants, rotate its password, and judge by who can log in.
func exerciseAccounts(t *testing.T, admin *mysql.Client, login func(user, pass string) error) []string {
	t.Helper()
	ctx := context.Background()
	a := accounts.Account{Role: accounts.RoleMonitor, User: "catalog_mon", Password: "pw1"}
	if _, err := admin.ShowGrants(ctx, a.User); !errors.Is(err, mysql.ErrNoSuchAccount) {
		t.Fatalf("SHOW GRANTS of a missing account: %v, want ErrNoSuchAccount", err)
	}
	stmts := accounts.CreateStatements(a)
	if err := admin.ExecAccount(ctx, mysql.StmtCreateUser, stmts[0]); err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts[1:] {
		if err := admin.ExecAccount(ctx, mysql.StmtGrant, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.ExecAccount(ctx, mysql.StmtGrant, "DROP USER "+accounts.Name(a.User)); err == nil {
		t.Fatal("ExecAccount sent a statement of another shape")
	}
	if err := admin.ExecAccount(ctx, mysql.StmtGrant, "GRANT SUPER ON *.* TO "+accounts.Name(a.User)); err != nil {
		t.Fatal(err)
	}
	lines, err := admin.ShowGrants(ctx, a.User)
	if err != nil {
		t.Fatal(err)
	}
	fixes, err := accounts.Drift(a.Role, a.User, lines)
	if err != nil || len(fixes) != 1 || !strings.HasPrefix(fixes[0], "REVOKE SUPER") {
		t.Fatalf("drift of %q: %v, %v", lines, fixes, err)
	}
	if err := admin.ExecAccount(ctx, mysql.StmtRevoke, fixes[0]); err != nil {
		t.Fatal(err)
	}
	if lines, _ = admin.ShowGrants(ctx, a.User); strings.Contains(strings.Join(lines, " "), "SUPER") {
		t.Fatalf("SUPER not revoked: %q", lines)
	}
	before, err := admin.AuthFingerprint(ctx, a.User)
	if err != nil || before == "" {
		t.Fatalf("fingerprint: %q, %v", before, err)
	}
	if err := admin.ExecAccount(ctx, mysql.StmtAlterUserRetain, accounts.AlterRetain(a.User, "pw2")); err != nil {
		t.Fatal(err)
	}
	if after, err := admin.AuthFingerprint(ctx, a.User); err != nil || after == before {
		t.Fatalf("the fingerprint did not change with the ALTER: %v", err)
	}
	for _, pw := range []string{"pw1", "pw2"} {
		if err := login(a.User, pw); err != nil {
			t.Fatalf("during the overlap %s: %v", pw, err)
		}
	}
	if err := admin.ExecAccount(ctx, mysql.StmtDiscardOldPassword, accounts.Discard(a.User)); err != nil {
		t.Fatal(err)
	}
	if err := login(a.User, "pw1"); err == nil {
		t.Fatal("the old password works after DISCARD OLD PASSWORD")
	}
	if err := login(a.User, "pw2"); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range mysql.AccountCatalog() {
		if !st.NeedsReplication {
			names = append(names, st.Name)
		}
	}
	return names
}

// accountCalls are the account statements' calls for
// TestEveryCallHasADeadline.
func accountCalls(c *mysql.Client) map[string]func(context.Context) error {
	stmt := func(s mysql.Statement, text string) func(context.Context) error {
		return func(ctx context.Context) error { return c.ExecAccount(ctx, s, text) }
	}
	return map[string]func(context.Context) error{
		mysql.StmtCreateUser.Name:         stmt(mysql.StmtCreateUser, accounts.CreateStatements(accounts.Account{Role: accounts.RoleApp, User: "u", Password: "p"})[0]),
		mysql.StmtGrant.Name:              stmt(mysql.StmtGrant, accounts.Grants(accounts.RoleApp)[0].Statement("u")),
		mysql.StmtRevoke.Name:             stmt(mysql.StmtRevoke, "REVOKE SELECT ON *.* FROM "+accounts.Name("u")),
		mysql.StmtAlterUserRetain.Name:    stmt(mysql.StmtAlterUserRetain, accounts.AlterRetain("u", "p2")),
		mysql.StmtDiscardOldPassword.Name: stmt(mysql.StmtDiscardOldPassword, accounts.Discard("u")),
		mysql.StmtShowGrants.Name:         func(ctx context.Context) error { _, err := c.ShowGrants(ctx, "u"); return err },
		mysql.StmtAuthenticationString.Name: func(ctx context.Context) error {
			_, err := c.AuthFingerprint(ctx, "u")
			return err
		},
		mysql.StmtChangeSourcePassword.Name: func(ctx context.Context) error { return c.ChangeSourcePassword(ctx, "p", true) },
		mysql.StmtStartReplicaIOThread.Name: func(ctx context.Context) error { return c.ChangeSourcePassword(ctx, "p", true) },
	}
}
