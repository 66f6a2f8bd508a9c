package mysqlsim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"
)

// MySQL 9.7's defaults: every commit is synced to the binary log and the
// redo log before it is acknowledged.
const (
	defaultSyncBinlog          = 1
	defaultFlushLogAtTrxCommit = 1
)

// identityLocked settles server_uuid as mysqld does: auto.cnf wins; without
// one, the configured UUID (or a new random one) is used and written at boot.
func (s *Server) identityLocked(fromDisk string) {
	switch {
	case fromDisk != "" && s.boot.ServerUUID != "" && fromDisk != s.boot.ServerUUID:
		s.log.Warn("server_uuid from auto.cnf differs from the configured one; auto.cnf wins, as in mysqld",
			"autoCnf", fromDisk, "configured", s.boot.ServerUUID)
		s.cfg.ServerUUID = fromDisk
	case fromDisk != "":
		s.cfg.ServerUUID = fromDisk
	case s.boot.ServerUUID != "":
		s.cfg.ServerUUID = s.boot.ServerUUID
	case s.cfg.ServerUUID == "":
		s.cfg.ServerUUID = randomUUID()
	}
}

// peekLocked replaces the in-memory state with what the data directory
// holds, writing nothing: what a restart would recover. New and Crash use
// it, so a stopped server shows its on-disk truth.
func (s *Server) peekLocked() error {
	r, err := recoverState(s.disk, s.boot)
	if err != nil {
		s.st = newState(s.boot)
		return err
	}
	s.identityLocked(r.serverUUID)
	s.st, s.peekSeq = r.st, r.seq
	s.peekRelayLogLocked() // relaylog.go: the relay log as its files hold it
	return nil
}

// bootLocked is mysqld's startup: recover the data directory (or
// initialise an empty one), write a fresh checkpoint and an empty journal,
// then apply the configuration and the SET PERSIST values. Nothing of the
// previous run's memory is used: the state comes from the files alone.
func (s *Server) bootLocked() error {
	s.closeRedoLocked(true)                            // left open by a start that failed half-way
	if err := s.rereadOptionFileLocked(); err != nil { // mycnf.go
		return err
	}
	r, err := recoverState(s.disk, s.boot)
	if err != nil {
		return err
	}
	s.cfg = s.boot
	s.identityLocked(r.serverUUID)
	if r.serverUUID == "" {
		if err := writeServerUUID(s.disk, s.cfg.ServerUUID); err != nil {
			return fmt.Errorf("mysqlsim: write %s: %w", autoCnfFile, err)
		}
	}
	s.st, s.peekSeq = r.st, r.seq
	s.st.syncBinlog, s.st.flushAtCommit = defaultSyncBinlog, defaultFlushLogAtTrxCommit
	if s.boot.SyncBinlog != nil {
		s.st.syncBinlog = *s.boot.SyncBinlog
	}
	if s.boot.InnoDBFlushLogAtTrxCommit != nil {
		s.st.flushAtCommit = *s.boot.InnoDBFlushLogAtTrxCommit
	}
	s.st.persisted = r.persisted
	if err := s.applyStartupOptionsLocked(); err != nil { // my.cnf's values, plugins, TLS
		return err
	}
	s.ext.firstBootPending = r.first && s.entrypointLocked() // firstboot.go
	startup := s.systemSession("startup")
	for name, v := range r.persisted {
		if !s.persistedGlobalsLoadLocked() { // persisted_globals_load=OFF: the file is kept, not applied
			break
		}
		if err := s.setGlobalLocked(startup, name, persistedArg(v.Value)); err != nil {
			s.log.Warn("persisted variable not applied", "variable", name, "err", err.Error())
		}
	}
	if err := s.openRedoLocked(r.seq); err != nil {
		return err
	}
	s.log.Info("mysqld recovered data directory", "firstBoot", r.first, "redoRecordsApplied", r.redoRecs,
		"tornTailDiscarded", r.tornTail, "gtidExecuted", s.st.executed.OneLine())
	return nil
}

// openRedoLocked writes a checkpoint of the recovered state, starts an
// empty journal after it and, with relaxed durability, the flusher.
func (s *Server) openRedoLocked(seq uint64) error {
	s.redo = &redoLog{seq: seq, stop: make(chan struct{})}
	if err := s.checkpointLocked(); err != nil {
		s.redo = nil
		return err
	}
	s.redo.durable = s.st.durable()
	s.wg.Add(1)
	go s.runRedoFlusher(s.redo)
	return nil
}

// durable reports sync_binlog=1 and innodb_flush_log_at_trx_commit=1: each
// commit is on disk before it is acknowledged.
func (st *state) durable() bool { return st.syncBinlog == 1 && st.flushAtCommit == 1 }

// checkpointLocked writes the whole on-disk state atomically and starts an
// empty journal. Every change that is not a commit or a relay-log append
// (CHANGE REPLICATION SOURCE, RESET, gtid_purged, CLONE, ...) is made
// durable this way.
func (s *Server) checkpointLocked() error {
	r := s.redo
	if r == nil {
		return s.checkpointStoppedLocked()
	}
	b, err := encodeCheckpoint(s.st, r.seq)
	if err != nil {
		return err
	}
	if err := s.disk.writeFileAtomic(checkpointFile, b); err != nil {
		return fmt.Errorf("mysqlsim: checkpoint: %w", err)
	}
	if r.f != nil {
		_ = r.f.Close()
	}
	if err := s.disk.writeFileAtomic(redoFile, nil); err != nil {
		return fmt.Errorf("mysqlsim: reset journal: %w", err)
	}
	f, err := s.disk.openAppend(redoFile)
	if err != nil {
		return err
	}
	r.f, r.buf, r.records = f, r.buf[:0], 0
	return nil
}

// checkpointStoppedLocked writes a stopped server's state (what peekLocked
// read, plus a fault injected since, e.g. errant transactions "on its
// disk" while it is down) as the checkpoint. The journal's complete
// records are all in it (peekSeq), so recovery skips them.
func (s *Server) checkpointStoppedLocked() error {
	if s.running {
		return nil // between a crash and the boot that follows: nothing to write
	}
	b, err := encodeCheckpoint(s.st, s.peekSeq)
	if err != nil {
		return err
	}
	return s.disk.writeFileAtomic(checkpointFile, b)
}

// saveLocked makes a change that is not journalled durable now.
func (s *Server) saveLocked() {
	if err := s.checkpointLocked(); err != nil {
		s.log.Error("writing the data directory failed", "err", err.Error())
	}
}

// redoLocked journals a commit or relay-log change.
func (s *Server) redoLocked(kind string, t *txn) {
	r := s.redo
	if r == nil {
		s.saveLocked() // a fault injected into a stopped server goes straight to its files
		return
	}
	if err := r.append(kind, t); err != nil {
		s.log.Error("writing the redo journal failed", "err", err.Error())
	}
	if r.records >= redoCheckpointEvery {
		s.saveLocked()
	}
}

// setDurabilityLocked follows a change of sync_binlog or
// innodb_flush_log_at_trx_commit; turning durability on writes what waits.
func (s *Server) setDurabilityLocked() {
	if r := s.redo; r != nil {
		r.durable = s.st.durable()
		if r.durable {
			if err := r.flush(); err != nil {
				s.log.Error("writing the redo journal failed", "err", err.Error())
			}
			s.flushBinlogFilesLocked()
		}
	}
}

// runRedoFlusher writes buffered records once a second, as InnoDB's master
// thread flushes the log with innodb_flush_log_at_trx_commit=0 or 2.
func (s *Server) runRedoFlusher(r *redoLog) {
	defer s.wg.Done()
	t := time.NewTicker(redoFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.redo == r {
			// the journal first: a kill between the two leaves the binary
			// log shorter than the data, never holding a lost commit
			if err := r.flush(); err != nil {
				s.log.Error("writing the redo journal failed", "err", err.Error())
			}
			s.flushBinlogFilesLocked()
		}
		s.mu.Unlock()
	}
}

// closeRedoLocked stops the journal. A clean shutdown writes everything
// first; a crash drops the buffer, as a killed process loses its memory.
func (s *Server) closeRedoLocked(clean bool) {
	r := s.redo
	if r == nil {
		return
	}
	if clean {
		s.saveLocked()
	}
	close(r.stop)
	if r.f != nil {
		_ = r.f.Close()
	}
	s.redo = nil
}

// removePIDFile removes the pid file at a clean shutdown, as mysqld does.
func (s *Server) removePIDFile() {
	if s.boot.PIDFile == "" {
		return
	}
	if err := os.Remove(s.boot.PIDFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("removing the pid file failed", "err", err.Error())
	}
}

// parseDurabilityVar checks a value of sync_binlog (0 to 4294967295) or
// innodb_flush_log_at_trx_commit (0, 1 or 2).
func parseDurabilityVar(name string, v any) (int, error) {
	n, ok := v.(int64)
	if str, isStr := v.(string); isStr {
		p, err := strconv.ParseInt(str, 10, 64)
		n, ok = p, err == nil
	}
	max := int64(1<<32 - 1)
	if name == "innodb_flush_log_at_trx_commit" {
		max = 2
	}
	if !ok || n < 0 || n > max {
		return 0, myErr(ErWrongValueForVar, "Variable '%s' can't be set to the value of '%v'", name, v)
	}
	return int(n), nil
}
