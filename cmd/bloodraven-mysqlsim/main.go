// Command bloodraven-mysqlsim runs one simulated MySQL 9.7 server for the
// playground and the end-to-end tests. It is development tooling: never use
// it as a database.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type options struct {
	listen, name, serverUUID string
	serverID                 uint64
	users                    listFlag
	usersFile                string
	tlsCert, tlsKey          string
	readOnly, superReadOnly  bool
	skipReplicaStart         bool
	unsupervised             bool
	siteAddresses            string
	resolve                  listFlag
	controlAddr              string
	dataDir, pidFile         string
	syncBinlog, flushAtTrx   int
	adminAddr                string
	defaultsFile, root       string
	mysqldOptions            listFlag
	envFile, initDBDir       string
	given                    map[string]bool // flags set on the command line
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bloodraven-mysqlsim:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	var o options
	fs := flag.NewFlagSet("bloodraven-mysqlsim", flag.ContinueOnError)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:3306", "loopback host:port to listen on (port 0 picks a free one)")
	fs.StringVar(&o.name, "name", "mysqlsim", "name of this server in logs (e.g. the site)")
	fs.Uint64Var(&o.serverID, "server-id", 0, "server_id (required, 1-4294967295)")
	fs.StringVar(&o.serverUUID, "server-uuid", "", "server_uuid (required)")
	fs.Var(&o.users, "user", "account name:password[:plugin[:role]] (plugin caching_sha2_password|mysql_native_password, role admin|app|repl); repeatable. Prefer -users-file: arguments are visible to other local users")
	fs.StringVar(&o.usersFile, "users-file", "", "file with one account per line in the -user format")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate file; enables TLS together with -tls-key")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM private key file")
	fs.BoolVar(&o.readOnly, "read-only", false, "start with read_only=ON")
	fs.BoolVar(&o.superReadOnly, "super-read-only", false, "start with super_read_only=ON (implies read_only)")
	fs.BoolVar(&o.skipReplicaStart, "skip-replica-start", false, "skip_replica_start=ON: replication threads stay stopped at every start until START REPLICA")
	fs.BoolVar(&o.unsupervised, "unsupervised", false, "mysqld without a monitoring process, as in a container: CLONE answers 3707 and the server restarts as the kubelet would restart it")
	fs.StringVar(&o.siteAddresses, "site-addresses", os.Getenv(devsitemap.EnvVar), "development site-address map file (default $"+devsitemap.EnvVar+"), resolves SOURCE_HOST and clone donors")
	fs.Var(&o.resolve, "resolve", "extra name=host:port mapping for SOURCE_HOST / clone donor names; repeatable")
	fs.StringVar(&o.controlAddr, "control-addr", "", "loopback host:port for the fault-injection HTTP API (off when empty)")
	fs.StringVar(&o.adminAddr, "admin-addr", "", "loopback host:port of the administrative connection interface (admin_address:admin_port; off when empty)")
	fs.StringVar(&o.dataDir, "datadir", "", "data directory (created if absent; empty: first boot). Without it the data lives in process memory and dies with the process")
	fs.StringVar(&o.pidFile, "pid-file", "", "pid file written at start, removed at a clean shutdown (default <datadir>/mysqld.pid with -datadir)")
	fs.IntVar(&o.syncBinlog, "sync-binlog", 1, "sync_binlog at start (1: every commit durable before it is acknowledged)")
	fs.IntVar(&o.flushAtTrx, "innodb-flush-log-at-trx-commit", 1, "innodb_flush_log_at_trx_commit at start (0, 1 or 2)")
	fs.StringVar(&o.defaultsFile, "defaults-file", "", "mysqld's --defaults-file: the option file read at every start (a path under -root when set); flags win over it")
	fs.StringVar(&o.root, "root", "", "directory standing for the container's filesystem: absolute paths in the option files, -defaults-file and -initdb-dir resolve under it")
	fs.Var(&o.mysqldOptions, "option", "a mysqld command-line option name[=value] (e.g. plugin-load-add=mysql_clone.so), applied after the option file; repeatable")
	fs.StringVar(&o.envFile, "env-file", "", "the container's environment, KEY=VALUE per line: with it (or -initdb-dir) an empty data directory is initialised as the official image's entrypoint does (MYSQL_ROOT_PASSWORD, ...)")
	fs.StringVar(&o.initDBDir, "initdb-dir", "", "the image's /docker-entrypoint-initdb.d: *.sql and *.sql.gz run once, in name order, at first boot (a path under -root when set)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.given = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.given[f.Name] = true })
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	cfg, err := buildConfig(o, log)
	if err != nil {
		return err
	}
	srv, err := mysqlsim.New(cfg)
	if err != nil {
		return err
	}
	// Handle SIGTERM before anything can see the server up: a signal that
	// comes right after the first connection must shut down cleanly (pid
	// file removed, journal flushed), as mysqld's does, not kill the process.
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	if err := srv.Start(); err != nil {
		return err
	}
	log.Info("listening", "addr", srv.Addr(), "adminAddr", srv.AdminAddr(), "name", o.name)
	stopControl := func() {}
	if o.controlAddr != "" {
		if stopControl, err = startControl(o.controlAddr, srv, log); err != nil {
			srv.Close()
			return err
		}
	}
	<-ctx.Done()
	log.Info("stopping")
	stopControl()
	return srv.Close()
}

func buildConfig(o options, log *slog.Logger) (mysqlsim.Config, error) {
	cfg := mysqlsim.Config{
		Name: o.name, Addr: o.listen, AdminAddr: o.adminAddr, ServerUUID: o.serverUUID,
		ReadOnly: o.readOnly, SuperReadOnly: o.superReadOnly, SkipReplicaStart: o.skipReplicaStart, Unsupervised: o.unsupervised, Logger: log,
	}
	if (o.serverID == 0 && o.defaultsFile == "") || o.serverID > 1<<32-1 {
		return cfg, errors.New("-server-id: required (unless the -defaults-file sets server-id), 1 to 4294967295")
	}
	cfg.ServerID = uint32(o.serverID)
	if o.serverUUID == "" && o.dataDir == "" && o.defaultsFile == "" {
		return cfg, errors.New("-server-uuid: required without -datadir (whose auto.cnf holds it)")
	}
	cfg.DataDir, cfg.PIDFile = o.dataDir, o.pidFile
	if cfg.PIDFile == "" && o.dataDir != "" && o.defaultsFile == "" {
		cfg.PIDFile = filepath.Join(o.dataDir, "mysqld.pid")
	}
	if o.flushAtTrx < 0 || o.flushAtTrx > 2 || o.syncBinlog < 0 {
		return cfg, errors.New("-sync-binlog: 0 or more; -innodb-flush-log-at-trx-commit: 0, 1 or 2")
	}
	// Only flags given win over the option file, as mysqld's command line.
	if o.given["sync-binlog"] || o.defaultsFile == "" {
		cfg.SyncBinlog = &o.syncBinlog
	}
	if o.given["innodb-flush-log-at-trx-commit"] || o.defaultsFile == "" {
		cfg.InnoDBFlushLogAtTrxCommit = &o.flushAtTrx
	}
	cfg.DefaultsFile, cfg.RootDir, cfg.Options, cfg.InitDBDir = o.defaultsFile, o.root, o.mysqldOptions, o.initDBDir
	if o.envFile != "" {
		env, err := readEnvFile(o.envFile)
		if err != nil {
			return cfg, fmt.Errorf("-env-file: %w", err)
		}
		cfg.Env = env
	}
	lines := append([]string(nil), o.users...)
	if o.usersFile != "" {
		fileLines, err := readLines(o.usersFile)
		if err != nil {
			return cfg, fmt.Errorf("-users-file: %w", err)
		}
		lines = append(lines, fileLines...)
	}
	for _, l := range lines {
		u, err := parseUser(l)
		if err != nil {
			return cfg, err
		}
		cfg.Users = append(cfg.Users, u)
	}
	if len(cfg.Users) == 0 && cfg.Env == nil && cfg.InitDBDir == "" {
		return cfg, errors.New("-user or -users-file: at least one account is required (or -env-file / -initdb-dir for the image's first boot)")
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return cfg, errors.New("-tls-cert and -tls-key must be given together")
	}
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return cfg, fmt.Errorf("-tls-cert/-tls-key: %w", err)
		}
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	resolve, err := buildResolver(o.siteAddresses, o.resolve)
	if err != nil {
		return cfg, err
	}
	cfg.ResolveSource = resolve
	return cfg, nil
}

// parseUser reads name:password[:plugin[:role]]. The error never echoes the
// password.
func parseUser(s string) (mysqlsim.User, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 4 || parts[0] == "" {
		return mysqlsim.User{}, fmt.Errorf("-user %q...: want name:password[:plugin[:role]]", parts[0])
	}
	u := mysqlsim.User{Name: parts[0], Password: parts[1], Plugin: mysqlsim.CachingSHA2Password, Role: mysqlsim.RoleAdmin}
	if len(parts) > 2 && parts[2] != "" {
		u.Plugin = parts[2]
	}
	if len(parts) > 3 {
		u.Role = mysqlsim.Role(parts[3])
	}
	return u, nil
}

// readEnvFile reads KEY=VALUE lines (no quoting; '#' comment lines), the
// environment a kubelet gives the container.
func readEnvFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("line %d: want KEY=VALUE", i+1)
		}
		env[k] = v
	}
	return env, nil
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// buildResolver maps SOURCE_HOST/SOURCE_PORT and clone donors to addresses:
// -resolve entries first (by host:port, then host), then the site map.
func buildResolver(mapPath string, extra []string) (func(string, int) string, error) {
	names := map[string]string{}
	for _, e := range extra {
		name, addr, ok := strings.Cut(e, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("-resolve %q: want name=host:port", e)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("-resolve %q: %w", e, err)
		}
		names[strings.ToLower(name)] = addr
	}
	var m *devsitemap.Map
	if mapPath != "" {
		var err error
		if m, err = devsitemap.Load(mapPath); err != nil {
			return nil, fmt.Errorf("-site-addresses: %w", err)
		}
	}
	return func(host string, port int) string {
		hp := strings.ToLower(net.JoinHostPort(host, strconv.Itoa(port)))
		if a, ok := names[hp]; ok {
			return a
		}
		if a, ok := names[strings.ToLower(host)]; ok {
			return a
		}
		if m != nil {
			return m.ResolveMySQL(host, port)
		}
		return net.JoinHostPort(host, strconv.Itoa(port))
	}, nil
}
