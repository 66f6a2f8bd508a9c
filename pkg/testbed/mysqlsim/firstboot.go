package mysqlsim

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The official mysql image's first boot (its docker-entrypoint.sh,
// docker_setup_db and docker_process_init_files), as the simulator
// models it when Config.Env or Config.InitDBDir is set: on an empty data
// directory only,
//
//  1. a password option must be given (MYSQL_ROOT_PASSWORD,
//     MYSQL_ALLOW_EMPTY_PASSWORD or MYSQL_RANDOM_ROOT_PASSWORD; the
//     *_FILE forms read the value from a file), else the start fails with
//     the entrypoint's message;
//  2. mysqld --initialize-insecure creates 'root'@'localhost' without a
//     password (a system thread: not logged, read_only does not apply);
//  3. as root, with sql_log_bin=0: the password of 'root'@'localhost', and
//     'root'@MYSQL_ROOT_HOST (default '%') with ALL WITH GRANT OPTION;
//     DROP DATABASE IF EXISTS test;
//  4. MYSQL_DATABASE, MYSQL_USER/MYSQL_PASSWORD (logged, as the image does);
//  5. the files of the init directory in name order: *.sql and *.sql.gz run
//     as root (in MYSQL_DATABASE if set), *.sh cannot run here and stops the
//     start, other files are ignored.
//
// The statements of steps 3 to 5 run as the root account, so read_only and
// super_read_only of the option file apply to them as they do to the
// image's temporary server. The first failing statement stops the start;
// the data directory stays initialised, so the next start skips all of
// this, as the image's next start does (it looks only for an initialised
// data directory).

// entrypointLocked reports whether the image's entrypoint starts this
// server.
func (s *Server) entrypointLocked() bool { return s.boot.Env != nil || s.boot.InitDBDir != "" }

// errEntrypoint is the entrypoint's own message (mysql_error), after which
// it exits 1.
type errEntrypoint struct{ msg string }

func (e *errEntrypoint) Error() string { return "[ERROR] [Entrypoint]: " + e.msg }

// firstBootLocked runs the image's first boot if the boot found an empty
// data directory. It releases s.mu while statements run; nothing else
// connects meanwhile (the listener does not accept yet), as the image's
// temporary server listens on no TCP port.
func (s *Server) firstBootLocked() error {
	if !s.ext.firstBootPending {
		return nil
	}
	s.ext.firstBootPending = false
	env, err := s.entrypointEnv()
	if err != nil {
		return err
	}
	files, err := s.initFiles()
	if err != nil {
		return err
	}
	s.mu.Unlock()
	err = s.runFirstBoot(env, files)
	s.mu.Lock()
	if err != nil {
		s.log.Error("first boot failed: the data directory stays initialised and the next start skips the init scripts, as the image's entrypoint does", "err", err.Error())
		return err
	}
	s.log.Info("first boot done", "initFiles", len(files))
	return nil
}

// entrypointEnv resolves the variables the entrypoint reads, the *_FILE
// forms included (file_env).
func (s *Server) entrypointEnv() (map[string]string, error) {
	env := map[string]string{}
	for _, name := range []string{"MYSQL_ROOT_PASSWORD", "MYSQL_ALLOW_EMPTY_PASSWORD", "MYSQL_RANDOM_ROOT_PASSWORD",
		"MYSQL_ROOT_HOST", "MYSQL_DATABASE", "MYSQL_USER", "MYSQL_PASSWORD"} {
		v, hasV := s.boot.Env[name]
		f, hasF := s.boot.Env[name+"_FILE"]
		switch {
		case hasV && hasF && v != "" && f != "":
			return nil, &errEntrypoint{msg: fmt.Sprintf("Both %s and %s_FILE are set (but are exclusive)", name, name)}
		case hasF && f != "":
			b, err := os.ReadFile(resolveUnder(s.boot.RootDir, f))
			if err != nil {
				return nil, &errEntrypoint{msg: fmt.Sprintf("%s_FILE: %v", name, err)}
			}
			env[name] = strings.TrimRight(string(b), "\n")
		case hasV:
			env[name] = v
		}
	}
	if env["MYSQL_ROOT_PASSWORD"] == "" && env["MYSQL_ALLOW_EMPTY_PASSWORD"] == "" && env["MYSQL_RANDOM_ROOT_PASSWORD"] == "" {
		return nil, &errEntrypoint{msg: "Database is uninitialized and password option is not specified\n" +
			"    You need to specify one of the following as an environment variable:\n" +
			"    - MYSQL_ROOT_PASSWORD\n    - MYSQL_ALLOW_EMPTY_PASSWORD\n    - MYSQL_RANDOM_ROOT_PASSWORD"}
	}
	if env["MYSQL_USER"] == "root" {
		return nil, &errEntrypoint{msg: "MYSQL_USER=\"root\", MYSQL_USER and MYSQL_PASSWORD are for configuring a regular user and cannot be used for the root user\n" +
			"    Remove MYSQL_USER=\"root\" and use one of the following to control the root user password:\n" +
			"    - MYSQL_ROOT_PASSWORD\n    - MYSQL_ALLOW_EMPTY_PASSWORD\n    - MYSQL_RANDOM_ROOT_PASSWORD"}
	}
	if _, ok := env["MYSQL_ROOT_HOST"]; !ok {
		env["MYSQL_ROOT_HOST"] = "%"
	}
	return env, nil
}

// initFile is one file of the init directory.
type initFile struct{ name, path string }

// initFiles lists the init directory in name order, refusing what the
// simulator cannot run: a shell script (the image sources or executes
// *.sh; there is no shell here) and the .xz/.zst forms.
func (s *Server) initFiles() ([]initFile, error) {
	if s.boot.InitDBDir == "" {
		return nil, nil
	}
	dir := resolveUnder(s.boot.RootDir, s.boot.InitDBDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []initFile
	for _, e := range entries {
		// A mounted Secret or ConfigMap holds ..data and ..<timestamp>
		// entries beside the key links: the glob /docker-entrypoint-initdb.d/*
		// of the entrypoint does not match names starting with a dot.
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			continue
		}
		switch n := e.Name(); {
		case strings.HasSuffix(n, ".sh"):
			return nil, fmt.Errorf("mysqlsim: %s/%s: shell scripts in the init directory cannot run in the simulator (the image would run them); use a .sql file", s.boot.InitDBDir, n)
		case strings.HasSuffix(n, ".sql.xz"), strings.HasSuffix(n, ".sql.zst"):
			return nil, fmt.Errorf("mysqlsim: %s/%s: .xz and .zst init files are not modelled; use .sql or .sql.gz", s.boot.InitDBDir, n)
		}
		out = append(out, initFile{name: e.Name(), path: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// runFirstBoot runs steps 2 to 5.
func (s *Server) runFirstBoot(env map[string]string, files []initFile) error {
	system := s.systemSession("initialize")
	s.mu.Lock()
	system.gen = s.gen
	s.mu.Unlock()
	if err := s.runScript(system, "mysqld --initialize-insecure", "SET SESSION sql_log_bin = 0;\n"+
		"CREATE USER 'root'@'localhost' IDENTIFIED BY '';\nGRANT ALL ON *.* TO 'root'@'localhost' WITH GRANT OPTION;"); err != nil {
		return err
	}
	pw := env["MYSQL_ROOT_PASSWORD"]
	if env["MYSQL_RANDOM_ROOT_PASSWORD"] != "" && pw == "" {
		b := make([]byte, 18)
		_, _ = rand.Read(b)
		pw = base64.StdEncoding.EncodeToString(b)
		// The image prints it for the operator of the container, as here.
		s.log.Info("[Note] [Entrypoint]: GENERATED ROOT PASSWORD: " + pw)
	}
	setup := "SET autocommit = 1;\nSET @@SESSION.SQL_LOG_BIN=0;\n" +
		"ALTER USER 'root'@'localhost' IDENTIFIED BY " + quoteString(pw) + ";\n" +
		"GRANT ALL ON *.* TO 'root'@'localhost' WITH GRANT OPTION;\n"
	if h := env["MYSQL_ROOT_HOST"]; h != "" && h != "localhost" {
		setup += "CREATE USER 'root'@" + quoteString(h) + " IDENTIFIED BY " + quoteString(pw) + ";\n" +
			"GRANT ALL ON *.* TO 'root'@" + quoteString(h) + " WITH GRANT OPTION;\n"
	}
	setup += "DROP DATABASE IF EXISTS test;"
	if err := s.runAsRoot("root setup", setup, ""); err != nil {
		return err
	}
	if db := env["MYSQL_DATABASE"]; db != "" {
		if err := s.runAsRoot("MYSQL_DATABASE", "CREATE DATABASE IF NOT EXISTS "+quoteIdent(db)+";", ""); err != nil {
			return err
		}
	}
	if u, p := env["MYSQL_USER"], env["MYSQL_PASSWORD"]; u != "" && p != "" {
		stmt := "CREATE USER " + quoteString(u) + "@'%' IDENTIFIED BY " + quoteString(p) + ";"
		if db := env["MYSQL_DATABASE"]; db != "" {
			stmt += "\nGRANT ALL ON " + quoteIdent(db) + ".* TO " + quoteString(u) + "@'%';"
		}
		if err := s.runAsRoot("MYSQL_USER", stmt, ""); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := s.runInitFile(env, f); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) runInitFile(env map[string]string, f initFile) error {
	var text []byte
	switch {
	case strings.HasSuffix(f.name, ".sql"), strings.HasSuffix(f.name, ".sql.gz"):
		b, err := os.ReadFile(f.path)
		if err != nil {
			return err
		}
		text = b
		if strings.HasSuffix(f.name, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return fmt.Errorf("mysqlsim: %s: %w", f.name, err)
			}
			if text, err = io.ReadAll(zr); err != nil {
				return fmt.Errorf("mysqlsim: %s: %w", f.name, err)
			}
		}
	default:
		s.log.Info("[Note] [Entrypoint]: ignoring " + f.name)
		return nil
	}
	s.log.Info("[Note] [Entrypoint]: running " + f.name)
	return s.runAsRoot(f.name, string(text), env["MYSQL_DATABASE"])
}

// runAsRoot runs a script in a new root session (the image starts the
// mysql client once per script), in database db if set.
func (s *Server) runAsRoot(name, text, db string) error {
	sess, err := s.rootSession()
	if err != nil {
		return err
	}
	sess.db = db
	return s.runScript(sess, name, text)
}

// runScript runs the statements of one script in order, as the mysql
// client does in batch mode: the first error ends it.
func (s *Server) runScript(sess *session, name, text string) error {
	stmts, err := splitStatements(text)
	if err != nil {
		return fmt.Errorf("mysqlsim: %s: %w", name, err)
	}
	for i, stmt := range stmts {
		if _, err := s.exec(sess, stmt, false); err != nil {
			// The statement is not quoted: it may hold a password.
			return fmt.Errorf("mysqlsim: %s: statement %d: %w", name, i+1, err)
		}
	}
	return nil
}

// rootSession is the entrypoint's mysql client logged in as
// 'root'@'localhost' over the socket: the account's privileges, and
// read_only/super_read_only apply.
func (s *Server) rootSession() (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.st.accounts[accountKey("root", "localhost")]
	if a == nil {
		return nil, errors.New("mysqlsim: first boot: 'root'@'localhost' does not exist")
	}
	sess := &session{user: User{Name: a.user, Plugin: a.plugin}, acctHost: a.host, host: "localhost", gen: s.gen,
		gtidNext: "AUTOMATIC", killed: make(chan struct{}), command: "Query"}
	sess.privs.Store(loginPrivs(a.clone()))
	return sess, nil
}

// commitUnloggedLocked commits the data changes of a session with
// sql_log_bin=0 (the image's root setup drops the test database that way):
// applied and made durable by a checkpoint, with no GTID and no binary log
// event, as MySQL commits them.
func (s *Server) commitUnloggedLocked(ops []writeOp) error {
	for _, op := range ops {
		if op.kind == opAccount {
			continue // account statements honour sql_log_bin themselves (grants.go)
		}
		s.st.apply(op)
	}
	s.saveLocked()
	s.notifyLocked()
	return nil
}
