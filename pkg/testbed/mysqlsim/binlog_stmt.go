package mysqlsim

import (
	"errors"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/binlogfile"
)

// Error numbers of the binary log statements (MySQL 9.7 error reference).
const (
	erErrorWhenExecutingCommand = 1220 // ER_ERROR_WHEN_EXECUTING_COMMAND
	erWrongTypeForVar           = 1232 // ER_WRONG_TYPE_FOR_VAR
	erUnknownTargetBinlog       = 1373 // ER_UNKNOWN_TARGET_BINLOG
)

// execFlushBinaryLogs is FLUSH [NO_WRITE_TO_BINLOG | LOCAL] BINARY LOGS:
// the current file is closed with a rotate event and a new one started;
// expired files are purged.
func (s *Server) execFlushBinaryLogs(sess *session, c *cursor) error {
	if !c.acceptKw("NO_WRITE_TO_BINLOG") {
		c.acceptKw("LOCAL")
	}
	if !c.acceptKw("BINARY", "LOGS") {
		return errNotSupported("FLUSH of this kind in the Bloodraven MySQL simulator")
	}
	if err := c.expectEnd(); err != nil {
		return err
	}
	if !sess.hasPrivilege("RELOAD") {
		return errNeedPrivilege("RELOAD")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.binlogFileSetLocked()
	if fs == nil {
		return myErr(erErrorWhenExecutingCommand, "Error when executing command FLUSH BINARY LOGS: could not open the binary log")
	}
	fs.MergeExecuted(s.st.executed)
	if err := fs.Rotate(); err != nil {
		return myErr(erErrorWhenExecutingCommand, "Error when executing command FLUSH BINARY LOGS: %s", err.Error())
	}
	s.followBinlogPurgeLocked()
	s.notifyLocked()
	return nil
}

// execPurgeBinaryLogs is PURGE {BINARY | MASTER} LOGS {TO 'file' | BEFORE
// 'datetime'}. The datetime is read in the session time zone (the
// simulator's system time zone is UTC).
func (s *Server) execPurgeBinaryLogs(sess *session, c *cursor) error {
	if !c.acceptKw("BINARY", "LOGS") && !c.acceptKw("MASTER", "LOGS") {
		return c.errHere()
	}
	to := c.acceptKw("TO")
	if !to && !c.acceptKw("BEFORE") {
		return c.errHere()
	}
	arg, err := c.stringLit()
	if err != nil {
		return err
	}
	if err := c.expectEnd(); err != nil {
		return err
	}
	if !sess.hasAnyPrivilege("BINLOG_ADMIN", "SUPER") {
		return errNeedPrivilege("SUPER or BINLOG_ADMIN")
	}
	var before time.Time
	if !to {
		if before, err = parseDatetime(arg); err != nil {
			return myErr(ErWrongArguments, "Incorrect arguments to PURGE LOGS BEFORE")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.binlogFileSetLocked()
	if fs == nil {
		return myErr(erUnknownTargetBinlog, "Target log not found in binlog index")
	}
	if to {
		_, err = fs.PurgeTo(arg)
	} else {
		_, err = fs.PurgeBefore(before)
	}
	if errors.Is(err, binlogfile.ErrUnknownLog) {
		return myErr(erUnknownTargetBinlog, "Target log not found in binlog index")
	}
	if err != nil {
		return myErr(erErrorWhenExecutingCommand, "Error when executing command PURGE BINARY LOGS: %s", err.Error())
	}
	s.followBinlogPurgeLocked()
	return nil
}

func parseDatetime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02 15:04:05.999999", "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("bad datetime")
}

// showBinaryLogs is SHOW BINARY LOGS: every file of the index with its
// size; binary log encryption is not modelled.
func (s *Server) showBinaryLogs(sess *session, c *cursor) (*table, error) {
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	if !sess.hasAnyPrivilege("REPLICATION CLIENT", "SUPER") {
		return nil, errNeedPrivilege("SUPER, REPLICATION CLIENT")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &table{cols: []column{{"Log_name", colString}, {"File_size", colUint}, {"Encrypted", colString}}}
	fs := s.binlogFileSetLocked()
	if fs == nil {
		return t, nil
	}
	files, err := fs.Files()
	if err != nil {
		return nil, myErr(erErrorWhenExecutingCommand, "Error when executing command SHOW BINARY LOGS: %s", err.Error())
	}
	for _, f := range files {
		t.rows = append(t.rows, []any{f.Name, uint64(f.Size), "No"})
	}
	return t, nil
}

// binaryLogStatusLocked is SHOW BINARY LOG STATUS's row.
func (s *Server) binaryLogStatusLocked() *table {
	file, pos := s.binlogPositionLocked()
	return &table{
		cols: []column{{"File", colString}, {"Position", colUint}, {"Binlog_Do_DB", colString},
			{"Binlog_Ignore_DB", colString}, {"Executed_Gtid_Set", colString}},
		rows: [][]any{{file, pos, "", "", s.st.executed.String()}},
	}
}

// showBinlogEvents is SHOW BINLOG EVENTS [IN 'file'] [FROM pos] [LIMIT
// [offset,] count]; without IN it lists the first file of the index.
func (s *Server) showBinlogEvents(sess *session, c *cursor) (*table, error) {
	var file string
	var from, offset, limit int64 = 4, 0, -1
	var err error
	if c.acceptKw("IN") {
		if file, err = c.stringLit(); err != nil {
			return nil, err
		}
	}
	if c.acceptKw("FROM") {
		if from, err = c.intLit(); err != nil {
			return nil, err
		}
	}
	if c.acceptKw("LIMIT") {
		if limit, err = c.intLit(); err != nil {
			return nil, err
		}
		if c.acceptPunct(",") {
			offset = limit
			if limit, err = c.intLit(); err != nil {
				return nil, err
			}
		}
	}
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	if !sess.hasPrivilege("REPLICATION SLAVE") {
		return nil, errNeedPrivilege("REPLICATION SLAVE")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	events, err := s.binlogEventsLocked(file)
	if err != nil {
		return nil, err
	}
	t := &table{cols: []column{{"Log_name", colString}, {"Pos", colUint}, {"Event_type", colString},
		{"Server_id", colUint}, {"End_log_pos", colUint}, {"Info", colString}}}
	start := -1
	for i, e := range events.Events {
		if e.Pos == from {
			start = i
		}
	}
	if start < 0 && from > 4 {
		return nil, myErr(erErrorWhenExecutingCommand, "Error when executing command SHOW BINLOG EVENTS: Wrong offset or I/O error")
	}
	for i := max(start, 0) + int(offset); i < len(events.Events) && (limit < 0 || int64(len(t.rows)) < limit); i++ {
		e := events.Events[i]
		t.rows = append(t.rows, []any{events.Name, uint64(e.Pos), e.Type, uint64(e.ServerID), uint64(e.EndLogPos), e.Info})
	}
	return t, nil
}

func (s *Server) binlogEventsLocked(file string) (*binlogfile.FileContents, error) {
	files, err := s.binlogContentsLocked()
	if err != nil {
		return nil, myErr(erErrorWhenExecutingCommand, "Error when executing command SHOW BINLOG EVENTS: %s", err.Error())
	}
	for _, f := range files {
		if file == "" || f.Name == file {
			return f, nil
		}
	}
	return nil, myErr(erErrorWhenExecutingCommand, "Error when executing command SHOW BINLOG EVENTS: Could not find target log")
}
