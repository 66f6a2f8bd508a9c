package mysqlsim

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// scope of a system variable reference.
type scope int

const (
	scopeDefault scope = iota // @@name: session value if it has one, else global
	scopeGlobal
	scopeSession
)

// varKind says where a system variable lives.
type varKind int

const (
	globalOnly varKind = iota
	sessionOnly
	both
)

type varDef struct {
	kind     varKind
	typ      colType
	readOnly bool // not settable at runtime (ER_INCORRECT_GLOBAL_LOCAL_VAR)
}

// sysVars lists the system variables the simulator knows.
var sysVars = map[string]varDef{
	"server_uuid":              {globalOnly, colString, true},
	"server_id":                {globalOnly, colUint, false},
	"read_only":                {globalOnly, colInt, false},
	"super_read_only":          {globalOnly, colInt, false},
	"offline_mode":             {globalOnly, colInt, false},
	"gtid_executed":            {globalOnly, colString, true},
	"gtid_purged":              {globalOnly, colString, false},
	"gtid_mode":                {globalOnly, colString, true},
	"enforce_gtid_consistency": {globalOnly, colString, true},
	"gtid_next":                {sessionOnly, colString, false},
	"gtid_owned":               {both, colString, true},
	"log_bin":                  {globalOnly, colInt, true},
	"log_replica_updates":      {globalOnly, colInt, true},
	"skip_replica_start":       {globalOnly, colInt, true},
	"binlog_format":            {both, colString, false},
	"binlog_checksum":          {globalOnly, colString, true}, // CRC32 (dump.go)
	"clone_valid_donor_list":   {globalOnly, colString, false},
	"version":                  {globalOnly, colString, true},
	"version_comment":          {globalOnly, colString, true},
	"hostname":                 {globalOnly, colString, true},
	"port":                     {globalOnly, colInt, true},
	"max_allowed_packet":       {both, colInt, false},
	"autocommit":               {both, colInt, false},
	"sql_mode":                 {both, colString, false},
	"time_zone":                {both, colString, false},
	"system_time_zone":         {globalOnly, colString, true},
	"transaction_isolation":    {both, colString, false},
	"wait_timeout":             {both, colInt, false},
	"lock_wait_timeout":        {both, colInt, false},
	"session_track_gtids":      {both, colString, false},
	"character_set_client":     {both, colString, false},
	"character_set_connection": {both, colString, false},
	"character_set_results":    {both, colString, false},
	"collation_connection":     {both, colString, false},
	"sql_log_bin":              {sessionOnly, colInt, false},
	"innodb_read_only":         {globalOnly, colInt, true},
	"require_secure_transport": {globalOnly, colInt, false}, // transport.go
	"have_ssl":                 {globalOnly, colString, true},
	"ssl_ca":                   {globalOnly, colString, false},
	"ssl_cert":                 {globalOnly, colString, false},
	"ssl_key":                  {globalOnly, colString, false},
	"partial_revokes":          {globalOnly, colInt, false}, // partialrevokes.go

	// the binary log files (binlog.go)
	"max_binlog_size":            {globalOnly, colInt, false},
	"binlog_expire_logs_seconds": {globalOnly, colInt, false},
	"log_bin_basename":           {globalOnly, colString, true},
	"log_bin_index":              {globalOnly, colString, true},
	// Durability of commits (datadir_boot.go).
	"sync_binlog":                    {globalOnly, colInt, false},
	"innodb_flush_log_at_trx_commit": {globalOnly, colInt, false},
	"max_connections":                {globalOnly, colInt, false}, // connlimit.go
	// The replica (relaylog.go).
	"replica_net_timeout": {globalOnly, colInt, false},
	"slave_net_timeout":   {globalOnly, colInt, false},
	"sync_relay_log":      {globalOnly, colInt, false},
	"max_relay_log_size":  {globalOnly, colInt, false},
	"relay_log_purge":     {globalOnly, colInt, false},
	"relay_log_recovery":  {globalOnly, colInt, true},
	"relay_log":           {globalOnly, colString, true},
	"relay_log_basename":  {globalOnly, colString, true},
	"relay_log_index":     {globalOnly, colString, true},
}

// sessionVarDefaults are the values a new session starts with.
var sessionVarDefaults = map[string]string{
	"max_allowed_packet": "67108864", "binlog_checksum": "CRC32", "autocommit": "1", "binlog_format": "ROW",
	"sql_mode":  "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION",
	"time_zone": "SYSTEM", "transaction_isolation": "REPEATABLE-READ", "wait_timeout": "28800", "lock_wait_timeout": "31536000",
	"session_track_gtids": "OFF", "character_set_client": "utf8mb4", "character_set_connection": "utf8mb4",
	"character_set_results": "utf8mb4", "collation_connection": "utf8mb4_0900_ai_ci", "sql_log_bin": "1",
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// getVarLocked reads a system variable as MySQL returns it.
func (s *Server) getVarLocked(sess *session, name string, sc scope) (any, colType, error) {
	name = strings.ToLower(name)
	def, ok := sysVars[name]
	if !ok {
		return nil, 0, myErr(ErUnknownSystemVariable, "Unknown system variable '%s'", name)
	}
	if sc == scopeGlobal && def.kind == sessionOnly {
		return nil, 0, myErr(ErIncorrectGlobalLocalVar, "Variable '%s' is a SESSION variable", name)
	}
	if sc == scopeSession && def.kind == globalOnly {
		return nil, 0, myErr(ErIncorrectGlobalLocalVar, "Variable '%s' is a GLOBAL variable", name)
	}
	st := s.st
	switch name {
	case "server_uuid":
		return s.cfg.ServerUUID, def.typ, nil
	case "server_id":
		return uint64(s.cfg.ServerID), def.typ, nil
	case "read_only":
		return boolInt(st.readOnly), def.typ, nil
	case "super_read_only":
		return boolInt(st.superReadOnly), def.typ, nil
	case "offline_mode":
		return boolInt(st.offlineMode), def.typ, nil
	case "gtid_executed":
		return st.executed.String(), def.typ, nil
	case "gtid_purged":
		return st.purged.String(), def.typ, nil
	case "gtid_mode", "enforce_gtid_consistency":
		return "ON", def.typ, nil
	case "gtid_next":
		return sess.gtidNext, def.typ, nil
	case "gtid_owned":
		return "", def.typ, nil
	case "log_bin", "log_replica_updates":
		return int64(1), def.typ, nil
	case "skip_replica_start":
		return boolInt(s.cfg.SkipReplicaStart), def.typ, nil
	case "clone_valid_donor_list":
		if !s.pluginActiveLocked("clone") { // a variable of the clone plugin (plugins.go)
			return nil, 0, myErr(ErUnknownSystemVariable, "Unknown system variable '%s'", name)
		}
		return st.cloneValidDonorList, def.typ, nil
	case "version":
		return Version, def.typ, nil
	case "version_comment":
		return "Bloodraven MySQL simulator", def.typ, nil
	case "hostname":
		h, _ := os.Hostname()
		return h, def.typ, nil
	case "port":
		_, p, _ := strings.Cut(s.addr, ":")
		n, _ := strconv.ParseInt(p[strings.LastIndex(p, ":")+1:], 10, 64)
		return n, def.typ, nil
	case "system_time_zone":
		return "UTC", def.typ, nil
	case "lock_wait_timeout":
		if sc != scopeGlobal && sess != nil && sess.lockWaitTimeout > 0 {
			return int64(sess.lockWaitTimeout / time.Second), def.typ, nil
		}
	case "sync_binlog":
		return int64(st.syncBinlog), def.typ, nil
	case "innodb_flush_log_at_trx_commit":
		return int64(st.flushAtCommit), def.typ, nil
	case "innodb_read_only":
		return int64(0), def.typ, nil
	case "require_secure_transport", "have_ssl", "ssl_ca", "ssl_cert", "ssl_key":
		return s.tlsVarLocked(name), def.typ, nil
	case "max_connections":
		return s.maxConnectionsLocked(), def.typ, nil
	case "partial_revokes":
		return boolInt(s.ext.partialRevokes), def.typ, nil
	case "replica_net_timeout", "slave_net_timeout", "sync_relay_log", "max_relay_log_size", "relay_log_purge",
		"relay_log_recovery", "relay_log", "relay_log_basename", "relay_log_index":
		return s.relayVarLocked(name), def.typ, nil
	case "max_binlog_size", "binlog_expire_logs_seconds", "log_bin_basename", "log_bin_index":
		return s.binlogVarLocked(name), def.typ, nil
	}
	v := sessionVarDefaults[name]
	if def.typ == colInt {
		n, _ := strconv.ParseInt(v, 10, 64)
		return n, def.typ, nil
	}
	return v, def.typ, nil
}

// parseBoolValue reads ON/OFF/1/0/TRUE/FALSE as MySQL does for boolean variables.
func parseBoolValue(name string, v any) (bool, error) {
	switch x := v.(type) {
	case int64:
		if x == 0 || x == 1 {
			return x == 1, nil
		}
	case string:
		switch strings.ToUpper(x) {
		case "ON", "1", "TRUE":
			return true, nil
		case "OFF", "0", "FALSE":
			return false, nil
		}
	}
	return false, myErr(ErWrongValueForVar, "Variable '%s' can't be set to the value of '%v'", name, v)
}

// setGlobalLocked applies SET GLOBAL name = v with MySQL's coupling rules.
func (s *Server) setGlobalLocked(sess *session, name string, v any) error {
	st := s.st
	switch name {
	case "read_only", "super_read_only", "offline_mode":
		b, err := parseBoolValue(name, v)
		if err != nil {
			return err
		}
		if b && name != "offline_mode" && !st.readOnly {
			if err := s.waitForOpenTransactionsLocked(sess); err != nil {
				return err
			}
		}
		switch name {
		case "read_only":
			// read_only=OFF also turns super_read_only OFF.
			st.readOnly = b
			if !b {
				st.superReadOnly = false
			}
		case "super_read_only":
			// super_read_only=ON also turns read_only ON; OFF leaves read_only as is.
			st.superReadOnly = b
			if b {
				st.readOnly = true
			}
		case "offline_mode":
			st.offlineMode = b
		}
		s.log.Info("global variable set", "variable", name, "value", b, "user", sess.user.Name)
	case "gtid_purged":
		if err := s.setGTIDPurgedLocked(v); err != nil {
			return err
		}
		s.saveLocked()
	case "sync_binlog", "innodb_flush_log_at_trx_commit":
		n, err := parseDurabilityVar(name, v)
		if err != nil {
			return err
		}
		if name == "sync_binlog" {
			st.syncBinlog = n
		} else {
			st.flushAtCommit = n
		}
		s.setDurabilityLocked()
	case "max_connections":
		return s.setMaxConnectionsLocked(v)
	case "partial_revokes":
		return s.setPartialRevokesLocked(v)
	case "replica_net_timeout", "slave_net_timeout", "sync_relay_log", "max_relay_log_size", "relay_log_purge":
		if err := s.setRelayVarLocked(name, v); err != nil {
			return err
		}
	case "require_secure_transport", "ssl_ca", "ssl_cert", "ssl_key":
		if err := s.setTLSVarLocked(name, v); err != nil {
			return err
		}
	case "clone_valid_donor_list":
		if !s.pluginActiveLocked("clone") {
			return myErr(ErUnknownSystemVariable, "Unknown system variable '%s'", name)
		}
		str, ok := v.(string)
		if !ok {
			return myErr(ErWrongValueForVar, "Variable '%s' can't be set to the value of '%v'", name, v)
		}
		st.cloneValidDonorList = str
	case "max_binlog_size", "binlog_expire_logs_seconds":
		if err := s.setBinlogVarLocked(name, v); err != nil {
			return err
		}
	case "server_id":
		n, ok := v.(int64)
		if !ok || n < 0 || n > 1<<32-1 {
			return myErr(ErWrongValueForVar, "Variable '%s' can't be set to the value of '%v'", name, v)
		}
		s.cfg.ServerID = uint32(n)
	default:
		// other settable globals are accepted and have no effect here
	}
	s.notifyLocked()
	return nil
}

// setGTIDPurgedLocked implements SET GLOBAL gtid_purged: '+set' adds GTIDs
// that must not be in gtid_executed; a plain set must be a superset of the
// current gtid_purged and must not overlap what was executed but not purged
// (MySQL 8.0+ rules, see "gtid_purged" in the manual).
func (s *Server) setGTIDPurgedLocked(v any) error {
	str, ok := v.(string)
	if !ok {
		return myErr(ErWrongValueForVar, "Variable 'gtid_purged' can't be set to the value of '%v'", v)
	}
	st := s.st
	text := strings.TrimSpace(str)
	add := strings.HasPrefix(text, "+")
	set, err := gtid.Parse(strings.TrimPrefix(text, "+"))
	if err != nil {
		return errMalformedGTIDSet(str)
	}
	if add {
		if !set.Intersect(st.executed).IsEmpty() {
			return myErr(ErCantSetGTIDPurged, "The GTID_PURGED value being added ('%s') overlaps with GTID_EXECUTED ('%s').", set.OneLine(), st.executed.OneLine())
		}
	} else {
		if !st.purged.IsSubsetOf(set) {
			return myErr(ErCantSetGTIDPurged, "The new value of GTID_PURGED ('%s') must be a superset of the old value ('%s').", set.OneLine(), st.purged.OneLine())
		}
		if !st.executed.Subtract(st.purged).Intersect(set).IsEmpty() {
			return myErr(ErCantSetGTIDPurged, "The new value of GTID_PURGED ('%s') must not overlap with GTIDs executed but not purged.", set.OneLine())
		}
		set = set.Subtract(st.purged)
	}
	st.purged = st.purged.Union(set)
	st.executed = st.executed.Union(set)
	return nil
}

// defaultLockWaitTimeout is MySQL's default lock_wait_timeout (one year).
const defaultLockWaitTimeout = 31536000 * time.Second

func (sess *session) lockWait() time.Duration {
	if sess.lockWaitTimeout > 0 {
		return sess.lockWaitTimeout
	}
	return defaultLockWaitTimeout
}

// waitForOpenTransactionsLocked is what turning read_only from OFF to ON
// waits for in MySQL (the global read lock and close_cached_tables of
// fix_read_only; manual, read_only: "the attempt blocks until the locks are
// released and the transactions end"): every other session's open
// transaction that wrote must end, within the caller's lock_wait_timeout
// (1205). Meanwhile new writes wait (waitBehindFenceLocked). Inside the
// caller's own open transaction MySQL refuses with 1192.
func (s *Server) waitForOpenTransactionsLocked(sess *session) error {
	if sess.inTxn {
		return myErr(1192, "Can't execute the given command because you have active locked tables or an active transaction")
	}
	s.fencesPending++
	defer func() { s.fencesPending--; s.notifyLocked() }()
	deadline := time.NewTimer(sess.lockWait())
	defer deadline.Stop()
	for {
		open := false
		for _, o := range s.sessions {
			if o != sess && o.inTxn && len(o.txnOps) > 0 {
				open = true
				break
			}
		}
		if !open {
			return nil
		}
		if err := s.waitForReadLockLocked(sess, deadline.C); err != nil {
			return err
		}
	}
}

// waitForReadLockLocked releases the server lock until the state changes,
// the deadline passes (1205, lock_wait_timeout) or the session or its
// statement is killed (1317); it holds the lock again when it returns.
func (s *Server) waitForReadLockLocked(sess *session, deadline <-chan time.Time) error {
	sess.state = "Waiting for global read lock"
	changed, qk := s.changed, sess.queryKil
	s.mu.Unlock()
	defer s.mu.Lock()
	select {
	case <-changed:
		return nil
	case <-deadline:
		return myErr(1205, "Lock wait timeout exceeded; try restarting transaction")
	case <-sess.killed:
		return myErr(ErQueryInterrupted, "Query execution was interrupted")
	case <-qk:
		return myErr(ErQueryInterrupted, "Query execution was interrupted")
	}
}

// waitBehindFenceLocked holds a write while a read_only change waits for
// open transactions, as MySQL's global read lock holds it; the write then
// meets the new read_only (1290). Bounded by the session's lock_wait_timeout.
func (s *Server) waitBehindFenceLocked(sess *session) error {
	if s.fencesPending == 0 {
		return nil
	}
	deadline := time.NewTimer(sess.lockWait())
	defer deadline.Stop()
	for s.fencesPending > 0 {
		if err := s.waitForReadLockLocked(sess, deadline.C); err != nil {
			return err
		}
	}
	sess.state = "executing"
	return nil
}
