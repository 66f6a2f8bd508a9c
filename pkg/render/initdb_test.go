package render

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
)

var testAccounts = InitAccounts{
	Operator:    Account{User: "bloodraven", Password: "op'pw"},
	Replication: Account{User: "repl", Password: "replpw"},
	App:         Account{User: "app", Password: "apppw"},
}

// bootRendered starts a simulated mysqld as the official image would start
// site 0's container: the image's /etc/my.cnf including the rendered
// ConfigMap's directory, MYSQL_ROOT_PASSWORD, and the init script Secret
// in /docker-entrypoint-initdb.d.
func bootRendered(t *testing.T) (*mysqlsim.Server, string) {
	t.Helper()
	g := minimal(t)
	r, err := RenderSite(g, 0, Config{SidecarImage: testSidecarImage, OperatorEndpoint: testOperatorEndpoint})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	files := map[string]string{
		"etc/my.cnf": "[mysqld]\ndatadir=/var/lib/mysql\n!includedir " + ConfigDir + "/\n",
		strings.TrimPrefix(ConfigDir, "/") + "/" + MyCnfKey:  r.ConfigMap.Data[MyCnfKey],
		strings.TrimPrefix(InitDBDir, "/") + "/" + InitDBKey: string(InitDBSecret(g, testAccounts).Data[InitDBKey]),
	}
	for p, text := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := mysqlsim.New(mysqlsim.Config{
		DefaultsFile: "/etc/my.cnf", RootDir: root, InitDBDir: InitDBDir, AdminAddr: "127.0.0.1:0",
		Env:        map[string]string{RootPasswordKey: "rootpw"},
		ServerUUID: "3e11fa47-71ca-11e1-9e33-c80aa9429562",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, root
}

func dbAs(t *testing.T, s *mysqlsim.Server, user, pass string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", user+":"+pass+"@tcp("+s.Addr()+")/?timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0)
	t.Cleanup(func() { db.Close() })
	return db
}

func mysqlErrno(err error) uint16 {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// TestRenderedPodBootsOnTheImagesFirstBoot: a server booted from what the
// pod gives it (the rendered my.cnf, the init script, the root password)
// has the product's accounts with their privileges, logged nothing, loads
// the clone plugin, and is fenced now and after a restart.
func TestRenderedPodBootsOnTheImagesFirstBoot(t *testing.T) {
	s, _ := bootRendered(t)
	op := dbAs(t, s, "bloodraven", "op'pw")
	var sro, ro int
	var executed, clone string
	if err := op.QueryRow("SELECT @@super_read_only, @@read_only, @@gtid_executed").Scan(&sro, &ro, &executed); err != nil {
		t.Fatalf("operator account: %v", err)
	}
	if sro != 1 || ro != 1 {
		t.Errorf("after first boot super_read_only=%d read_only=%d, want both 1 (fenced)", sro, ro)
	}
	if executed != "" {
		t.Errorf("gtid_executed = %q after first boot, want empty: the init script must not log its accounts", executed)
	}
	if err := op.QueryRow("SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'clone'").Scan(&clone); err != nil || clone != "ACTIVE" {
		t.Errorf("clone plugin: %q, %v; want ACTIVE (plugin-load-add)", clone, err)
	}
	app := dbAs(t, s, "app", "apppw")
	if _, err := app.Exec("CREATE DATABASE appdb"); mysqlErrno(err) != 1290 {
		t.Errorf("app write on a fenced server: %v, want 1290", err)
	}
	if _, err := op.Exec("SET GLOBAL super_read_only = OFF"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec("CREATE DATABASE appdb"); mysqlErrno(err) != 1290 {
		t.Errorf("app write with read_only=ON: %v, want 1290 (the app account must not hold CONNECTION_ADMIN)", err)
	}
	if _, err := op.Exec("SET GLOBAL read_only = OFF"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec("CREATE DATABASE appdb"); err != nil {
		t.Errorf("app write on a writable server: %v", err)
	}
	if _, err := dbAs(t, s, "repl", "replpw").Exec("SELECT * FROM appdb.nothing"); mysqlErrno(err) != 1142 {
		t.Errorf("replication account reading data: %v, want 1142", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := op.QueryRow("SELECT @@super_read_only").Scan(&sro); err != nil || sro != 1 {
		t.Errorf("after a restart super_read_only = %d (%v), want 1: a restarted server must come back fenced", sro, err)
	}
}

func TestAccountsFromSecretsNamesTheMissingKey(t *testing.T) {
	g := minimal(t)
	_, err := AccountsFromSecrets(g, map[string][]byte{SecretKeyUsername: []byte("op")}, nil)
	if err == nil || !strings.Contains(err.Error(), "key password") || !strings.Contains(err.Error(), g.Spec.Credentials.OperatorSecretName) {
		t.Errorf("err = %v, want the Secret and key named", err)
	}
	a, err := AccountsFromSecrets(g, map[string][]byte{SecretKeyUsername: []byte("op"), SecretKeyPassword: []byte("pw"),
		SecretKeyReplicationUser: []byte("op")}, nil)
	if err != nil || a.Replication.User != "" {
		t.Errorf("a replication user equal to the operator's: %+v, %v; want no separate account", a, err)
	}
}
