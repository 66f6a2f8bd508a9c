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
	if !sess.isAdmin() {
		return errNeedPrivilege("CLONE_ADMIN")
	}
	donor := host + ":" + strconv.FormatInt(port, 10)
	s.mu.Lock()
	list := s.st.cloneValidDonorList
	s.mu.Unlock()
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

type cloneSnapshot struct {
	executed gtid.Set
	dbs      map[string]*database
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
	snap := cloneSnapshot{executed: executed, dbs: map[string]*database{}}
	for name, tables := range w.DBs {
		d := &database{tables: map[string]*dataTable{}}
		for tn, t := range tables {
			d.tables[tn] = &dataTable{cols: t.Cols, rows: normalizeJSONRows(t.Rows)}
		}
		snap.dbs[name] = d
	}
	return snap, nil
}

// installSnapshotLocked replaces user data and GTID state with the donor's.
// The replication configuration is kept, its relay log is discarded.
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
	if ch := s.st.repl; ch != nil {
		ch.relay, ch.retrieved = nil, gtid.Set{}
	}
}

// String helps logs.
func (c cloneSnapshot) String() string {
	return fmt.Sprintf("clone snapshot executed=%s dbs=%d", c.executed.OneLine(), len(c.dbs))
}
