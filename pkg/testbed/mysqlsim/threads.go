package mysqlsim

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// peerProgram is the program_name connection attribute a simulated server
// sends when it connects to a peer (receiver, clone); partitions match on it.
func peerProgram(name string) string { return "mysqlsim:" + name }

// openPeer opens a connection pool to another server as MySQL's receiver or
// clone plugin would, with the driver the product uses.
func (s *Server) openPeer(addr, user, pass string, useTLS, verify bool, readTimeout time.Duration) *sql.DB {
	cfg := driver.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", addr, user, pass
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 2*time.Second, readTimeout, 5*time.Second
	cfg.ConnectionAttributes = "program_name:" + peerProgram(s.cfg.Name)
	if useTLS {
		host, _, _ := net.SplitHostPort(addr)
		cfg.TLS = &tls.Config{InsecureSkipVerify: !verify, ServerName: host, MinVersion: tls.VersionTLS12}
	}
	conn, _ := driver.NewConnector(cfg) // cannot fail for a config built here
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	return db
}

func (s *Server) resolve(host string, port int) string {
	if s.cfg.ResolveSource != nil {
		return s.cfg.ResolveSource(host, port)
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// startReplicationLocked starts the threads START REPLICA asked for (also at
// server start, as MySQL does without skip_replica_start; Start clears the
// request first with it).
func (s *Server) startReplicationLocked() {
	ch := s.st.repl
	if ch == nil || !s.running {
		return
	}
	if ch.ioWanted && ch.ioStop == nil {
		ch.ioStop = make(chan struct{})
		ch.ioRunning, ch.ioState = "Connecting", "Connecting to source"
		s.wg.Add(1)
		go s.runReceiver(ch, ch.ioStop)
	}
	if ch.sqlWanted && ch.sqlStop == nil {
		ch.sqlStop = make(chan struct{})
		ch.sqlRunning = true
		s.wg.Add(1)
		go s.runApplier(ch, ch.sqlStop)
	}
	s.notifyLocked()
}

func (s *Server) stopReceiverLocked(ch *channel) {
	if ch.ioStop != nil {
		close(ch.ioStop)
		ch.ioStop = nil
	}
	ch.ioRunning, ch.ioState = "No", ""
}

func (s *Server) stopApplierLocked(ch *channel) {
	if ch.sqlStop != nil {
		close(ch.sqlStop)
		ch.sqlStop = nil
	}
	ch.sqlRunning, ch.sqlState, ch.delayUntil = false, "", time.Time{}
}

// stopReplicationThreadsLocked stops the threads without forgetting that
// they should run (a crash or shutdown, not STOP REPLICA).
func (s *Server) stopReplicationThreadsLocked() {
	if ch := s.st.repl; ch != nil {
		s.stopReceiverLocked(ch)
		s.stopApplierLocked(ch)
	}
}

// replicationProcesslistLocked lists the replica's receiver and applier as
// system threads, as MySQL's processlist shows them.
func (s *Server) replicationProcesslistLocked() [][]any {
	ch := s.st.repl
	if ch == nil {
		return nil
	}
	var rows [][]any
	if ch.ioStop != nil {
		rows = append(rows, []any{uint64(1<<32 + 1), "system user", "", nil, "Connect", int64(0), ch.ioState, nil, "PRIMARY"})
	}
	if ch.sqlStop != nil {
		rows = append(rows, []any{uint64(1<<32 + 2), "system user", "", nil, "Query", int64(0), ch.sqlState, nil, "PRIMARY"})
	}
	return rows
}

// receiverConfig is what the receiver reads from the channel under the lock.
type receiverConfig struct {
	addr, display, user, password string
	ssl, verify                   bool
	retry                         time.Duration
	retryCount                    int
}

// runReceiver is the replication receiver (I/O) thread: it connects to the
// source, asks for every transaction not in gtid_executed ∪ Retrieved_Gtid_Set
// (GTID auto-positioning) and appends them to the relay log.
func (s *Server) runReceiver(ch *channel, stop chan struct{}) {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }()
	attempts := 0
	for {
		s.mu.Lock()
		if ch.ioStop != stop {
			s.mu.Unlock()
			return
		}
		rc := receiverConfig{
			addr: s.resolve(ch.host, ch.port), display: fmt.Sprintf("%s@%s:%d", ch.user, ch.host, ch.port),
			user: ch.user, password: ch.password, ssl: ch.ssl, verify: ch.sslVerify,
			retry: time.Duration(ch.connectRetry) * time.Second, retryCount: ch.retryCount,
		}
		s.mu.Unlock()
		attempts++
		err := s.receiveFrom(ctx, ch, stop, rc)
		if ctx.Err() != nil {
			return
		}
		var me *driver.MySQLError
		if errors.As(err, &me) && me.Number == ErSourceFatalReadingBinlog {
			s.receiverFailed(ch, stop, ErServerSourceFatalReadingBL,
				fmt.Sprintf("Got fatal error %d from source when reading data from binary log: '%s'", me.Number, me.Message))
			return
		}
		s.mu.Lock()
		if ch.ioStop != stop {
			s.mu.Unlock()
			return
		}
		errno, msg := connectErrno(err)
		ch.ioRunning, ch.ioState = "Connecting", "Reconnecting after a failed source event read"
		ch.lastIOErrno = errno
		ch.lastIOError = fmt.Sprintf("Error connecting to source '%s'. This was attempt %d/%d, with a delay of %d seconds between attempts. Message: %s",
			rc.display, attempts, rc.retryCount, int(rc.retry/time.Second), msg)
		ch.lastIOErrorTime = time.Now()
		s.notifyLocked()
		s.mu.Unlock()
		if attempts >= rc.retryCount {
			s.receiverFailed(ch, stop, errno, ch.lastIOError)
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(rc.retry):
		}
	}
}

// connectErrno maps a driver error to what Last_IO_Errno shows.
func connectErrno(err error) (int, string) {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		return int(me.Number), me.Message
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return CrConnHostError, "Can't connect to MySQL server: " + err.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, driver.ErrInvalidConn) {
		return 2013, "Lost connection to MySQL server during query: " + err.Error()
	}
	return CrConnHostError, "Can't connect to MySQL server: " + err.Error()
}

// receiverFailed stops the receiver with an error, as MySQL does for fatal
// source errors; START REPLICA retries.
func (s *Server) receiverFailed(ch *channel, stop chan struct{}, errno int, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch.ioStop != stop {
		return
	}
	ch.lastIOErrno, ch.lastIOError, ch.lastIOErrorTime = errno, msg, time.Now()
	ch.ioWanted = false
	s.stopReceiverLocked(ch)
	s.log.Warn("replication receiver stopped", "lastIoErrno", errno)
	s.notifyLocked()
}

// receiveFrom runs one connection to the source until it fails or stops.
func (s *Server) receiveFrom(ctx context.Context, ch *channel, stop chan struct{}, rc receiverConfig) error {
	db := s.openPeer(rc.addr, rc.user, rc.password, rc.ssl, rc.verify, 2*time.Second)
	defer db.Close()
	var uuid string
	var id uint64
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.server_uuid, @@GLOBAL.server_id").Scan(&uuid, &id); err != nil {
		return err
	}
	s.mu.Lock()
	if ch.ioStop != stop {
		s.mu.Unlock()
		return nil
	}
	ch.sourceUUID, ch.sourceServerID = uuid, id
	ch.ioRunning, ch.ioState = "Yes", "Waiting for source to send event"
	ch.lastIOErrno, ch.lastIOError, ch.lastIOErrorTime = 0, "", time.Time{}
	s.notifyLocked()
	s.mu.Unlock()
	for {
		s.mu.Lock()
		if ch.ioStop != stop {
			s.mu.Unlock()
			return nil
		}
		have := s.st.executed.Union(ch.retrieved).OneLine()
		s.mu.Unlock()
		if err := s.receiveBatch(ctx, db, ch, stop, have); err != nil {
			return err
		}
	}
}

func (s *Server) receiveBatch(ctx context.Context, db *sql.DB, ch *channel, stop chan struct{}, have string) error {
	rows, err := db.QueryContext(ctx, "SIMULATOR BINLOG DUMP GTID "+quoteString(have)+" WAIT 300")
	if err != nil {
		return err
	}
	defer rows.Close()
	var batch []txn
	for rows.Next() {
		var g string
		var committed int64
		var ops string
		if err := rows.Scan(&g, &committed, &ops); err != nil {
			return err
		}
		parsed, err := gtid.ParseGTID(g)
		if err != nil {
			return err
		}
		decoded, err := decodeOps(ops)
		if err != nil {
			return err
		}
		batch = append(batch, txn{gtid: parsed, ops: decoded, committed: time.Unix(0, committed)})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch.ioStop != stop {
		return nil
	}
	for _, t := range batch {
		if ch.retrieved.Contains(t.gtid) || s.st.executed.Contains(t.gtid) {
			continue
		}
		ch.relay = append(ch.relay, t)
		ch.retrieved = ch.retrieved.Add(t.gtid)
		s.redoLocked(redoRelay, &t)
	}
	if len(batch) > 0 {
		s.notifyLocked()
	}
	return nil
}

// runApplier is the replication applier (SQL) thread: it applies relay-log
// transactions in order, honouring SOURCE_DELAY and injected lag.
func (s *Server) runApplier(ch *channel, stop chan struct{}) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if ch.sqlStop != stop {
			s.mu.Unlock()
			return
		}
		var wake <-chan time.Time
		frozen := s.faults.frozen != nil
		switch {
		case frozen:
		case len(ch.relay) == 0:
			ch.sqlState, ch.delayUntil = "Replica has read all relay log; waiting for more updates", time.Time{}
		default:
			t := ch.relay[0]
			due := t.committed.Add(time.Duration(ch.delay)*time.Second + ch.injectedApplyLag)
			if wait := time.Until(due); wait > 0 {
				ch.sqlState, ch.delayUntil = "Waiting until SOURCE_DELAY seconds after source executed event", due
				wake = time.After(wait)
				break
			}
			ch.delayUntil = time.Time{}
			if err := s.applyRelayedLocked(ch, t); err != nil {
				ch.lastSQLErrno, ch.lastSQLError, ch.lastSQLErrorTime = int(err.Code),
					fmt.Sprintf("Coordinator stopped because there were error(s) in the worker(s). The most recent failure being: Worker 1 failed executing transaction '%s'; Error '%s' on query.", t.gtid, err.Message), time.Now()
				ch.sqlWanted = false
				s.stopApplierLocked(ch)
				s.notifyLocked()
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			continue
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-stop:
			return
		case <-changed:
		case <-wake:
		}
	}
}

// applyRelayedLocked applies the first relay-log transaction. Transactions
// already executed are skipped (GTID auto-skip); a failing change stops the
// applier with the change's error, as MySQL does.
func (s *Server) applyRelayedLocked(ch *channel, t txn) *myError {
	if !s.st.executed.Contains(t.gtid) {
		for _, op := range t.ops {
			if err := s.st.check(op); err != nil {
				return err.(*myError)
			}
		}
		s.applyTxnLocked(t)
	}
	ch.relay = ch.relay[1:]
	s.redoLocked(redoRelayPop, nil)
	s.notifyLocked()
	return nil
}
