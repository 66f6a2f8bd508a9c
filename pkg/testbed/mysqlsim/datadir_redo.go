package mysqlsim

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"time"
)

// Journal record kinds.
const (
	redoCommit = "commit" // a transaction committed (data, GTID, binary log)
	// redoApplied moves the applier's position in the relay log (after a
	// transaction it applied or skipped), as MySQL updates
	// mysql.slave_relay_log_info; the relay log itself is in its own files.
	redoApplied = "applied"
	// Records of data directories written before the relay log had files
	// of its own; read and ignored (the relay log they described is gone).
	redoRelay    = "relay"
	redoRelayPop = "relaypop"
)

// redoRecord is one journal record.
type redoRecord struct {
	Seq  uint64      `json:"s"`
	Kind string      `json:"k"`
	Txn  diskTxn     `json:"t,omitempty"`
	Pos  *applierPos `json:"p,omitempty"`
}

// Each record is framed as length (4 bytes LE), CRC-32 of the payload
// (4 bytes LE), payload (JSON), so a record cut short by a crash, or
// garbled, is recognised and discarded at recovery.
func encodeRedo(rec redoRecord) []byte {
	payload, _ := json.Marshal(rec) // cannot fail: plain data
	out := make([]byte, 8, 8+len(payload))
	binary.LittleEndian.PutUint32(out[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(out[4:8], crc32.ChecksumIEEE(payload))
	return append(out, payload...)
}

// decodeRedo reads complete records; torn reports bytes after the last one.
func decodeRedo(b []byte) (recs []redoRecord, torn bool) {
	for len(b) > 0 {
		if len(b) < 8 {
			return recs, true
		}
		n := binary.LittleEndian.Uint32(b[0:4])
		sum := binary.LittleEndian.Uint32(b[4:8])
		if uint64(len(b)-8) < uint64(n) {
			return recs, true
		}
		payload := b[8 : 8+n]
		var rec redoRecord
		if crc32.ChecksumIEEE(payload) != sum || json.Unmarshal(payload, &rec) != nil {
			return recs, true
		}
		recs = append(recs, rec)
		b = b[8+n:]
	}
	return recs, false
}

// replay applies one journal record to a recovering state, as the live
// server applied it (commitTxn is shared with the commit path).
func (st *state) replay(rec redoRecord) error {
	switch rec.Kind {
	case redoCommit:
		t, err := fromDiskTxn(rec.Txn)
		if err != nil {
			return err
		}
		st.commitTxn(t)
	case redoApplied:
		if st.repl == nil || rec.Pos == nil {
			return errors.New("applier record without a replication channel")
		}
		st.repl.applier = *rec.Pos
	case redoRelay, redoRelayPop:
	default:
		return errors.New("unknown record kind " + rec.Kind)
	}
	return nil
}

// commitTxn applies a transaction's changes, records its GTID and keeps it
// in the binary log. The live commit path and recovery share it.
func (st *state) commitTxn(t txn) {
	for _, op := range t.ops {
		st.apply(op)
	}
	st.executed = st.executed.Add(t.gtid)
	st.binlog = append(st.binlog, t)
}

// redoFlushInterval is how often buffered journal records are written
// and synced with relaxed durability, as InnoDB's once-per-second log
// flush (innodb_flush_log_at_timeout=1).
const redoFlushInterval = time.Second

// redoCheckpointEvery bounds the journal: after this many records the
// server writes a checkpoint and starts an empty journal.
const redoCheckpointEvery = 100000

// redoLog is the open journal of a running server (guarded by Server.mu).
// With durable settings each record is written and synced before the
// commit is acknowledged; otherwise records wait in buf, in process
// memory, until the next flush, and a crash loses them.
type redoLog struct {
	f       appendFile
	seq     uint64 // last record issued
	records int    // records since the checkpoint
	durable bool
	buf     []byte
	stop    chan struct{}
}

// append adds a record and makes it as durable as the settings say.
func (r *redoLog) append(kind string, t *txn) error {
	rec := redoRecord{Kind: kind}
	if t != nil {
		rec.Txn = toDiskTxn(*t)
	}
	return r.appendRecord(rec)
}

func (r *redoLog) appendRecord(rec redoRecord) error {
	r.seq++
	r.records++
	rec.Seq = r.seq
	r.buf = append(r.buf, encodeRedo(rec)...)
	if r.durable {
		return r.flush()
	}
	return nil
}

// flush writes and syncs the buffered records.
func (r *redoLog) flush() error {
	if len(r.buf) == 0 {
		return nil
	}
	if _, err := r.f.Write(r.buf); err != nil {
		return err
	}
	r.buf = r.buf[:0]
	return r.f.Sync()
}

// redoApplierLocked journals the applier's new position. Written after the
// transaction's commit record: a kill between the two leaves the position
// behind, and the applier then skips the transaction by its GTID.
func (s *Server) redoApplierLocked(p applierPos) {
	r := s.redo
	if r == nil {
		s.saveLocked()
		return
	}
	if err := r.appendRecord(redoRecord{Kind: redoApplied, Pos: &p}); err != nil {
		s.log.Error("writing the redo journal failed", "err", err.Error())
	}
	if r.records >= redoCheckpointEvery {
		s.saveLocked()
	}
}
