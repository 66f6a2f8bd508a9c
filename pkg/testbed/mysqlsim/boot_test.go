package mysqlsim_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

func writeTestFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func bootOpen(t *testing.T, addr, user, pass string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", user+":"+pass+"@tcp("+addr+")/?timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0)
	t.Cleanup(func() { db.Close() })
	return db
}

func errNumber(err error) uint16 {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// firstBootServer is a server started as the official image starts one:
// an option file, the root password in the environment and an init
// directory.
type firstBootServer struct {
	cfg mysqlsim.Config
	dir string // the init directory
}

func newFirstBoot(t *testing.T, cnf string) *firstBootServer {
	t.Helper()
	root := t.TempDir()
	writeTestFile(t, filepath.Join(root, "etc/my.cnf"), "[mysqld]\ndatadir=/var/lib/mysql\n!includedir /etc/mysql/conf.d/\n")
	writeTestFile(t, filepath.Join(root, "etc/mysql/conf.d/site.cnf"), "[mysqld]\nserver-id = 41\n"+cnf)
	dir := filepath.Join(root, "docker-entrypoint-initdb.d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &firstBootServer{dir: dir, cfg: mysqlsim.Config{
		DefaultsFile: "/etc/my.cnf", RootDir: root, InitDBDir: "/docker-entrypoint-initdb.d",
		Env: map[string]string{"MYSQL_ROOT_PASSWORD": "rootpw"}, ServerUUID: simtest.UUID(41), Users: []mysqlsim.User{},
	}}
}

func (f *firstBootServer) start(t *testing.T) (*mysqlsim.Server, error) {
	t.Helper()
	s, err := mysqlsim.New(f.cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, nil
}

func rowsOf(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestFirstBootRunsTheInitScriptsOnceInOrder: on an empty data directory
// root gets MYSQL_ROOT_PASSWORD and the init files run in name order (the
// second inserts into the table the first creates); a restart runs
// nothing again (the table would hold every row twice).
func TestFirstBootRunsTheInitScriptsOnceInOrder(t *testing.T) {
	f := newFirstBoot(t, "")
	writeTestFile(t, filepath.Join(f.dir, "02-fill.sql"), "INSERT INTO boot.t VALUES (2);\nINSERT INTO boot.t VALUES (3);\n")
	writeTestFile(t, filepath.Join(f.dir, "01-schema.sql"), "-- schema first\nCREATE DATABASE IF NOT EXISTS boot;\n"+
		"CREATE TABLE IF NOT EXISTS boot.t (n INT);\nINSERT INTO boot.t VALUES (1);")
	writeTestFile(t, filepath.Join(f.dir, "README.txt"), "not SQL: ignored")
	s, err := f.start(t)
	if err != nil {
		t.Fatal(err)
	}
	root := bootOpen(t, s.Addr(), "root", "rootpw")
	if got := strings.Join(rowsOf(t, root, "SELECT n FROM boot.t"), ","); got != "1,2,3" {
		t.Fatalf("boot.t = %s, want 1,2,3 (01 before 02)", got)
	}
	if err := bootOpen(t, s.Addr(), "root", "").Ping(); errNumber(err) != 1045 {
		t.Errorf("root without the password: %v, want 1045", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rowsOf(t, root, "SELECT n FROM boot.t"), ","); got != "1,2,3" {
		t.Fatalf("after a restart boot.t = %s, want 1,2,3: the init scripts ran again", got)
	}
}

// TestFirstBootNeedsAPasswordOption: the entrypoint refuses an empty data
// directory without a password option.
func TestFirstBootNeedsAPasswordOption(t *testing.T) {
	f := newFirstBoot(t, "")
	f.cfg.Env = map[string]string{}
	_, err := f.start(t)
	if err == nil || !strings.Contains(err.Error(), "Database is uninitialized and password option is not specified") {
		t.Fatalf("start: %v, want the entrypoint's message", err)
	}
}

// TestFirstBootFailingScriptStopsTheStart: a failing statement stops the
// start; the data directory stays initialised, so the next start skips the
// scripts (as the image's does) and what ran before the failure is there.
func TestFirstBootFailingScriptStopsTheStart(t *testing.T) {
	f := newFirstBoot(t, "")
	writeTestFile(t, filepath.Join(f.dir, "01.sql"), "CREATE DATABASE half;\nCREATE TABLE nowhere.t (n INT);\nCREATE DATABASE never;")
	if _, err := f.start(t); err == nil || !strings.Contains(err.Error(), "01.sql: statement 2") {
		t.Fatalf("start: %v, want the failing statement of 01.sql", err)
	}
	s, err := f.start(t)
	if err != nil {
		t.Fatalf("second start: %v", err)
	}
	dbs := strings.Join(rowsOf(t, bootOpen(t, s.Addr(), "root", "rootpw"), "SHOW DATABASES"), ",")
	if !strings.Contains(dbs, "half") || strings.Contains(dbs, "never") {
		t.Fatalf("databases %s: want half (before the failure) and not never", dbs)
	}
}

// TestFirstBootRefusesShellScripts: *.sh cannot run in the simulator.
func TestFirstBootRefusesShellScripts(t *testing.T) {
	f := newFirstBoot(t, "")
	writeTestFile(t, filepath.Join(f.dir, "00-setup.sh"), "#!/bin/sh\n")
	if _, err := f.start(t); err == nil || !strings.Contains(err.Error(), "shell scripts") {
		t.Fatalf("start: %v, want the refusal of 00-setup.sh", err)
	}
}

// TestFirstBootUnderSuperReadOnly: the entrypoint's statements run as root,
// which super_read_only refuses, as on the image's temporary server.
func TestFirstBootUnderSuperReadOnly(t *testing.T) {
	f := newFirstBoot(t, "super-read-only = ON\n")
	if _, err := f.start(t); err == nil || !strings.Contains(err.Error(), "1290") {
		t.Fatalf("start: %v, want 1290 from the root setup", err)
	}
}

// TestCloneNeedsThePlugin: without the clone plugin CLONE fails as MySQL's
// does (1524); INSTALL PLUGIN loads it and mysql.plugin keeps it across a
// restart; UNINSTALL removes it.
func TestCloneNeedsThePlugin(t *testing.T) {
	donor := simtest.Start(t, mysqlsim.Config{})
	s := simtest.Start(t, mysqlsim.Config{Options: []string{}})
	db := bootOpen(t, s.Addr(), simtest.AdminUser, simtest.AdminPass)
	host, port, _ := strings.Cut(donor.Addr(), ":")
	clone := "CLONE INSTANCE FROM '" + simtest.ReplUser + "'@'" + host + "':" + port + " IDENTIFIED BY '" + simtest.ReplPass + "'"
	if _, err := db.Exec(clone); errNumber(err) != 1524 || !strings.Contains(err.Error(), "Plugin 'clone' is not loaded") {
		t.Fatalf("CLONE without the plugin: %v, want 1524", err)
	}
	if _, err := db.Exec("SET GLOBAL clone_valid_donor_list = 'x:1'"); errNumber(err) != 1193 {
		t.Errorf("clone_valid_donor_list without the plugin: %v, want 1193", err)
	}
	if got := rowsOf(t, db, "SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'clone'"); len(got) != 0 {
		t.Errorf("information_schema.PLUGINS lists clone before INSTALL: %v", got)
	}
	if _, err := db.Exec("INSTALL PLUGIN clone SONAME 'mysql_nope.so'"); errNumber(err) != 1126 {
		t.Errorf("INSTALL of a missing library: %v, want 1126", err)
	}
	if _, err := db.Exec("INSTALL PLUGIN clone SONAME 'mysql_clone.so'"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSTALL PLUGIN clone SONAME 'mysql_clone.so'"); errNumber(err) != 1125 {
		t.Errorf("second INSTALL: %v, want 1125", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rowsOf(t, db, "SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'clone'"), ","); got != "ACTIVE" {
		t.Fatalf("clone after a restart: %q, want ACTIVE (mysql.plugin)", got)
	}
	if _, err := db.Exec("UNINSTALL PLUGIN clone"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UNINSTALL PLUGIN clone"); errNumber(err) != 1305 {
		t.Errorf("second UNINSTALL: %v, want 1305", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(clone); errNumber(err) != 1524 {
		t.Fatalf("CLONE after UNINSTALL and a restart: %v, want 1524", err)
	}
}

// TestRequireSecureTransport: with require_secure_transport=ON a client
// without TLS gets 3159 after authenticating, one with TLS gets in.
func TestRequireSecureTransport(t *testing.T) {
	cert := simtest.NewTLS(t)
	s := simtest.Start(t, mysqlsim.Config{TLS: cert.Server, Options: []string{"require-secure-transport=ON"}})
	plain := bootOpen(t, s.Addr(), simtest.AdminUser, simtest.AdminPass)
	if err := plain.Ping(); errNumber(err) != 3159 {
		t.Fatalf("without TLS: %v, want 3159", err)
	}
	name := "boot-rst-" + strings.ReplaceAll(t.Name(), "/", "-")
	if err := driver.RegisterTLSConfig(name, cert.Client); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", simtest.AdminUser+":"+simtest.AdminPass+"@tcp("+s.Addr()+")/?tls="+name)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatalf("with TLS: %v", err)
	}
	if _, err := db.Exec("SET GLOBAL require_secure_transport = OFF"); err != nil {
		t.Fatal(err)
	}
	if err := plain.Ping(); err != nil {
		t.Fatalf("without TLS after SET GLOBAL require_secure_transport = OFF: %v", err)
	}
}

// TestReloadTLS: ALTER INSTANCE RELOAD TLS reads the files again; a new
// connection sees the new certificate, a bad file leaves the old one.
func TestReloadTLS(t *testing.T) {
	dir := t.TempDir()
	first, second := simtest.NewTLS(t), simtest.NewTLS(t)
	writePEM := func(c simtest.TLS) {
		t.Helper()
		certPEM, keyPEM := pemOf(t, c.Server.Certificates[0])
		writeTestFile(t, filepath.Join(dir, "tls.crt"), string(certPEM))
		writeTestFile(t, filepath.Join(dir, "tls.key"), string(keyPEM))
	}
	writePEM(first)
	s := simtest.Start(t, mysqlsim.Config{Options: []string{
		"ssl-cert=" + filepath.Join(dir, "tls.crt"), "ssl-key=" + filepath.Join(dir, "tls.key"), "plugin-load-add=mysql_clone.so",
	}})
	served := func() []byte {
		t.Helper()
		var got []byte
		cfg := &tls.Config{InsecureSkipVerify: true, VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			got = raw[0]
			return nil
		}}
		name := "boot-reload-" + time.Now().Format("150405.000000000")
		if err := driver.RegisterTLSConfig(name, cfg); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("mysql", simtest.AdminUser+":"+simtest.AdminPass+"@tcp("+s.Addr()+")/?tls="+name)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.PingContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := served(); string(got) != string(first.Server.Certificates[0].Certificate[0]) {
		t.Fatal("the server does not serve the certificate of its ssl-cert file")
	}
	admin := bootOpen(t, s.Addr(), simtest.AdminUser, simtest.AdminPass)
	var sslCert string
	if err := admin.QueryRow("SELECT @@GLOBAL.ssl_cert").Scan(&sslCert); err != nil || sslCert != filepath.Join(dir, "tls.crt") {
		t.Errorf("@@ssl_cert = %q, %v; want the option's file", sslCert, err)
	}
	writePEM(second)
	if got := served(); string(got) != string(first.Server.Certificates[0].Certificate[0]) {
		t.Fatal("the new file was served before RELOAD TLS")
	}
	if _, err := admin.Exec("ALTER INSTANCE RELOAD TLS"); err != nil {
		t.Fatal(err)
	}
	if got := served(); string(got) != string(second.Server.Certificates[0].Certificate[0]) {
		t.Fatal("a new connection after RELOAD TLS does not see the new certificate")
	}
	writeTestFile(t, filepath.Join(dir, "tls.key"), "not a key")
	if _, err := admin.Exec("ALTER INSTANCE RELOAD TLS"); errNumber(err) != 3888 {
		t.Fatalf("RELOAD TLS with a bad key: %v, want 3888", err)
	}
	if got := served(); string(got) != string(second.Server.Certificates[0].Certificate[0]) {
		t.Fatal("a failed RELOAD TLS changed the certificate served")
	}
}

func pemOf(t *testing.T, c tls.Certificate) (certPEM, keyPEM []byte) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// TestPersistedGlobalsLoadOffIgnoresThePersistedFence: the rendered init
// script persists super_read_only=ON; with persisted_globals_load=OFF (which
// pkg/render therefore forces ON) the restarted server would ignore it and
// come up with only read_only.
func TestPersistedGlobalsLoadOffIgnoresThePersistedFence(t *testing.T) {
	for _, load := range []string{"ON", "OFF"} {
		t.Run("persisted_globals_load="+load, func(t *testing.T) {
			f := newFirstBoot(t, "read-only = ON\npersisted-globals-load = "+load+"\n")
			writeTestFile(t, filepath.Join(f.dir, "10-fence.sql"), "SET PERSIST super_read_only = ON;\n")
			s, err := f.start(t)
			if err != nil {
				t.Fatalf("first boot: %v", err)
			}
			if err := s.Restart(); err != nil {
				t.Fatalf("restart: %v", err)
			}
			db := bootOpen(t, s.Addr(), "root", "rootpw")
			var sro int
			if err := db.QueryRow("SELECT @@GLOBAL.super_read_only").Scan(&sro); err != nil {
				t.Fatal(err)
			}
			if want := map[string]int{"ON": 1, "OFF": 0}[load]; sro != want {
				t.Fatalf("super_read_only after restart = %d, want %d", sro, want)
			}
		})
	}
}
