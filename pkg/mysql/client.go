package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// Client talks to one site's mysqld. It is safe for concurrent use.
type Client struct {
	db      *sql.DB
	timeout time.Duration
	maxWait time.Duration // longest WAIT_FOR_EXECUTED_GTID_SET the read timeout allows
	addr    string
}

// Close closes the connection pool.
func (c *Client) Close() error { return c.db.Close() }

// DB exposes the pool for tests and for the write-load tool.
func (c *Client) DB() *sql.DB { return c.db }

// deadline gives ctx the client's statement timeout unless it has an
// earlier deadline already.
func (c *Client) deadline(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	d := c.timeout + extra
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

func (c *Client) wrap(stmt Statement, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("mysql %s at %s: %w", stmt.Name, c.addr, err)
}

func (c *Client) exec(ctx context.Context, stmt Statement, sqlText string, args ...any) error {
	ctx, cancel := c.deadline(ctx, 0)
	defer cancel()
	_, err := c.db.ExecContext(ctx, sqlText, args...)
	return c.wrap(stmt, err)
}

// Ping checks that the server answers.
func (c *Client) Ping(ctx context.Context) error {
	ctx, cancel := c.deadline(ctx, 0)
	defer cancel()
	if err := c.db.PingContext(ctx); err != nil {
		return fmt.Errorf("mysql ping at %s: %w", c.addr, err)
	}
	return nil
}

// Observation is a site's identity, role and GTID state.
type Observation struct {
	ServerUUID    string
	ServerID      uint32
	ReadOnly      bool
	SuperReadOnly bool
	GTIDExecuted  gtid.Set
	GTIDPurged    gtid.Set
	// Version is @@version (the sidecar reports it; ordered updates and
	// version-skew checks compare it).
	Version string
}

// Writable reports whether clients without special privileges may write.
func (o Observation) Writable() bool { return !o.ReadOnly && !o.SuperReadOnly }

// Observe reads identity, role and GTID sets (StmtObserve).
func (c *Client) Observe(ctx context.Context) (Observation, error) {
	ctx, cancel := c.deadline(ctx, 0)
	defer cancel()
	var o Observation
	var serverID uint64
	var ro, sro int64
	var executed, purged string
	err := c.db.QueryRowContext(ctx, StmtObserve.SQL).Scan(&o.ServerUUID, &serverID, &ro, &sro, &executed, &purged, &o.Version)
	if err != nil {
		return Observation{}, c.wrap(StmtObserve, err)
	}
	o.ServerID, o.ReadOnly, o.SuperReadOnly = uint32(serverID), ro == 1, sro == 1
	if o.GTIDExecuted, err = gtid.Parse(executed); err != nil {
		return Observation{}, c.wrap(StmtObserve, fmt.Errorf("gtid_executed: %w", err))
	}
	if o.GTIDPurged, err = gtid.Parse(purged); err != nil {
		return Observation{}, c.wrap(StmtObserve, fmt.Errorf("gtid_purged: %w", err))
	}
	return o, nil
}

// ReplicaStatus is a SHOW REPLICA STATUS row. Field names follow MySQL 9.7's
// column names; columns the product does not use are omitted.
type ReplicaStatus struct {
	ReplicaIOState      string // Replica_IO_State
	SourceHost          string // Source_Host
	SourceUser          string // Source_User
	SourcePort          int    // Source_Port
	ConnectRetry        int    // Connect_Retry
	ReplicaIORunning    string // Replica_IO_Running: Yes, No or Connecting
	ReplicaSQLRunning   string // Replica_SQL_Running: Yes or No
	LastErrno           int    // Last_Errno
	LastError           string // Last_Error
	SecondsBehindSource *int64 // Seconds_Behind_Source; nil when NULL (applier stopped, or not connected and caught up)
	LastIOErrno         int    // Last_IO_Errno
	LastIOError         string // Last_IO_Error
	LastSQLErrno        int    // Last_SQL_Errno
	LastSQLError        string // Last_SQL_Error
	SourceServerID      uint32 // Source_Server_Id
	SourceUUID          string // Source_UUID
	SQLDelay            int    // SQL_Delay
	SQLRemainingDelay   *int64 // SQL_Remaining_Delay; nil when NULL
	SQLRunningState     string // Replica_SQL_Running_State
	SourceRetryCount    int    // Source_Retry_Count
	LastIOErrorTime     string // Last_IO_Error_Timestamp
	LastSQLErrorTime    string // Last_SQL_Error_Timestamp
	RetrievedGTIDSet    gtid.Set
	ExecutedGTIDSet     gtid.Set
	AutoPosition        bool   // Auto_Position
	ChannelName         string // Channel_Name
	SourceSSLAllowed    string // Source_SSL_Allowed
	GetSourcePublicKey  bool   // Get_Source_public_key
}

// IORunning and SQLRunning report the thread states as booleans.
func (r *ReplicaStatus) IORunning() bool  { return r.ReplicaIORunning == "Yes" }
func (r *ReplicaStatus) SQLRunning() bool { return r.ReplicaSQLRunning == "Yes" }

// ReplicaStatus reads SHOW REPLICA STATUS; it returns nil, nil when the
// server has no replication channel (a primary).
func (c *Client) ReplicaStatus(ctx context.Context) (*ReplicaStatus, error) {
	ctx, cancel := c.deadline(ctx, 0)
	defer cancel()
	rows, err := c.db.QueryContext(ctx, StmtReplicaStatus.SQL)
	if err != nil {
		return nil, c.wrap(StmtReplicaStatus, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, c.wrap(StmtReplicaStatus, err)
	}
	if !rows.Next() {
		return nil, c.wrap(StmtReplicaStatus, rows.Err())
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, c.wrap(StmtReplicaStatus, err)
	}
	byName := make(map[string]sql.NullString, len(cols))
	for i, name := range cols {
		byName[name] = vals[i]
	}
	st, err := parseReplicaStatus(byName)
	return st, c.wrap(StmtReplicaStatus, err)
}

// parseReplicaStatus maps columns by name, so a server adding columns does
// not break it; a missing required column is an error naming it.
func parseReplicaStatus(row map[string]sql.NullString) (*ReplicaStatus, error) {
	var errs []string
	str := func(name string) string {
		v, ok := row[name]
		if !ok {
			errs = append(errs, "missing column "+name)
		}
		return v.String
	}
	num := func(name string) int64 {
		s := str(name)
		if s == "" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Sprintf("column %s: %q is not a number", name, s))
		}
		return n
	}
	nullNum := func(name string) *int64 {
		if v, ok := row[name]; ok && !v.Valid {
			return nil
		}
		n := num(name)
		return &n
	}
	set := func(name string) gtid.Set {
		s, err := gtid.Parse(str(name))
		if err != nil {
			errs = append(errs, fmt.Sprintf("column %s: %v", name, err))
		}
		return s
	}
	r := &ReplicaStatus{
		ReplicaIOState: str("Replica_IO_State"), SourceHost: str("Source_Host"), SourceUser: str("Source_User"),
		SourcePort: int(num("Source_Port")), ConnectRetry: int(num("Connect_Retry")),
		ReplicaIORunning: str("Replica_IO_Running"), ReplicaSQLRunning: str("Replica_SQL_Running"),
		LastErrno: int(num("Last_Errno")), LastError: str("Last_Error"),
		SecondsBehindSource: nullNum("Seconds_Behind_Source"),
		LastIOErrno:         int(num("Last_IO_Errno")), LastIOError: str("Last_IO_Error"),
		LastSQLErrno: int(num("Last_SQL_Errno")), LastSQLError: str("Last_SQL_Error"),
		SourceServerID: uint32(num("Source_Server_Id")), SourceUUID: str("Source_UUID"),
		SQLDelay: int(num("SQL_Delay")), SQLRemainingDelay: nullNum("SQL_Remaining_Delay"),
		SQLRunningState: str("Replica_SQL_Running_State"), SourceRetryCount: int(num("Source_Retry_Count")),
		LastIOErrorTime: str("Last_IO_Error_Timestamp"), LastSQLErrorTime: str("Last_SQL_Error_Timestamp"),
		RetrievedGTIDSet: set("Retrieved_Gtid_Set"), ExecutedGTIDSet: set("Executed_Gtid_Set"),
		AutoPosition: num("Auto_Position") == 1, ChannelName: str("Channel_Name"),
		SourceSSLAllowed: str("Source_SSL_Allowed"), GetSourcePublicKey: num("Get_Source_public_key") == 1,
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("SHOW REPLICA STATUS: %s", strings.Join(errs, "; "))
	}
	return r, nil
}

// Fence sets super_read_only=ON (StmtFence). On a writable server MySQL
// first waits for other sessions' open transactions to end; the session's
// lock_wait_timeout is set to the time left before the call's deadline
// (StmtSetLockWaitTimeout, whole seconds, at least 1), so the server gives up
// with 1205 when the caller does, instead of fencing later on its own.
func (c *Client) Fence(ctx context.Context) error {
	ctx, cancel := c.deadline(ctx, 0)
	defer cancel()
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return c.wrap(StmtFence, err)
	}
	defer conn.Close()
	secs := int64(1)
	if dl, ok := ctx.Deadline(); ok {
		secs = max(1, int64(time.Until(dl)/time.Second))
	}
	if _, err := conn.ExecContext(ctx, StmtSetLockWaitTimeout.SQL, secs); err != nil {
		return c.wrap(StmtSetLockWaitTimeout, err)
	}
	_, err = conn.ExecContext(ctx, StmtFence.SQL)
	return c.wrap(StmtFence, err)
}

// Unfence sets read_only=OFF, which also clears super_read_only (StmtUnfence).
func (c *Client) Unfence(ctx context.Context) error {
	return c.exec(ctx, StmtUnfence, StmtUnfence.SQL)
}

// StopReplica stops both replication threads.
func (c *Client) StopReplica(ctx context.Context) error {
	return c.exec(ctx, StmtStopReplica, StmtStopReplica.SQL)
}

// StopReplicaIOThread stops the receiver only.
func (c *Client) StopReplicaIOThread(ctx context.Context) error {
	return c.exec(ctx, StmtStopReplicaIOThread, StmtStopReplicaIOThread.SQL)
}

// StartReplica starts both replication threads.
func (c *Client) StartReplica(ctx context.Context) error {
	return c.exec(ctx, StmtStartReplica, StmtStartReplica.SQL)
}

// ResetReplicaAll removes the replication channel and its relay log.
func (c *Client) ResetReplicaAll(ctx context.Context) error {
	return c.exec(ctx, StmtResetReplicaAll, StmtResetReplicaAll.SQL)
}

// Promote turns a replica into a writable primary: stop replication, forget
// the channel, unfence. Callers wait for the applier first (WaitForGTIDSet on
// the received set): RESET REPLICA ALL discards what was not applied.
func (c *Client) Promote(ctx context.Context) error {
	for _, f := range []func(context.Context) error{c.StopReplica, c.ResetReplicaAll, c.Unfence} {
		if err := f(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Source is where a replica replicates from.
type Source struct {
	Host, User, Password string
	Port                 int
	SSL                  bool
	// SSLCA is SOURCE_SSL_CA, the CA file (a path on the replica's host)
	// the receiver verifies the source's certificate and its name
	// (SOURCE_SSL_VERIFY_SERVER_CERT = 1) against; empty: not verified.
	SSLCA        string
	ConnectRetry time.Duration // SOURCE_CONNECT_RETRY, whole seconds, default 10s
	RetryCount   int           // SOURCE_RETRY_COUNT, default 86400
}

func (s Source) validate() error {
	switch {
	case s.Host == "":
		return errors.New("source: Host is empty")
	case s.Port < 1 || s.Port > 65535:
		return fmt.Errorf("source: Port %d is out of range 1-65535", s.Port)
	case s.User == "":
		return errors.New("source: User is empty")
	}
	return nil
}

// ChangeSource points the channel at src with GTID auto-positioning
// (StmtChangeSource). The statement carries the password: it is never logged.
func (c *Client) ChangeSource(ctx context.Context, src Source) error {
	if err := src.validate(); err != nil {
		return c.wrap(StmtChangeSource, err)
	}
	retry := int64(src.ConnectRetry / time.Second)
	if retry <= 0 {
		retry = 10
	}
	count := int64(src.RetryCount)
	if count <= 0 {
		count = 86400
	}
	ssl, verify := Int(0), Int(0)
	if src.SSL {
		ssl = 1
	}
	if src.SSL && src.SSLCA != "" {
		verify = 1
	}
	text, err := StmtChangeSource.Render(map[string]any{
		"host": Str(src.Host), "port": Int(src.Port), "user": Str(src.User), "password": Str(src.Password),
		"ssl": ssl, "sslCA": Str(src.SSLCA), "sslVerify": verify, "connectRetry": Int(retry), "retryCount": Int(count),
	})
	if err != nil {
		return c.wrap(StmtChangeSource, err)
	}
	return c.exec(ctx, StmtChangeSource, text)
}

// Repoint stops replication, changes the source and starts replication.
func (c *Client) Repoint(ctx context.Context, src Source) error {
	if err := c.StopReplica(ctx); err != nil {
		return err
	}
	if err := c.ChangeSource(ctx, src); err != nil {
		return err
	}
	return c.StartReplica(ctx)
}

// WaitForGTIDSet waits up to timeout (server side) until gtid_executed
// contains set. It reports true when reached, false on timeout. The call's
// deadline is extended by timeout; the connection's read timeout must exceed
// it (Options.MaxWait).
func (c *Client) WaitForGTIDSet(ctx context.Context, set gtid.Set, timeout time.Duration) (bool, error) {
	if timeout <= 0 {
		return false, c.wrap(StmtWaitForGTIDSet, errors.New("timeout must be positive (0 would wait forever)"))
	}
	if timeout > c.maxWait {
		return false, c.wrap(StmtWaitForGTIDSet, fmt.Errorf("timeout %s exceeds Options.MaxWait %s: the driver's read timeout would cut the wait", timeout, c.maxWait))
	}
	ctx, cancel := c.deadline(ctx, timeout)
	defer cancel()
	var res int64
	secs := strconv.FormatFloat(timeout.Seconds(), 'f', 3, 64)
	err := c.db.QueryRowContext(ctx, StmtWaitForGTIDSet.SQL, set.OneLine(), secs).Scan(&res)
	if err != nil {
		return false, c.wrap(StmtWaitForGTIDSet, err)
	}
	return res == 0, nil
}

// GTIDSubtract returns a − b computed by the server (StmtGTIDSubtract).
func (c *Client) GTIDSubtract(ctx context.Context, a, b gtid.Set) (gtid.Set, error) {
	ctx, cancel := c.deadline(ctx, 0)
	defer cancel()
	var out string
	if err := c.db.QueryRowContext(ctx, StmtGTIDSubtract.SQL, a.OneLine(), b.OneLine()).Scan(&out); err != nil {
		return gtid.Set{}, c.wrap(StmtGTIDSubtract, err)
	}
	s, err := gtid.Parse(out)
	return s, c.wrap(StmtGTIDSubtract, err)
}

// GTIDSubset reports whether a ⊆ b, computed by the server (StmtGTIDSubset).
func (c *Client) GTIDSubset(ctx context.Context, a, b gtid.Set) (bool, error) {
	ctx, cancel := c.deadline(ctx, 0)
	defer cancel()
	var out int64
	if err := c.db.QueryRowContext(ctx, StmtGTIDSubset.SQL, a.OneLine(), b.OneLine()).Scan(&out); err != nil {
		return false, c.wrap(StmtGTIDSubset, err)
	}
	return out == 1, nil
}

// ErrantGTIDs returns the transactions this site executed that the active
// site's gtid_executed lacks.
func (c *Client) ErrantGTIDs(ctx context.Context, activeExecuted gtid.Set) (gtid.Set, error) {
	o, err := c.Observe(ctx)
	if err != nil {
		return gtid.Set{}, err
	}
	return c.GTIDSubtract(ctx, o.GTIDExecuted, activeExecuted)
}

// Session is a processlist row.
type Session struct {
	ID      uint64
	User    string
	Host    string
	DB      string
	Command string
	Time    int64
	State   string
	Info    string
}

// System reports sessions that are not client connections: replication
// threads, the event scheduler, and binlog dump threads serving replicas.
func (s Session) System() bool {
	return s.User == "system user" || s.User == "event_scheduler" || strings.HasPrefix(s.Command, "Binlog Dump") ||
		s.Command == "Daemon"
}

// ListSessions returns every session except the caller's own.
func (c *Client) ListSessions(ctx context.Context) ([]Session, error) {
	ctx, cancel := c.deadline(ctx, 0)
	defer cancel()
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return nil, c.wrap(StmtListSessions, err)
	}
	defer conn.Close()
	var self uint64
	if err := conn.QueryRowContext(ctx, StmtConnectionID.SQL).Scan(&self); err != nil {
		return nil, c.wrap(StmtConnectionID, err)
	}
	rows, err := conn.QueryContext(ctx, StmtListSessions.SQL)
	if err != nil {
		return nil, c.wrap(StmtListSessions, err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var s Session
		// Every column but ID may be NULL in performance_schema.processlist:
		// HOST for threads without a host (replication threads), USER and
		// HOST while a session changes user, TIME before a command started.
		var user, host, db, command, state, info sql.NullString
		var secs sql.NullInt64
		if err := rows.Scan(&s.ID, &user, &host, &db, &command, &secs, &state, &info); err != nil {
			return nil, c.wrap(StmtListSessions, err)
		}
		s.User, s.Host, s.DB, s.Command, s.Time = user.String, host.String, db.String, command.String, secs.Int64
		s.State, s.Info = state.String, info.String
		if s.ID != self {
			out = append(out, s)
		}
	}
	return out, c.wrap(StmtListSessions, rows.Err())
}

// KillSession ends session id (StmtKillConnection). A session that is
// already gone is not an error.
func (c *Client) KillSession(ctx context.Context, id uint64) error {
	text, err := StmtKillConnection.Render(map[string]any{"id": Int(id)})
	if err != nil {
		return c.wrap(StmtKillConnection, err)
	}
	err = c.exec(ctx, StmtKillConnection, text)
	if IsNumber(err, ErNoSuchThread) {
		return nil
	}
	return err
}

// EvictClientSessions kills every client session except system threads,
// the caller's own and those of the users in keep (e.g. the operator's and
// the replication account). It returns the sessions it killed.
func (c *Client) EvictClientSessions(ctx context.Context, keep ...string) ([]Session, error) {
	sessions, err := c.ListSessions(ctx)
	if err != nil {
		return nil, err
	}
	var killed []Session
	for _, s := range sessions {
		if s.System() || contains(keep, s.User) {
			continue
		}
		if err := c.KillSession(ctx, s.ID); err != nil {
			return killed, err
		}
		killed = append(killed, s)
	}
	return killed, nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// SetCloneDonorList sets clone_valid_donor_list ("host:port[,host:port]").
func (c *Client) SetCloneDonorList(ctx context.Context, donors string) error {
	return c.exec(ctx, StmtSetCloneDonorList, StmtSetCloneDonorList.SQL, donors)
}

// Donor is a clone donor.
type Donor struct {
	Host, User, Password string
	Port                 int
	RequireSSL           bool
}

// ErrCloneRestarting is returned by Clone when the statement ended the way a
// successful clone ends: the connection dropped (mysqld restarts under a
// supervisor), or error 3707 "Restart server failed" (mysqld without a
// supervisor, as in a container, shuts down and the kubelet starts it
// again). Callers reconnect and verify the cloned GTID set.
var ErrCloneRestarting = errors.New("CLONE INSTANCE ended with the server restarting (a clone ends this way): reconnect and verify")

// Clone replaces this server's data with the donor's (StmtClone); timeout
// bounds the whole copy.
func (c *Client) Clone(ctx context.Context, d Donor, timeout time.Duration) error {
	if d.Host == "" || d.User == "" || d.Port < 1 || d.Port > 65535 {
		return c.wrap(StmtClone, fmt.Errorf("donor: Host, User and Port (1-65535) are required, got host %q user %q port %d", d.Host, d.User, d.Port))
	}
	req := Raw("REQUIRE NO SSL")
	if d.RequireSSL {
		req = "REQUIRE SSL"
	}
	text, err := StmtClone.Render(map[string]any{
		"user": Str(d.User), "host": Str(d.Host), "port": Int(d.Port), "password": Str(d.Password), "requireSSL": req,
	})
	if err != nil {
		return c.wrap(StmtClone, err)
	}
	ctx, cancel := c.deadline(ctx, timeout)
	defer cancel()
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return c.wrap(StmtClone, err)
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, text)
	switch {
	case err != nil && IsConnectionLost(err):
		return c.wrap(StmtClone, ErrCloneRestarting)
	case IsNumber(err, ErRestartServerFailed):
		return c.wrap(StmtClone, fmt.Errorf("%w (%w)", ErrCloneRestarting, err))
	}
	return c.wrap(StmtClone, err)
}
