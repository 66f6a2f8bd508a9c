package mysql

import (
	"errors"

	driver "github.com/go-sql-driver/mysql"
)

// MySQL server error numbers the product reacts to.
const (
	ErAccessDenied            = 1045 // ER_ACCESS_DENIED_ERROR
	ErNoSuchThread            = 1094 // ER_NO_SUCH_THREAD: the session is already gone
	ErKillDenied              = 1095 // ER_KILL_DENIED_ERROR
	ErReplicaNotConfigured    = 1200 // ER_REPLICA_CONFIGURATION
	ErLockWaitTimeout         = 1205 // ER_LOCK_WAIT_TIMEOUT: e.g. a fence that waited lock_wait_timeout for open transactions
	ErSpecificAccessDenied    = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR: missing privilege
	ErOptionPreventsStatement = 1290 // ER_OPTION_PREVENTS_STATEMENT: read_only / super_read_only
	ErQueryInterrupted        = 1317 // ER_QUERY_INTERRUPTED
	ErMalformedGTIDSet        = 1772 // ER_MALFORMED_GTID_SET_SPECIFICATION
	ErReplicaChannelMustStop  = 3081 // ER_REPLICA_CHANNEL_MUST_STOP
	ErRestartServerFailed     = 3707 // ER_RESTART_SERVER_FAILED: a clone finished on a mysqld without supervisor, which now shuts down
	ErCloneSysConfig          = 3869 // ER_CLONE_SYS_CONFIG: donor not in clone_valid_donor_list
)

// Number returns the MySQL error number carried by err, if any. Errors from
// this package wrap the driver's *mysql.MySQLError, so errors.As works too.
func Number(err error) (uint16, bool) {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		return me.Number, true
	}
	return 0, false
}

// IsNumber reports whether err carries MySQL error number n.
func IsNumber(err error, n uint16) bool {
	got, ok := Number(err)
	return ok && got == n
}

// IsReadOnly reports a write refused because of read_only or super_read_only.
func IsReadOnly(err error) bool { return IsNumber(err, ErOptionPreventsStatement) }

// IsAccessDenied reports a login or privilege refusal.
func IsAccessDenied(err error) bool {
	return IsNumber(err, ErAccessDenied) || IsNumber(err, ErSpecificAccessDenied)
}

// IsConnectionLost reports that the connection broke (server gone, killed,
// restarted, or a read timeout): the statement's outcome is unknown.
func IsConnectionLost(err error) bool {
	return errors.Is(err, driver.ErrInvalidConn) || errors.Is(err, errBadConn)
}
