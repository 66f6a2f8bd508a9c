// Package mysqlsim is a wire-level simulator of the parts of MySQL 9.7 that
// Bloodraven relies on. Each Server is a real TCP listener speaking the MySQL
// client/server protocol (through go-mysql-org/go-mysql's server package), with
// its own state: identity, read_only/super_read_only, GTID sets, a binary log,
// a small table store, sessions, users, and a replication channel.
//
// Several servers run in one process without sharing anything: all state is
// per Server, behind its mutex. docs/mysql-simulator.md lists what is
// modelled and what is not.
package mysqlsim

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/server"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/testbed/portlease"
)

// Version is the server version the simulator reports.
const Version = "9.7.0-bloodraven-sim"

// Role is a shorthand for the GRANT statements a configured account gets
// when it is created at first boot (accounts.go, roleGrants). Privilege
// checks use the grants, never the role.
type Role string

const (
	// RoleAdmin is GRANT ALL PRIVILEGES ON *.* WITH GRANT OPTION, what the
	// operator's account gets (seed 004).
	RoleAdmin Role = "admin"
	// RoleApp is the data privileges ON *.*; read_only refuses its writes.
	RoleApp Role = "app"
	// RoleReplication is REPLICATION SLAVE, REPLICATION CLIENT,
	// BACKUP_ADMIN and CLONE_ADMIN: stream the binary log, read replication
	// status, be a clone donor account.
	RoleReplication Role = "repl"
)

// Authentication plugin names.
const (
	NativePassword      = "mysql_native_password"
	CachingSHA2Password = "caching_sha2_password"
)

// User is an account to create at first boot, as 'Name'@'%' (an init
// file's CREATE USER and GRANT); from then on accounts live in the data
// directory and change only by account statements. Password is hashed at
// creation and not kept.
type User struct {
	Name     string
	Password string
	Plugin   string // NativePassword or CachingSHA2Password; empty means caching_sha2
	Role     Role
}

// Config configures one simulated mysqld.
type Config struct {
	// Name identifies the server in logs (e.g. the site name).
	Name string
	// Addr is the listen address; it must be a loopback address. Default 127.0.0.1:0.
	Addr string
	// AdminAddr is admin_address:admin_port, the administrative connection
	// interface (admin.go); empty means none, as without admin_address.
	AdminAddr  string
	ServerID   uint32
	ServerUUID string
	Users      []User
	// TLS enables TLS (clients may still connect without it, as with
	// require_secure_transport=OFF).
	TLS *tls.Config
	// ReadOnly and SuperReadOnly are the values at start (as in my.cnf).
	ReadOnly, SuperReadOnly bool
	// SkipReplicaStart is skip_replica_start=ON: at server start (a restart,
	// or the restart that ends a clone) the replication threads stay
	// stopped until START REPLICA, whatever they were doing before.
	SkipReplicaStart bool
	// Unsupervised is mysqld without a monitoring process (no systemd, no
	// mysqld_safe, no MYSQLD_PARENT_PID), as in a container whose entrypoint
	// execs mysqld: a clone cannot restart the server, so CLONE answers
	// 3707 "Restart server failed" and the server shuts down. The simulator
	// then starts again by itself, as the kubelet restarts the container.
	// Without it, the server restarts as under a supervisor and the CLONE
	// session just loses its connection.
	Unsupervised bool
	// ResolveSource maps a SOURCE_HOST/SOURCE_PORT or clone donor given in SQL
	// to the address to dial. Nil dials host:port as given.
	ResolveSource func(host string, port int) string
	// Logger receives the server's events; nil discards them.
	Logger *slog.Logger
	// DataDir is the data directory (created if absent). An empty
	// directory is a first boot; otherwise every start recovers from it
	// (docs/mysql-simulator.md, "Data directory and crash recovery"). Empty
	// keeps the files in the Server's memory instead: they still outlive
	// Crash, and Restart still rebuilds the server from them alone.
	DataDir string
	// PIDFile is mysqld's pid-file: written at every start, removed at a
	// clean shutdown (Close), left behind by a crash. Empty writes none.
	PIDFile string
	// SyncBinlog and InnoDBFlushLogAtTrxCommit are the values at start of
	// sync_binlog and innodb_flush_log_at_trx_commit (as in my.cnf); nil
	// is MySQL's default, 1.
	SyncBinlog, InnoDBFlushLogAtTrxCommit *int
	// ReplicaNetTimeout is replica_net_timeout at start in seconds (0:
	// MySQL's default, 60); RelayLogRecovery is relay_log_recovery (read
	// only at runtime). See relaylog.go.
	ReplicaNetTimeout int
	RelayLogRecovery  bool
	// DefaultsFile is mysqld's --defaults-file, read at every start, and
	// Options are options as on mysqld's command line, after it (mycnf.go).
	// They fill what the fields above leave unset.
	DefaultsFile string
	Options      []string
	// RootDir is the container's filesystem on the host: absolute paths in
	// DefaultsFile, in the files it names and InitDBDir resolve under it.
	RootDir string
	// Env is the container's environment, InitDBDir its
	// /docker-entrypoint-initdb.d: with either set, an empty data directory
	// is initialised as the official image's entrypoint does (firstboot.go).
	Env       map[string]string
	InitDBDir string
}

// Server is one simulated mysqld.
type Server struct {
	cfg   Config         // as running: boot plus what SET GLOBAL server_id and auto.cnf changed
	boot  Config         // as given to New: what every start begins from
	proto *server.Server // protocol settings: version, auth method, RSA key, TLS
	log   *slog.Logger
	disk  disk

	// redo is the open journal; nil while the server is stopped. gen counts
	// starts, so a statement of a session from before a crash cannot
	// commit into the restarted server.
	redo    *redoLog
	replica replicaVars // the replica's variables and open relay log (relaylog.go)
	gen     uint64
	peekSeq uint64 // last journal record in s.st while stopped (peekLocked)

	mu         sync.Mutex
	st         *state
	sessions   map[uint64]*session
	nextConnID uint64
	changed    chan struct{} // closed and replaced on every state change
	stopped    chan struct{} // closed when the server stops (crash, close)
	ln         net.Listener
	addr       string
	running    bool
	closed     bool
	faults     faults
	// fencesPending counts SET GLOBAL read_only/super_read_only statements
	// waiting for open transactions; new writes wait behind them.
	fencesPending int
	admin         adminListener      // admin.go
	leases        []*portlease.Lease // listen.go: the ports a restart listens on again
	conns         connLimit          // connlimit.go
	rollback      rollbackFault      // rollback.go
	binlog        binlogFiles        // binlog.go
	rsaKey        *rsa.PrivateKey    // caching_sha2_password's key pair for plain connections (auth.go)
	sha2Cache     map[string][]byte  // caching_sha2_password's cache: account -> SHA256(SHA256(pw)); emptied at every start
	authStats     authStats          // failed logins, Aborted_connects (authstats.go)
	// given is the Config as passed to New; ext what the option file,
	// the first boot, plugins and transport keep (mycnf.go).
	given Config
	ext   bootState
	wg    sync.WaitGroup
}

// New validates cfg and creates a server; call Start to listen.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	given := cfg
	// mycnf.go; its notes are logged by every boot, which reads it again
	cfg, opts, err := applyOptionFile(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if err := checkLoopback(cfg.Addr); err != nil {
		return nil, err
	}
	if cfg.ServerID == 0 {
		return nil, errors.New("mysqlsim: ServerID must be set (1 to 4294967295)")
	}
	if cfg.ServerUUID != "" || cfg.DataDir == "" {
		uuid, err := gtid.ParseGTID(cfg.ServerUUID + ":1")
		if err != nil {
			return nil, fmt.Errorf("mysqlsim: ServerUUID %q: want a UUID like 3e11fa47-71ca-11e1-9e33-c80aa9429562", cfg.ServerUUID)
		}
		cfg.ServerUUID = uuid.UUID
	}
	for i, u := range cfg.Users {
		if err := validateUser(u); err != nil {
			return nil, fmt.Errorf("mysqlsim: Users[%d]: %w", i, err)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// caching_sha2_password full authentication without TLS needs an RSA key
	// pair; go-mysql panics without one.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	d, err := newDisk(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if cfg.ServerUUID == "" { // no UUID configured: auto.cnf's, or a new one at first boot
		if cfg.ServerUUID, err = readServerUUID(d); err != nil {
			return nil, err
		}
		if cfg.ServerUUID == "" {
			cfg.ServerUUID = randomUUID()
		}
	}
	s := &Server{
		cfg:      cfg,
		boot:     cfg,
		log:      cfg.Logger.With("server", cfg.Name),
		disk:     d,
		sessions: map[uint64]*session{},
		changed:  make(chan struct{}),
	}
	s.given, s.ext.opts = given, opts
	if err := s.initTransport(key); err != nil { // transport.go: TLS that RELOAD TLS can change
		return nil, err
	}
	if err := s.peekLocked(); err != nil {
		return nil, err
	}
	return s, nil
}

func validateUser(u User) error {
	if u.Name == "" {
		return errors.New("user name is empty")
	}
	switch u.Plugin {
	case "", NativePassword, CachingSHA2Password:
	default:
		return fmt.Errorf("user %q: plugin %q: want %s or %s", u.Name, u.Plugin, NativePassword, CachingSHA2Password)
	}
	switch u.Role {
	case RoleAdmin, RoleApp, RoleReplication:
	default:
		return fmt.Errorf("user %q: role %q: want admin, app or repl", u.Name, u.Role)
	}
	return nil
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("mysqlsim: Addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("mysqlsim: Addr %q: the simulator listens on loopback addresses only", addr)
	}
	return nil
}

// Start listens and serves until Close.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("mysqlsim: server closed")
	}
	if s.running {
		return nil
	}
	if err := s.bootLocked(); err != nil {
		return fmt.Errorf("mysqlsim %s: start: %w", s.cfg.Name, err)
	}
	if err := s.loadRSAKeyLocked(); err != nil { // auth.go: the key pair in the data directory
		s.closeRedoLocked(true)
		return fmt.Errorf("mysqlsim %s: start: %w", s.cfg.Name, err)
	}
	addr := s.cfg.Addr
	if s.addr != "" {
		addr = s.addr // a restart keeps the port, like a restarted mysqld
	}
	ln, err := s.listenKeepingPort(addr)
	if err != nil {
		s.closeRedoLocked(true)
		return fmt.Errorf("mysqlsim %s: listen %s: %w", s.cfg.Name, addr, err)
	}
	if err := writePIDFile(s.boot.PIDFile); err != nil {
		ln.Close()
		s.closeRedoLocked(true)
		return err
	}
	s.gen++
	s.sha2Cache = nil // the authentication cache does not survive a restart
	s.ln, s.addr, s.running = ln, ln.Addr().String(), true
	s.stopped = make(chan struct{})
	s.binlogFileSetLocked()                     // mysqld opens a new binary log at every start
	s.openRelayLogLocked()                      // and reads back its relay log (relay_log_recovery)
	if err := s.firstBootLocked(); err != nil { // firstboot.go: the image's entrypoint on an empty data directory
		s.shutdownLocked(true)
		return fmt.Errorf("mysqlsim %s: first boot: %w", s.cfg.Name, err)
	}
	s.wg.Add(1)
	go s.acceptLoop(ln)
	if err := s.startAdminLocked(); err != nil {
		s.stopLocked()
		return err
	}
	if ch := s.st.repl; ch != nil && s.cfg.SkipReplicaStart {
		ch.ioWanted, ch.sqlWanted = false, false
	}
	s.startReplicationLocked()
	s.log.Info("mysqld started", "addr", s.addr, "serverId", s.cfg.ServerID, "serverUuid", s.cfg.ServerUUID)
	return nil
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Name is the configured name.
func (s *Server) Name() string { return s.cfg.Name }

// ServerUUID is the server's @@server_uuid.
func (s *Server) ServerUUID() string { return s.cfg.ServerUUID }

// Close shuts the server down cleanly: the listener, every session and the
// replication threads stop, everything is written to the data directory
// and the pid file is removed. It waits for them to finish.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.shutdownLocked(true)
	s.releasePortsLocked()
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// stopLocked closes the listener, all sessions and replication threads.
func (s *Server) stopLocked() {
	if !s.running {
		return
	}
	s.running = false
	s.ln.Close()
	s.stopAdminLocked()
	close(s.stopped)
	for _, sess := range s.sessions {
		sess.kill()
	}
	s.stopReplicationThreadsLocked()
	s.notifyLocked()
}

func (s *Server) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go s.serveConn(conn, false)
	}
}

// notifyLocked wakes everything waiting for a state change.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitChange returns a channel closed at the next state change.
func (s *Server) waitChangeLocked() <-chan struct{} { return s.changed }

func (s *Server) serveConn(conn net.Conn, admin bool) {
	defer s.wg.Done()
	defer conn.Close()
	if s.frozenOrRefused(conn) {
		return
	}
	sess := s.newSession(conn, admin)
	if sess == nil {
		return
	}
	defer s.endSession(sess)
	if s.refuseOverLimit(sess) {
		return
	}
	h := &handler{s: s, sess: sess}
	auth := &authHandler{s: s, sess: sess}
	c, err := s.proto.NewCustomizedConn(conn, auth, h)
	if err != nil {
		s.countAbortedConnect(sess.gen) // authstats.go
		return
	}
	h.conn = c
	s.mu.Lock()
	sess.command, sess.since = "Sleep", time.Now()
	s.mu.Unlock()
	for !c.Closed() {
		if err := c.HandleCommand(); err != nil {
			return
		}
	}
}

func (s *Server) newSession(conn net.Conn, admin bool) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	s.nextConnID++
	sess := &session{
		id: s.nextConnID, gen: s.gen, conn: conn, host: conn.RemoteAddr().String(),
		command: "Connect", since: time.Now(), killed: make(chan struct{}), gtidNext: "AUTOMATIC", viaAdmin: admin,
	}
	s.sessions[sess.id] = sess
	return sess
}

func (s *Server) endSession(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rollBackLocked(sess)
	delete(s.sessions, sess.id)
	sess.kill()
	s.notifyLocked()
}

// session is one client connection. Fields are guarded by Server.mu except
// where noted.
type session struct {
	id       uint64
	gen      uint64 // Server.gen when the session connected
	conn     net.Conn
	host     string
	user     User
	db       string
	command  string // processlist Command: Connect, Sleep, Query, Binlog Dump GTID
	info     string // current statement
	state    string // processlist State
	since    time.Time
	gtidNext string
	program  string // program_name connection attribute
	viaAdmin bool   // connected on the administrative interface
	secure   bool   // the client switched to TLS (transport.go)
	system   bool   // a thread of the server itself: every privilege check passes (privileges.go)
	acctHost string // host part of the account the session logged in as
	// sqlLogBinOff is SET sql_log_bin = 0: the session's account statements
	// are not written to the binary log.
	sqlLogBinOff bool
	privs        atomic.Pointer[sessionPrivs]
	// gtidNextUsed is set once a transaction committed with an explicit
	// gtid_next; MySQL then refuses further transactions until it is set again.
	gtidNextUsed bool
	// lockWaitTimeout is the session's lock_wait_timeout; zero means the
	// default (one year, as MySQL's).
	lockWaitTimeout time.Duration

	inTxn  bool
	txnOps []writeOp
	// globalReadLock, backupLock and snapshot are FLUSH TABLES WITH READ
	// LOCK, LOCK INSTANCE FOR BACKUP and the read view of START TRANSACTION
	// WITH CONSISTENT SNAPSHOT (backuplocks.go).
	globalReadLock, backupLock bool
	snapshot                   map[string]*database

	killOnce sync.Once
	killed   chan struct{} // closed by KILL CONNECTION or shutdown
	queryKil chan struct{} // closed by KILL QUERY for the running statement

	src *sourceSession // user variables, replica registration and binlog dump (dump.go)
}

// kill closes the session's connection and interrupts what it is doing.
func (sess *session) kill() {
	sess.killOnce.Do(func() {
		close(sess.killed)
		sess.conn.Close()
	})
}
