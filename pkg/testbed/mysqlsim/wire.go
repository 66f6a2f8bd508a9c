package mysqlsim

// The clone recipient fetches from its donor over a real MySQL connection
// with a simulator-only statement standing in for the clone protocol:
//
//	SIMULATOR CLONE SNAPSHOT   -- gtid_executed and all user data
//
// It checks the privilege MySQL checks (BACKUP_ADMIN). wireOp is also the
// journal's and checkpoint's form of a change (datadir_checkpoint.go).

type wireOp struct {
	Kind     opKind   `json:"k"`
	DB       string   `json:"d,omitempty"`
	Table    string   `json:"t,omitempty"`
	Cols     []string `json:"c,omitempty"`
	Rows     [][]any  `json:"r,omitempty"`
	IfExists bool     `json:"e,omitempty"`
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

// execSimulator handles the simulator-only statement that remains:
// SIMULATOR CLONE SNAPSHOT (clone.go). Replication uses MySQL's own
// protocol (receiver.go, dump.go).
func (s *Server) execSimulator(sess *session, c *cursor) (*table, error) {
	if c.acceptKw("CLONE", "SNAPSHOT") {
		if err := c.expectEnd(); err != nil {
			return nil, err
		}
		return s.cloneSnapshot(sess)
	}
	return nil, c.errHere()
}
