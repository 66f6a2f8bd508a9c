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

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/binlogfile"
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
	ssl, verify, getPublicKey     bool
	host, sslCA                   string // SOURCE_HOST as given and SOURCE_SSL_CA (transport.go's peerTLS)
	retry                         time.Duration
	retryCount                    int
	netTimeout                    time.Duration // replica_net_timeout
	heartbeat                     time.Duration // SOURCE_HEARTBEAT_PERIOD; 0: none
	ownServerID                   uint32
	ownUUID                       string
	have                          gtid.Set // gtid_executed ∪ Retrieved_Gtid_Set
}

func (s *Server) receiverConfigLocked(ch *channel) receiverConfig {
	return receiverConfig{
		addr: s.resolve(ch.host, ch.port), display: fmt.Sprintf("%s@%s:%d", ch.user, ch.host, ch.port),
		user: ch.user, password: ch.password, ssl: ch.ssl, verify: ch.sslVerify, getPublicKey: ch.getPublicKey,
		host: ch.host, sslCA: ch.sslCA,
		retry: time.Duration(ch.connectRetry) * time.Second, retryCount: ch.retryCount,
		netTimeout:  time.Duration(s.relayVarsLocked().netTimeout) * time.Second,
		heartbeat:   time.Duration(ch.heartbeat * float64(time.Second)),
		ownServerID: s.cfg.ServerID, ownUUID: s.cfg.ServerUUID,
		have: s.st.executed.Union(ch.retrieved),
	}
}

// runReceiver is the replication receiver (I/O) thread: it connects to the
// source, asks by GTID auto-positioning for every transaction not in
// gtid_executed ∪ Retrieved_Gtid_Set, and writes what arrives to the relay
// log. A lost connection is retried at once, then every
// SOURCE_CONNECT_RETRY seconds, SOURCE_RETRY_COUNT attempts in all.
func (s *Server) runReceiver(ch *channel, stop chan struct{}) {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }()
	s.wg.Add(1)
	go s.runRelayFlusher(stop)
	attempts := 0
	for {
		s.mu.Lock()
		if ch.ioStop != stop {
			s.mu.Unlock()
			return
		}
		rc := s.receiverConfigLocked(ch)
		s.mu.Unlock()
		attempts++
		streamed, err := s.receiveFrom(ctx, ch, stop, rc)
		if ctx.Err() != nil {
			return
		}
		var fatal *errReceiverFatal
		var me *gomysql.MyError
		switch {
		case errors.As(err, &fatal):
			s.receiverFailed(ch, stop, fatal.errno, fatal.msg)
			return
		case errors.As(err, &me) && me.Code == ErSourceFatalReadingBinlog:
			s.receiverFailed(ch, stop, ErServerSourceFatalReadingBL,
				fmt.Sprintf("Got fatal error %d from source when reading data from binary log: '%s'", me.Code, me.Message))
			return
		}
		if streamed {
			attempts = 1 // a connection that worked starts the count again
		}
		s.mu.Lock()
		if ch.ioStop != stop {
			s.mu.Unlock()
			return
		}
		errno, msg := receiverErrno(err)
		ch.ioRunning, ch.ioState = "Connecting", "Reconnecting after a failed source event read"
		ch.lastIOErrno = errno
		ch.lastIOError = fmt.Sprintf("Error connecting to source '%s'. This was attempt %d/%d, with a delay of %d seconds between attempts. Message: %s",
			rc.display, attempts, rc.retryCount, int(rc.retry/time.Second), msg)
		ch.lastIOErrorTime = time.Now()
		lastErr := ch.lastIOError
		s.notifyLocked()
		s.mu.Unlock()
		if attempts >= rc.retryCount {
			s.receiverFailed(ch, stop, errno, lastErr)
			return
		}
		if streamed {
			continue // MySQL reconnects at once after a failed read
		}
		select {
		case <-stop:
			return
		case <-time.After(rc.retry):
		}
	}
}

// runRelayFlusher writes the relay log once a second while the receiver
// runs (what sync_relay_log leaves buffered; see syncRelayLogLocked).
func (s *Server) runRelayFlusher(stop chan struct{}) {
	defer s.wg.Done()
	t := time.NewTicker(redoFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		s.flushRelayLogLocked()
		s.mu.Unlock()
	}
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

// restartReceiverLocked drops the receiver's connection and starts it
// again (it asks anew with the current sets).
func (s *Server) restartReceiverLocked(ch *channel) {
	s.stopReceiverLocked(ch)
	s.startReplicationLocked()
}

// receiveFrom runs one connection to the source until it fails or stops;
// streamed reports that the dump had started.
func (s *Server) receiveFrom(ctx context.Context, ch *channel, stop chan struct{}, rc receiverConfig) (streamed bool, err error) {
	conn, err := s.dialSource(ctx, rc)
	if err != nil {
		return false, err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
		}
		conn.Close()
	}()
	uuid, id, err := s.sourceHello(conn, rc)
	if err != nil {
		return false, err
	}
	if err := registerAndDump(conn, rc); err != nil {
		return false, err
	}
	s.mu.Lock()
	if ch.ioStop != stop {
		s.mu.Unlock()
		return false, nil
	}
	ch.sourceUUID, ch.sourceServerID = uuid, id
	ch.ioRunning, ch.ioState = "Yes", "Waiting for source to send event"
	ch.lastIOErrno, ch.lastIOError, ch.lastIOErrorTime = 0, "", time.Time{}
	s.notifyLocked()
	s.mu.Unlock()
	dec := binlogfile.NewDecoder()
	for {
		ev, err := readEvent(conn)
		if err == nil {
			err = s.waitWhileFrozen(ctx)
		}
		s.mu.Lock()
		if ch.ioStop != stop {
			s.mu.Unlock()
			return true, nil
		}
		if err == nil {
			err = s.queueEventLocked(ch, dec, ev)
		}
		if err != nil {
			s.dropPartialTxnLocked(ch, dec)
			s.mu.Unlock()
			return true, err
		}
		s.mu.Unlock()
	}
}

// waitWhileFrozen holds the receiver while its own server is frozen.
func (s *Server) waitWhileFrozen(ctx context.Context) error {
	s.mu.Lock()
	frozen := s.faults.frozen
	s.mu.Unlock()
	if frozen == nil {
		return nil
	}
	select {
	case <-frozen:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queueEventLocked is queue_event: a heartbeat or the source's
// Previous_gtids only moves the receiver's position (and counts); every
// other event is written to the relay log as received. A transaction's
// last event makes it retrieved and hands it to the applier.
func (s *Server) queueEventLocked(ch *channel, dec *binlogfile.Decoder, ev []byte) error {
	rl := s.relayLogLocked()
	if rl == nil {
		return errors.New("the relay log cannot be written")
	}
	file, start := rl.Current()
	_, wasPending := dec.Pending()
	se, err := dec.Feed(ev, start)
	if err != nil {
		return err
	}
	now := time.Now()
	switch se.Type {
	case binlogfile.TypeHeartbeat, binlogfile.TypeHeartbeatV2:
		ch.stats.heartbeats++
		ch.stats.lastHeartbeat = now
		if se.HeartbeatFile != "" {
			ch.srcFile = se.HeartbeatFile
		}
		if se.LogPos != 0 {
			ch.srcPos = int64(se.LogPos)
		}
		s.notifyLocked()
		return nil
	case binlogfile.TypePrevGTIDs:
		ch.srcPos = int64(se.LogPos)
		return nil
	case binlogfile.TypeRotate:
		ch.srcFile, ch.srcPos = se.RotateFile, int64(se.RotatePos)
	default:
		if se.LogPos != 0 {
			ch.srcPos = int64(se.LogPos)
		}
	}
	if _, _, err := rl.Append(ev); err != nil {
		return err
	}
	if p, ok := dec.Pending(); ok && !wasPending {
		ch.stats.queueing = trxStamp{gtid: p.GTID.String(), original: p.OriginalCommit, immediate: p.ImmediateCommit, start: now}
		ch.stats.queueingStart = relayPoint{file, start}
	}
	s.syncRelayLogLocked(1)
	if se.Txn == nil {
		return nil
	}
	t := se.Txn
	ch.relay = append(ch.relay, newRelayTxn(t.Txn, file, t.Start, t.End, ch.srcFile, ch.srcPos))
	ch.retrieved = ch.retrieved.Add(t.GTID)
	ch.stats.lastQueued = ch.stats.queueing
	ch.stats.lastQueued.gtid, ch.stats.lastQueued.end = t.GTID.String(), now
	ch.stats.queueing = trxStamp{}
	if err := rl.EndTxn(t.GTID); err != nil {
		return err
	}
	s.notifyLocked()
	return nil
}

// dropPartialTxnLocked cuts a transaction whose end never arrived off the
// relay log: the source sends it again whole after the reconnection.
func (s *Server) dropPartialTxnLocked(ch *channel, dec *binlogfile.Decoder) {
	if _, ok := dec.Pending(); !ok {
		return
	}
	dec.Drop()
	ch.stats.queueing = trxStamp{}
	rl := s.relayLogLocked()
	p := ch.stats.queueingStart
	if rl == nil || p.file == "" {
		return
	}
	if err := rl.Flush(); err == nil {
		err = rl.DropAfter(p.file, p.pos)
		if err != nil {
			s.log.Error("cutting a partial transaction off the relay log failed", "err", err.Error())
		}
	}
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
		case s.globalReadLockHeldLocked(): // backuplocks.go
			ch.sqlState = stateWaitGlobalReadLock
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
			s.mu.Unlock()
			if err := s.applyRelayed(ch, stop, t); err != nil {
				s.mu.Lock()
				s.applierFailedLocked(ch, stop, t, err)
				s.mu.Unlock()
				return
			}
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

// applierFailedLocked stops the applier with the transaction's error, as
// MySQL's coordinator reports a worker's failure.
func (s *Server) applierFailedLocked(ch *channel, stop chan struct{}, t relayTxn, err *myError) {
	if ch.sqlStop != stop {
		return
	}
	// the worker's error (replication_applier_status_by_worker) and the
	// coordinator's, which quotes it (SHOW REPLICA STATUS)
	ch.stats.applyErr = fmt.Sprintf("Worker 1 failed executing transaction '%s' at source log %s, end_log_pos %d; Error '%s' on query.", t.gtid, t.srcFile, t.srcEnd, err.Message)
	ch.lastSQLErrno, ch.lastSQLError, ch.lastSQLErrorTime = int(err.Code),
		"Coordinator stopped because there were error(s) in the worker(s). The most recent failure being: "+ch.stats.applyErr, time.Now()
	ch.stats.applying = trxStamp{}
	ch.sqlWanted = false
	s.stopApplierLocked(ch)
	s.notifyLocked()
}
