package managerintegration

import (
	"database/sql"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

func adminDB(t testing.TB, s *mysqlsim.Server) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", simtest.AdminUser+":"+simtest.AdminPass+"@tcp("+s.Addr()+")/")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return db
}
