package mysqlsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// execClone implements CLONE INSTANCE FROM 'user'@'host':port IDENTIFIED BY
// 'password' [REQUIRE [NO] SSL] (manual: "The Clone Plugin", "Cloning Remote
// Data"): the donor must be in clone_valid_donor_list and reachable, its
// account needs BACKUP_ADMIN, the recipient's CLONE_ADMIN. The recipient's
// data and GTID sets are replaced (gtid_purged = gtid_executed = the donor's
// gtid_executed) and the server restarts, which drops every connection,
// including the one that ran CLONE.
func (s *Server) execClone(sess *session, c *cursor) error {
	if !c.acceptKw("INSTANCE", "FROM") {
		if c.peek().isKw("LOCAL") {
			return errNotSupported("CLONE LOCAL in the Bloodraven MySQL simulator")
		}
		return c.errHere()
	}
	user, err := c.stringLit()
	if err != nil {
		return err
	}
	if t := c.next(); !(t.kind == tIdent && t.text == "@") {
		c.i--
		return c.errHere()
	}
	host, err := c.stringLit()
	if err != nil {
		return err
	}
	if !c.acceptPunct(":") {
		return c.errHere()
	}
	port, err := c.intLit()
	if err != nil {
		return err
	}
	if !c.acceptKw("IDENTIFIED", "BY") {
		return c.errHere()
	}
	password, err := c.stringLit()
	if err != nil {
		return err
	}
	if c.acceptKw("DATA", "DIRECTORY") {
		return errNotSupported("CLONE ... DATA DIRECTORY in the Bloodraven MySQL simulator")
	}
	useTLS := false
	if c.acceptKw("REQUIRE") {
		useTLS = !c.acceptKw("NO")
		if err := c.expectKw("SSL"); err != nil {
			return err
		}
	}
	if err := c.expectEnd(); err != nil {
		return err
	}
	if !sess.hasPrivilege("CLONE_ADMIN") {
		return errNeedPrivilege("CLONE_ADMIN")
	}
	donor := host + ":" + strconv.FormatInt(port, 10)
	s.mu.Lock()
	list := s.st.cloneValidDonorList
	loaded := s.pluginActiveLocked("clone") // plugins.go
	s.mu.Unlock()
	if !loaded {
		return errPluginNotLoaded("clone")
	}
	if !inDonorList(list, donor) {
		return myErr(ErCloneSysConfig, "Clone system configuration: %s is not found in clone_valid_donor_list: %s", donor, list)
	}
	snap, err := s.fetchCloneSnapshot(s.resolve(host, int(port)), user, password, useTLS)
	if err != nil {
		return err
	}
	s.log.Info("clone finished, restarting", "donor", donor, "gtidExecuted", snap.executed.OneLine())
	s.mu.Lock()
	s.stopReplicationThreadsLocked()
	s.installSnapshotLocked(snap)
	s.saveLocked() // the clone is on disk before the restart
	if !s.cfg.Unsupervised {
		s.shutdownLocked(true) // drops every session, including this one
	}
	s.mu.Unlock()
	go func() {
		if s.cfg.Unsupervised {
			// MySQL answers the CLONE session with 3707, then shuts down
			// (sql_admin.cc: "Shutdown server if restart failed").
			time.Sleep(50 * time.Millisecond)
			s.mu.Lock()
			s.shutdownLocked(true)
			s.mu.Unlock()
		}
		time.Sleep(100 * time.Millisecond) // the restart takes a moment, as mysqld's does
		if err := s.Restart(); err != nil {
			s.log.Error("restart after clone failed", "err", err.Error())
		}
	}()
	if s.cfg.Unsupervised {
		return myErr(ErRestartServerFailed, "Restart server failed (mysqld is not managed by supervisor process).")
	}
	return myErr(ErQueryInterrupted, "Query execution was interrupted")
}

func inDonorList(list, donor string) bool {
	for _, d := range strings.Split(list, ",") {
		if strings.EqualFold(strings.TrimSpace(d), donor) {
			return true
		}
	}
	return false
}

// cloneSnapshot is what CLONE INSTANCE copies (manual, "Cloning Remote
// Data", "Cloning for Replication"): the user data, gtid_executed, the
// mysql schema's accounts and grants, and the replication metadata
// repositories (the connection metadata of the donor's channel); never the
// binary logs or relay logs, which are files.
type cloneSnapshot struct {
	executed gtid.Set
	dbs      map[string]*database
	accounts []diskAccount // nil from a donor that sent none: the recipient keeps its own
	channel  *cloneChannel // nil: the donor has no replication channel
}

// fetchCloneSnapshot copies the donor's data over a real connection.
func (s *Server) fetchCloneSnapshot(addr, user, password string, useTLS bool) (cloneSnapshot, error) {
	db := s.openPeer(addr, user, password, useTLS, false, 30*time.Second)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var raw string
	err := db.QueryRowContext(ctx, "SIMULATOR CLONE SNAPSHOT").Scan(&raw)
	if err != nil {
		var me *driver.MySQLError
		if errors.As(err, &me) {
			return cloneSnapshot{}, myErr(ErCloneDonor, "Clone Donor Error: %d : %s.", me.Number, me.Message)
		}
		return cloneSnapshot{}, myErr(ErCloneDonor, "Clone Donor Error: Connect failed: %d : Can't connect to MySQL server on '%s' (%s).", CrConnHostError, addr, err)
	}
	var w wireSnapshot
	if err := json.Unmarshal([]byte(raw), &w); err != nil {
		return cloneSnapshot{}, myErr(ErCloneDonor, "Clone Donor Error: bad snapshot: %v", err)
	}
	executed, err := gtid.Parse(w.Executed)
	if err != nil {
		return cloneSnapshot{}, myErr(ErCloneDonor, "Clone Donor Error: bad gtid_executed: %v", err)
	}
	snap := cloneSnapshot{executed: executed, dbs: map[string]*database{}, accounts: w.Accounts, channel: w.Channel}
	for name, tables := range w.DBs {
		d := &database{tables: map[string]*dataTable{}}
		d.charset, d.collation = w.DBSettings[name][0], w.DBSettings[name][1]
		for tn, t := range tables {
			d.tables[tn] = &dataTable{cols: t.Cols, rows: normalizeJSONRows(t.Rows)}
		}
		snap.dbs[name] = d
	}
	return snap, nil
}

// installSnapshotLocked replaces user data, GTID state, accounts and the
// replication metadata with the donor's; the binary log and the relay log
// are removed (manual, "Remote Cloning Operation Failure Handling",
// "Cloning for Replication").
func (s *Server) installSnapshotLocked(snap cloneSnapshot) {
	for name := range s.st.dbs {
		if !systemSchemas[name] {
			delete(s.st.dbs, name)
		}
	}
	for name, d := range snap.dbs {
		s.st.dbs[name] = d
	}
	s.st.executed, s.st.purged, s.st.binlog = snap.executed, snap.executed, nil
	s.removeBinlogFilesLocked() // binlog.go
	s.discardRelayLogLocked()   // relaylog.go: the relay log and Retrieved_Gtid_Set go too
	s.installClonedMetadataLocked(snap)
}

// installClonedMetadataLocked installs the donor's accounts and its
// replication channel's connection metadata, as the mysql schema's tables
// (mysql.user and the grant tables, mysql.slave_master_info) arrive with
// the clone. The recipient then has the donor's channel, or none when the
// donor had none; its configuration, auto.cnf and mysqld-auto.cnf are its
// own and stay. A channel is started by the restart unless
// skip_replica_start is set, as mysqld starts every configured channel.
func (s *Server) installClonedMetadataLocked(snap cloneSnapshot) {
	if snap.accounts != nil {
		s.st.installAccounts(fromDiskAccounts(snap.accounts)) // accounts.go
	}
	if snap.channel == nil {
		s.st.repl = nil
		return
	}
	w := snap.channel
	ch := newChannel()
	ch.host, ch.port, ch.user, ch.password, ch.autoPosition = w.Host, w.Port, w.User, w.Password, w.AutoPosition
	ch.ssl, ch.sslVerify, ch.sslCA, ch.sslCert, ch.sslKey = w.SSL, w.SSLVerify, w.SSLCA, w.SSLCert, w.SSLKey
	ch.connectRetry, ch.retryCount, ch.delay, ch.getPublicKey, ch.heartbeat = w.ConnectRetry, w.RetryCount, w.Delay, w.GetPublicKey, w.Heartbeat
	ch.ioWanted, ch.sqlWanted = ch.host != "", ch.host != ""
	s.st.repl = ch
}

// cloneChannel is a channel's connection metadata in a clone snapshot.
type cloneChannel struct {
	Host         string  `json:"host"`
	Port         int     `json:"port"`
	User         string  `json:"user"`
	Password     string  `json:"password"` // as mysql.slave_master_info holds it
	AutoPosition bool    `json:"autoPosition"`
	SSL          bool    `json:"ssl"`
	SSLVerify    bool    `json:"sslVerify"`
	SSLCA        string  `json:"sslCA"`
	SSLCert      string  `json:"sslCert"`
	SSLKey       string  `json:"sslKey"`
	ConnectRetry int     `json:"connectRetry"`
	RetryCount   int     `json:"retryCount"`
	Delay        int     `json:"delay"`
	GetPublicKey bool    `json:"getPublicKey"`
	Heartbeat    float64 `json:"heartbeat"`
}

func channelMetadata(ch *channel) *cloneChannel {
	if ch == nil {
		return nil
	}
	return &cloneChannel{Host: ch.host, Port: ch.port, User: ch.user, Password: ch.password, AutoPosition: ch.autoPosition,
		SSL: ch.ssl, SSLVerify: ch.sslVerify, SSLCA: ch.sslCA, SSLCert: ch.sslCert, SSLKey: ch.sslKey,
		ConnectRetry: ch.connectRetry, RetryCount: ch.retryCount, Delay: ch.delay, GetPublicKey: ch.getPublicKey, Heartbeat: ch.heartbeat}
}

// String helps logs.
func (c cloneSnapshot) String() string {
	return fmt.Sprintf("clone snapshot executed=%s dbs=%d", c.executed.OneLine(), len(c.dbs))
}

type wireSnapshot struct {
	Executed string                          `json:"executed"`
	DBs      map[string]map[string]wireTable `json:"dbs"`
	Accounts []diskAccount                   `json:"accounts"`
	Channel  *cloneChannel                   `json:"channel,omitempty"`
	// DBSettings: each schema's character set and collation (schemata.go).
	DBSettings map[string][2]string `json:"dbSettings,omitempty"`
}

type wireTable struct {
	Cols []string `json:"cols"`
	Rows [][]any  `json:"rows"`
}

// cloneSnapshot answers SIMULATOR CLONE SNAPSHOT on the donor.
func (s *Server) cloneSnapshot(sess *session) (*table, error) {
	if !sess.hasPrivilege("BACKUP_ADMIN") {
		return nil, errNeedPrivilege("BACKUP_ADMIN")
	}
	s.mu.Lock()
	if !s.pluginActiveLocked("clone") {
		s.mu.Unlock()
		return nil, errPluginNotLoaded("clone")
	}
	snap := wireSnapshot{Executed: s.st.executed.String(), DBs: map[string]map[string]wireTable{},
		Accounts: toDiskAccounts(s.st.cloneAccounts()), Channel: channelMetadata(s.st.repl)}
	for name, d := range s.st.cloneData() {
		if systemSchemas[name] {
			continue
		}
		tables := map[string]wireTable{}
		for tn, t := range d.tables {
			tables[tn] = wireTable{Cols: t.cols, Rows: t.rows}
		}
		snap.DBs[name] = tables
		if d.charset != "" {
			if snap.DBSettings == nil {
				snap.DBSettings = map[string][2]string{}
			}
			snap.DBSettings[name] = [2]string{d.charset, d.collation}
		}
	}
	s.mu.Unlock()
	b, err := json.Marshal(snap)
	if err != nil {
		return nil, err
	}
	return &table{cols: []column{{"snapshot", colString}}, rows: [][]any{{string(b)}}}, nil
}
