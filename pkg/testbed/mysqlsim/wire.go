package mysqlsim

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// The receiver and the clone recipient fetch from a peer over a real MySQL
// connection, with two simulator-only statements standing in for the
// binlog-dump and clone protocols:
//
//	SIMULATOR BINLOG DUMP GTID 'set' WAIT ms   -- transactions not in set, oldest first
//	SIMULATOR CLONE SNAPSHOT                   -- gtid_executed and all user data
//
// They check the privileges MySQL checks (REPLICATION SLAVE, BACKUP_ADMIN)
// and fail as MySQL's source fails (1236 when required GTIDs were purged).

type wireOp struct {
	Kind     opKind   `json:"k"`
	DB       string   `json:"d,omitempty"`
	Table    string   `json:"t,omitempty"`
	Cols     []string `json:"c,omitempty"`
	Rows     [][]any  `json:"r,omitempty"`
	IfExists bool     `json:"e,omitempty"`
}

func encodeOps(ops []writeOp) string {
	w := make([]wireOp, len(ops))
	for i, o := range ops {
		w[i] = wireOp{o.kind, o.db, o.table, o.cols, o.rows, o.ifExists}
	}
	b, _ := json.Marshal(w)
	return string(b)
}

func decodeOps(s string) ([]writeOp, error) {
	var w []wireOp
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return nil, err
	}
	ops := make([]writeOp, len(w))
	for i, o := range w {
		ops[i] = writeOp{kind: o.Kind, db: o.DB, table: o.Table, cols: o.Cols, rows: normalizeJSONRows(o.Rows), ifExists: o.IfExists}
	}
	return ops, nil
}

// normalizeJSONRows turns JSON numbers back into int64 where they were integers.
func normalizeJSONRows(rows [][]any) [][]any {
	for _, r := range rows {
		for j, v := range r {
			if f, ok := v.(float64); ok && f == float64(int64(f)) {
				r[j] = int64(f)
			}
		}
	}
	return rows
}

type wireSnapshot struct {
	Executed string                          `json:"executed"`
	DBs      map[string]map[string]wireTable `json:"dbs"`
}

type wireTable struct {
	Cols []string `json:"cols"`
	Rows [][]any  `json:"rows"`
}

// execSimulator handles the simulator-only statements.
func (s *Server) execSimulator(sess *session, c *cursor) (*table, error) {
	switch {
	case c.acceptKw("BINLOG", "DUMP", "GTID"):
		have, err := c.stringLit()
		if err != nil {
			return nil, err
		}
		if err := c.expectKw("WAIT"); err != nil {
			return nil, err
		}
		ms, err := c.intLit()
		if err != nil {
			return nil, err
		}
		set, err := gtid.Parse(have)
		if err != nil {
			return nil, errMalformedGTIDSet(have)
		}
		return s.binlogDump(sess, set, time.Duration(ms)*time.Millisecond)
	case c.acceptKw("CLONE", "SNAPSHOT"):
		if err := c.expectEnd(); err != nil {
			return nil, err
		}
		return s.cloneSnapshot(sess)
	}
	return nil, c.errHere()
}

// binlogDump answers a receiver: the binary-log transactions the replica
// lacks, waiting up to wait for new ones. A replica that lacks purged GTIDs
// gets MySQL's error 1236.
func (s *Server) binlogDump(sess *session, have gtid.Set, wait time.Duration) (*table, error) {
	if sess.user.Role != RoleReplication && sess.user.Role != RoleAdmin {
		return nil, errNeedPrivilege("REPLICATION SLAVE")
	}
	s.mu.Lock()
	sess.command, sess.state = "Binlog Dump GTID", "Source has sent all binlog to replica; waiting for more updates"
	s.mu.Unlock()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	ownAll := gtid.MustParse(fmt.Sprintf("%s:1-%d", s.cfg.ServerUUID, gtid.MaxGNO))
	for {
		s.mu.Lock()
		// As MySQL's binlog sender does, first: a replica holding GTIDs of
		// this server's own UUID that this server never executed (its binary
		// log lost a tail, or it was reset) must not silently diverge.
		if !have.Intersect(ownAll).IsSubsetOf(s.st.executed) {
			s.mu.Unlock()
			return nil, myErr(ErSourceFatalReadingBinlog, "Replica has more GTIDs than the source has, using the source's SERVER_UUID. This may indicate that the end of the binary log was truncated or that the last binary log file was lost, e.g., after a power or disk failure when sync_binlog != 1. The source may or may not have rolled back transactions that were already replicated to the replica. Suggest to replicate any transactions that source has rolled back from replica to source, and/or commit empty transactions on source to account for transactions that have been committed on source but are not included in GTID_EXECUTED.")
		}
		if missing := s.st.purged.Subtract(have); !missing.IsEmpty() {
			s.mu.Unlock()
			return nil, myErr(ErSourceFatalReadingBinlog, "Cannot replicate because the source purged required binary logs. Replicate the missing transactions from elsewhere, or provision a new replica from backup. Consider increasing the source's binary log expiration period. The GTID set sent by the replica is '%s', and the missing transactions are '%s'", have.OneLine(), missing.OneLine())
		}
		t := &table{cols: []column{{"gtid", colString}, {"committed", colInt}, {"ops", colString}}}
		for _, tx := range s.st.binlog {
			if !have.Contains(tx.gtid) {
				t.rows = append(t.rows, []any{tx.gtid.String(), tx.committed.UnixNano(), encodeOps(tx.ops)})
			}
			if len(t.rows) >= 500 {
				break
			}
		}
		changed := s.changed
		s.mu.Unlock()
		if len(t.rows) > 0 {
			return t, nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return t, nil
		case <-sess.killed:
			return nil, myErr(ErQueryInterrupted, "Query execution was interrupted")
		}
	}
}

func (s *Server) cloneSnapshot(sess *session) (*table, error) {
	if sess.user.Role != RoleReplication && sess.user.Role != RoleAdmin {
		return nil, errNeedPrivilege("BACKUP_ADMIN")
	}
	s.mu.Lock()
	snap := wireSnapshot{Executed: s.st.executed.String(), DBs: map[string]map[string]wireTable{}}
	for name, d := range s.st.cloneData() {
		if systemSchemas[name] {
			continue
		}
		tables := map[string]wireTable{}
		for tn, t := range d.tables {
			tables[tn] = wireTable{Cols: t.cols, Rows: t.rows}
		}
		snap.DBs[name] = tables
	}
	s.mu.Unlock()
	b, err := json.Marshal(snap)
	if err != nil {
		return nil, err
	}
	return &table{cols: []column{{"snapshot", colString}}, rows: [][]any{{string(b)}}}, nil
}
