package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// Every schema statement against the simulator, judged by what the server
// then reports (SHOW DATABASES, mysql.user), never by the client's return
// values alone.
func TestSchemaCatalogAgainstSimulator(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	c := client(t, srv, simtest.AdminUser, simtest.AdminPass, nil, false)
	ctx := bg(t)
	covered := map[string]bool{}

	// No CHARACTER SET, no COLLATE: the server's defaults.
	if err := c.CreateDatabase(ctx, "plain", "", ""); err != nil {
		t.Fatal(err)
	}
	covered[mysql.StmtCreateDatabase.Name] = true
	s, ok, err := c.SchemaSettings(ctx, "plain")
	if err != nil || !ok || s.CharacterSet != "utf8mb4" || s.Collation != "utf8mb4_0900_ai_ci" {
		t.Fatalf("plain: %+v ok=%v err=%v, want utf8mb4/utf8mb4_0900_ai_ci", s, ok, err)
	}
	covered[mysql.StmtSchemaSettings.Name] = true
	// A character set alone takes its default collation.
	if err := c.CreateDatabase(ctx, "latin", "latin1", ""); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := c.SchemaSettings(ctx, "latin"); s.CharacterSet != "latin1" || s.Collation != "latin1_swedish_ci" {
		t.Fatalf("latin: %+v", s)
	}
	// Both; and IF NOT EXISTS leaves an existing schema as it was.
	if err := c.CreateDatabase(ctx, "uni", "utf8mb4", "utf8mb4_unicode_ci"); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateDatabase(ctx, "uni", "latin1", ""); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := c.SchemaSettings(ctx, "uni"); s.CharacterSet != "utf8mb4" || s.Collation != "utf8mb4_unicode_ci" {
		t.Fatalf("uni after a second CREATE IF NOT EXISTS: %+v", s)
	}
	// A collation of another character set is refused (1253).
	if err := c.CreateDatabase(ctx, "bad", "latin1", "utf8mb4_bin"); !mysql.IsNumber(err, 1253) {
		t.Fatalf("mismatched collation: %v, want error 1253", err)
	}
	if err := c.CreateDatabase(ctx, "bad", "no space", ""); err == nil {
		t.Fatal("a character set name with a space was sent")
	}
	if _, ok, err := c.SchemaSettings(ctx, "bad"); ok || err != nil {
		t.Fatalf("schema bad exists (%v, %v) after refused creates", ok, err)
	}
	if !hasDatabase(t, c, "uni") {
		t.Fatal("SHOW DATABASES lacks uni")
	}
	if err := c.DropDatabase(ctx, "uni"); err != nil {
		t.Fatal(err)
	}
	covered[mysql.StmtDropDatabase.Name] = true
	if hasDatabase(t, c, "uni") {
		t.Fatal("uni still listed after DROP DATABASE")
	}
	if err := c.DropDatabase(ctx, "uni"); err != nil {
		t.Fatalf("DROP DATABASE IF EXISTS of a missing schema: %v", err)
	}

	if _, err := c.DB().ExecContext(ctx, "CREATE USER 'owner1'@'%' IDENTIFIED BY 'pw'"); err != nil {
		t.Fatal(err)
	}
	if err := c.DropUser(ctx, "owner1"); err != nil {
		t.Fatal(err)
	}
	covered[mysql.StmtDropUser.Name] = true
	if _, err := c.ShowGrants(ctx, "owner1"); !errors.Is(err, mysql.ErrNoSuchAccount) {
		t.Fatalf("owner1 after DROP USER: %v, want no such account", err)
	}
	if err := c.DropUser(ctx, "owner1"); err != nil {
		t.Fatalf("DROP USER IF EXISTS of a missing account: %v", err)
	}
	for _, st := range mysql.SchemaCatalog() {
		if !covered[st.Name] {
			t.Errorf("schema statement %q is not exercised against the simulator", st.Name)
		}
	}
}

// The settings replicate and survive a restart (journal, checkpoint).
func TestSchemaSettingsReplicateAndPersist(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	sc := client(t, src, simtest.AdminUser, simtest.AdminPass, nil, false)
	rc := client(t, rep, simtest.AdminUser, simtest.AdminPass, nil, false)
	ctx := bg(t)
	if err := rc.Repoint(ctx, sourceOf(t, src)); err != nil {
		t.Fatal(err)
	}
	if err := sc.CreateDatabase(ctx, "orders", "latin1", "latin1_bin"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, ok, err := rc.SchemaSettings(ctx, "orders")
		if err == nil && ok {
			if s.CharacterSet != "latin1" || s.Collation != "latin1_bin" {
				t.Fatalf("replica has orders as %+v, want latin1/latin1_bin", s)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("orders never reached the replica (%v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	src.Crash()
	if err := src.Restart(); err != nil {
		t.Fatal(err)
	}
	sc2 := client(t, src, simtest.AdminUser, simtest.AdminPass, nil, false)
	if s, ok, err := sc2.SchemaSettings(context.Background(), "orders"); err != nil || !ok || s.Collation != "latin1_bin" {
		t.Fatalf("after a crash and restart: %+v ok=%v err=%v", s, ok, err)
	}
}

func hasDatabase(t *testing.T, c *mysql.Client, name string) bool {
	t.Helper()
	rows, err := c.DB().Query("SHOW DATABASES")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == name {
			return true
		}
	}
	return false
}
