package binlogfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// EventInfo is one event as SHOW BINLOG EVENTS lists it.
type EventInfo struct {
	Pos       int64
	Type      string
	ServerID  uint32
	EndLogPos int64
	Info      string
}

// FileContents is what one binary log file holds.
type FileContents struct {
	Name          string
	ServerVersion string
	Previous      gtid.Set
	Events        []EventInfo
	Txns          []Located
	// InUse is set when the file was not closed properly (the format
	// description still carries LOG_EVENT_BINLOG_IN_USE_F).
	InUse bool
	// Closed is set when the file ends with a rotate or stop event.
	Closed bool
	// ValidEnd is the end of the last complete transaction or file-level
	// event; bytes after it are a partially written transaction.
	ValidEnd int64
	Size     int64
}

// ReadFile reads and checks one binary log file. A damaged event (bad
// checksum, impossible length) ends the readable part: what precedes it is
// returned with ValidEnd at its start, and err describes the damage.
func ReadFile(path string) (*FileContents, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fc := &FileContents{Name: baseName(path), Size: int64(len(data))}
	return fc, fc.parse(data)
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// reader groups events into transactions.
type reader struct {
	fc     *FileContents
	tables map[uint64]tableRef
	cur    *Located
	began  bool
	// openStmt: the last rows event did not end its statement.
	openStmt bool
}

type tableRef struct {
	db, table string
	ncols     int
}

func (fc *FileContents) parse(data []byte) error {
	if len(data) < 4 || string(data[:4]) != magic {
		return errors.New("binlogfile: " + fc.Name + ": not a binary log file")
	}
	r := &reader{fc: fc, tables: map[uint64]tableRef{}}
	pos := int64(4)
	fc.ValidEnd = pos
	for pos < int64(len(data)) {
		if int64(len(data))-pos < headerLen {
			return nil // a partial header: an unfinished write
		}
		size := int64(binary.LittleEndian.Uint32(data[pos+9:]))
		if size < headerLen+checksumLen {
			return fmt.Errorf("binlogfile: %s: event at %d: impossible length %d", fc.Name, pos, size)
		}
		if pos+size > int64(len(data)) {
			return nil // the last event is incomplete
		}
		ev := data[pos : pos+size]
		if err := checkCRC(ev); err != nil {
			return fmt.Errorf("binlogfile: %s: event at %d: %w", fc.Name, pos, err)
		}
		if err := r.event(ev, pos); err != nil {
			return fmt.Errorf("binlogfile: %s: event at %d: %w", fc.Name, pos, err)
		}
		pos += size
		if r.cur == nil {
			fc.ValidEnd = pos
		}
	}
	return nil
}

func checkCRC(ev []byte) error {
	n := len(ev)
	sum := ev[:n-checksumLen]
	if ev[4] == typeFormatDescription && binary.LittleEndian.Uint16(ev[flagsOffset:])&flagInUse != 0 {
		c := append([]byte(nil), sum...)
		c[flagsOffset] &^= flagInUse
		sum = c
	}
	if crc32.ChecksumIEEE(sum) != binary.LittleEndian.Uint32(ev[n-checksumLen:]) {
		return errors.New("checksum mismatch")
	}
	return nil
}

func (r *reader) event(ev []byte, pos int64) error {
	typ := ev[4]
	info := EventInfo{Pos: pos, Type: eventTypeNames[typ], ServerID: binary.LittleEndian.Uint32(ev[5:]),
		EndLogPos: int64(binary.LittleEndian.Uint32(ev[13:]))}
	if info.Type == "" {
		info.Type = "Unknown"
	}
	body := ev[headerLen : len(ev)-checksumLen]
	var err error
	switch typ {
	case typeFormatDescription:
		if len(body) < 57 {
			return errors.New("short format description")
		}
		r.fc.ServerVersion = strings.TrimRight(string(body[2:52]), "\x00")
		r.fc.InUse = binary.LittleEndian.Uint16(ev[flagsOffset:])&flagInUse != 0
		info.Info = fmt.Sprintf("Server ver: %s, Binlog ver: %d", r.fc.ServerVersion, binary.LittleEndian.Uint16(body))
	case typePreviousGTIDs:
		r.fc.Previous, err = decodePreviousGTIDs(body)
		info.Info = r.fc.Previous.String()
	case typeGTID, typeGTIDTagged:
		err = r.gtidEvent(typ, body, pos, &info)
	case typeQuery:
		err = r.queryEvent(body, pos+int64(len(ev)), &info)
	case typeTableMap:
		err = r.tableMap(body, &info)
	case typeWriteRows, typeDeleteRows:
		err = r.rowsEvent(typ, body, &info)
	case typeXID:
		if len(body) < 8 {
			return errors.New("short xid event")
		}
		info.Info = fmt.Sprintf("COMMIT /* xid=%d */", binary.LittleEndian.Uint64(body))
		r.endTxn(pos + int64(len(ev)))
	case typeRotate:
		if len(body) < 8 {
			return errors.New("short rotate event")
		}
		info.Info = fmt.Sprintf("%s;pos=%d", body[8:], binary.LittleEndian.Uint64(body))
		r.fc.Closed = true
	case typeStop:
		r.fc.Closed = true
	}
	r.fc.Events = append(r.fc.Events, info)
	return err
}

func (r *reader) gtidEvent(typ byte, body []byte, pos int64, info *EventInfo) error {
	decode := decodeUntaggedGTID
	if typ == typeGTIDTagged {
		decode = decodeTaggedGTID
	}
	g, err := decode(body)
	if err != nil {
		return err
	}
	r.cur = &Located{
		Txn: Txn{GTID: g.gtid, ServerID: info.ServerID,
			OriginalCommit:  time.UnixMicro(int64(g.originalCommit)),
			ImmediateCommit: time.UnixMicro(int64(g.immediateCommit))},
		File: r.fc.Name, Start: pos,
		OriginalServerVersion: g.originalVer, ImmediateServerVersion: g.immediateVersion,
		LastCommitted: g.lastCommitted, SequenceNumber: g.sequenceNumber,
	}
	r.began = false
	info.Info = fmt.Sprintf("SET @@SESSION.GTID_NEXT= '%s'", g.gtid)
	return nil
}

func (r *reader) endTxn(end int64) {
	if r.cur != nil {
		r.cur.End = end
		r.fc.Txns = append(r.fc.Txns, *r.cur)
	}
	r.cur, r.began = nil, false
}

func (r *reader) queryEvent(body []byte, end int64, info *EventInfo) error {
	if len(body) < 13 {
		return errors.New("short query event")
	}
	dbLen := int(body[8])
	svLen := int(binary.LittleEndian.Uint16(body[11:]))
	if len(body) < 13+svLen+dbLen+1 {
		return errors.New("short query event")
	}
	xid, ddlXID := statusXID(body[13 : 13+svLen])
	db := string(body[13+svLen : 13+svLen+dbLen])
	query := string(body[13+svLen+dbLen+1:])
	info.Info = query
	if db != "" {
		info.Info = "use `" + db + "`; " + query
	}
	if ddlXID {
		info.Info += fmt.Sprintf(" /* xid=%d */", xid)
	}
	switch {
	case r.cur == nil:
		return nil
	case query == "BEGIN":
		r.began = true
	case query == "COMMIT":
		r.endTxn(end)
	default:
		r.cur.Ops = append(r.cur.Ops, Op{Kind: OpQuery, DB: db, Query: query})
		if !r.began {
			r.endTxn(end)
		}
	}
	return nil
}

// statusXID finds Q_DDL_LOGGED_WITH_XID among the status variables.
func statusXID(sv []byte) (uint64, bool) {
	lengths := map[byte]int{qFlags2: 4, qSQLMode: 8, qCharset: 6, qDDLLoggedWithXID: 8, qDefaultCollation: 2}
	for p := 0; p < len(sv); {
		code := sv[p]
		p++
		switch code {
		case qCatalogNZ:
			if p >= len(sv) {
				return 0, false
			}
			p += 1 + int(sv[p])
		case qUpdatedDBNames:
			if p >= len(sv) {
				return 0, false
			}
			n := int(sv[p])
			p++
			for i := 0; i < n && p < len(sv); i++ {
				for p < len(sv) && sv[p] != 0 {
					p++
				}
				p++
			}
		default:
			l, ok := lengths[code]
			if !ok || p+l > len(sv) {
				return 0, false
			}
			if code == qDDLLoggedWithXID {
				return binary.LittleEndian.Uint64(sv[p:]), true
			}
			p += l
		}
	}
	return 0, false
}

func readTableID(b []byte) uint64 {
	var x [8]byte
	copy(x[:], b[:6])
	return binary.LittleEndian.Uint64(x[:])
}

func (r *reader) tableMap(body []byte, info *EventInfo) error {
	bad := errors.New("malformed table map event")
	if len(body) < 10 {
		return bad
	}
	id := readTableID(body)
	p := 8
	name := func() (string, bool) {
		if p >= len(body) {
			return "", false
		}
		l := int(body[p])
		if p+1+l+1 > len(body) {
			return "", false
		}
		s := string(body[p+1 : p+1+l])
		p += l + 2
		return s, true
	}
	db, ok1 := name()
	table, ok2 := name()
	if !ok1 || !ok2 {
		return bad
	}
	n, k := readLenenc(body[p:])
	if k == 0 || n > uint64(len(body)) {
		return bad
	}
	r.tables[id] = tableRef{db: db, table: table, ncols: int(n)}
	info.Info = fmt.Sprintf("table_id: %d (%s.%s)", id, db, table)
	return nil
}

func (r *reader) rowsEvent(typ byte, body []byte, info *EventInfo) error {
	bad := errors.New("malformed rows event")
	if len(body) < 10 {
		return bad
	}
	id := readTableID(body)
	flags := binary.LittleEndian.Uint16(body[6:])
	extra := int(binary.LittleEndian.Uint16(body[8:]))
	info.Info = fmt.Sprintf("table_id: %d", id)
	if flags&stmtEndF != 0 {
		info.Info += " flags: STMT_END_F"
	}
	t, ok := r.tables[id]
	if !ok || extra < 2 || 8+extra > len(body) {
		return bad
	}
	p := 8 + extra
	n, k := readLenenc(body[p:])
	if k == 0 || int(n) != t.ncols {
		return bad
	}
	p += k + (t.ncols+7)/8
	var rows [][]any
	for p < len(body) {
		row, used, err := readRow(body[p:], t.ncols)
		if err != nil {
			return err
		}
		rows = append(rows, row)
		p += used
	}
	if r.cur == nil {
		return nil
	}
	kind := OpInsert
	if typ == typeDeleteRows {
		kind = OpDelete
	}
	ops := r.cur.Ops
	if last := len(ops) - 1; last >= 0 && ops[last].Kind == kind && ops[last].DB == t.db && ops[last].Table == t.table && r.openStmt {
		ops[last].Rows = append(ops[last].Rows, rows...)
	} else {
		ops = append(ops, Op{Kind: kind, DB: t.db, Table: t.table, Rows: rows})
	}
	r.openStmt = flags&stmtEndF == 0
	r.cur.Ops = ops
	return nil
}

func readRow(b []byte, ncols int) ([]any, int, error) {
	nb := (ncols + 7) / 8
	if len(b) < nb {
		return nil, 0, errors.New("malformed row")
	}
	row := make([]any, ncols)
	p := nb
	for i := 0; i < ncols; i++ {
		if b[i/8]&(1<<(i%8)) != 0 {
			continue
		}
		if len(b) < p+2 {
			return nil, 0, errors.New("malformed row")
		}
		l := int(binary.LittleEndian.Uint16(b[p:]))
		if len(b) < p+2+l {
			return nil, 0, errors.New("malformed row")
		}
		row[i] = string(b[p+2 : p+2+l])
		p += 2 + l
	}
	return row, p, nil
}
