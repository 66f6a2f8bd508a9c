package mysqlsim

import (
	"fmt"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// MySQL error numbers the simulator returns. Names follow MySQL's
// include/mysqld_error.h (MySQL 9.x spelling, REPLICA/SOURCE).
const (
	ErAccessDenied               = 1045 // ER_ACCESS_DENIED_ERROR
	ErNoDB                       = 1046 // ER_NO_DB_ERROR
	ErBadDB                      = 1049 // ER_BAD_DB_ERROR
	ErTableExists                = 1050 // ER_TABLE_EXISTS_ERROR
	ErParse                      = 1064 // ER_PARSE_ERROR
	ErNoSuchThread               = 1094 // ER_NO_SUCH_THREAD
	ErKillDenied                 = 1095 // ER_KILL_DENIED_ERROR
	ErTableAccessDenied          = 1142 // ER_TABLEACCESS_DENIED_ERROR
	ErNoSuchTable                = 1146 // ER_NO_SUCH_TABLE
	ErUnknownSystemVariable      = 1193 // ER_UNKNOWN_SYSTEM_VARIABLE
	ErReplicaNotConfigured       = 1200 // ER_REPLICA_CONFIGURATION
	ErWrongArguments             = 1210 // ER_WRONG_ARGUMENTS
	ErSpecificAccessDenied       = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR
	ErGlobalVariable             = 1229 // ER_GLOBAL_VARIABLE
	ErWrongValueForVar           = 1231 // ER_WRONG_VALUE_FOR_VAR
	ErNotSupportedYet            = 1235 // ER_NOT_SUPPORTED_YET
	ErSourceFatalReadingBinlog   = 1236 // ER_SOURCE_FATAL_ERROR_READING_BINLOG
	ErIncorrectGlobalLocalVar    = 1238 // ER_INCORRECT_GLOBAL_LOCAL_VAR (read-only variable)
	ErOptionPreventsStatement    = 1290 // ER_OPTION_PREVENTS_STATEMENT
	ErQueryInterrupted           = 1317 // ER_QUERY_INTERRUPTED
	ErMalformedGTIDSet           = 1772 // ER_MALFORMED_GTID_SET_SPECIFICATION
	ErCantSetGTIDPurged          = 3546 // ER_CANT_SET_GTID_PURGED_DUE_SETS_CONSTRAINTS
	ErReplicaIOThreadMustStop    = 3021 // ER_REPLICA_CHANNEL_IO_THREAD_MUST_STOP
	ErReplicaSQLThreadMustStop   = 3022 // ER_REPLICA_CHANNEL_SQL_THREAD_MUST_STOP
	ErReplicaChannelMustStop     = 3081 // ER_REPLICA_CHANNEL_MUST_STOP
	ErRestartServerFailed        = 3707 // ER_RESTART_SERVER_FAILED
	ErCloneDonor                 = 3862 // ER_CLONE_DONOR
	ErCloneSysConfig             = 3869 // ER_CLONE_SYS_CONFIG
	ErServerSourceFatalReadingBL = 13114
	CrConnHostError              = 2003 // CR_CONN_HOST_ERROR (client-side, reported by clone and the receiver)
)

var sqlStates = map[uint16]string{
	ErAccessDenied: "28000", ErNoDB: "3D000", ErBadDB: "42000", ErTableExists: "42S01", ErParse: "42000",
	ErTableAccessDenied: "42000", ErNoSuchTable: "42S02", ErUnknownSystemVariable: "HY000",
	ErWrongArguments: "HY000", ErSpecificAccessDenied: "42000", ErGlobalVariable: "HY000",
	ErWrongValueForVar: "42000", ErNotSupportedYet: "42000", ErIncorrectGlobalLocalVar: "HY000",
	ErQueryInterrupted: "70100", ErKillDenied: "HY000", ErNoSuchThread: "HY000",
}

// myError is a MySQL error as sent to clients.
type myError = gomysql.MyError

func myErr(code uint16, format string, args ...any) *gomysql.MyError {
	state, ok := sqlStates[code]
	if !ok {
		state = "HY000"
	}
	return &gomysql.MyError{Code: code, State: state, Message: fmt.Sprintf(format, args...)}
}

func errParse(near string) *gomysql.MyError {
	if len(near) > 80 {
		near = near[:80]
	}
	return myErr(ErParse, "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '%s' at line 1", near)
}

func errReadOnly(super bool) *gomysql.MyError {
	opt := "--read-only"
	if super {
		opt = "--super-read-only"
	}
	return myErr(ErOptionPreventsStatement, "The MySQL server is running with the %s option so it cannot execute this statement", opt)
}

func errNeedPrivilege(privs string) *gomysql.MyError {
	return myErr(ErSpecificAccessDenied, "Access denied; you need (at least one of) the %s privilege(s) for this operation", privs)
}

func errMalformedGTIDSet(s string) *gomysql.MyError {
	if len(s) > 200 {
		s = s[:200]
	}
	return myErr(ErMalformedGTIDSet, "Malformed GTID set specification '%s'.", s)
}

func errNotSupported(what string) *gomysql.MyError {
	return myErr(ErNotSupportedYet, "This version of MySQL doesn't yet support '%s'", what)
}
