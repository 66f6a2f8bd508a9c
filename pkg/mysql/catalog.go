// Package mysql is the site client the operator and the sidecar use to talk to
// a site's mysqld (MySQL 9.7, or the simulator in tests and the playground)
// through github.com/go-sql-driver/mysql.
//
// Every statement the product sends is declared in this file, once, with what
// it is for. Nothing else in the product builds SQL. The simulator is tested
// against this catalog, so a statement added here must also be modelled there.
package mysql

import (
	"fmt"
	"strconv"
	"strings"
)

// Statement is one SQL statement of the catalog.
//
// In SQL, "?" marks an argument the driver binds (prepared or interpolated).
// A few statements take no placeholders in MySQL (CHANGE REPLICATION SOURCE TO,
// CLONE INSTANCE, KILL in this client): their variable parts are written as
// {name} and rendered as quoted literals by Render.
type Statement struct {
	Name    string
	SQL     string
	Purpose string
	// NeedsReplication marks statements whose effect can only be observed
	// with a source and a replica (tested in the replication tests).
	NeedsReplication bool
}

var (
	// StmtObserve reads identity, role and GTID state in one round trip.
	StmtObserve = Statement{
		Name:    "observe",
		SQL:     "SELECT @@GLOBAL.server_uuid, @@GLOBAL.server_id, @@GLOBAL.read_only, @@GLOBAL.super_read_only, @@GLOBAL.gtid_executed, @@GLOBAL.gtid_purged, @@GLOBAL.version",
		Purpose: "Observe a site: who it is, whether it is writable, what it has executed and purged, which MySQL release it runs.",
	}
	// StmtReplicaStatus reads the replication channel (no row on a primary).
	StmtReplicaStatus = Statement{
		Name:    "replica-status",
		SQL:     "SHOW REPLICA STATUS",
		Purpose: "Observe a replica: thread states, errors, Retrieved_Gtid_Set (received but maybe not applied), lag, source.",
	}
	// StmtFence makes a site refuse all client writes. super_read_only=ON
	// implies read_only=ON.
	StmtFence = Statement{
		Name:    "fence",
		SQL:     "SET GLOBAL super_read_only = ON",
		Purpose: "Fence a site before another is promoted (safety invariant 1), and keep replicas read-only.",
	}
	// StmtSetLockWaitTimeout bounds, on the fencing session, how long the
	// fence may wait server-side for the global read lock.
	StmtSetLockWaitTimeout = Statement{
		Name: "set-lock-wait-timeout",
		SQL:  "SET SESSION lock_wait_timeout = ?",
		Purpose: "Before fencing: turning read_only on waits for open transactions; the wait must end with the call's deadline " +
			"(error 1205), or a fence the caller gave up on could still take effect later.",
	}
	// StmtUnfence makes a site writable: read_only=OFF also clears super_read_only.
	StmtUnfence = Statement{
		Name:    "unfence",
		SQL:     "SET GLOBAL read_only = OFF",
		Purpose: "Make the promoted site writable, or unfence the old source when a planned failover rolls back.",
	}
	// StmtStopReplica stops both replication threads.
	StmtStopReplica = Statement{
		Name:             "stop-replica",
		SQL:              "STOP REPLICA",
		Purpose:          "Stop replication before promoting or repointing a replica.",
		NeedsReplication: true,
	}
	// StmtStopReplicaIOThread stops only the receiver, so the applier can
	// finish what was received before an emergency promotion.
	StmtStopReplicaIOThread = Statement{
		Name:             "stop-replica-io-thread",
		SQL:              "STOP REPLICA IO_THREAD",
		Purpose:          "Emergency failover: stop receiving, let the applier apply the relay log, then promote.",
		NeedsReplication: true,
	}
	// StmtStartReplicaSQLThread starts only the applier: a failover
	// candidate whose applier is stopped (skip-replica-start, an error)
	// applies nothing of what it received.
	StmtStartReplicaSQLThread = Statement{
		Name:             "start-replica-sql-thread",
		SQL:              "START REPLICA SQL_THREAD",
		Purpose:          "Emergency failover: restart a candidate's stopped applier so that it applies its relay log before promotion.",
		NeedsReplication: true,
	}
	// StmtNow reads the server's clock, to place its performance_schema
	// timestamps (shown in the session time zone, as NOW is) on the
	// operator's clock.
	StmtNow = Statement{
		Name:             "now",
		SQL:              "SELECT NOW(6)",
		Purpose:          "Read a replica's clock in the same round as its replication evidence (lag judged after a leader change).",
		NeedsReplication: true,
	}
	// StmtConnectionStatus reads the receiver's evidence of its source.
	StmtConnectionStatus = Statement{
		Name: "replication-connection-status",
		SQL: "SELECT LAST_HEARTBEAT_TIMESTAMP, LAST_QUEUED_TRANSACTION, LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP, " +
			"LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP FROM performance_schema.replication_connection_status WHERE CHANNEL_NAME = ''",
		Purpose:          "Failover lag evidence held on the candidate: when its receiver last heard from the source, and the last transaction it queued.",
		NeedsReplication: true,
	}
	// StmtApplierByWorker reads the applier's last applied transaction.
	StmtApplierByWorker = Statement{
		Name: "replication-applier-status-by-worker",
		SQL: "SELECT LAST_APPLIED_TRANSACTION, LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP " +
			"FROM performance_schema.replication_applier_status_by_worker WHERE CHANNEL_NAME = ''",
		Purpose:          "Failover lag evidence held on the candidate: the last transaction its applier applied.",
		NeedsReplication: true,
	}
	// StmtStartReplica starts both replication threads.
	StmtStartReplica = Statement{
		Name:             "start-replica",
		SQL:              "START REPLICA",
		Purpose:          "Start replicating after repointing a replica to a new source.",
		NeedsReplication: true,
	}
	// StmtResetReplicaAll forgets the channel. It discards the relay log:
	// anything received and not applied is lost, so promotion waits for the
	// applier first.
	StmtResetReplicaAll = Statement{
		Name:             "reset-replica-all",
		SQL:              "RESET REPLICA ALL",
		Purpose:          "Promote: the new primary must not keep a replication channel.",
		NeedsReplication: true,
	}
	// StmtChangeSource points a replica at a source with GTID auto-positioning.
	StmtChangeSource = Statement{
		Name: "change-source",
		SQL: "CHANGE REPLICATION SOURCE TO SOURCE_HOST = {host}, SOURCE_PORT = {port}, SOURCE_USER = {user}, " +
			"SOURCE_PASSWORD = {password}, SOURCE_AUTO_POSITION = 1, SOURCE_SSL = {ssl}, SOURCE_SSL_CA = {sslCA}, " +
			"SOURCE_SSL_VERIFY_SERVER_CERT = {sslVerify}, " +
			"SOURCE_CONNECT_RETRY = {connectRetry}, SOURCE_RETRY_COUNT = {retryCount}, GET_SOURCE_PUBLIC_KEY = 1, " +
			"SOURCE_HEARTBEAT_PERIOD = 1",
		// SOURCE_HEARTBEAT_PERIOD = 1: an idle source sends a heartbeat every
		// second, so a replica whose my.cnf sets replica-net-timeout=5 notices a
		// dead or partitioned source within 5 s (MySQL reconnects after
		// replica_net_timeout without an event or heartbeat).
		// SOURCE_SSL_CA and SOURCE_SSL_VERIFY_SERVER_CERT = 1: with spec.tls
		// the receiver checks the source's certificate against the group's
		// CA and SOURCE_HOST, the source's internal Service name (docs/tls.md).
		Purpose:          "Repoint a replica (or a returning old primary) to the active site by GTID auto-position.",
		NeedsReplication: true,
	}
	// StmtWaitForGTIDSet blocks until gtid_executed contains a set or times out.
	StmtWaitForGTIDSet = Statement{
		Name:    "wait-for-gtid-set",
		SQL:     "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)",
		Purpose: "Planned failover: wait (bounded) until the target executed everything the fenced source did (invariant 2).",
	}
	// StmtGTIDSubtract computes a GTID set difference on the server.
	StmtGTIDSubtract = Statement{
		Name:    "gtid-subtract",
		SQL:     "SELECT GTID_SUBTRACT(?, ?)",
		Purpose: "Errant-GTID check: what a site executed that the active site did not (invariant 4).",
	}
	// StmtGTIDSubset tests set inclusion on the server.
	StmtGTIDSubset = Statement{
		Name:    "gtid-subset",
		SQL:     "SELECT GTID_SUBSET(?, ?)",
		Purpose: "Before cloning or rejoining: is this site's set contained in the donor's (invariant 4).",
	}
	// StmtConnectionID identifies the client's own session.
	StmtConnectionID = Statement{
		Name:    "connection-id",
		SQL:     "SELECT CONNECTION_ID()",
		Purpose: "Know our own session so that evicting sessions never kills it.",
	}
	// StmtListSessions lists client sessions.
	StmtListSessions = Statement{
		Name:    "list-sessions",
		SQL:     "SELECT ID, USER, HOST, DB, COMMAND, TIME, STATE, INFO FROM performance_schema.processlist",
		Purpose: "Find client sessions still connected to a fenced former primary.",
	}
	// StmtKillConnection ends one session.
	StmtKillConnection = Statement{
		Name:    "kill-connection",
		SQL:     "KILL CONNECTION {id}",
		Purpose: "Evict a stale client session from a fenced former primary.",
	}
	// StmtSetCloneDonorList allows a donor for CLONE INSTANCE.
	StmtSetCloneDonorList = Statement{
		Name:    "set-clone-donor-list",
		SQL:     "SET GLOBAL clone_valid_donor_list = ?",
		Purpose: "Allow the active site as clone donor before recloning a site.",
	}
	// StmtClone replaces this server's data with a copy of the donor's.
	StmtClone = Statement{
		Name:             "clone",
		SQL:              "CLONE INSTANCE FROM {user}@{host}:{port} IDENTIFIED BY {password} {requireSSL}",
		Purpose:          "Reclone a site from the active site (bootstrap, auto-clone, reclone with the interlock).",
		NeedsReplication: true,
	}
)

// Catalog lists every statement the product sends.
func Catalog() []Statement {
	return append([]Statement{
		StmtObserve, StmtReplicaStatus, StmtSetLockWaitTimeout, StmtFence, StmtUnfence, StmtStopReplica, StmtStopReplicaIOThread,
		StmtStartReplica, StmtResetReplicaAll, StmtChangeSource, StmtWaitForGTIDSet, StmtGTIDSubtract,
		StmtGTIDSubset, StmtConnectionID, StmtListSessions, StmtKillConnection, StmtSetCloneDonorList, StmtClone,
		StmtStartReplicaSQLThread, StmtNow, StmtConnectionStatus, StmtApplierByWorker,
		StmtReloadTLS, // tls.go
	}, AccountCatalog()...) // accounts.go
}

// Literal values for Render.
type (
	// Str renders as a quoted, escaped MySQL string literal.
	Str string
	// Int renders as a decimal integer.
	Int int64
	// Raw renders verbatim; only for fixed keywords chosen by this package.
	Raw string
)

// Render fills {name} slots of a literal-only statement. Every slot must be
// given and every value used; strings are quoted and escaped, so a value can
// never change the statement's structure.
func (s Statement) Render(vals map[string]any) (string, error) {
	var sb strings.Builder
	rest := s.SQL
	used := 0
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			sb.WriteString(rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("statement %s: unterminated slot", s.Name)
		}
		name := rest[i+1 : i+j]
		v, ok := vals[name]
		if !ok {
			return "", fmt.Errorf("statement %s: no value for {%s}", s.Name, name)
		}
		sb.WriteString(rest[:i])
		switch x := v.(type) {
		case Str:
			sb.WriteString(quote(string(x)))
		case Int:
			sb.WriteString(strconv.FormatInt(int64(x), 10))
		case Raw:
			sb.WriteString(string(x))
		default:
			return "", fmt.Errorf("statement %s: {%s} has unsupported type %T", s.Name, name, v)
		}
		used++
		rest = rest[i+j+1:]
	}
	if used != len(vals) {
		return "", fmt.Errorf("statement %s: %d values given for %d slots", s.Name, len(vals), used)
	}
	return sb.String(), nil
}

// quote renders a string literal escaped for MySQL's default sql_mode
// (backslash escapes enabled).
func quote(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`, "\n", `\n`, "\r", `\r`, "\x1a", `\Z`)
	return "'" + r.Replace(v) + "'"
}
