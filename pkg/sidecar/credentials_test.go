package sidecar_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/sidecar"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// TestPasswordFileFollowsARotation: a long-running pool whose password
// comes from the mounted sidecars' password Secret keeps connecting, with
// no failed authentication, while the operator rotates the password as it
// does (RETAIN CURRENT PASSWORD, then the file, then DISCARD OLD
// PASSWORD); before the file exists it uses the environment's password.
func TestPasswordFileFollowsARotation(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	dir := t.TempDir()
	pf := sidecar.NewPasswordFile(dir, simtest.AdminPass)
	c, err := mysql.Open(mysql.Options{Addr: srv.Addr(), User: simtest.AdminUser, PasswordSource: pf.Password})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.DB().SetMaxIdleConns(0) // every call a new connection, as after a pool recycles
	ctx := context.Background()
	ping := func(when string) {
		t.Helper()
		if err := c.Ping(ctx); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	ping("before the file exists")
	admin, err := mysql.Open(mysql.Options{Addr: srv.Addr(), User: simtest.NativeUser, Password: simtest.NativePass})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.ExecAccount(ctx, mysql.StmtAlterUserRetain, accounts.AlterRetain(simtest.AdminUser, "rotated")); err != nil {
		t.Fatal(err)
	}
	ping("after the ALTER, before the file")
	write := func(key, v string) {
		if err := os.WriteFile(filepath.Join(dir, key), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(accounts.SidecarPasswordKey, "rotated")
	write(accounts.SidecarPreviousPasswordKey, simtest.AdminPass)
	ping("with the new file")
	if err := admin.ExecAccount(ctx, mysql.StmtDiscardOldPassword, accounts.Discard(simtest.AdminUser)); err != nil {
		t.Fatal(err)
	}
	ping("after the old password was discarded")
	if err := os.Remove(filepath.Join(dir, accounts.SidecarPasswordKey)); err != nil {
		t.Fatal(err)
	}
	if got := pf.Password(); got != simtest.AdminPass {
		t.Fatalf("with only the previous file: %q, want the previous password", got)
	}
	if n := srv.FailedAuthentications()[simtest.AdminUser]; n != 0 {
		t.Fatalf("%d failed authentications", n)
	}
}
