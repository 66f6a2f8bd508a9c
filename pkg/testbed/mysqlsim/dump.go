package mysqlsim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/server"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/binlogfile"
)

// The source side of MySQL's replication protocol (docs/mysql-simulator.md,
// "Replication protocol (source)"): COM_REGISTER_SLAVE and
// COM_BINLOG_DUMP_GTID as MySQL's dump thread (sql/rpl_binlog_sender.cc)
// answers them. The dump reads the binary log files themselves, so the
// stream and the files are the same bytes.

const (
	dumpFlagHeartbeatV2 = 0x02      // USE_HEARTBEAT_EVENT_V2 (include/mysql.h)
	dumpReadChunk       = 256 << 10 // bytes read from the files at a time

	// The dump thread's processlist command and stages, and the texts of
	// its fatal errors (sql/rpl_binlog_sender.cc).
	commandBinlogDumpGTID  = "Binlog Dump GTID"
	stateDumpSending       = "Sending binlog event to replica"
	stateDumpWaiting       = "Source has sent all binlog to replica; waiting for more updates"
	stateDumpSwitching     = "Finished reading one binlog; switching to next binlog"
	errTextReplicaSameUUID = "A replica with the same server_uuid/server_id as this replica has connected to the source"
	errTextChecksumUnknown = "Replica can not handle replication events with the checksum that source is configured to log"
)

// sourceSession is what a session holds for the replication protocol: its
// user variables (which the receiver sets before the dump) and its
// registration and dump. Guarded by Server.mu.
type sourceSession struct {
	vars    map[string]any
	replica *replicaRegistration
	// dumpUUID is the replica UUID of a running dump; dumpEnd is closed to
	// end it and dupEnded says why (a newer dump of the same replica).
	dumpUUID     string
	dumpServerID uint32
	dumpEnd      chan struct{}
	dupEnded     bool
}

// replicaRegistration is one COM_REGISTER_SLAVE (SHOW REPLICAS).
type replicaRegistration struct {
	serverID uint32
	host     string
	port     uint16
	sourceID uint32
}

func (sess *session) source() *sourceSession {
	if sess.src == nil {
		sess.src = &sourceSession{vars: map[string]any{}}
	}
	return sess.src
}

// setUserVarLocked is SET @name = value.
func (sess *session) setUserVarLocked(name string, v any) {
	sess.source().vars[strings.ToLower(name)] = v
}

// userVar is SELECT @name: NULL when never set, as in MySQL.
func (s *Server) userVar(sess *session, name string) (any, colType, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := sess.source().vars[strings.ToLower(name)]
	switch v.(type) {
	case int64:
		return v, colInt, nil
	case uint64:
		return v, colUint, nil
	}
	return v, colString, nil
}

func (sess *session) userVarString(names ...string) string {
	for _, n := range names {
		if v, ok := sess.source().vars[n]; ok && v != nil {
			return argString(v)
		}
	}
	return ""
}

// registerReplica answers COM_REGISTER_SLAVE: server_id, report_host,
// report_user, report_password, report_port, rank, source id. It needs
// REPLICATION SLAVE (sql/rpl_source.cc, register_replica).
func (s *Server) registerReplica(sess *session, data []byte) error {
	if !sess.hasPrivilege("REPLICATION SLAVE") {
		return errNeedPrivilege("REPLICATION SLAVE")
	}
	bad := myErr(1105, "Wrong parameters to function register_slave")
	if len(data) < 4 {
		return bad
	}
	r := &replicaRegistration{serverID: binary.LittleEndian.Uint32(data)}
	p := 4
	var fields [3]string
	for i := range fields {
		if p >= len(data) || p+1+int(data[p]) > len(data) {
			return bad
		}
		fields[i] = string(data[p+1 : p+1+int(data[p])])
		p += 1 + int(data[p])
	}
	if p+2 > len(data) {
		return bad
	}
	r.host, r.port = fields[0], binary.LittleEndian.Uint16(data[p:])
	s.mu.Lock()
	defer s.mu.Unlock()
	r.sourceID = s.cfg.ServerID
	sess.source().replica = r
	return nil
}

// showReplicas is SHOW REPLICAS (SHOW SLAVE HOSTS): one row per server_id
// registered by a connected replica, the latest registration winning.
func (s *Server) showReplicas(sess *session, c *cursor) (*table, error) {
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	if !sess.hasPrivilege("REPLICATION SLAVE") {
		return nil, errNeedPrivilege("REPLICATION SLAVE")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]uint64, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	latest := map[uint32][]any{}
	var order []uint32
	for _, id := range ids {
		o := s.sessions[id]
		if o.src == nil || o.src.replica == nil {
			continue
		}
		r := o.src.replica
		if _, ok := latest[r.serverID]; !ok {
			order = append(order, r.serverID)
		}
		latest[r.serverID] = []any{uint64(r.serverID), r.host, int64(r.port), uint64(r.sourceID),
			o.userVarString("replica_uuid", "slave_uuid")}
	}
	t := &table{cols: []column{{"Server_Id", colUint}, {"Host", colString}, {"Port", colInt},
		{"Source_Id", colUint}, {"Replica_UUID", colString}}}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	for _, id := range order {
		t.rows = append(t.rows, latest[id])
	}
	return t, nil
}

// dumpRequest is COM_BINLOG_DUMP_GTID's payload.
type dumpRequest struct {
	flags    uint16
	serverID uint32
	have     gtid.Set
}

func parseDumpGTID(data []byte) (dumpRequest, error) {
	bad := myErr(1835, "Malformed communication packet.")
	if len(data) < 10 {
		return dumpRequest{}, bad
	}
	req := dumpRequest{flags: binary.LittleEndian.Uint16(data), serverID: binary.LittleEndian.Uint32(data[2:])}
	nameLen := int(binary.LittleEndian.Uint32(data[6:]))
	p := 10 + nameLen + 8
	if nameLen < 0 || p+4 > len(data) {
		return dumpRequest{}, bad
	}
	n := int(binary.LittleEndian.Uint32(data[p:]))
	p += 4
	if n < 0 || p+n > len(data) {
		return dumpRequest{}, bad
	}
	if n == 0 {
		return req, nil
	}
	set, err := binlogfile.DecodeGTIDSet(data[p : p+n])
	if err != nil {
		return dumpRequest{}, bad
	}
	req.have = set
	return req, nil
}

// dumper is one running COM_BINLOG_DUMP_GTID.
type dumper struct {
	s        *Server
	sess     *session
	conn     *server.Conn
	req      dumpRequest
	checksum bool          // the replica announced CRC32 (or NONE: false)
	period   time.Duration // the replica's heartbeat period; 0: none
	end      chan struct{}
	sent     gtid.Set // have plus every GTID sent since
	file     string
	pos      int64
	lastFile string
	lastPos  int64
}

// binlogDumpGTID answers COM_BINLOG_DUMP_GTID. It returns only when the
// dump ends; the returned error is the ERR packet the replica gets.
func (s *Server) binlogDumpGTID(sess *session, conn *server.Conn, data []byte) error {
	if !sess.hasPrivilege("REPLICATION SLAVE") {
		return errNeedPrivilege("REPLICATION SLAVE")
	}
	req, err := parseDumpGTID(data)
	if err != nil {
		return err
	}
	d := &dumper{s: s, sess: sess, conn: conn, req: req, sent: req.have, end: make(chan struct{})}
	defer d.finish()
	if err := d.start(); err != nil {
		return err
	}
	return d.run()
}

// start registers the dump, ends an older dump of the same replica UUID
// (kill_zombie_dump_threads) and runs MySQL's checks on the replica's GTID
// set: more GTIDs of this server than it executed first, then purged ones.
func (d *dumper) start() error {
	s, sess := d.s, d.sess
	s.mu.Lock()
	defer s.mu.Unlock()
	src := sess.source()
	// An older dump of the same replica UUID, or without UUIDs of the same
	// server id (Find_zombie_dump_thread), is a zombie: it ends.
	uuid := sess.userVarString("replica_uuid", "slave_uuid")
	for _, o := range s.sessions {
		if o == sess || o.src == nil || o.src.dumpEnd == nil || o.src.dupEnded {
			continue
		}
		if (uuid != "" && o.src.dumpUUID == uuid) || (uuid == "" && o.src.dumpUUID == "" && o.src.dumpServerID == d.req.serverID) {
			o.src.dupEnded = true
			close(o.src.dumpEnd)
			s.log.Info("replica reconnected; ending its older dump", "replicaUUID", uuid, "connection", o.id)
		}
	}
	src.dumpUUID, src.dumpServerID, src.dumpEnd, src.dupEnded = uuid, d.req.serverID, d.end, false
	sess.command, sess.info, sess.state, sess.since = commandBinlogDumpGTID, "", "Starting", time.Now()
	// The artificial rotate event before the format description carries a
	// checksum only for a replica that announced CRC32 (NONE: it reads
	// checksums from the format description on).
	d.checksum = strings.EqualFold(sess.userVarString("source_binlog_checksum", "master_binlog_checksum"), "CRC32")
	if ns, ok := sess.source().vars["source_heartbeat_period"]; ok {
		d.period = heartbeatPeriod(ns)
	} else if ns, ok := sess.source().vars["master_heartbeat_period"]; ok {
		d.period = heartbeatPeriod(ns)
	}
	ownAll := gtid.MustParse(fmt.Sprintf("%s:1-%d", s.cfg.ServerUUID, gtid.MaxGNO))
	if !d.req.have.Intersect(ownAll).IsSubsetOf(s.st.executed) {
		return errReplicaHasMoreGTIDs()
	}
	if missing := s.st.purged.Subtract(d.req.have); !missing.IsEmpty() {
		return errSourcePurgedGTIDs(d.req.have, missing)
	}
	fs := s.binlogFileSetLocked()
	if fs == nil {
		return myErr(ErSourceFatalReadingBinlog, "Binary log is not open")
	}
	d.file = d.startFileLocked(fs, d.req.have)
	return nil
}

func heartbeatPeriod(v any) time.Duration {
	switch x := v.(type) {
	case int64:
		return time.Duration(x)
	case uint64:
		return time.Duration(x)
	case string:
		var n int64
		_, _ = fmt.Sscan(x, &n)
		return time.Duration(n)
	}
	return 0
}

func errReplicaHasMoreGTIDs() error {
	return myErr(ErSourceFatalReadingBinlog, "Replica has more GTIDs than the source has, using the source's SERVER_UUID. This may indicate that the end of the binary log was truncated or that the last binary log file was lost, e.g., after a power or disk failure when sync_binlog != 1. The source may or may not have rolled back transactions that were already replicated to the replica. Suggest to replicate any transactions that source has rolled back from replica to source, and/or commit empty transactions on source to account for transactions that have been committed on source but are not included in GTID_EXECUTED.")
}

func errSourcePurgedGTIDs(have, missing gtid.Set) error {
	return myErr(ErSourceFatalReadingBinlog, "Cannot replicate because the source purged required binary logs. Replicate the missing transactions from elsewhere, or provision a new replica from backup. Consider increasing the source's binary log expiration period. The GTID set sent by the replica is '%s', and the missing transactions are '%s'", have.OneLine(), missing.OneLine())
}

// startFileLocked is find_first_log_not_in_gtid_set: the newest file whose
// Previous_gtids the replica already has; the oldest file otherwise.
func (d *dumper) startFileLocked(fs *binlogfile.FileSet, have gtid.Set) string {
	names := fs.Names()
	for i := len(names) - 1; i > 0; i-- {
		prev, err := fs.FilePrevious(names[i])
		if err == nil && prev.IsSubsetOf(have) {
			return names[i]
		}
	}
	return names[0]
}

func (d *dumper) finish() {
	s := d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if src := d.sess.src; src != nil && src.dumpEnd == d.end {
		src.dumpEnd, src.dumpUUID = nil, ""
	}
	if d.sess.command == commandBinlogDumpGTID {
		d.sess.command, d.sess.state, d.sess.since = "Sleep", "", time.Now()
	}
}

// fatal is a 1236 error as the sender reports one that happens while a
// file is open: with the first and last positions read.
func (d *dumper) fatal(text string) error {
	return myErr(ErSourceFatalReadingBinlog, "%s; the first event '' at 4, the last event read from './%s' at %d, the last byte read from './%s' at %d.",
		text, d.lastFile, d.lastPos, d.lastFile, d.lastPos)
}

// run streams files from d.file: per file an artificial rotate event, the
// format description, then every event not belonging to a transaction the
// replica has, waiting at the end of the file being written for more (with
// heartbeats), and on to the next file after a rotation.
func (d *dumper) run() error {
	first := true
	for {
		if err := d.send(binlogfile.Event(binlogfile.TypeRotate, d.s.cfg.ServerID, 0, binlogfile.FlagArtificial,
			binlogfile.RotateBody(d.file, 4), d.checksum)); err != nil {
			return err
		}
		d.pos = 4
		next, err := d.sendFile(first)
		if err != nil {
			return err
		}
		first = false
		d.file = next
	}
}

// sendFile sends one file from its start and returns the next file's name.
func (d *dumper) sendFile(first bool) (string, error) {
	inExclude, excludeEnd := false, int64(0)
	idle := d.heartbeatTimer()
	defer idle.Stop()
	for {
		if err := d.s.holdIfCutOff(d.sess); err != nil {
			return "", err
		}
		data, current, next, changed, err := d.read()
		if err != nil {
			return "", err
		}
		if len(data) == 0 {
			if !current && next != "" {
				d.setState(stateDumpSwitching)
				return next, nil
			}
			if err := d.wait(changed, idle); err != nil {
				return "", err
			}
			continue
		}
		d.setState(stateDumpSending)
		for p := 0; p < len(data); {
			size := int(binary.LittleEndian.Uint32(data[p+9:]))
			ev := data[p : p+size]
			p += size
			d.lastFile, d.lastPos = d.file, d.pos
			d.pos += int64(size)
			switch ev[4] {
			case binlogfile.TypeFormatDescription:
				if d.s.userVarChecksumUnset(d.sess) {
					return "", d.fatal(errTextChecksumUnknown)
				}
				d.checksum = true // the file's algorithm: CRC32
				if err := d.send(binlogfile.ClearFormatDescription(ev, first && d.skipsFirstTxn(data))); err != nil {
					return "", err
				}
				continue
			case binlogfile.TypeGTID, binlogfile.TypeGTIDTagged:
				g, err := binlogfile.EventGTID(ev)
				if err != nil {
					return "", d.fatal("bogus data in log event")
				}
				inExclude = d.sent.Contains(g)
				if !inExclude {
					d.sent = d.sent.Add(g)
				}
			case binlogfile.TypeRotate:
				inExclude = false
			}
			if inExclude {
				excludeEnd = d.pos
				continue
			}
			if excludeEnd > 0 { // tells the replica how far the skipped events reach
				if err := d.heartbeat(excludeEnd); err != nil {
					return "", err
				}
				excludeEnd = 0
			}
			if err := d.send(ev); err != nil {
				return "", err
			}
		}
		if inExclude {
			if err := d.heartbeat(d.pos); err != nil {
				return "", err
			}
			excludeEnd = 0
		}
		d.resetTimer(idle)
	}
}

// skipsFirstTxn reports whether the first GTID in data (the start of the
// first file) is one the replica has: then MySQL's sender zeroes the format
// description's log_pos and creation time (m_gtid_clear_fd_created_flag).
func (d *dumper) skipsFirstTxn(data []byte) bool {
	for p := 0; p+binlogfile.HeaderLen <= len(data); {
		size := int(binary.LittleEndian.Uint32(data[p+9:]))
		if t := data[p+4]; t == binlogfile.TypeGTID || t == binlogfile.TypeGTIDTagged {
			g, err := binlogfile.EventGTID(data[p : p+size])
			return err == nil && d.req.have.Contains(g)
		}
		p += size
	}
	return false
}

func (s *Server) userVarChecksumUnset(sess *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sess.userVarString("source_binlog_checksum", "master_binlog_checksum") == ""
}

// read returns the events after d.pos in d.file as the file set has them.
// A file purged while being read (PURGE, the purge fault, a reset) is
// replaced, when the replica lost nothing by it, by repositioning on GTIDs
// as a reconnect would (see the doc's deviations).
func (d *dumper) read() (data []byte, current bool, next string, changed <-chan struct{}, err error) {
	s := d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	changed = s.waitChangeLocked()
	fs := s.binlogFileSetLocked()
	if fs == nil {
		return nil, false, "", nil, d.fatal("Binary log is not open")
	}
	data, current, err = fs.ReadEvents(d.file, d.pos, dumpReadChunk)
	if errors.Is(err, binlogfile.ErrPurged) {
		if missing := s.st.purged.Subtract(d.sent); !missing.IsEmpty() {
			return nil, false, "", nil, errSourcePurgedGTIDs(d.sent, missing)
		}
		d.file, d.pos = d.startFileLocked(fs, d.sent), 4
		return nil, false, d.file, changed, nil
	}
	if err != nil {
		return nil, false, "", nil, d.fatal("I/O error reading log event")
	}
	next, _ = fs.NextFile(d.file)
	return data, current, next, changed, nil
}

func (d *dumper) setState(st string) {
	d.s.mu.Lock()
	d.sess.state = st
	d.s.mu.Unlock()
}

// heartbeatTimer fires after the replica's heartbeat period of idleness;
// without a period it never fires.
func (d *dumper) heartbeatTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	if d.period <= 0 {
		t.Stop()
		return t
	}
	t.Reset(d.period)
	return t
}

func (d *dumper) resetTimer(t *time.Timer) {
	if d.period <= 0 {
		return
	}
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d.period)
}

// wait blocks until the binary log changes, sending a heartbeat at each
// period of idleness; it ends on KILL, shutdown or a newer dump of the
// same replica.
func (d *dumper) wait(changed <-chan struct{}, idle *time.Timer) error {
	d.setState(stateDumpWaiting)
	select {
	case <-changed:
		return nil
	case <-idle.C:
		if err := d.s.holdIfCutOff(d.sess); err != nil {
			return err
		}
		err := d.heartbeat(d.pos)
		idle.Reset(d.period)
		return err
	case <-d.sess.killed:
		return myErr(ErQueryInterrupted, "Query execution was interrupted")
	case <-d.end:
		return d.fatal(errTextReplicaSameUUID)
	}
}

// heartbeat sends HEARTBEAT_LOG_EVENT (v2 when the replica asked for it
// with USE_HEARTBEAT_EVENT_V2) naming the current file and position.
func (d *dumper) heartbeat(pos int64) error {
	if d.req.flags&dumpFlagHeartbeatV2 != 0 {
		return d.send(binlogfile.Event(binlogfile.TypeHeartbeatV2, d.s.cfg.ServerID, 0, 0,
			binlogfile.HeartbeatV2Body(d.file, uint64(pos)), d.checksum))
	}
	return d.send(binlogfile.Event(binlogfile.TypeHeartbeat, d.s.cfg.ServerID, uint32(pos), 0, []byte(d.file), d.checksum))
}

// send writes one event as a replication packet: an OK byte, then the event.
func (d *dumper) send(ev []byte) error {
	select {
	case <-d.end:
		return d.fatal(errTextReplicaSameUUID)
	default:
	}
	pkt := make([]byte, 5, 5+len(ev))
	return d.conn.WritePacket(append(pkt, ev...))
}
