package mysqlsim

import (
	"fmt"
	"os"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/binlogfile"
)

// The binary log files (docs/mysql-simulator.md, "Binary log"): every
// committed transaction that goes into s.st.binlog (the in-memory binary log
// replication reads) is also written to binlog.NNNNNN files in MySQL's
// format, in the data directory or, without one, in a temporary directory
// that lives as long as the Server.

// binlogServerVersion is the version written in the format description and
// the GTID events (MySQL writes its version without the suffix).
const binlogServerVersion = "9.7.0"

// Defaults of the binary log's system variables (MySQL 9.7 manual).
const (
	defaultMaxBinlogSize          = binlogfile.DefaultMaxSize
	defaultBinlogExpireLogsSecond = 2592000 // 30 days
	minMaxBinlogSize              = 4096
)

// binlogFiles is the open file set of the running server and the binary
// log's global variables, which a restart returns to their defaults.
type binlogFiles struct {
	fs      *binlogfile.FileSet
	gen     uint64 // Server.gen the file set was opened for
	dir     string
	tempDir bool // no data directory: removed when the Server closes
	// purges is fs.Purges() when gtid_purged last followed the files.
	purges int
	// maxSize and expire are max_binlog_size and binlog_expire_logs_seconds;
	// 0 and unset mean the defaults.
	maxSize   int64
	expire    int64
	expireSet bool
}

func (b *binlogFiles) maxSizeValue() int64 {
	if b.maxSize == 0 {
		return defaultMaxBinlogSize
	}
	return b.maxSize
}

func (b *binlogFiles) expireValue() int64 {
	if !b.expireSet {
		return defaultBinlogExpireLogsSecond
	}
	return b.expire
}

// binlogFileSetLocked returns the running server's file set, opening it at
// the first use after a start as mysqld opens a new binary log at every
// start: recovery of the last file, a new file, expiry. Nil when it cannot
// be opened (logged).
func (s *Server) binlogFileSetLocked() *binlogfile.FileSet {
	b := &s.binlog
	if b.fs != nil && b.gen == s.gen {
		return b.fs
	}
	if b.fs != nil { // a restart whose shutdown did not close the files: a crash
		b.fs.Abandon()
		b.fs = nil
	}
	if b.dir == "" {
		if s.boot.DataDir != "" {
			b.dir = s.boot.DataDir
		} else {
			dir, err := os.MkdirTemp("", "mysqlsim-binlog-")
			if err != nil {
				s.log.Error("creating the binary log directory failed", "err", err.Error())
				return nil
			}
			b.dir, b.tempDir = dir, true
		}
	}
	fs, err := binlogfile.Open(binlogfile.Options{
		Dir: b.dir, ServerID: s.cfg.ServerID, ServerVersion: binlogServerVersion,
		MaxSize: b.maxSizeValue(), ExpireSeconds: b.expireValue(), Executed: s.st.executed,
		TrimToExecuted: true,
	})
	if err != nil {
		s.log.Error("opening the binary log failed", "dir", b.dir, "err", err.Error())
		return nil
	}
	b.fs, b.gen, b.purges = fs, s.gen, -1
	s.followBinlogPurgeLocked()
	return fs
}

// closeBinlogFilesLocked ends the file set at shutdown: a clean one writes
// a stop event, a crash leaves the file as it is. The variables return to
// their defaults (a restart re-applies SET PERSIST values after this).
func (s *Server) closeBinlogFilesLocked(clean bool) {
	b := &s.binlog
	if b.fs != nil {
		if clean {
			if err := b.fs.Close(); err != nil {
				s.log.Error("closing the binary log failed", "err", err.Error())
			}
		} else {
			b.fs.Abandon()
		}
		b.fs = nil
	}
	b.maxSize, b.expire, b.expireSet = 0, 0, false
	if s.closed && b.tempDir {
		_ = os.RemoveAll(b.dir)
		b.dir, b.tempDir = "", false
	}
}

// appendToBinlogFiles writes a committed transaction to the files. It runs
// before the transaction's changes are applied, so a DELETE's before image
// is the rows it removes. A transaction being applied from the relay log
// keeps its original commit time and server id and gets this server's
// commit time as its immediate one (log_replica_updates).
func (s *Server) appendToBinlogFiles(t txn) {
	fs := s.binlogFileSetLocked()
	if fs == nil {
		return
	}
	bt := binlogfile.Txn{GTID: t.gtid, OriginalCommit: t.committed, ImmediateCommit: t.committed,
		ServerID: s.cfg.ServerID, Ops: s.binlogOpsLocked(t.ops)}
	if ch := s.st.repl; ch != nil && len(ch.relay) > 0 && ch.relay[0].gtid == t.gtid {
		bt.ImmediateCommit = time.Now()
		if ch.sourceServerID != 0 {
			bt.ServerID = uint32(ch.sourceServerID)
		}
	}
	fs.MergeExecuted(s.st.executed)
	if _, _, err := fs.Append(bt); err != nil {
		s.log.Error("writing the binary log failed", "err", err.Error())
	}
	s.syncBinlogLocked(fs)
	s.followBinlogPurgeLocked()
}

// syncBinlogLocked makes the commit durable as the journal does
// (datadir_boot.go): with durable settings it is fsynced before the
// commit is acknowledged; otherwise it stays in process memory until the
// journal's flusher writes both once a second, so a kill loses the same
// tail from the binary log as from the data (docs/mysql-simulator.md).
func (s *Server) syncBinlogLocked(fs *binlogfile.FileSet) {
	if !s.st.durable() {
		return
	}
	if err := fs.Sync(); err != nil {
		s.log.Error("writing the binary log failed", "err", err.Error())
	}
}

// flushBinlogFilesLocked writes what relaxed durability left buffered.
func (s *Server) flushBinlogFilesLocked() {
	if b := &s.binlog; b.fs != nil && b.gen == s.gen {
		if err := b.fs.Flush(); err != nil {
			s.log.Error("writing the binary log failed", "err", err.Error())
		}
	}
}

// followBinlogPurgeLocked moves gtid_purged after files were purged
// (explicitly or by expiry): it becomes what was executed before the oldest
// remaining file (its Previous_gtids), and s.st.binlog keeps only what the
// files still hold.
func (s *Server) followBinlogPurgeLocked() {
	b := &s.binlog
	if b.fs == nil || b.fs.Purges() == b.purges {
		return
	}
	b.purges = b.fs.Purges()
	first, err := b.fs.FirstPrevious()
	if err != nil {
		s.log.Error("reading the binary log failed", "err", err.Error())
		return
	}
	purged := s.st.purged.Union(first)
	if purged.Equal(s.st.purged) {
		return
	}
	s.st.purged = purged
	s.st.executed = s.st.executed.Union(purged)
	kept := s.st.binlog[:0:0]
	for _, t := range s.st.binlog {
		if !purged.Contains(t.gtid) {
			kept = append(kept, t)
		}
	}
	s.st.binlog = kept
	s.log.Info("binary logs purged", "gtidPurged", purged.OneLine())
	s.saveLocked()
	s.notifyLocked()
}

// binlogOpsLocked turns the simulator's changes into the binary log's:
// DDL as its statement, inserts and deletes as full row images. A delete
// logs the table's rows as they are before the transaction plus what the
// transaction inserted before it (the tables are only read, never copied).
func (s *Server) binlogOpsLocked(ops []writeOp) []binlogfile.Op {
	type pending struct {
		t       *dataTable
		cleared bool    // the transaction already deleted the table's rows
		added   [][]any // rows the transaction inserted since
	}
	seen := map[string]*pending{}
	table := func(db, name string) *pending {
		k := db + "\x00" + name
		if p, ok := seen[k]; ok {
			return p
		}
		t, err := s.st.table(db, name)
		if err != nil {
			return nil
		}
		p := &pending{t: t}
		seen[k] = p
		return p
	}
	var out []binlogfile.Op
	for _, op := range ops {
		switch op.kind {
		case opCreateDB, opDropDB, opCreateTable:
			out = append(out, binlogfile.Op{Kind: binlogfile.OpQuery, DB: op.db, Query: ddlText(op)})
			if op.kind != opCreateTable {
				out[len(out)-1].DB = ""
			}
		case opAccount: // grants.go: account statements are logged as their statement
			out = append(out, binlogfile.Op{Kind: binlogfile.OpQuery, Query: op.stmtText()})
		case opInsert:
			p := table(op.db, op.table)
			if p == nil {
				continue
			}
			var rows [][]any
			for _, r := range op.rows {
				rows = append(rows, orderRow(p.t.cols, op.cols, r))
			}
			p.added = append(p.added, rows...)
			out = append(out, binlogfile.Op{Kind: binlogfile.OpInsert, DB: op.db, Table: op.table, Rows: rows})
		case opDelete:
			p := table(op.db, op.table)
			if p == nil {
				continue
			}
			var rows [][]any
			if !p.cleared {
				rows = append(rows, p.t.rows...)
			}
			rows = append(rows, p.added...)
			p.cleared, p.added = true, nil
			out = append(out, binlogfile.Op{Kind: binlogfile.OpDelete, DB: op.db, Table: op.table, Rows: rows})
		}
	}
	return out
}

// ddlText is the statement a DDL change is logged as: the client's text on
// the server where it ran; a canonical form where the change arrived by
// replication, whose stream carries changes rather than statement text.
func ddlText(op writeOp) string {
	if op.description != "" {
		return op.description
	}
	switch op.kind {
	case opCreateDB:
		cs, coll := settingsOf(op) // schemata.go
		opts := " CHARACTER SET " + cs + " COLLATE " + coll
		if op.ifExists {
			return "CREATE DATABASE IF NOT EXISTS `" + op.db + "`" + opts
		}
		return "CREATE DATABASE `" + op.db + "`" + opts
	case opDropDB:
		if op.ifExists {
			return "DROP DATABASE IF EXISTS `" + op.db + "`"
		}
		return "DROP DATABASE `" + op.db + "`"
	}
	q := "CREATE TABLE "
	if op.ifExists {
		q += "IF NOT EXISTS "
	}
	q += "`" + op.table + "` ("
	for i, c := range op.cols {
		if i > 0 {
			q += ", "
		}
		q += "`" + c + "` varchar(16383)"
	}
	return q + ")"
}

// resetBinlogFilesLocked is RESET BINARY LOGS AND GTIDS for the files.
func (s *Server) resetBinlogFilesLocked() {
	if fs := s.binlogFileSetLocked(); fs != nil {
		if err := fs.Reset(); err != nil {
			s.log.Error("resetting the binary log failed", "err", err.Error())
		}
		s.binlog.purges = fs.Purges()
	}
}

// removeBinlogFilesLocked deletes the binary log, as CLONE removes the
// recipient's binary logs before the donor's data arrives (manual, "Remote
// Cloning Operation Failure Handling"); the restart starts binlog.000001
// with the cloned gtid_executed as its Previous_gtids.
func (s *Server) removeBinlogFilesLocked() {
	fs := s.binlogFileSetLocked()
	if fs == nil {
		return
	}
	if err := fs.RemoveAll(); err != nil {
		s.log.Error("removing the binary log failed", "err", err.Error())
	}
	s.binlog.fs = nil
}

// purgeAllBinlogFilesLocked rotates and purges every older file, so the
// files hold nothing gtid_executed has (PurgeBinaryLogs).
func (s *Server) purgeAllBinlogFilesLocked() {
	fs := s.binlogFileSetLocked()
	if fs == nil {
		return
	}
	fs.MergeExecuted(s.st.executed)
	if err := fs.Rotate(); err != nil {
		s.log.Error("rotating the binary log failed", "err", err.Error())
		return
	}
	name, _ := fs.Current()
	if _, err := fs.PurgeTo(name); err != nil {
		s.log.Error("purging the binary log failed", "err", err.Error())
	}
	s.followBinlogPurgeLocked()
}

// binlogVarLocked reads max_binlog_size, binlog_expire_logs_seconds,
// log_bin_basename and log_bin_index.
func (s *Server) binlogVarLocked(name string) any {
	switch name {
	case "max_binlog_size":
		return s.binlog.maxSizeValue()
	case "binlog_expire_logs_seconds":
		return s.binlog.expireValue()
	}
	fs := s.binlogFileSetLocked()
	if fs == nil {
		return ""
	}
	if name == "log_bin_index" {
		return fs.IndexPath()
	}
	return fs.Basename()
}

// setBinlogVarLocked sets max_binlog_size (4096 to 1 GiB, rounded down to a
// multiple of 4096 as MySQL's block size does) or binlog_expire_logs_seconds
// (0 to 4294967295; 0 disables expiry).
func (s *Server) setBinlogVarLocked(name string, v any) error {
	n, ok := v.(int64)
	if !ok {
		return myErr(erWrongTypeForVar, "Incorrect argument type to variable '%s'", name)
	}
	b := &s.binlog
	switch name {
	case "max_binlog_size":
		n = min(max(n, minMaxBinlogSize), defaultMaxBinlogSize) / 4096 * 4096
		b.maxSize = n
		if fs := s.binlogFileSetLocked(); fs != nil {
			fs.SetMaxSize(n)
		}
	case "binlog_expire_logs_seconds":
		if n < 0 || n > 1<<32-1 {
			return myErr(ErWrongValueForVar, "Variable '%s' can't be set to the value of '%d'", name, n)
		}
		b.expire, b.expireSet = n, true
		if fs := s.binlogFileSetLocked(); fs != nil {
			fs.SetExpireSeconds(n)
		}
	}
	return nil
}

// binlogPositionLocked is SHOW BINARY LOG STATUS's File and Position.
func (s *Server) binlogPositionLocked() (string, uint64) {
	fs := s.binlogFileSetLocked()
	if fs == nil {
		return "", 0
	}
	name, pos := fs.Current()
	return name, uint64(pos)
}

// binlogContentsLocked reads back every transaction the files hold.
func (s *Server) binlogContentsLocked() ([]*binlogfile.FileContents, error) {
	fs := s.binlogFileSetLocked()
	if fs == nil {
		return nil, fmt.Errorf("mysqlsim: no binary log")
	}
	return fs.ReadAll()
}

// BinlogDir is where the server's binary log files are: the data
// directory, or the temporary directory of a server without one.
func (s *Server) BinlogDir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.binlogFileSetLocked()
	return s.binlog.dir
}
