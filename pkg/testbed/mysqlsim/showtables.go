package mysqlsim

import (
	"sort"
	"strings"
)

// showTables is SHOW [FULL] TABLES [{FROM | IN} db] [LIKE 'pattern'] (manual,
// "SHOW TABLES Statement"): one column Tables_in_<db> (FULL adds Table_type,
// always BASE TABLE: the simulator has no views), the tables of the current
// or named schema that the session holds some privilege on, in name order.
// No schema: 1046; an unknown one: 1049.
func (s *Server) showTables(sess *session, c *cursor) (*table, error) {
	full := c.acceptKw("FULL")
	if !c.acceptKw("TABLES") {
		return nil, c.errHere()
	}
	db := ""
	if c.acceptKw("FROM") || c.acceptKw("IN") {
		name, err := c.ident()
		if err != nil {
			return nil, err
		}
		db = name
	}
	pattern := "%"
	if c.acceptKw("LIKE") {
		p, err := c.stringLit()
		if err != nil {
			return nil, err
		}
		pattern = p
	}
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if db == "" {
		db = sess.db
	}
	if db == "" {
		return nil, myErr(ErNoDB, "No database selected")
	}
	d, ok := s.st.dbs[db]
	if !ok {
		return nil, myErr(ErBadDB, "Unknown database '%s'", db)
	}
	var names []string
	for n := range d.tables {
		if likeMatch(strings.ToLower(pattern), strings.ToLower(n)) && sess.seesTable(db, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	t := &table{cols: []column{{"Tables_in_" + db, colString}}}
	if full {
		t.cols = append(t.cols, column{"Table_type", colString})
	}
	for _, n := range names {
		row := []any{n}
		if full {
			row = append(row, "BASE TABLE")
		}
		t.rows = append(t.rows, row)
	}
	return t, nil
}

// seesTable is SHOW TABLES' visibility: any privilege on the table.
func (sess *session) seesTable(db, name string) bool {
	for _, p := range []string{"SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "INDEX"} {
		if sess.hasTablePrivilege(db, name, p) {
			return true
		}
	}
	return false
}
