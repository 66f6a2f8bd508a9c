package mysqlsh

import (
	"bytes"
	"context"
	"crypto/tls"
	"database/sql"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/klauspost/compress/zstd"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/backup/dump"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
	"github.com/shipstream/bloodraven/pkg/testbed/testca"
)

const (
	backupUser = "bloodraven-backup"
	backupPass = "backup-Secret-9"
)

func dbFor(t testing.TB, srv *mysqlsim.Server, user, pass string) *sql.DB {
	t.Helper()
	cfg := driver.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", srv.Addr(), user, pass
	cfg.Timeout, cfg.ReadTimeout = 5*time.Second, 30*time.Second
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

func exec(t testing.TB, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, q string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// server starts a simulated server with the product's backup account
// (pkg/accounts' backup role) and returns it with an admin pool.
func server(t testing.TB) (*mysqlsim.Server, *sql.DB) {
	t.Helper()
	srv := simtest.Start(t, mysqlsim.Config{})
	admin := dbFor(t, srv, simtest.AdminUser, simtest.AdminPass)
	for _, q := range accounts.CreateStatements(accounts.Account{Role: accounts.RoleBackup, User: backupUser, Password: backupPass}) {
		exec(t, admin, q)
	}
	return srv, admin
}

// argv is the command line a backup Job's dump step passes.
func argv(srv *mysqlsim.Server, out string, extra ...string) []string {
	host, port, _ := net.SplitHostPort(srv.Addr())
	a := []string{"--host=" + host, "--port=" + port, "--user=" + backupUser, "--passwords-from-stdin",
		"--ssl-mode=DISABLED", "--", "util", "dump-instance", out, "--threads=2", "--bytesPerChunk=128k",
		"--compression=zstd", "--consistent=true", "--users=false"}
	return append(a, extra...)
}

type result struct {
	code           int
	stdout, stderr string
}

func run(t testing.TB, args []string, password string, hooks Hooks) result {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := Run(ctx, args, strings.NewReader(password+"\n"), &out, &errb, hooks)
	return result{code, out.String(), errb.String()}
}

// tableRows reads a table's rows from the dump's chunk files (in chunk
// order), unescaping MySQL Shell's TSV; NULL is reported as "<NULL>".
func tableRows(t *testing.T, dir, schema, table string) [][]string {
	t.Helper()
	base := dump.TableBasename(schema, table)
	m, err := dump.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var chunks []string
	for _, f := range m.Files {
		if strings.HasPrefix(f, base+"@") && (strings.HasSuffix(f, ".tsv.zst") || strings.HasSuffix(f, ".tsv")) {
			chunks = append(chunks, f)
		}
	}
	sort.Slice(chunks, func(i, j int) bool { return chunkIndex(chunks[i]) < chunkIndex(chunks[j]) })
	if len(chunks) == 0 || !strings.Contains(chunks[len(chunks)-1], "@@") {
		t.Fatalf("chunks of %s.%s: %v (the last must be marked @@)", schema, table, chunks)
	}
	var rows [][]string
	for _, c := range chunks {
		data, err := os.ReadFile(filepath.Join(dir, c))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(c, ".zst") {
			dec, err := zstd.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			data, err = io.ReadAll(dec)
			dec.Close()
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if line == "" {
				continue
			}
			rows = append(rows, unescapeRow(line))
		}
	}
	return rows
}

func chunkIndex(name string) int {
	i := strings.LastIndex(name, "@")
	var n int
	fmt.Sscanf(name[i+1:], "%d", &n)
	return n
}

func unescapeRow(line string) []string {
	var out []string
	for _, f := range strings.Split(line, "\t") {
		if f == `\N` {
			out = append(out, "<NULL>")
			continue
		}
		var b strings.Builder
		for i := 0; i < len(f); i++ {
			if f[i] != '\\' || i+1 == len(f) {
				b.WriteByte(f[i])
				continue
			}
			i++
			b.WriteByte(map[byte]byte{'0': 0, 'b': '\b', 'n': '\n', 'r': '\r', 't': '\t', 'Z': 0x1a, '\\': '\\'}[f[i]])
		}
		out = append(out, b.String())
	}
	return out
}

// liveRows reads a table as the server holds it now, rows as strings.
func liveRows(t *testing.T, db *sql.DB, schema, table string) [][]string {
	t.Helper()
	rows, err := db.Query("SELECT * FROM `" + schema + "`.`" + table + "`")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = v.String
			if !v.Valid {
				row[i] = "<NULL>"
			}
		}
		out = append(out, row)
	}
	return out
}

func key(rows [][]string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.Join(r, "\x1f")
	}
	sort.Strings(out)
	return out
}

// TestDumpMatchesTheServerAtTheLock: while a client writes without pause,
// the stand-in dumps; the dump's gtidExecuted and binary log position are
// the ones the server had while the dump held its lock (judged by the
// server, read from another session at that moment), its rows are exactly
// the rows the server held then, and writes acknowledged after the lock
// are on the server but not in the dump.
func TestDumpMatchesTheServerAtTheLock(t *testing.T) {
	srv, admin := server(t)
	app := dbFor(t, srv, simtest.AppUser, simtest.AppPass)
	exec(t, admin, "CREATE DATABASE shop")
	exec(t, admin, "CREATE TABLE shop.orders (id BIGINT, note VARCHAR(200))")
	exec(t, admin, "CREATE DATABASE `we@ird sch`")
	exec(t, admin, "CREATE TABLE `we@ird sch`.`t` (a TEXT, b TEXT)")
	exec(t, app, "INSERT INTO `we@ird sch`.`t` VALUES ('tab\there', NULL), ('new\nline', 'back\\\\slash'), ('', 'ctrl\x1az')")
	exec(t, admin, "CREATE DATABASE scratch")
	exec(t, admin, "CREATE TABLE scratch.x (a INT)")
	// enough rows for several 128k chunks
	for b := 0; b < 4; b++ {
		var vals []string
		for i := 0; i < 500; i++ {
			vals = append(vals, fmt.Sprintf("(%d, '%s')", b*500+i, strings.Repeat("x", 100)))
		}
		exec(t, app, "INSERT INTO shop.orders VALUES "+strings.Join(vals, ", "))
	}

	// A client writing continuously through the whole dump.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = app.Exec("INSERT INTO shop.orders VALUES (?, 'concurrent')", 100000+i)
		}
	}()

	var atLock gtid.Set
	var atLockRows, weirdRows [][]string
	var binlogFile string
	var binlogPos uint64
	var after []string
	hooks := Hooks{
		Locked: func() {
			atLock = srv.Snapshot().Executed
			atLockRows = liveRows(t, admin, "shop", "orders")
			weirdRows = liveRows(t, admin, "we@ird sch", "t")
			if err := admin.QueryRow("SHOW BINARY LOG STATUS").Scan(&binlogFile, &binlogPos, new(string), new(string), new(string)); err != nil {
				t.Errorf("SHOW BINARY LOG STATUS: %v", err)
			}
		},
		Unlocked: func() {
			for i := 0; i < 5; i++ {
				v := fmt.Sprintf("after-lock-%d", i)
				exec(t, app, "INSERT INTO shop.orders VALUES (?, ?)", 900000+i, v)
				after = append(after, v)
			}
		},
	}
	out := filepath.Join(t.TempDir(), "dump")
	r := run(t, argv(srv, out, "--excludeSchemas=scratch"), backupPass, hooks)
	close(stop)
	wg.Wait()
	if r.code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, backupPass) {
		t.Fatal("the password appears in the output")
	}

	m, err := dump.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Complete || !m.Consistent || m.GTIDExecutedInconsistent || m.Origin != "dumpInstance" {
		t.Fatalf("manifest %+v", m)
	}
	if m.GTIDExecuted != atLock.OneLine() {
		t.Fatalf("dump's gtidExecuted %s, the server's at the lock %s", m.GTIDExecuted, atLock.OneLine())
	}
	if m.BinlogFile != binlogFile || m.BinlogPosition != binlogPos || binlogPos == 0 {
		t.Fatalf("dump's binlog position %s:%d, the server's at the lock %s:%d", m.BinlogFile, m.BinlogPosition, binlogFile, binlogPos)
	}
	if strings.Join(m.Schemas, ",") != "shop,we@ird sch" {
		t.Fatalf("schemas %q (scratch excluded, system schemas never)", m.Schemas)
	}
	got := tableRows(t, out, "shop", "orders")
	if want := key(atLockRows); strings.Join(key(got), "\n") != strings.Join(want, "\n") {
		t.Fatalf("dump holds %d rows of shop.orders, the server held %d at the lock", len(got), len(atLockRows))
	}
	if g, w := key(tableRows(t, out, "we@ird sch", "t")), key(weirdRows); strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Fatalf("rows of `we@ird sch`.t: dump %q, server %q", g, w)
	}
	live := strings.Join(key(liveRows(t, admin, "shop", "orders")), "\n")
	for _, v := range after {
		if !strings.Contains(live, v) {
			t.Fatalf("the server lacks the acknowledged write %q", v)
		}
		for _, row := range got {
			if row[1] == v {
				t.Fatalf("the dump holds %q, written after the lock", v)
			}
		}
	}
	if len(liveRows(t, admin, "shop", "orders")) <= len(atLockRows) {
		t.Fatal("nothing was written during the dump: the check above proved nothing")
	}
	var chunks int
	for _, f := range m.Files {
		if strings.HasPrefix(f, "shop@orders@") && strings.HasSuffix(f, ".tsv.zst") {
			chunks++
		}
	}
	if chunks < 2 {
		t.Errorf("shop.orders in %d chunks, want several for 200 kB at 128k per chunk: %v", chunks, m.Files)
	}
	for _, f := range []string{"@.sql", "@.post.sql", "shop.json", "shop.sql", "shop@orders.json", "shop@orders.sql", "we%40ird%20sch@t.json"} {
		if !contains(m.Files, f) {
			t.Errorf("%s missing from %v", f, m.Files)
		}
	}
	if contains(m.Files, dump.UsersSQLFile) {
		t.Error("@.users.sql written with users: false")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestBackupLockHeldToTheEnd: DDL issued after the global read lock is
// released waits, as the server shows it ("Waiting for backup lock"), until
// the dump has ended (LOCK INSTANCE FOR BACKUP), so the dumped schema cannot
// change under it.
func TestBackupLockHeldToTheEnd(t *testing.T) {
	srv, admin := server(t)
	exec(t, admin, "CREATE DATABASE shop")
	exec(t, admin, "CREATE TABLE shop.orders (id BIGINT)")
	ddl := make(chan error, 1)
	waited := false
	hooks := Hooks{Unlocked: func() {
		go func() {
			_, err := admin.Exec("CREATE TABLE shop.later (id BIGINT)")
			ddl <- err
		}()
		deadline := time.Now().Add(10 * time.Second)
		for !waited && time.Now().Before(deadline) {
			waited = sessionInState(t, admin, "Waiting for backup lock")
			time.Sleep(10 * time.Millisecond)
		}
	}}
	out := filepath.Join(t.TempDir(), "dump")
	r := run(t, argv(srv, out), backupPass, hooks)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !waited {
		t.Fatal("CREATE TABLE during the dump never waited for the backup lock")
	}
	select {
	case err := <-ddl:
		if err != nil {
			t.Fatalf("CREATE TABLE after the dump: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("CREATE TABLE still waits after the dump ended")
	}
	m, err := dump.Read(out)
	if err != nil || !m.Complete {
		t.Fatalf("%v %+v", err, m)
	}
	if contains(m.Files, "shop@later.json") {
		t.Fatal("a table created during the dump is in it")
	}
}

// sessionInState reports whether some session's processlist state is state.
func sessionInState(t testing.TB, db *sql.DB, state string) bool {
	var n int
	rows, err := db.Query("SELECT STATE FROM performance_schema.processlist")
	if err != nil {
		t.Error(err)
		return false
	}
	defer rows.Close()
	for rows.Next() {
		var st sql.NullString
		if err := rows.Scan(&st); err == nil && st.String == state {
			n++
		}
	}
	return n > 0
}

func TestRefusals(t *testing.T) {
	srv, admin := server(t)
	exec(t, admin, "CREATE DATABASE shop")
	exec(t, admin, "CREATE USER 'noreload'@'%' IDENTIFIED BY 'pw'")
	exec(t, admin, "GRANT SELECT, REPLICATION CLIENT, BACKUP_ADMIN ON *.* TO 'noreload'@'%'")

	t.Run("non-empty output directory", func(t *testing.T) {
		out := t.TempDir()
		if err := os.WriteFile(filepath.Join(out, "keep"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		r := run(t, argv(srv, out), backupPass, Hooks{})
		if r.code != ExitArgument || !strings.Contains(r.stderr, "ERROR: Cannot proceed with the dump, the specified directory '"+out+"' already exists at the target location") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
		if entries, _ := os.ReadDir(out); len(entries) != 1 {
			t.Fatalf("the directory was touched: %v", entries)
		}
	})
	t.Run("unknown dump option", func(t *testing.T) {
		r := run(t, argv(srv, filepath.Join(t.TempDir(), "d"), "--bogus=1", "--alsoBogus"), backupPass, Hooks{})
		if r.code != ExitArgument || !strings.Contains(r.stderr, "ERROR: The following options are invalid: --bogus, --alsoBogus") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("unknown shell option", func(t *testing.T) {
		a := append([]string{"--frobnicate"}, argv(srv, filepath.Join(t.TempDir(), "d"))...)
		r := run(t, a, backupPass, Hooks{})
		if r.code != ExitError || !strings.Contains(r.stderr, "mysqlsh: unknown option --frobnicate") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "d")
		r := run(t, argv(srv, out), "wrong-Secret-7", Hooks{})
		if r.code != ExitError || !strings.Contains(r.stderr, "ERROR: MySQL Error 1045 (28000): Access denied for user") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "wrong-Secret-7") {
			t.Fatal("the password appears on stderr")
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("output directory created by a dump that never connected: %v", err)
		}
	})
	t.Run("no RELOAD", func(t *testing.T) {
		a := argv(srv, filepath.Join(t.TempDir(), "d"))
		a[2] = "--user=noreload"
		r := run(t, a, "pw", Hooks{})
		if r.code != ExitError || !strings.Contains(r.stderr, "ERROR: Unable to acquire global read lock neither table read locks.") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("no schema selected", func(t *testing.T) {
		r := run(t, argv(srv, filepath.Join(t.TempDir(), "d"), "--includeSchemas=absent"), backupPass, Hooks{})
		if r.code != ExitError || !strings.Contains(r.stderr, "Filters for schemas result in an empty set.") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("users not false", func(t *testing.T) {
		a := argv(srv, filepath.Join(t.TempDir(), "d"))
		r := run(t, a[:len(a)-1], backupPass, Hooks{})
		if r.code != ExitArgument || !strings.Contains(r.stderr, "--users=false") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

// TestUncompressedUnchunkedAndFilters: compression none writes .tsv,
// chunking false one file per table; dashes and camelCase option names are
// the same option; includeSchemas selects.
func TestUncompressedUnchunkedAndFilters(t *testing.T) {
	srv, admin := server(t)
	for _, s := range []string{"a", "b", "c"} {
		exec(t, admin, "CREATE DATABASE "+s)
		exec(t, admin, "CREATE TABLE "+s+".t (v TEXT)")
		exec(t, admin, "INSERT INTO "+s+".t VALUES ('"+s+"1'), ('"+s+"2')")
	}
	out := filepath.Join(t.TempDir(), "dump")
	a := argv(srv, out)
	a = append(a[:len(a)-4], "--compression", "none", "--include-schemas=a,c", "--chunking=false", "--users=false")
	r := run(t, a, backupPass, Hooks{})
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	m, err := dump.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Schemas, ",") != "a,c" {
		t.Fatalf("schemas %q", m.Schemas)
	}
	for _, f := range []string{"a@t.tsv", "a@t.tsv.idx", "c@t.tsv"} {
		if !contains(m.Files, f) {
			t.Fatalf("%s missing: %v", f, m.Files)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "c@t.tsv"))
	if err != nil || string(data) != "c1\nc2\n" {
		t.Fatalf("c@t.tsv = %q, %v", data, err)
	}
	if m.DataBytes != 12 {
		t.Fatalf("dataBytes %d, want 12", m.DataBytes)
	}
}

func TestParseOptionForms(t *testing.T) {
	inv, err := parse([]string{"-h", "db.example", "-P3307", "--user", "u", "--ssl-mode=verify_ca", "--ssl-ca=/ca.pem",
		"--", "util", "dump-instance", "/out", "--bytes-per-chunk=64M", "--threads", "8",
		"--excludeSchemas=x,y", "--showProgress=false", "--users=false"})
	if err != nil {
		t.Fatal(err)
	}
	c, o := inv.conn, inv.opts
	if c.host != "db.example" || c.port != 3307 || c.user != "u" || c.sslMode != "VERIFY_CA" || c.sslCA != "/ca.pem" {
		t.Errorf("connection %+v", c)
	}
	if inv.outputURL != "/out" || o.bytesPerChunk != 64000000 || o.threads != 8 || strings.Join(o.excludeSchemas, "|") != "x|y" {
		t.Errorf("options %+v", o)
	}
	for _, bad := range [][]string{
		{"--", "util", "dump-instance", "/o", "--threads=0", "--users=false"},
		{"--", "util", "dump-instance", "/o", "--bytesPerChunk=100k", "--users=false"},
		{"--", "util", "dump-instance", "/o", "--compression=lz4", "--users=false"},
		{"--", "util", "dump-instance", "/o", "--tzUtc=false", "--users=false"},
		{"--", "util", "dump-schemas", "/o"},
		{"--", "shell", "status"},
	} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse(%q) accepted", bad)
		}
	}
	if _, err := parse([]string{"--ssl-mode=sometimes", "--", "util", "dump-instance", "/o"}); err == nil {
		t.Error("a bad --ssl-mode accepted")
	}
}

// TestSSLModes: VERIFY_CA checks the server's chain against --ssl-ca but
// not its name, VERIFY_IDENTITY both; a CA that did not sign the server's
// certificate fails the connection (exit 1), as a client of MySQL fails.
func TestSSLModes(t *testing.T) {
	ca, err := testca.New("backup test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := testca.New("another CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue("orders-iad.bloodraven.svc") // not the address dialled
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	// require_secure_transport: a session without TLS is refused, so each
	// mode that succeeds below did encrypt.
	srv := simtest.Start(t, mysqlsim.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		Options: []string{"plugin-load-add=mysql_clone.so", "require-secure-transport=ON"}})
	cfg := driver.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", srv.Addr(), simtest.AdminUser, simtest.AdminPass
	cfg.TLS = &tls.Config{InsecureSkipVerify: true} // the test's own fixture connection
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	admin := sql.OpenDB(conn)
	defer admin.Close()
	for _, q := range accounts.CreateStatements(accounts.Account{Role: accounts.RoleBackup, User: backupUser, Password: backupPass}) {
		exec(t, admin, q)
	}
	exec(t, admin, "CREATE DATABASE shop")
	dir := t.TempDir()
	caFile, otherFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "other.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(otherFile, other.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	withTLS := func(mode, caPath string) result {
		a := argv(srv, filepath.Join(t.TempDir(), "d"))
		a[4] = "--ssl-mode=" + mode
		return run(t, append([]string{"--ssl-ca=" + caPath}, a...), backupPass, Hooks{})
	}
	if r := withTLS("VERIFY_CA", caFile); r.code != ExitOK {
		t.Fatalf("VERIFY_CA with the signing CA: exit %d, %s", r.code, r.stderr)
	}
	if r := withTLS("VERIFY_CA", otherFile); r.code != ExitError || !strings.Contains(r.stderr, "ERROR: ") {
		t.Fatalf("VERIFY_CA with another CA: exit %d, %s", r.code, r.stderr)
	}
	if r := withTLS("VERIFY_IDENTITY", caFile); r.code != ExitError || !strings.Contains(r.stderr, "cannot validate certificate for 127.0.0.1") {
		t.Fatalf("VERIFY_IDENTITY against 127.0.0.1 with a certificate for another name: exit %d, %s", r.code, r.stderr)
	}
	if r := withTLS("REQUIRED", otherFile); r.code != ExitOK {
		t.Fatalf("REQUIRED (encrypted, not verified): exit %d, %s", r.code, r.stderr)
	}
	if r := withTLS("DISABLED", caFile); r.code != ExitError || !strings.Contains(r.stderr, "MySQL Error 3159") {
		t.Fatalf("DISABLED against require_secure_transport: exit %d, %s", r.code, r.stderr)
	}
}

// TestDumpOfAReplicaUnderSourceWrites: the usual backup source is a
// replica whose applier keeps committing the source's writes; the dump's
// GTID set and rows are the replica's at the lock (its applier waits behind
// the global read lock), judged by the replica itself.
func TestDumpOfAReplicaUnderSourceWrites(t *testing.T) {
	src, srcAdmin := server(t) // the backup account replicates
	rep := simtest.Start(t, mysqlsim.Config{})
	repAdmin := dbFor(t, rep, simtest.AdminUser, simtest.AdminPass)
	host, port, _ := net.SplitHostPort(src.Addr())
	exec(t, repAdmin, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST = '%s', SOURCE_PORT = %s, SOURCE_USER = '%s', "+
		"SOURCE_PASSWORD = '%s', SOURCE_AUTO_POSITION = 1, SOURCE_CONNECT_RETRY = 1, GET_SOURCE_PUBLIC_KEY = 1",
		host, port, simtest.ReplUser, simtest.ReplPass))
	exec(t, repAdmin, "START REPLICA")
	exec(t, srcAdmin, "CREATE DATABASE shop")
	exec(t, srcAdmin, "CREATE TABLE shop.orders (id BIGINT, note TEXT)")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = srcAdmin.Exec("INSERT INTO shop.orders VALUES (?, 'from the source')", i)
			time.Sleep(time.Millisecond)
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for rep.Snapshot().Executed.Count() < src.Snapshot().Executed.Count()/2 || rep.Snapshot().Executed.Count() < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("the replica does not apply: %s", rep.Snapshot())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var atLock gtid.Set
	var atLockRows [][]string
	hooks := Hooks{Locked: func() {
		atLock = rep.Snapshot().Executed
		time.Sleep(100 * time.Millisecond) // the source goes on; the replica must not
		atLockRows = liveRows(t, repAdmin, "shop", "orders")
		if now := rep.Snapshot().Executed; !now.Equal(atLock) {
			t.Errorf("the replica committed under the dump's lock: %s, was %s", now.OneLine(), atLock.OneLine())
		}
	}}
	out := filepath.Join(t.TempDir(), "dump")
	r := run(t, argv(rep, out), backupPass, hooks)
	close(stop)
	wg.Wait()
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	m, err := dump.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.GTIDExecuted != atLock.OneLine() {
		t.Fatalf("dump's gtidExecuted %s, the replica's at the lock %s", m.GTIDExecuted, atLock.OneLine())
	}
	if got, want := key(tableRows(t, out, "shop", "orders")), key(atLockRows); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("dump holds %d rows, the replica held %d at the lock", len(got), len(want))
	}
	deadline = time.Now().Add(20 * time.Second)
	for !src.Snapshot().Executed.IsSubsetOf(rep.Snapshot().Executed) {
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not catch up after the dump: %s", rep.Snapshot())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rep.Snapshot().Executed.Equal(atLock) {
		t.Fatal("the source wrote nothing during the dump: the check proved nothing")
	}
}

// TestListOptionForms: a list option is a JSON array of strings (the form
// the backup Job passes, which keeps a name with a comma whole), or items
// separated by commas, quoted or with escaped commas; a repeated option
// adds to the list.
func TestListOptionForms(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{`--includeSchemas=["a","b,c"]`}, "a|b,c"},
		{[]string{`--includeSchemas=a,b`}, "a|b"},
		{[]string{`--includeSchemas="x,y",z`}, "x,y|z"},
		{[]string{`--includeSchemas=p\,q,r`}, "p,q|r"},
		{[]string{`--includeSchemas=a`, `--include-schemas=b`}, "a|b"},
	}
	for _, c := range cases {
		inv, err := parse(append([]string{"--", "util", "dump-instance", "/o", "--users=false"}, c.args...))
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if got := strings.Join(inv.opts.includeSchemas, "|"); got != c.want {
			t.Errorf("%q: includeSchemas %q, want %q", c.args, got, c.want)
		}
	}
	for _, bad := range []string{`--includeSchemas=[1,2]`, `--includeSchemas="open`, `--includeSchemas="a"b`} {
		if _, err := parse([]string{"--", "util", "dump-instance", "/o", "--users=false", bad}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
