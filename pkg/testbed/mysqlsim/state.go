package mysqlsim

import (
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// state is a running mysqld's memory. What it keeps on disk (executed,
// purged, binlog, dbs, repl) is written to the data directory
// (datadir*.go) and rebuilt from it at every start; the global variables
// return to the configuration and the SET PERSIST values. CLONE replaces
// the on-disk part.
type state struct {
	readOnly, superReadOnly bool
	offlineMode             bool
	executed, purged        gtid.Set
	binlog                  []txn // transactions still in the binary log (executed minus purged)
	dbs                     map[string]*database
	repl                    *channel // nil when no replication channel is configured
	cloneValidDonorList     string
	persisted               map[string]persistedVar // SET PERSIST values (mysqld-auto.cnf)
	// syncBinlog and flushAtCommit are sync_binlog and
	// innodb_flush_log_at_trx_commit; both 1 makes every commit durable
	// before it is acknowledged.
	syncBinlog, flushAtCommit int
	// accounts are mysql.user and the grant tables (accounts.go).
	accounts accountSet
}

type database struct {
	tables map[string]*dataTable
	// charset and collation are the schema's defaults (schemata.go);
	// empty: the server's.
	charset, collation string
}

type dataTable struct {
	cols []string
	rows [][]any
}

// opKind is a kind of data change recorded in the binary log.
type opKind int

const (
	opCreateDB opKind = iota
	opDropDB
	opCreateTable
	opInsert
	opDelete
	// opAccount is an account statement (CREATE/ALTER/DROP USER, GRANT,
	// REVOKE), logged as a Query event with its text (grants.go). The text
	// travels in cols[0], so every encoding of ops (journal, checkpoint,
	// replication stream) carries it as it is.
	opAccount
)

// writeOp is one data change, as logged and replayed by replicas.
type writeOp struct {
	kind        opKind
	db, table   string
	cols        []string
	rows        [][]any
	ifExists    bool // IF NOT EXISTS / IF EXISTS
	description string
}

// txn is one transaction in the binary log.
type txn struct {
	gtid      gtid.GTID
	ops       []writeOp
	committed time.Time // original commit time on the source that created it
}

func newState(cfg Config) *state {
	return &state{
		readOnly:      cfg.ReadOnly || cfg.SuperReadOnly,
		superReadOnly: cfg.SuperReadOnly,
		dbs: map[string]*database{
			"mysql":              {tables: map[string]*dataTable{}},
			"performance_schema": {tables: map[string]*dataTable{}},
			"information_schema": {tables: map[string]*dataTable{}},
			"sys":                {tables: map[string]*dataTable{}},
		},
		persisted:     map[string]persistedVar{},
		accounts:      accountSet{},
		syncBinlog:    defaultSyncBinlog,
		flushAtCommit: defaultFlushLogAtTrxCommit,
	}
}

// systemSchemas are never written to by the table store or cloned over.
var systemSchemas = map[string]bool{"mysql": true, "performance_schema": true, "information_schema": true, "sys": true}

// check validates an op against the current data without changing it.
func (st *state) check(op writeOp) error {
	switch op.kind {
	case opCreateDB:
		if _, ok := st.dbs[op.db]; ok && !op.ifExists {
			return myErr(1007, "Can't create database '%s'; database exists", op.db)
		}
	case opDropDB:
		if _, ok := st.dbs[op.db]; !ok && !op.ifExists {
			return myErr(1008, "Can't drop database '%s'; database doesn't exist", op.db)
		}
		if systemSchemas[op.db] {
			return myErr(1044, "Access denied for user to database '%s'", op.db)
		}
	case opCreateTable:
		d, ok := st.dbs[op.db]
		if !ok {
			return myErr(ErBadDB, "Unknown database '%s'", op.db)
		}
		if _, ok := d.tables[op.table]; ok && !op.ifExists {
			return myErr(ErTableExists, "Table '%s' already exists", op.table)
		}
	case opAccount:
		stmt, err := op.accountStmtOf() // with its context (partialrevokes.go)
		if err != nil {
			return err
		}
		return st.accounts.check(stmt)
	case opInsert, opDelete:
		t, err := st.table(op.db, op.table)
		if err != nil {
			return err
		}
		for _, r := range op.rows {
			if len(r) != len(t.cols) && len(op.cols) == 0 {
				return myErr(1136, "Column count doesn't match value count at row 1")
			}
		}
	}
	return nil
}

func (st *state) table(db, name string) (*dataTable, error) {
	d, ok := st.dbs[db]
	if !ok {
		return nil, myErr(ErBadDB, "Unknown database '%s'", db)
	}
	t, ok := d.tables[name]
	if !ok {
		return nil, myErr(ErNoSuchTable, "Table '%s.%s' doesn't exist", db, name)
	}
	return t, nil
}

// apply performs an op that passed check. Replicas apply logged ops with it.
func (st *state) apply(op writeOp) {
	switch op.kind {
	case opCreateDB:
		if _, ok := st.dbs[op.db]; !ok {
			cs, coll := settingsOf(op) // schemata.go
			st.dbs[op.db] = &database{tables: map[string]*dataTable{}, charset: cs, collation: coll}
		}
	case opDropDB:
		delete(st.dbs, op.db)
	case opCreateTable:
		d, ok := st.dbs[op.db]
		if !ok {
			return
		}
		if _, exists := d.tables[op.table]; !exists {
			d.tables[op.table] = &dataTable{cols: append([]string(nil), op.cols...)}
		}
	case opInsert:
		t, err := st.table(op.db, op.table)
		if err != nil {
			return
		}
		for _, r := range op.rows {
			t.rows = append(t.rows, orderRow(t.cols, op.cols, r))
		}
	case opDelete:
		if t, err := st.table(op.db, op.table); err == nil {
			t.rows = nil
		}
	case opAccount:
		if stmt, err := op.accountStmtOf(); err == nil {
			st.accounts.apply(stmt)
		}
	}
}

// accountOp is the op of an account statement whose text is MySQL's
// logged form (accountStmt.text).
func accountOp(text string) writeOp {
	return writeOp{kind: opAccount, cols: []string{text}, description: text}
}

func (op writeOp) stmtText() string {
	if len(op.cols) == 0 {
		return ""
	}
	return op.cols[0]
}

// orderRow puts values given for cols into the table's column order.
func orderRow(tableCols, cols []string, vals []any) []any {
	if len(cols) == 0 {
		return append([]any(nil), vals...)
	}
	out := make([]any, len(tableCols))
	for i, c := range cols {
		for j, tc := range tableCols {
			if equalFoldASCII(c, tc) && i < len(vals) {
				out[j] = vals[i]
			}
		}
	}
	return out
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// cloneData deep-copies the user data (not the system schemas).
func (st *state) cloneData() map[string]*database {
	out := map[string]*database{}
	for name, d := range st.dbs {
		nd := &database{tables: map[string]*dataTable{}, charset: d.charset, collation: d.collation}
		for tn, t := range d.tables {
			nt := &dataTable{cols: append([]string(nil), t.cols...)}
			for _, r := range t.rows {
				nt.rows = append(nt.rows, append([]any(nil), r...))
			}
			nd.tables[tn] = nt
		}
		out[name] = nd
	}
	return out
}
