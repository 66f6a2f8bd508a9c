package mysqlsim

import (
	"strconv"
	"strings"
	"time"
)

// The performance_schema replication tables (manual, "Performance Schema
// Replication Tables"): one row per channel, columns in MySQL 9.7's order,
// TIMESTAMP(6) values as MySQL prints them ('0000-00-00 00:00:00.000000'
// for none). Readable by every account (SELECT on performance_schema is
// granted to everyone by default). The applier has one worker (WORKER_ID 1),
// as with replica_parallel_workers=1.

var pfsConnectionStatusColumns = []column{
	{"CHANNEL_NAME", colString}, {"GROUP_NAME", colString}, {"SOURCE_UUID", colString},
	{"THREAD_ID", colUint}, {"SERVICE_STATE", colString}, {"COUNT_RECEIVED_HEARTBEATS", colUint},
	{"LAST_HEARTBEAT_TIMESTAMP", colString}, {"RECEIVED_TRANSACTION_SET", colString},
	{"LAST_ERROR_NUMBER", colInt}, {"LAST_ERROR_MESSAGE", colString}, {"LAST_ERROR_TIMESTAMP", colString},
	{"LAST_QUEUED_TRANSACTION", colString},
	{"LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP", colString},
	{"LAST_QUEUED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP", colString},
	{"LAST_QUEUED_TRANSACTION_START_QUEUE_TIMESTAMP", colString},
	{"LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP", colString},
	{"QUEUEING_TRANSACTION", colString},
	{"QUEUEING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP", colString},
	{"QUEUEING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP", colString},
	{"QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP", colString},
}

var pfsApplierByWorkerColumns = []column{
	{"CHANNEL_NAME", colString}, {"WORKER_ID", colUint}, {"THREAD_ID", colUint}, {"SERVICE_STATE", colString},
	{"LAST_ERROR_NUMBER", colInt}, {"LAST_ERROR_MESSAGE", colString}, {"LAST_ERROR_TIMESTAMP", colString},
	{"LAST_APPLIED_TRANSACTION", colString},
	{"LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP", colString},
	{"LAST_APPLIED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP", colString},
	{"LAST_APPLIED_TRANSACTION_START_APPLY_TIMESTAMP", colString},
	{"LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP", colString},
	{"APPLYING_TRANSACTION", colString},
	{"APPLYING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP", colString},
	{"APPLYING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP", colString},
	{"APPLYING_TRANSACTION_START_APPLY_TIMESTAMP", colString},
	{"LAST_APPLIED_TRANSACTION_RETRIES_COUNT", colUint},
	{"LAST_APPLIED_TRANSACTION_LAST_TRANSIENT_ERROR_NUMBER", colInt},
	{"LAST_APPLIED_TRANSACTION_LAST_TRANSIENT_ERROR_MESSAGE", colString},
	{"LAST_APPLIED_TRANSACTION_LAST_TRANSIENT_ERROR_TIMESTAMP", colString},
	{"APPLYING_TRANSACTION_RETRIES_COUNT", colUint},
	{"APPLYING_TRANSACTION_LAST_TRANSIENT_ERROR_NUMBER", colInt},
	{"APPLYING_TRANSACTION_LAST_TRANSIENT_ERROR_MESSAGE", colString},
	{"APPLYING_TRANSACTION_LAST_TRANSIENT_ERROR_TIMESTAMP", colString},
}

var pfsApplierStatusColumns = []column{
	{"CHANNEL_NAME", colString}, {"SERVICE_STATE", colString}, {"REMAINING_DELAY", colUint},
	{"COUNT_TRANSACTIONS_RETRIES", colUint},
}

var pfsConnectionConfigurationColumns = []column{
	{"CHANNEL_NAME", colString}, {"HOST", colString}, {"PORT", colInt}, {"USER", colString},
	{"NETWORK_INTERFACE", colString}, {"AUTO_POSITION", colString}, {"SSL_ALLOWED", colString},
	{"SSL_CA_FILE", colString}, {"SSL_CA_PATH", colString}, {"SSL_CERTIFICATE", colString},
	{"SSL_CIPHER", colString}, {"SSL_KEY", colString}, {"SSL_VERIFY_SERVER_CERTIFICATE", colString},
	{"SSL_CRL_FILE", colString}, {"SSL_CRL_PATH", colString}, {"CONNECTION_RETRY_INTERVAL", colInt},
	{"CONNECTION_RETRY_COUNT", colUint}, {"HEARTBEAT_INTERVAL", colString}, {"TLS_VERSION", colString},
	{"PUBLIC_KEY_PATH", colString}, {"GET_PUBLIC_KEY", colString}, {"NETWORK_NAMESPACE", colString},
	{"COMPRESSION_ALGORITHM", colString}, {"ZSTD_COMPRESSION_LEVEL", colUint}, {"TLS_CIPHERSUITES", colString},
	{"SOURCE_CONNECTION_AUTO_FAILOVER", colString}, {"GTID_ONLY", colString},
}

// Thread ids of the replication threads in performance_schema.threads
// terms (the processlist ids of replicationProcesslistLocked).
const (
	receiverThreadID = 1<<32 + 1
	applierThreadID  = 1<<32 + 2
)

// pfsTimestamp prints a TIMESTAMP(6) as MySQL does (UTC, the simulator's
// time zone).
func pfsTimestamp(t time.Time) string {
	if t.IsZero() {
		return "0000-00-00 00:00:00.000000"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000000")
}

// selectReplicationTable answers SELECT cols|* FROM
// performance_schema.<replication table> [WHERE CHANNEL_NAME = '...'];
// ok is false for any other table.
func (s *Server) selectReplicationTable(sess *session, db, name string, items []selItem, c *cursor) (*table, bool, error) {
	if !strings.EqualFold(db, "performance_schema") {
		return nil, false, nil
	}
	var rowsOf func() [][]any
	var cols []column
	switch strings.ToLower(name) {
	case "replication_connection_status":
		cols, rowsOf = pfsConnectionStatusColumns, s.pfsConnectionStatusRows
	case "replication_applier_status_by_worker":
		cols, rowsOf = pfsApplierByWorkerColumns, s.pfsApplierByWorkerRows
	case "replication_applier_status":
		cols, rowsOf = pfsApplierStatusColumns, s.pfsApplierStatusRows
	case "replication_connection_configuration":
		cols, rowsOf = pfsConnectionConfigurationColumns, s.pfsConnectionConfigurationRows
	default:
		return nil, false, nil
	}
	channel, filter := "", false
	if c.acceptKw("WHERE") {
		col, err := c.ident()
		if err != nil {
			return nil, true, err
		}
		if !strings.EqualFold(col, "CHANNEL_NAME") || !c.acceptPunct("=") {
			return nil, true, errNotSupported("WHERE other than CHANNEL_NAME = '...' in the Bloodraven MySQL simulator")
		}
		if channel, err = c.stringLit(); err != nil {
			return nil, true, err
		}
		filter = true
	}
	if err := c.expectEnd(); err != nil {
		return nil, true, err
	}
	// These tables need SELECT on them (or on performance_schema.* or *.*),
	// as MySQL's replication tables do (privileges.go).
	if !sess.hasTablePrivilege("performance_schema", strings.ToLower(name), "SELECT") {
		return nil, true, errTableAccessDenied(sess, "SELECT", strings.ToLower(name))
	}
	s.mu.Lock()
	rows := rowsOf()
	s.mu.Unlock()
	if filter && channel != "" {
		rows = nil // only the default channel exists
	}
	t, err := project(cols, rows, items)
	return t, true, err
}

func (s *Server) pfsConnectionStatusRows() [][]any {
	ch := s.st.repl
	if ch == nil {
		return nil
	}
	state := map[string]string{"Yes": "ON", "Connecting": "CONNECTING"}[ch.ioRunning]
	var thread any
	if state == "" {
		state = "OFF"
	} else {
		thread = uint64(receiverThreadID)
	}
	st := ch.stats
	return [][]any{{
		"", "", ch.sourceUUID, thread, state, uint64(st.heartbeats),
		pfsTimestamp(st.lastHeartbeat), ch.retrieved.String(),
		int64(ch.lastIOErrno), ch.lastIOError, pfsTimestamp(ch.lastIOErrorTime),
		st.lastQueued.gtid, pfsTimestamp(st.lastQueued.original), pfsTimestamp(st.lastQueued.immediate),
		pfsTimestamp(st.lastQueued.start), pfsTimestamp(st.lastQueued.end),
		st.queueing.gtid, pfsTimestamp(st.queueing.original), pfsTimestamp(st.queueing.immediate),
		pfsTimestamp(st.queueing.start),
	}}
}

func (s *Server) pfsApplierByWorkerRows() [][]any {
	ch := s.st.repl
	if ch == nil {
		return nil
	}
	state, thread := "OFF", any(nil)
	if ch.sqlRunning {
		state, thread = "ON", uint64(applierThreadID)
	}
	st := ch.stats
	errMsg := ""
	if ch.lastSQLErrno != 0 {
		errMsg = st.applyErr
		if errMsg == "" {
			errMsg = ch.lastSQLError
		}
	}
	return [][]any{{
		"", uint64(1), thread, state,
		int64(ch.lastSQLErrno), errMsg, pfsTimestamp(ch.lastSQLErrorTime),
		st.lastApplied.gtid, pfsTimestamp(st.lastApplied.original), pfsTimestamp(st.lastApplied.immediate),
		pfsTimestamp(st.lastApplied.start), pfsTimestamp(st.lastApplied.end),
		st.applying.gtid, pfsTimestamp(st.applying.original), pfsTimestamp(st.applying.immediate),
		pfsTimestamp(st.applying.start),
		uint64(0), int64(0), "", pfsTimestamp(time.Time{}),
		uint64(0), int64(0), "", pfsTimestamp(time.Time{}),
	}}
}

func (s *Server) pfsApplierStatusRows() [][]any {
	ch := s.st.repl
	if ch == nil {
		return nil
	}
	state := "OFF"
	var remaining any
	if ch.sqlRunning {
		state = "ON"
		if !ch.delayUntil.IsZero() && ch.delay > 0 {
			remaining = uint64(max(time.Until(ch.delayUntil)/time.Second+1, 0))
		}
	}
	return [][]any{{"", state, remaining, uint64(0)}}
}

func (s *Server) pfsConnectionConfigurationRows() [][]any {
	ch := s.st.repl
	if ch == nil {
		return nil
	}
	yes := func(b bool) string { return strings.ToUpper(yesNo(b)) }
	return [][]any{{
		"", ch.host, int64(ch.port), ch.user, "", strconv.FormatInt(boolInt(ch.autoPosition), 10), yes(ch.ssl),
		ch.sslCA, "", ch.sslCert, "", ch.sslKey, yes(ch.sslVerify),
		"", "", int64(ch.connectRetry),
		uint64(ch.retryCount), strconv.FormatFloat(ch.heartbeat, 'f', 3, 64), "",
		"", yes(ch.getPublicKey), "",
		"uncompressed", uint64(3), "",
		"0", "0",
	}}
}
