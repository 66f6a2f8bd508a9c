package mysqlsim

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// faults is the injected-fault state of a server (guarded by Server.mu).
type faults struct {
	// frozen is non-nil while the server is frozen; it is closed on thaw.
	frozen chan struct{}
	// blocked holds the program_name connection attributes of clients (and
	// peers, "mysqlsim:<name>") cut off by a partition.
	blocked map[string]bool
	// healed is closed and replaced when a partition is lifted.
	healed chan struct{}
}

// frozenOrRefused holds a new connection while the server is frozen: the TCP
// connection is accepted but nothing is ever sent, as with a hung mysqld. It
// reports true when the connection should be dropped.
func (s *Server) frozenOrRefused(conn net.Conn) bool {
	s.mu.Lock()
	thawed, stopped := s.faults.frozen, s.stopped
	s.mu.Unlock()
	if thawed == nil {
		return false
	}
	gone := make(chan struct{})
	go func() { // notice the client giving up; clients send nothing before the greeting
		buf := make([]byte, 1)
		_, _ = conn.Read(buf)
		close(gone)
	}()
	select {
	case <-thawed:
		// unblock the watcher without consuming anything, then serve normally
		_ = conn.SetReadDeadline(time.Now())
		<-gone
		_ = conn.SetReadDeadline(time.Time{})
		return false
	case <-gone:
		return true
	case <-stopped:
		return true
	}
}

// holdIfCutOff blocks a statement while the server is frozen or the session's
// client is partitioned away: the client sees no answer at all.
func (s *Server) holdIfCutOff(sess *session) error {
	for {
		s.mu.Lock()
		frozen := s.faults.frozen
		blocked := s.faults.blocked[sess.program]
		healed := s.faults.healed
		s.mu.Unlock()
		switch {
		case frozen != nil:
			select {
			case <-frozen:
			case <-sess.killed:
				return myErr(ErQueryInterrupted, "Query execution was interrupted")
			}
		case blocked:
			select {
			case <-healed:
			case <-sess.killed:
				return myErr(ErQueryInterrupted, "Query execution was interrupted")
			}
		default:
			return nil
		}
	}
}

// Crash stops the server as a killed mysqld stops: the listener closes,
// every connection drops, the replication threads stop, and all of its
// memory is dropped, including journal records not yet written (with
// relaxed sync_binlog / innodb_flush_log_at_trx_commit). What remains is
// the data directory, which the stopped server then shows (Snapshot).
func (s *Server) Crash() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log.Warn("mysqld crashed (injected)")
	s.shutdownLocked(false)
	if err := s.peekLocked(); err != nil {
		s.log.Error("reading the data directory after the crash failed", "err", err.Error())
	}
}

// Restart starts a crashed (or cloned) server again on the same address; a
// running one is shut down cleanly first. The new server is built from the
// data directory alone: global variables return to the configuration and
// the SET PERSIST values, and the replication threads start if they were
// running, as mysqld does at startup (unless Config.SkipReplicaStart).
func (s *Server) Restart() error {
	s.mu.Lock()
	s.shutdownLocked(true)
	s.mu.Unlock()
	return s.Start()
}

// shutdownLocked stops serving, then closes the journal: clean writes
// everything and removes the pid file (a shutdown); otherwise what was not
// written is lost and the pid file stays (a crash).
func (s *Server) shutdownLocked(clean bool) {
	s.stopLocked()
	s.closeRelayLogLocked(clean)
	s.closeBinlogFilesLocked(clean)
	s.closeRedoLocked(clean)
	if clean {
		s.removePIDFile()
	}
}

// Running reports whether the server is up (not crashed or closed).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// Freeze makes the server accept connections but answer nothing, and stops
// its replication threads from making progress, until Thaw.
func (s *Server) Freeze() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.frozen == nil {
		s.faults.frozen = make(chan struct{})
		s.log.Warn("mysqld frozen (injected)")
	}
}

// Thaw undoes Freeze.
func (s *Server) Thaw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.frozen != nil {
		close(s.faults.frozen)
		s.faults.frozen = nil
		s.notifyLocked()
	}
}

// Partition cuts off clients identified by their program_name connection
// attribute (pkg/mysql sends Options.Program; simulated peers send
// "mysqlsim:<name>", see PartitionPeers): their statements get no answer
// until Heal. Connections still complete the handshake.
func (s *Server) Partition(programs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.blocked == nil {
		s.faults.blocked = map[string]bool{}
	}
	if s.faults.healed == nil {
		s.faults.healed = make(chan struct{})
	}
	for _, p := range programs {
		s.faults.blocked[p] = true
	}
	s.log.Warn("network partition (injected)", "clients", programs)
}

// Heal lifts every partition of this server.
func (s *Server) Heal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.blocked = nil
	if s.faults.healed != nil {
		close(s.faults.healed)
		s.faults.healed = nil
	}
}

// PartitionPeers cuts the network between two simulated servers in both
// directions (replication and clone connections between them hang).
func PartitionPeers(a, b *Server) {
	a.Partition(peerProgram(b.cfg.Name))
	b.Partition(peerProgram(a.cfg.Name))
}

// StopReceiver stops the replication receiver with the given error, as if it
// had failed (Last_IO_Errno/Last_IO_Error). START REPLICA restarts it.
func (s *Server) StopReceiver(errno int, message string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.st.repl
	if ch == nil {
		return errors.New("mysqlsim: no replication channel")
	}
	ch.ioWanted = false
	s.stopReceiverLocked(ch)
	ch.lastIOErrno, ch.lastIOError, ch.lastIOErrorTime = errno, message, time.Now()
	s.notifyLocked()
	return nil
}

// StopApplier stops the replication applier with the given error
// (Last_SQL_Errno/Last_SQL_Error, also Last_Errno/Last_Error).
func (s *Server) StopApplier(errno int, message string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.st.repl
	if ch == nil {
		return errors.New("mysqlsim: no replication channel")
	}
	ch.sqlWanted = false
	s.stopApplierLocked(ch)
	ch.lastSQLErrno, ch.lastSQLError, ch.lastSQLErrorTime = errno, message, time.Now()
	s.notifyLocked()
	return nil
}

// InjectApplyLag delays applying each received transaction until lag after
// its original commit (on top of SOURCE_DELAY), so transactions are received
// but not applied for that long. Zero removes it.
func (s *Server) InjectApplyLag(lag time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.st.repl
	if ch == nil {
		return errors.New("mysqlsim: no replication channel")
	}
	ch.injectedApplyLag = lag
	s.notifyLocked()
	return nil
}

// InjectErrantTransactions commits n transactions with the server's own UUID
// directly, ignoring read_only, as a write on a replica by a privileged user
// would. It returns the GTIDs committed.
func (s *Server) InjectErrantTransactions(n int) gtid.Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out gtid.Set
	sid := gtid.SID{UUID: s.cfg.ServerUUID}
	for i := 0; i < n; i++ {
		g := gtid.GTID{UUID: sid.UUID, GNO: s.st.executed.NextGNO(sid)}
		op := writeOp{kind: opCreateDB, db: "bloodraven_errant", ifExists: true}
		s.applyTxnLocked(txn{gtid: g, ops: []writeOp{op}, committed: time.Now()})
		out = out.Add(g)
	}
	s.log.Warn("errant transactions injected", "gtids", out.OneLine())
	return out
}

// PurgeBinaryLogs removes every transaction from the binary log, so
// gtid_purged becomes gtid_executed (like PURGE BINARY LOGS up to the
// current log). Replicas that lack any of them can no longer catch up.
func (s *Server) PurgeBinaryLogs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purgeAllBinlogFilesLocked()
	s.st.purged = s.st.executed
	s.st.binlog = nil
	s.saveLocked()
	s.notifyLocked()
}

// Snapshot is a read-only view of a server's state for tests.
type Snapshot struct {
	Running, ReadOnly, SuperReadOnly bool
	Executed, Purged, Retrieved      gtid.Set
	RelayLogLength                   int
	IORunning                        string
	SQLRunning                       bool
	Sessions                         int
}

// Snapshot returns the current state.
func (s *Server) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := Snapshot{
		Running: s.running, ReadOnly: s.st.readOnly, SuperReadOnly: s.st.superReadOnly,
		Executed: s.st.executed, Purged: s.st.purged, Sessions: len(s.sessions), IORunning: "No",
	}
	if ch := s.st.repl; ch != nil {
		snap.Retrieved, snap.RelayLogLength, snap.IORunning, snap.SQLRunning = ch.retrieved, len(ch.relay), ch.ioRunning, ch.sqlRunning
	}
	return snap
}

// String describes the snapshot for test failure messages.
func (s Snapshot) String() string {
	return fmt.Sprintf("running=%v ro=%v sro=%v executed=%s purged=%s retrieved=%s relay=%d io=%s sql=%v",
		s.Running, s.ReadOnly, s.SuperReadOnly, s.Executed.OneLine(), s.Purged.OneLine(), s.Retrieved.OneLine(), s.RelayLogLength, s.IORunning, s.SQLRunning)
}
