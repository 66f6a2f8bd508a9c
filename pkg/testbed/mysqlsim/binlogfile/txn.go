package binlogfile

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// OpKind is a kind of change in a transaction.
type OpKind int

const (
	// OpQuery is a statement logged as text: DDL, in a query event of its own.
	OpQuery OpKind = iota
	// OpInsert is rows written (a table map and WRITE_ROWS events).
	OpInsert
	// OpDelete is rows deleted (a table map and DELETE_ROWS events with the
	// full before image, binlog_row_image=FULL).
	OpDelete
)

// Op is one change. Row values are nil (NULL), int64 or string and are
// complete rows in the table's column order.
type Op struct {
	Kind  OpKind
	DB    string // default database of a query; schema of a row change
	Table string
	Query string
	Rows  [][]any
}

// Txn is one transaction as the binary log holds it.
type Txn struct {
	GTID gtid.GTID
	// OriginalCommit is the commit time on the server that created the
	// transaction; ImmediateCommit the commit time on the server whose log
	// this is (equal on the source).
	OriginalCommit, ImmediateCommit time.Time
	// ServerID is the server_id written in the event headers: the
	// originating server's, as a replica keeps it when it logs the
	// transaction again.
	ServerID uint32
	Ops      []Op
}

// Located is a transaction read back from a file with where it lies.
type Located struct {
	Txn
	File       string
	Start, End int64
	// Version numbers from the GTID event (e.g. 90700).
	OriginalServerVersion, ImmediateServerVersion uint32
	LastCommitted, SequenceNumber                 int64
}

// Column types written in table map events: every column of the table store
// is logged as VARCHAR(16383) in utf8mb4 (the store has no column types).
const (
	mysqlTypeVarchar = 15
	varcharMaxBytes  = 65532 // 16383 characters of up to 4 bytes
	collationUTF8MB4 = 255   // utf8mb4_0900_ai_ci
	// rowEventMaxSize is binlog_row_event_max_size's default: rows are packed
	// into one event until it exceeds this.
	rowEventMaxSize = 8192
)

// encoder is the per-file state encoding needs.
type encoder struct {
	serverVersion uint32
	tableIDs      map[string]uint64
	nextTableID   uint64
	nextXID       uint64
	sequence      int64 // last sequence_number written in this file
}

type pendingEvent struct {
	typ   byte
	flags uint16
	body  []byte
}

// encodeTxn returns the events of t, starting at file position start.
func (e *encoder) encodeTxn(t Txn, start int64) []byte {
	when := uint32(t.OriginalCommit.Unix())
	evs, ddl := e.txnEvents(t)
	total := 0
	for _, ev := range evs {
		total += eventLen(len(ev.body))
	}
	e.sequence++
	g := gtidInfo{
		gtid: t.GTID, lastCommitted: e.sequence - 1, sequenceNumber: e.sequence,
		immediateCommit: micros(t.ImmediateCommit), originalCommit: micros(t.OriginalCommit),
		immediateVersion: e.serverVersion, originalVer: e.serverVersion,
	}
	if ddl {
		g.flags = 1
	}
	gtype, body := byte(typeGTID), untaggedGTIDBody
	if t.GTID.Tag != "" {
		gtype, body = typeGTIDTagged, taggedGTIDBody
	}
	// transaction_length includes the GTID event, whose size depends on it.
	g.transactionLength = uint64(total + eventLen(len(body(g))))
	for uint64(total+eventLen(len(body(g)))) != g.transactionLength {
		g.transactionLength = uint64(total + eventLen(len(body(g))))
	}
	evs = append([]pendingEvent{{typ: gtype, body: body(g)}}, evs...)
	out := make([]byte, 0, int(g.transactionLength))
	pos := start
	for _, ev := range evs {
		pos += int64(eventLen(len(ev.body)))
		out = append(out, event(ev.typ, when, t.ServerID, uint32(pos), ev.flags, ev.body)...)
	}
	return out
}

func micros(t time.Time) uint64 { return uint64(t.UnixMicro()) }

// txnEvents lists the events after the GTID event: one query event for a
// lone DDL statement; otherwise BEGIN, a table map and rows events per row
// change, and XID (or COMMIT for a transaction without row changes, as MySQL
// writes an empty transaction).
func (e *encoder) txnEvents(t Txn) ([]pendingEvent, bool) {
	if len(t.Ops) == 1 && t.Ops[0].Kind == OpQuery {
		e.nextXID++
		op := t.Ops[0]
		return []pendingEvent{{typ: typeQuery, body: queryBody(op.DB, op.Query, true, e.nextXID)}}, true
	}
	evs := []pendingEvent{{typ: typeQuery, body: queryBody("", "BEGIN", false, 0)}}
	rows := false
	for _, op := range t.Ops {
		switch {
		case op.Kind == OpQuery:
			evs = append(evs, pendingEvent{typ: typeQuery, body: queryBody(op.DB, op.Query, false, 0)})
		case len(op.Rows) > 0:
			rows = true
			evs = append(evs, e.rowEvents(op)...)
		}
	}
	if !rows {
		return append(evs, pendingEvent{typ: typeQuery, body: queryBody("", "COMMIT", false, 0)}), false
	}
	e.nextXID++
	return append(evs, pendingEvent{typ: typeXID, body: xidBody(e.nextXID)}), false
}

// Status variable codes of query events (statement_events.h,
// Query_event_status_vars).
const (
	qFlags2           = 0
	qSQLMode          = 1
	qCharset          = 4
	qCatalogNZ        = 6
	qUpdatedDBNames   = 12
	qDDLLoggedWithXID = 17
	qDefaultCollation = 18
)

// sqlModeBits is MySQL 9.7's default sql_mode (ONLY_FULL_GROUP_BY,
// STRICT_TRANS_TABLES, NO_ZERO_IN_DATE, NO_ZERO_DATE,
// ERROR_FOR_DIVISION_BY_ZERO, NO_ENGINE_SUBSTITUTION) as the bit set stored
// in Q_SQL_MODE_CODE.
const sqlModeBits = 1<<5 | 1<<21 | 1<<23 | 1<<24 | 1<<26 | 1<<30 // 1168113696

// queryBody is a QUERY_EVENT body: thread id, execution time, database
// length, error code, status variables length, the status variables, the
// database, a NUL and the statement.
func queryBody(db, query string, ddl bool, xid uint64) []byte {
	var sv []byte
	sv = binary.LittleEndian.AppendUint32(append(sv, qFlags2), 0)
	sv = binary.LittleEndian.AppendUint64(append(sv, qSQLMode), sqlModeBits)
	sv = append(sv, qCatalogNZ, 3, 's', 't', 'd')
	sv = append(sv, qCharset)
	for i := 0; i < 3; i++ { // client charset, connection and server collation
		sv = binary.LittleEndian.AppendUint16(sv, collationUTF8MB4)
	}
	if ddl {
		if db != "" {
			sv = append(append(append(sv, qUpdatedDBNames, 1), db...), 0)
		}
		sv = binary.LittleEndian.AppendUint64(append(sv, qDDLLoggedWithXID), xid)
		sv = binary.LittleEndian.AppendUint16(append(sv, qDefaultCollation), collationUTF8MB4)
	}
	b := make([]byte, 13, 13+len(sv)+len(db)+1+len(query))
	binary.LittleEndian.PutUint32(b[0:], 1) // thread id
	b[8] = byte(len(db))
	binary.LittleEndian.PutUint16(b[11:], uint16(len(sv)))
	b = append(b, sv...)
	b = append(append(b, db...), 0)
	return append(b, query...)
}

// rowEvents is the table map and the rows events of one row change.
func (e *encoder) rowEvents(op Op) []pendingEvent {
	id := e.tableID(op.DB, op.Table)
	ncols := len(op.Rows[0])
	evs := []pendingEvent{{typ: typeTableMap, body: tableMapBody(id, op.DB, op.Table, ncols)}}
	typ := byte(typeWriteRows)
	if op.Kind == OpDelete {
		typ = typeDeleteRows
	}
	var chunk []byte
	for i, r := range op.Rows {
		chunk = append(chunk, rowImage(r, ncols)...)
		if len(chunk) >= rowEventMaxSize || i == len(op.Rows)-1 {
			flags := uint16(0)
			if i == len(op.Rows)-1 {
				flags = stmtEndF
			}
			evs = append(evs, pendingEvent{typ: typ, body: rowsBody(id, flags, ncols, chunk)})
			chunk = nil
		}
	}
	return evs
}

// tableID gives each table a number for the file's lifetime, as mysqld's
// table definition cache does for the server's.
func (e *encoder) tableID(db, table string) uint64 {
	k := db + "." + table
	if id, ok := e.tableIDs[k]; ok {
		return id
	}
	e.nextTableID++
	e.tableIDs[k] = e.nextTableID
	return e.nextTableID
}

func putTableID(b []byte, id uint64) []byte {
	var x [8]byte
	binary.LittleEndian.PutUint64(x[:], id)
	return append(b, x[:6]...)
}

// tableMapBody: table id (6 bytes), flags, schema, table, column count,
// types, metadata (the VARCHAR byte length), the nullability bitmap and the
// optional DEFAULT_CHARSET metadata field binlog_row_metadata=MINIMAL
// writes.
func tableMapBody(id uint64, db, table string, ncols int) []byte {
	b := putTableID(nil, id)
	b = append(b, 1, 0) // flags: TM_BIT_LEN_EXACT_F
	b = append(append(append(b, byte(len(db))), db...), 0)
	b = append(append(append(b, byte(len(table))), table...), 0)
	b = putLenenc(b, uint64(ncols))
	for i := 0; i < ncols; i++ {
		b = append(b, mysqlTypeVarchar)
	}
	b = putLenenc(b, uint64(2*ncols))
	for i := 0; i < ncols; i++ {
		b = binary.LittleEndian.AppendUint16(b, varcharMaxBytes)
	}
	b = append(b, allOnes(ncols)...)
	charset := putLenenc(nil, collationUTF8MB4)
	b = append(b, 2) // DEFAULT_CHARSET
	b = putLenenc(b, uint64(len(charset)))
	return append(b, charset...)
}

func allOnes(n int) []byte {
	b := make([]byte, (n+7)/8)
	for i := 0; i < n; i++ {
		b[i/8] |= 1 << (i % 8)
	}
	return b
}

// rowsBody: table id, flags, extra data length 2 (no extra data), column
// count, the columns-present bitmap (all: binlog_row_image=FULL), the rows.
func rowsBody(id uint64, flags uint16, ncols int, rows []byte) []byte {
	b := putTableID(nil, id)
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = putLenenc(b, uint64(ncols))
	b = append(b, allOnes(ncols)...)
	return append(b, rows...)
}

// rowImage is one row: the NULL bitmap, then each non-NULL value as a
// VARCHAR with a 2-byte length (the column's maximum exceeds 255 bytes).
func rowImage(r []any, ncols int) []byte {
	nulls := make([]byte, (ncols+7)/8)
	var vals []byte
	for i := 0; i < ncols; i++ {
		var v any
		if i < len(r) {
			v = r[i]
		}
		if v == nil {
			nulls[i/8] |= 1 << (i % 8)
			continue
		}
		s := valueText(v)
		if len(s) > varcharMaxBytes {
			s = s[:varcharMaxBytes]
		}
		vals = binary.LittleEndian.AppendUint16(vals, uint16(len(s)))
		vals = append(vals, s...)
	}
	return append(nulls, vals...)
}

func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}
