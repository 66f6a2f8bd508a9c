package render

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
)

var testAccounts = InitAccounts{
	{Role: accounts.RoleOperator, User: "bloodraven", Password: "op'pw"},
	{Role: accounts.RoleReplication, User: "repl", Password: "replpw"},
	{Role: accounts.RoleApp, User: "app", Password: "apppw"},
	{Role: accounts.RoleReadOnly, User: "reader", Password: "readerpw"},
	{Role: accounts.RoleMonitor, User: "exporter", Password: "monpw"},
	{Role: accounts.RoleBackup, User: "backup", Password: "backuppw"},
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

// getter serves Secrets' data by name; a name it lacks is NotFound as the
// lister says it.
func getter(secrets map[string]map[string][]byte) accounts.SecretGetter {
	return func(name string) (map[string][]byte, error) {
		if d, ok := secrets[name]; ok {
			return d, nil
		}
		return nil, fmt.Errorf("secret %q not found", name)
	}
}

func pw(user, pass string) map[string][]byte {
	return map[string][]byte{SecretKeyUsername: []byte(user), SecretKeyPassword: []byte(pass)}
}

func TestAccountsFromSecretsNamesTheMissingKey(t *testing.T) {
	g := minimal(t)
	op := g.Spec.Credentials.OperatorSecretName
	_, err := AccountsFromSecrets(g, getter(map[string]map[string][]byte{op: {SecretKeyUsername: []byte("op")}}))
	if err == nil || !strings.Contains(err.Error(), `key "password"`) || !strings.Contains(err.Error(), op) {
		t.Errorf("err = %v, want the Secret and key named", err)
	}
	a, err := AccountsFromSecrets(g, getter(map[string]map[string][]byte{op: {SecretKeyUsername: []byte("op"), SecretKeyPassword: []byte("pw"),
		SecretKeyReplicationUser: []byte("op")}}))
	if err != nil || len(a) != 1 || a[0].Role != accounts.RoleOperator {
		t.Errorf("a replication user equal to the operator's: %+v, %v; want no separate account", a, err)
	}
}

// Every role spec.credentials names is read from its Secret; bad input
// (a missing Secret, a shared username, root) is an error naming the
// problem and never a password.
func TestAccountsFromSecretsReadsEveryRole(t *testing.T) {
	g := minimal(t)
	c := &g.Spec.Credentials
	c.AppSecretName, c.ReadOnlySecretName, c.MonitorSecretName, c.BackupSecretName = "app", "ro", "mon", "bk"
	op := pw("bloodraven", "oppw")
	op[SecretKeyReplicationUser], op[SecretKeyReplicationPassword] = []byte("repl"), []byte("replpw")
	secrets := map[string]map[string][]byte{c.OperatorSecretName: op, "app": pw("app", "apppw"), "ro": pw("reader", "ropw"),
		"mon": pw("exporter", "monpw"), "bk": pw("backup", "bkpw")}
	a, err := AccountsFromSecrets(g, getter(secrets))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, acc := range a {
		got = append(got, string(acc.Role)+"="+acc.User+":"+acc.Password)
	}
	want := "operator=bloodraven:oppw replication=repl:replpw app=app:apppw readOnly=reader:ropw monitor=exporter:monpw backup=backup:bkpw"
	if strings.Join(got, " ") != want {
		t.Fatalf("accounts = %s, want %s", strings.Join(got, " "), want)
	}
	for name, mutate := range map[string]func(map[string]map[string][]byte){
		"Secret mon":     func(s map[string]map[string][]byte) { delete(s, "mon") },
		"same username":  func(s map[string]map[string][]byte) { s["bk"] = pw("app", "other") },
		"root":           func(s map[string]map[string][]byte) { s["ro"] = pw("root", "x") },
		`key "password"`: func(s map[string]map[string][]byte) { delete(s["bk"], SecretKeyPassword) },
		"REPLICATION_PA": func(s map[string]map[string][]byte) { delete(s[c.OperatorSecretName], SecretKeyReplicationPassword) },
	} {
		bad := map[string]map[string][]byte{}
		for k, v := range secrets {
			bad[k] = map[string][]byte{}
			for kk, vv := range v {
				bad[k][kk] = vv
			}
		}
		mutate(bad)
		_, err := AccountsFromSecrets(g, getter(bad))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v, want one naming it", name, err)
		}
		if err != nil && (strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "other")) {
			t.Errorf("%s: the error shows a password: %v", name, err)
		}
	}
}

// The script creates the roles with logging off before anything else and
// ends fenced.
func TestInitScriptCreatesEveryRoleUnlogged(t *testing.T) {
	script := InitScript(minimal(t), testAccounts)
	lines := strings.Split(strings.TrimSpace(script), "\n")
	var stmts []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "--") {
			stmts = append(stmts, l)
		}
	}
	if stmts[0] != "SET SESSION sql_log_bin = 0;" || stmts[len(stmts)-1] != "SET PERSIST super_read_only = ON;" {
		t.Fatalf("script does not start unlogged and end fenced:\n%s", script)
	}
	for _, a := range testAccounts {
		for _, st := range accounts.CreateStatements(a) {
			if !strings.Contains(script, st+";\n") {
				t.Errorf("script misses %q", st)
			}
		}
	}
}

// TestRenderedRolesLogInWithTheirGrants: after first boot from the rendered
// script every role's account authenticates with its Secret's password and
// holds exactly its role's grants, as the server reports them.
func TestRenderedRolesLogInWithTheirGrants(t *testing.T) {
	s, _ := bootRendered(t)
	op := dbAs(t, s, "bloodraven", "op'pw")
	for _, a := range testAccounts {
		if err := dbAs(t, s, a.User, a.Password).Ping(); err != nil {
			t.Errorf("%s account %s cannot log in: %v", a.Role, a.User, err)
		}
		if a.Role == accounts.RoleOperator {
			continue
		}
		rows, err := op.Query("SHOW GRANTS FOR " + accounts.Name(a.User))
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, l)
		}
		rows.Close()
		if fix, err := accounts.Drift(a.Role, a.User, lines); err != nil || len(fix) != 0 {
			t.Errorf("%s account %s: server holds %q; drift %v, %v", a.Role, a.User, lines, fix, err)
		}
	}
}
