package mysqlsim

import (
	"strconv"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// channel is the default replication channel (”) of a replica: its
// connection metadata (CHANGE REPLICATION SOURCE TO), relay log and thread
// states. It is part of the on-disk state.
type channel struct {
	host                string
	port                int
	user, password      string
	autoPosition        bool
	ssl, sslVerify      bool
	sslCA, sslCert      string
	sslKey              string
	connectRetry        int
	retryCount          int
	delay               int // SOURCE_DELAY seconds
	getPublicKey        bool
	heartbeat           float64
	ioWanted, sqlWanted bool // START REPLICA was given (threads restart with the server)
	ioState             string
	ioRunning           string // Yes, No, Connecting
	sqlRunning          bool
	retrieved           gtid.Set   // what the relay log holds (relaylog.go)
	relay               []relayTxn // received, not yet applied, in order
	applier             applierPos // on disk: where the applier is in the relay log
	srcFile             string     // source's binary log file and position the receiver read up to
	srcPos              int64
	stats               replStats // performance_schema figures (memory only)
	sourceUUID          string
	sourceServerID      uint64
	lastIOErrno         int
	lastIOError         string
	lastIOErrorTime     time.Time
	lastSQLErrno        int
	lastSQLError        string
	lastSQLErrorTime    time.Time
	sqlState            string
	delayUntil          time.Time // applier waiting for SOURCE_DELAY or injected lag
	injectedApplyLag    time.Duration
	ioStop, sqlStop     chan struct{}
}

// newChannel is a channel with MySQL's defaults; CHANGE REPLICATION SOURCE
// TO sets the heartbeat period to replica_net_timeout/2 when it creates one.
func newChannel() *channel {
	return &channel{port: 3306, connectRetry: 60, retryCount: 10, ioRunning: "No", heartbeat: defaultReplicaNetTimeout / 2}
}

// replicaStatusColumns are SHOW REPLICA STATUS's columns in MySQL 9.7 order.
var replicaStatusColumns = []column{
	{"Replica_IO_State", colString}, {"Source_Host", colString}, {"Source_User", colString},
	{"Source_Port", colInt}, {"Connect_Retry", colInt}, {"Source_Log_File", colString},
	{"Read_Source_Log_Pos", colInt}, {"Relay_Log_File", colString}, {"Relay_Log_Pos", colInt},
	{"Relay_Source_Log_File", colString}, {"Replica_IO_Running", colString}, {"Replica_SQL_Running", colString},
	{"Replicate_Do_DB", colString}, {"Replicate_Ignore_DB", colString}, {"Replicate_Do_Table", colString},
	{"Replicate_Ignore_Table", colString}, {"Replicate_Wild_Do_Table", colString}, {"Replicate_Wild_Ignore_Table", colString},
	{"Last_Errno", colInt}, {"Last_Error", colString}, {"Skip_Counter", colInt},
	{"Exec_Source_Log_Pos", colInt}, {"Relay_Log_Space", colInt}, {"Until_Condition", colString},
	{"Until_Log_File", colString}, {"Until_Log_Pos", colInt}, {"Source_SSL_Allowed", colString},
	{"Source_SSL_CA_File", colString}, {"Source_SSL_CA_Path", colString}, {"Source_SSL_Cert", colString},
	{"Source_SSL_Cipher", colString}, {"Source_SSL_Key", colString}, {"Seconds_Behind_Source", colInt},
	{"Source_SSL_Verify_Server_Cert", colString}, {"Last_IO_Errno", colInt}, {"Last_IO_Error", colString},
	{"Last_SQL_Errno", colInt}, {"Last_SQL_Error", colString}, {"Replicate_Ignore_Server_Ids", colString},
	{"Source_Server_Id", colUint}, {"Source_UUID", colString}, {"Source_Info_File", colString},
	{"SQL_Delay", colInt}, {"SQL_Remaining_Delay", colInt}, {"Replica_SQL_Running_State", colString},
	{"Source_Retry_Count", colInt}, {"Source_Bind", colString}, {"Last_IO_Error_Timestamp", colString},
	{"Last_SQL_Error_Timestamp", colString}, {"Source_SSL_Crl", colString}, {"Source_SSL_Crlpath", colString},
	{"Retrieved_Gtid_Set", colString}, {"Executed_Gtid_Set", colString}, {"Auto_Position", colInt},
	{"Replicate_Rewrite_DB", colString}, {"Channel_Name", colString}, {"Source_TLS_Version", colString},
	{"Source_public_key_path", colString}, {"Get_Source_public_key", colInt}, {"Network_Namespace", colString},
}

// relayStatusLocked is Relay_Log_File and Relay_Log_Pos (where the applier
// is in the relay log) and Relay_Log_Space (the size of its files).
func (s *Server) relayStatusLocked(ch *channel) (string, int64, int64) {
	rl := s.replica.rl
	if rl == nil || s.replica.rlGen != s.gen {
		return ch.applier.RelayFile, ch.applier.RelayPos, 0
	}
	file, pos := ch.applier.RelayFile, ch.applier.RelayPos
	if file == "" || !containsName(rl.Names(), file) {
		if names := rl.Names(); len(names) > 0 {
			file, pos = names[0], 4
		}
	}
	return file, pos, rl.Space()
}

func yesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

func errTimestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("060102 15:04:05")
}

// replicaStatusLocked renders SHOW REPLICA STATUS: no row without a channel;
// unset columns are ” or 0; Seconds_Behind_Source and SQL_Remaining_Delay
// are the only NULLs.
func (s *Server) replicaStatusLocked() *table {
	t := &table{cols: replicaStatusColumns}
	ch := s.st.repl
	if ch == nil {
		return t
	}
	relayFile, relayPos, space := s.relayStatusLocked(ch)
	var behind, remaining any
	if ch.sqlRunning {
		switch {
		case len(ch.relay) > 0:
			behind = int64(time.Since(ch.relay[0].committed) / time.Second)
		case ch.ioRunning == "Yes":
			behind = int64(0)
		}
		if !ch.delayUntil.IsZero() && ch.delay > 0 {
			remaining = int64(time.Until(ch.delayUntil)/time.Second) + 1
		}
	}
	lastErrno, lastErr := ch.lastSQLErrno, ch.lastSQLError
	row := []any{
		ch.ioState, ch.host, ch.user, int64(ch.port), int64(ch.connectRetry), ch.srcFile,
		ch.srcPos, relayFile, relayPos,
		ch.applier.SourceFile, ch.ioRunning, yesNo(ch.sqlRunning),
		"", "", "", "", "", "",
		int64(lastErrno), lastErr, int64(0),
		ch.applier.SourcePos, space, "None",
		"", int64(0), yesNo(ch.ssl),
		ch.sslCA, "", ch.sslCert, "", ch.sslKey, behind,
		yesNo(ch.sslVerify), int64(ch.lastIOErrno), ch.lastIOError,
		int64(ch.lastSQLErrno), ch.lastSQLError, "",
		ch.sourceServerID, ch.sourceUUID, "mysql.slave_master_info",
		int64(ch.delay), remaining, ch.sqlState,
		int64(ch.retryCount), "", errTimestamp(ch.lastIOErrorTime),
		errTimestamp(ch.lastSQLErrorTime), "", "",
		ch.retrieved.String(), s.st.executed.String(), boolInt(ch.autoPosition),
		"", "", "",
		"", boolInt(ch.getPublicKey), "",
	}
	t.rows = [][]any{row}
	return t
}

// execChangeSource implements CHANGE REPLICATION SOURCE TO option = value, ...
func (s *Server) execChangeSource(sess *session, c *cursor) error {
	if !c.acceptKw("REPLICATION", "SOURCE", "TO") {
		return c.errHere()
	}
	var opts []changeOpt
	for {
		name, err := c.ident()
		if err != nil {
			return err
		}
		if !c.acceptPunct("=") {
			return c.errHere()
		}
		t := c.next()
		o := changeOpt{name: strings.ToUpper(name)}
		switch t.kind {
		case tString:
			o.str = t.text
		case tNumber:
			f, err := strconv.ParseFloat(t.text, 64)
			if err != nil {
				c.i--
				return c.errHere()
			}
			o.num, o.isNum, o.str = int64(f), true, t.text
		default:
			c.i--
			return c.errHere()
		}
		opts = append(opts, o)
		if !c.acceptPunct(",") {
			break
		}
	}
	if c.acceptKw("FOR", "CHANNEL") {
		name, err := c.stringLit()
		if err != nil {
			return err
		}
		if name != "" {
			return errNotSupported("replication channels other than the default channel in the Bloodraven MySQL simulator")
		}
	}
	if err := c.expectEnd(); err != nil {
		return err
	}
	if !sess.hasAnyPrivilege("REPLICATION_SLAVE_ADMIN", "SUPER") {
		return errNeedPrivilege("SUPER or REPLICATION_SLAVE_ADMIN")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.st.repl
	if ch == nil {
		ch = newChannel()
		ch.heartbeat = float64(s.relayVarsLocked().netTimeout) / 2
	}
	scratch := *ch // validate every option before changing anything, as MySQL does
	for _, o := range opts {
		if err := setChangeOpt(&scratch, o); err != nil {
			return err
		}
	}
	if err := checkChangeSourceThreads(ch, opts); err != nil {
		return err
	}
	// MySQL purges the relay log only if both threads were stopped before
	// the statement (rpl_replica.cc, change_master: "Relay logs are purged
	// only if both receive and execute threads are stopped").
	purgeRelayLog := ch.ioRunning == "No" && !ch.sqlRunning
	oldHost, oldPort := ch.host, ch.port
	for _, o := range opts {
		if err := setChangeOpt(ch, o); err != nil {
			return err
		}
	}
	// With both threads stopped, CHANGE REPLICATION SOURCE TO deletes the
	// relay log (MySQL manual, CHANGE REPLICATION SOURCE TO): what was
	// received but not applied is gone, and Retrieved_Gtid_Set restarts.
	s.st.repl = ch
	// COUNT_RECEIVED_HEARTBEATS counts since the last restart, reset or
	// CHANGE REPLICATION SOURCE TO (manual, replication_connection_status)
	ch.stats.heartbeats, ch.stats.lastHeartbeat = 0, time.Time{}
	if purgeRelayLog {
		s.discardRelayLogLocked()
	}
	if ch.host != oldHost || ch.port != oldPort {
		// a new source: its identity is learnt at the next connection
		ch.sourceUUID, ch.sourceServerID = "", 0
	}
	if changesConnection(opts) {
		ch.lastIOErrno, ch.lastIOError, ch.lastIOErrorTime = 0, "", time.Time{}
	}
	s.st.repl = ch
	s.saveLocked()
	s.log.Info("replication source changed", "sourceHost", ch.host, "sourcePort", ch.port, "sourceUser", ch.user, "autoPosition", ch.autoPosition)
	s.notifyLocked()
	return nil
}

// setChangeOpt validates one option of CHANGE REPLICATION SOURCE TO and sets
// it on ch.
func setChangeOpt(ch *channel, o changeOpt) error {
	wantNum := func() error {
		if !o.isNum {
			return errParse("'" + o.str + "'")
		}
		return nil
	}
	wantStr := func() error {
		if o.isNum {
			return errParse(o.str)
		}
		return nil
	}
	var err error
	switch o.name {
	case "SOURCE_HOST":
		if err = wantStr(); err == nil && o.str == "" {
			err = myErr(ErWrongArguments, "Incorrect arguments to SOURCE_HOST")
		}
		ch.host = o.str
	case "SOURCE_PORT":
		err = wantNum()
		ch.port = int(o.num)
	case "SOURCE_USER":
		err = wantStr()
		ch.user = o.str
	case "SOURCE_PASSWORD":
		err = wantStr()
		ch.password = o.str
	case "SOURCE_AUTO_POSITION":
		err = wantNum()
		ch.autoPosition = o.num == 1
	case "SOURCE_SSL":
		err = wantNum()
		ch.ssl = o.num == 1
	case "SOURCE_SSL_VERIFY_SERVER_CERT":
		err = wantNum()
		ch.sslVerify = o.num == 1
	case "SOURCE_SSL_CA":
		err = wantStr()
		ch.sslCA = o.str
	case "SOURCE_SSL_CERT":
		err = wantStr()
		ch.sslCert = o.str
	case "SOURCE_SSL_KEY":
		err = wantStr()
		ch.sslKey = o.str
	case "SOURCE_CONNECT_RETRY":
		err = wantNum()
		ch.connectRetry = int(o.num)
	case "SOURCE_RETRY_COUNT":
		err = wantNum()
		ch.retryCount = int(o.num)
	case "SOURCE_DELAY":
		err = wantNum()
		ch.delay = int(o.num)
	case "GET_SOURCE_PUBLIC_KEY":
		err = wantNum()
		ch.getPublicKey = o.num == 1
	case "SOURCE_HEARTBEAT_PERIOD":
		// seconds with millisecond resolution, 0 to 4294967 (0 disables)
		f, perr := strconv.ParseFloat(o.str, 64)
		switch {
		case !o.isNum || perr != nil:
			err = errParse(o.str)
		case f < 0 || f > 4294967:
			err = myErr(ErWrongArguments, "The requested value for the heartbeat period is either negative or exceeds the maximum allowed (4294967 seconds).")
		}
		ch.heartbeat = float64(int64(f*1000)) / 1000
	case "SOURCE_TLS_VERSION", "SOURCE_SSL_CIPHER", "SOURCE_SSL_CRL", "SOURCE_SSL_CRLPATH", "SOURCE_SSL_CAPATH",
		"SOURCE_PUBLIC_KEY_PATH", "NETWORK_NAMESPACE", "SOURCE_BIND", "PRIVILEGE_CHECKS_USER":
		err = wantStr()
	case "REQUIRE_ROW_FORMAT", "GTID_ONLY", "SOURCE_ZSTD_COMPRESSION_LEVEL":
		err = wantNum()
	default:
		return errParse(o.name + " = " + o.str)
	}
	return err
}

// changeOpt is one option = value of CHANGE REPLICATION SOURCE TO.
type changeOpt struct {
	name  string
	str   string
	num   int64
	isNum bool
}

// Which thread an option of CHANGE REPLICATION SOURCE TO belongs to
// (rpl_replica.cc: have_change_replication_source_receive_option,
// _execute_option, _applier_and_receive_option).
var (
	applierOptions = map[string]bool{"SOURCE_DELAY": true, "PRIVILEGE_CHECKS_USER": true,
		"REQUIRE_ROW_FORMAT": true, "REQUIRE_TABLE_PRIMARY_KEY_CHECK": true}
	bothThreadOptions = map[string]bool{"SOURCE_AUTO_POSITION": true, "GTID_ONLY": true,
		"ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS": true, "SOURCE_CONNECTION_AUTO_FAILOVER": true}
	// receiverAndApplierListed are applier options MySQL also lists as receiver options.
	receiverAndApplierListed = map[string]bool{"REQUIRE_ROW_FORMAT": true}
)

// checkChangeSourceThreads applies MySQL's rules for changing a channel
// whose threads run: receiver options need the receiver stopped (3021),
// applier options the applier (3022), options of both need both (3081), and
// a statement with receiver and applier options needs at least one stopped.
func checkChangeSourceThreads(ch *channel, opts []changeOpt) error {
	var receive, apply, both bool
	for _, o := range opts {
		switch {
		case bothThreadOptions[o.name]:
			both = true
		case applierOptions[o.name]:
			apply = true
			receive = receive || receiverAndApplierListed[o.name]
		default:
			receive = true
		}
	}
	ioRunning, sqlRunning := ch.ioRunning != "No", ch.sqlRunning
	switch {
	case both && (ioRunning || sqlRunning), receive && apply && ioRunning && sqlRunning:
		return myErr(ErReplicaChannelMustStop, "This operation cannot be performed with running replication threads; run STOP REPLICA FOR CHANNEL '' first")
	case receive && ioRunning:
		return myErr(ErReplicaIOThreadMustStop, "This operation cannot be performed with a running replica io thread; run STOP REPLICA IO_THREAD FOR CHANNEL '' first.")
	case apply && sqlRunning:
		return myErr(ErReplicaSQLThreadMustStop, "This operation cannot be performed with a running replica sql thread; run STOP REPLICA SQL_THREAD FOR CHANNEL '' first.")
	}
	return nil
}

// changesConnection reports options that point the receiver somewhere else;
// the last receiver error then no longer applies.
func changesConnection(opts []changeOpt) bool {
	for _, o := range opts {
		switch o.name {
		case "SOURCE_HOST", "SOURCE_PORT", "SOURCE_USER", "SOURCE_PASSWORD", "SOURCE_AUTO_POSITION":
			return true
		}
	}
	return false
}

// parseThreadList reads the optional IO_THREAD / SQL_THREAD list of
// START/STOP REPLICA and the FOR CHANNEL clause.
func parseThreadList(c *cursor) (io, sqlT bool, err error) {
	for {
		switch {
		case c.acceptKw("IO_THREAD"):
			io = true
		case c.acceptKw("SQL_THREAD"):
			sqlT = true
		}
		if !c.acceptPunct(",") {
			break
		}
	}
	if c.acceptKw("FOR", "CHANNEL") {
		name, err := c.stringLit()
		if err != nil {
			return false, false, err
		}
		if name != "" {
			return false, false, myErr(3074, "Replica channel '%s' does not exist.", name)
		}
	}
	if !c.done() {
		if c.peek().isKw("UNTIL", "USER", "PASSWORD", "DEFAULT_AUTH", "PLUGIN_DIR") {
			return false, false, errNotSupported("START REPLICA options in the Bloodraven MySQL simulator")
		}
		return false, false, c.errHere()
	}
	if !io && !sqlT {
		io, sqlT = true, true
	}
	return io, sqlT, nil
}

func (s *Server) execStartReplica(sess *session, c *cursor) error {
	if !c.acceptKw("REPLICA") {
		return c.errHere()
	}
	io, sqlT, err := parseThreadList(c)
	if err != nil {
		return err
	}
	if !sess.hasAnyPrivilege("REPLICATION_SLAVE_ADMIN", "SUPER") {
		return errNeedPrivilege("SUPER or REPLICATION_SLAVE_ADMIN")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.st.repl
	if ch == nil || ch.host == "" {
		return myErr(ErReplicaNotConfigured, "The server is not configured as replica; fix in config file or with CHANGE REPLICATION SOURCE TO")
	}
	if io {
		ch.ioWanted = true
		ch.lastIOErrno, ch.lastIOError, ch.lastIOErrorTime = 0, "", time.Time{}
	}
	if sqlT {
		ch.sqlWanted = true
		ch.lastSQLErrno, ch.lastSQLError, ch.lastSQLErrorTime = 0, "", time.Time{}
	}
	s.saveLocked()
	s.startReplicationLocked()
	return nil
}

func (s *Server) execStopReplica(sess *session, c *cursor) error {
	if !c.acceptKw("REPLICA") {
		return c.errHere()
	}
	io, sqlT, err := parseThreadList(c)
	if err != nil {
		return err
	}
	if !sess.hasAnyPrivilege("REPLICATION_SLAVE_ADMIN", "SUPER") {
		return errNeedPrivilege("SUPER or REPLICATION_SLAVE_ADMIN")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.st.repl
	if ch == nil {
		return nil // MySQL gives a warning only
	}
	if io {
		ch.ioWanted = false
		s.stopReceiverLocked(ch)
		s.flushRelayLogLocked() // a stopped receiver leaves nothing buffered
	}
	if sqlT {
		ch.sqlWanted = false
		s.stopApplierLocked(ch)
	}
	s.saveLocked()
	s.notifyLocked()
	return nil
}

// execReset implements RESET REPLICA [ALL] and RESET BINARY LOGS AND GTIDS.
func (s *Server) execReset(sess *session, c *cursor) error {
	if c.acceptKw("BINARY", "LOGS", "AND", "GTIDS") {
		if err := c.expectEnd(); err != nil {
			return err
		}
		if !sess.hasPrivilege("RELOAD") {
			return errNeedPrivilege("RELOAD")
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.st.executed, s.st.purged, s.st.binlog = gtid.Set{}, gtid.Set{}, nil
		s.resetBinlogFilesLocked()
		s.saveLocked()
		s.notifyLocked()
		return nil
	}
	if !c.acceptKw("REPLICA") {
		return c.errHere()
	}
	all := c.acceptKw("ALL")
	if c.acceptKw("FOR", "CHANNEL") {
		if _, err := c.stringLit(); err != nil {
			return err
		}
	}
	if err := c.expectEnd(); err != nil {
		return err
	}
	if !sess.hasPrivilege("RELOAD") { // manual "RESET Statement": every RESET needs RELOAD
		return errNeedPrivilege("RELOAD")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.st.repl
	if ch == nil {
		return nil
	}
	if ch.ioRunning != "No" || ch.sqlRunning {
		return myErr(ErReplicaChannelMustStop, "This operation cannot be performed with running replication threads; run STOP REPLICA FOR CHANNEL '' first")
	}
	if len(ch.relay) > 0 {
		s.log.Warn("RESET REPLICA discards relay log", "unappliedTransactions", len(ch.relay))
	}
	s.discardRelayLogLocked()
	if all {
		s.st.repl = nil
	} else {
		// RESET REPLICA keeps the connection parameters but forgets the
		// relay log, the received set and the error state.
		fresh := newChannel()
		fresh.host, fresh.port, fresh.user, fresh.password = ch.host, ch.port, ch.user, ch.password
		fresh.autoPosition, fresh.ssl, fresh.sslVerify = ch.autoPosition, ch.ssl, ch.sslVerify
		fresh.sslCA, fresh.sslCert, fresh.sslKey = ch.sslCA, ch.sslCert, ch.sslKey
		fresh.connectRetry, fresh.retryCount, fresh.delay, fresh.getPublicKey = ch.connectRetry, ch.retryCount, ch.delay, ch.getPublicKey
		fresh.heartbeat = ch.heartbeat
		s.st.repl = fresh
	}
	s.saveLocked()
	s.notifyLocked()
	return nil
}
