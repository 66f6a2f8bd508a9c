package mysqlsim

import (
	"errors"
	"os"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/binlogfile"
)

// The relay log (docs/mysql-simulator.md, "Relay log"): what the receiver
// got from the source, in <name>-relay-bin.NNNNNN files and their index in
// the data directory (binlogfile.RelayLog), read back at every start.
// Retrieved_Gtid_Set is what those files hold (the first file's
// Previous_gtids plus every complete transaction), and the applier's
// position in them is kept with the other on-disk state (the checkpoint and
// the journal, as MySQL 9.7 keeps it in mysql.slave_relay_log_info).

// relayTxn is a received transaction not yet applied: the decoded
// transaction and where it lies in the relay log and in the source's binary
// log.
type relayTxn struct {
	txn                       // gtid, ops (row changes), committed = original commit
	query     []binlogfile.Op // Query events other than BEGIN/COMMIT, run by their text
	immediate time.Time
	file      string // relay log file, start and end position
	start     int64
	end       int64
	srcFile   string // source binary log file and end position
	srcEnd    int64
}

// applierPos is the applier metadata (relay_log.info): the relay log
// position after the last transaction it is done with and the source
// coordinates of that transaction's end.
type applierPos struct {
	RelayFile  string `json:"relayFile"`
	RelayPos   int64  `json:"relayPos"`
	SourceFile string `json:"sourceFile"`
	SourcePos  int64  `json:"sourcePos"`
}

// replicaVars are the replica's system variables and the relay log open in
// this run of the server.
type replicaVars struct {
	netTimeout    int64 // replica_net_timeout
	syncRelayLog  int64 // sync_relay_log
	maxRelaySize  int64 // max_relay_log_size (0: max_binlog_size)
	relayPurge    bool  // relay_log_purge
	varsSet       bool  // the values above were initialised for this run
	rl            *binlogfile.RelayLog
	rlGen         uint64
	pendingEvents int64 // events appended since the last sync
}

// MySQL 9.7's defaults.
const (
	defaultReplicaNetTimeout = 60
	defaultSyncRelayLog      = 10000
)

// relayVarsLocked returns the variables, initialised at the first use of a
// run from the configuration (they are not persisted unless SET PERSIST).
func (s *Server) relayVarsLocked() *replicaVars {
	v := &s.replica
	if !v.varsSet {
		v.netTimeout, v.syncRelayLog, v.maxRelaySize, v.relayPurge = defaultReplicaNetTimeout, defaultSyncRelayLog, 0, true
		if s.boot.ReplicaNetTimeout > 0 {
			v.netTimeout = int64(s.boot.ReplicaNetTimeout)
		}
		v.varsSet = true
	}
	if v.rl != nil && v.rlGen != s.gen { // left open by a run that crashed
		v.rl.Abandon()
		v.rl = nil
	}
	return v
}

func (s *Server) relayBasename() string {
	if s.cfg.Name == "" || strings.ContainsAny(s.cfg.Name, "/\\") {
		return "relay-bin"
	}
	return s.cfg.Name + "-relay-bin"
}

// relayDirLocked is where the relay log lives: the data directory, or the
// binary log's temporary directory of a server without one.
func (s *Server) relayDirLocked() string {
	if s.boot.DataDir != "" {
		return s.boot.DataDir
	}
	if s.binlog.dir == "" && s.running {
		s.binlogFileSetLocked()
	}
	return s.binlog.dir
}

func (s *Server) relayOptionsLocked() binlogfile.RelayOptions {
	v := s.relayVarsLocked()
	size := v.maxRelaySize
	if size == 0 {
		size = s.binlog.maxSizeValue()
	}
	return binlogfile.RelayOptions{Dir: s.relayDirLocked(), Basename: s.relayBasename(),
		ServerID: s.cfg.ServerID, ServerVersion: binlogServerVersion, MaxSize: size}
}

// relayLogLocked is the relay log open for writing in this run; nil when no
// channel exists or it cannot be opened (logged).
func (s *Server) relayLogLocked() *binlogfile.RelayLog {
	v := s.relayVarsLocked()
	if v.rl != nil {
		return v.rl
	}
	if s.st.repl == nil || !s.running {
		return nil
	}
	rl, err := binlogfile.OpenRelay(s.relayOptionsLocked())
	if err == nil {
		err = rl.NewFile(s.st.repl.retrieved)
	}
	if err != nil {
		s.log.Error("opening the relay log failed", "err", err.Error())
		return nil
	}
	v.rl, v.rlGen = rl, s.gen
	return rl
}

// openRelayLogLocked runs at every start, before the replication threads:
// relay_log_recovery=ON discards the relay log and sets the receiver to
// the applier's position (the manual, "relay_log_recovery"); OFF reads the
// relay log back, cuts a torn tail and rebuilds Retrieved_Gtid_Set and the
// unapplied transactions from it. Then a new relay log file is started, as
// mysqld does at every start.
func (s *Server) openRelayLogLocked() {
	s.relayVarsLocked()
	ch := s.st.repl
	if ch == nil {
		return
	}
	rl, err := binlogfile.OpenRelay(s.relayOptionsLocked())
	if err != nil {
		s.log.Error("opening the relay log failed", "err", err.Error())
		return
	}
	if s.boot.RelayLogRecovery {
		lost := len(ch.relay)
		if err := rl.RemoveAll(); err != nil {
			s.log.Error("removing the relay log failed", "err", err.Error())
		}
		ch.relay, ch.retrieved = nil, gtid.Set{}
		// the applier continues at the new relay log's start; its source
		// coordinates are where the receiver resumes
		ch.applier.RelayFile, ch.applier.RelayPos = "", 0
		ch.srcFile, ch.srcPos = ch.applier.SourceFile, ch.applier.SourcePos
		s.log.Info("relay log recovery: relay log discarded, receiver restarts from the applier's position",
			"unappliedTransactionsDiscarded", lost)
	} else {
		s.readRelayLogLocked(rl, ch, true)
		// the receiver's position: the end of what the relay log holds
		ch.srcFile, ch.srcPos = ch.applier.SourceFile, ch.applier.SourcePos
		if n := len(ch.relay); n > 0 {
			ch.srcFile, ch.srcPos = ch.relay[n-1].srcFile, ch.relay[n-1].srcEnd
		}
	}
	if err := rl.NewFile(ch.retrieved); err != nil {
		s.log.Error("starting a relay log file failed", "err", err.Error())
		return
	}
	s.replica.rl, s.replica.rlGen = rl, s.gen
	s.purgeRelayLogsLocked()
}

// readRelayLogLocked rebuilds Retrieved_Gtid_Set and the transactions after
// the applier's position from the files (a crash's partial transaction is
// cut off first). A position the files do not hold (they were lost) leaves
// every transaction the server has not executed to apply.
func (s *Server) readRelayLogLocked(rl *binlogfile.RelayLog, ch *channel, cut bool) {
	ch.relay, ch.retrieved = nil, gtid.Set{}
	files, err := rl.ReadAll()
	if err != nil {
		s.log.Warn("relay log damaged; reading stops there", "err", err.Error())
	}
	found := false
	for _, fc := range files {
		if fc.Name == ch.applier.RelayFile {
			found = true
		}
	}
	for i, fc := range files {
		coords := sourceCoords(fc, s.cfg.ServerID)
		if i == 0 {
			ch.retrieved = fc.Previous
		}
		if cut && fc.ValidEnd < fc.Size {
			if err := rl.Truncate(fc.Name, fc.ValidEnd); err != nil {
				s.log.Error("cutting the relay log's torn tail failed", "err", err.Error())
			}
		}
		if cut && fc.InUse { // left open by a crash; a new file follows
			if err := rl.ClearInUse(fc.Name); err != nil {
				s.log.Error("closing a relay log file failed", "err", err.Error())
			}
		}
		for _, t := range fc.Txns {
			ch.retrieved = ch.retrieved.Add(t.GTID)
			if found && (relayBefore(files, fc.Name, ch.applier.RelayFile) || (fc.Name == ch.applier.RelayFile && t.Start < ch.applier.RelayPos)) {
				continue
			}
			if !found && s.st.executed.Contains(t.GTID) {
				continue
			}
			c := coords[t.End]
			ch.relay = append(ch.relay, newRelayTxn(t.Txn, fc.Name, t.Start, t.End, c.file, c.pos))
		}
	}
}

type srcCoord struct {
	file string
	pos  int64
}

// sourceCoords maps the end of each event in a relay log file to the
// source's binary log coordinates there: the file the source's last rotate
// named and the event's end_log_pos.
func sourceCoords(fc *binlogfile.FileContents, own uint32) map[int64]srcCoord {
	out := map[int64]srcCoord{}
	file := ""
	for i, ev := range fc.Events {
		if ev.Type == "Rotate" && ev.ServerID != own {
			file, _, _ = strings.Cut(ev.Info, ";pos=")
			continue
		}
		end := fc.Size
		if i+1 < len(fc.Events) {
			end = fc.Events[i+1].Pos
		}
		out[end] = srcCoord{file, ev.EndLogPos}
	}
	return out
}

// relayBefore reports whether file a comes before file b in the index.
func relayBefore(files []*binlogfile.FileContents, a, b string) bool {
	for _, fc := range files {
		switch fc.Name {
		case a:
			return a != b
		case b:
			return false
		}
	}
	return false
}

// newRelayTxn turns a decoded transaction into what the applier applies:
// row changes by column position (binlog_row_metadata=MINIMAL carries no
// names), Query events by their text.
func newRelayTxn(t binlogfile.Txn, file string, start, end int64, srcFile string, srcEnd int64) relayTxn {
	rt := relayTxn{txn: txn{gtid: t.GTID, committed: t.OriginalCommit}, immediate: t.ImmediateCommit,
		file: file, start: start, end: end, srcFile: srcFile, srcEnd: srcEnd}
	for _, op := range t.Ops {
		switch op.Kind {
		case binlogfile.OpInsert:
			rt.ops = append(rt.ops, writeOp{kind: opInsert, db: op.DB, table: op.Table, rows: op.Rows})
		case binlogfile.OpDelete:
			rt.ops = append(rt.ops, writeOp{kind: opDelete, db: op.DB, table: op.Table})
		case binlogfile.OpQuery:
			rt.query = append(rt.query, op)
		}
	}
	return rt
}

// purgeRelayLogsLocked deletes the relay log files the applier is done
// with (relay_log_purge=ON): every file before the one it reads.
func (s *Server) purgeRelayLogsLocked() {
	v := s.relayVarsLocked()
	ch := s.st.repl
	if ch == nil || v.rl == nil || !v.relayPurge {
		return
	}
	upTo := ""
	if len(ch.relay) > 0 {
		upTo = ch.relay[0].file
	} else {
		upTo, _ = v.rl.Current()
	}
	if err := v.rl.PurgeBefore(upTo); err != nil {
		s.log.Error("purging relay logs failed", "err", err.Error())
	}
}

// syncRelayLogLocked makes appended events as durable as sync_relay_log
// says: 1 fsyncs at every transaction; N>1 after N events; otherwise (and
// in between) the once-a-second flusher writes them, so a kill loses the
// unsynced tail, as the journal's relaxed mode loses its own
// (docs/mysql-simulator.md, "Relay log").
func (s *Server) syncRelayLogLocked(events int) {
	v := s.relayVarsLocked()
	if v.rl == nil {
		return
	}
	v.pendingEvents += int64(events)
	if v.syncRelayLog == 1 || (v.syncRelayLog > 1 && v.pendingEvents >= v.syncRelayLog) {
		s.flushRelayLogLocked()
	}
}

// flushRelayLogLocked writes and fsyncs what waits (the flusher, a clean
// shutdown, sync_relay_log).
func (s *Server) flushRelayLogLocked() {
	v := &s.replica
	if v.rl == nil || v.rlGen != s.gen {
		return
	}
	if err := v.rl.Sync(); err != nil {
		s.log.Error("writing the relay log failed", "err", err.Error())
	}
	v.pendingEvents = 0
}

// closeRelayLogLocked ends the run's relay log: a clean shutdown writes
// everything, a crash loses the buffer.
func (s *Server) closeRelayLogLocked(clean bool) {
	v := &s.replica
	v.varsSet = false // the variables return to the configuration at the next start
	if v.rl == nil {
		return
	}
	if clean {
		if err := v.rl.Close(); err != nil {
			s.log.Error("closing the relay log failed", "err", err.Error())
		}
	} else {
		v.rl.Abandon()
	}
	v.rl = nil
}

// discardRelayLogLocked deletes the relay log and starts an empty one
// (RESET REPLICA, CHANGE REPLICATION SOURCE TO with both threads stopped,
// CLONE): received but unapplied transactions are gone and
// Retrieved_Gtid_Set restarts.
func (s *Server) discardRelayLogLocked() {
	ch := s.st.repl
	if ch != nil {
		ch.relay, ch.retrieved = nil, gtid.Set{}
		ch.applier = applierPos{}
	}
	v := s.relayVarsLocked()
	rl := v.rl
	if rl == nil {
		var err error
		if rl, err = binlogfile.OpenRelay(s.relayOptionsLocked()); err != nil {
			s.log.Error("opening the relay log failed", "err", err.Error())
			return
		}
	}
	if err := rl.RemoveAll(); err != nil {
		s.log.Error("removing the relay log failed", "err", err.Error())
	}
	v.rl = nil // the next append starts a new file
}

// DropRelayLog loses the relay log's unapplied tail, as a lost disk would:
// the files are cut at the applier's position, so what was received but not
// applied is gone and Retrieved_Gtid_Set shrinks to what remains (on a
// running server the receiver reconnects and asks again, as one restarted
// after the loss). It returns the GTIDs lost.
func (s *Server) DropRelayLog() (gtid.Set, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.st.repl
	if ch == nil {
		return gtid.Set{}, errors.New("mysqlsim: no replication channel")
	}
	var lost gtid.Set
	for _, t := range ch.relay {
		lost = lost.Add(t.gtid)
	}
	if s.running {
		s.dropRelayTailLocked(ch)
	} else if err := s.dropRelayTailStopped(ch); err != nil {
		return lost, err
	}
	s.log.Warn("relay log tail lost (injected)", "lostGtids", lost.OneLine())
	s.notifyLocked()
	return lost, nil
}

// dropRelayTailLocked cuts a running replica's relay log after the last
// applied transaction and restarts its receiver connection.
func (s *Server) dropRelayTailLocked(ch *channel) {
	rl := s.relayLogLocked()
	if rl == nil {
		return
	}
	if err := rl.Flush(); err != nil {
		s.log.Error("writing the relay log failed", "err", err.Error())
	}
	file, pos := ch.applier.RelayFile, ch.applier.RelayPos
	if len(ch.relay) > 0 {
		file, pos = ch.relay[0].file, ch.relay[0].start
	}
	names := rl.Names()
	if file == "" || !containsName(names, file) {
		file, pos = "", 0
	}
	if file != "" {
		if err := rl.DropAfter(file, pos); err != nil {
			s.log.Error("cutting the relay log failed", "err", err.Error())
		}
	}
	for _, t := range ch.relay {
		ch.retrieved = ch.retrieved.Subtract(gtid.Set{}.Add(t.gtid))
	}
	ch.relay = nil
	rl.SetLogged(ch.retrieved)
	s.replica.pendingEvents = 0
	if ch.ioStop != nil { // the receiver starts over with the new set
		s.restartReceiverLocked(ch)
	}
}

// dropRelayTailStopped cuts a stopped server's relay log files directly.
func (s *Server) dropRelayTailStopped(ch *channel) error {
	rl, err := binlogfile.OpenRelay(s.relayOptionsLocked())
	if err != nil {
		return err
	}
	files, err := rl.ReadAll()
	if err != nil && len(files) == 0 {
		return err
	}
	keep := map[string]bool{}
	for _, t := range ch.relay {
		keep[t.gtid.String()] = true
	}
	for _, fc := range files {
		for _, t := range fc.Txns {
			if keep[t.GTID.String()] {
				if err := rl.DropAfter(fc.Name, t.Start); err != nil {
					return err
				}
				s.readRelayLogLocked(rl, ch, false)
				return nil
			}
		}
	}
	return nil
}

// peekRelayLogLocked shows a stopped server's relay log as its files hold
// it (Retrieved_Gtid_Set, the unapplied transactions), writing nothing.
func (s *Server) peekRelayLogLocked() {
	ch := s.st.repl
	if ch == nil {
		return
	}
	rl, err := binlogfile.OpenRelay(s.relayOptionsLocked())
	if err != nil {
		s.log.Error("opening the relay log failed", "err", err.Error())
		return
	}
	s.readRelayLogLocked(rl, ch, false)
}

func containsName(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

// relayVarLocked reads the replica's variables.
func (s *Server) relayVarLocked(name string) any {
	v := s.relayVarsLocked()
	switch name {
	case "replica_net_timeout", "slave_net_timeout":
		return v.netTimeout
	case "sync_relay_log":
		return v.syncRelayLog
	case "max_relay_log_size":
		return v.maxRelaySize
	case "relay_log_purge":
		return boolInt(v.relayPurge)
	case "relay_log_recovery":
		return boolInt(s.boot.RelayLogRecovery)
	case "relay_log_basename":
		return s.relayOptionsLocked().Dir + string(os.PathSeparator) + s.relayBasename()
	case "relay_log_index":
		return s.relayOptionsLocked().Dir + string(os.PathSeparator) + s.relayBasename() + ".index"
	case "relay_log":
		return s.relayBasename()
	}
	return nil
}

// setRelayVarLocked sets replica_net_timeout (1 to 31536000),
// sync_relay_log (0 to 4294967295), max_relay_log_size (0 to 1 GiB, a
// multiple of 4096) or relay_log_purge, with MySQL's ranges (an integer
// outside them is clamped, as MySQL does with a warning).
func (s *Server) setRelayVarLocked(name string, val any) error {
	v := s.relayVarsLocked()
	if name == "relay_log_purge" {
		b, err := parseBoolValue(name, val)
		if err != nil {
			return err
		}
		v.relayPurge = b
		return nil
	}
	n, ok := val.(int64)
	if !ok {
		return myErr(erWrongTypeForVar, "Incorrect argument type to variable '%s'", name)
	}
	switch name {
	case "replica_net_timeout", "slave_net_timeout":
		v.netTimeout = min(max(n, 1), 31536000)
		if ch := s.st.repl; ch != nil && ch.heartbeat > float64(v.netTimeout) {
			s.log.Warn("the heartbeat period exceeds replica_net_timeout", "heartbeat", ch.heartbeat)
		}
	case "sync_relay_log":
		v.syncRelayLog = min(max(n, 0), 1<<32-1)
	case "max_relay_log_size":
		v.maxRelaySize = min(max(n, 0), defaultMaxBinlogSize) / 4096 * 4096
		if v.rl != nil {
			v.rl.SetMaxSize(s.relayOptionsLocked().MaxSize)
		}
	}
	return nil
}
