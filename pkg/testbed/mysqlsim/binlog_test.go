package mysqlsim_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// commitRecord is what a client saw of one commit: the GTID the server's
// gtid_executed gained, and the wall-clock window around the statement.
type commitRecord struct {
	gtid          gtid.GTID
	before, after time.Time
}

func executedSet(t *testing.T, db *sql.DB) gtid.Set {
	t.Helper()
	var s string
	if err := db.QueryRowContext(ctx(t), "SELECT @@GLOBAL.gtid_executed").Scan(&s); err != nil {
		t.Fatal(err)
	}
	return gtid.MustParse(s)
}

func purgedSet(t *testing.T, db *sql.DB) gtid.Set {
	t.Helper()
	var s string
	if err := db.QueryRowContext(ctx(t), "SELECT @@GLOBAL.gtid_purged").Scan(&s); err != nil {
		t.Fatal(err)
	}
	return gtid.MustParse(s)
}

// commit runs statements on one connection and records the one GTID they
// committed, as gtid_executed reports it.
func commit(t *testing.T, db *sql.DB, stmts ...string) commitRecord {
	t.Helper()
	conn, err := db.Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	was := executedSet(t, db)
	rec := commitRecord{before: time.Now()}
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx(t), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rec.after = time.Now()
	added := executedSet(t, db).Subtract(was)
	if added.Count() != 1 {
		t.Fatalf("%v committed %q, want one GTID", stmts, added.OneLine())
	}
	sid := added.SIDs()[0]
	rec.gtid = gtid.GTID{UUID: sid.UUID, Tag: sid.Tag, GNO: added.Intervals(sid)[0].Start}
	return rec
}

// parsedTxn is one transaction as go-mysql's parser saw it.
type parsedTxn struct {
	gtid                  string
	original, immediate   time.Time
	file                  string
	written, deleted      [][]any
	tagged                bool
	origVersion, imVerson uint32
}

// parsedLog is what go-mysql read from a data directory's binary log.
type parsedLog struct {
	files    []string
	previous []string // Previous_gtids of each file
	rotates  []string // next file named by each file's rotate event ("" if none)
	txns     []parsedTxn
	events   map[string][]string // per file: "pos type" of every event
	inUse    []bool              // per file: the format description's in-use flag
}

// parseBinlogDir parses every file binlog.index lists with go-mysql's
// BinlogParser, checksums verified, and checks the index lists exactly the
// binlog files present.
func parseBinlogDir(t *testing.T, dir string) parsedLog {
	t.Helper()
	index, err := os.ReadFile(filepath.Join(dir, "binlog.index"))
	if err != nil {
		t.Fatal(err)
	}
	var out parsedLog
	out.events = map[string][]string{}
	for _, line := range strings.Fields(string(index)) {
		out.files = append(out.files, filepath.Base(line))
	}
	present, _ := filepath.Glob(filepath.Join(dir, "binlog.[0-9]*"))
	for i := range present {
		present[i] = filepath.Base(present[i])
	}
	sort.Strings(present)
	if !reflect.DeepEqual(present, out.files) {
		t.Fatalf("binlog.index lists %v, the directory holds %v", out.files, present)
	}
	for _, name := range out.files {
		p := replication.NewBinlogParser()
		p.SetVerifyChecksum(true)
		var cur *parsedTxn
		rotate := ""
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(data) < 4+19 || !bytes.Equal(data[:4], replication.BinLogFileHeader) {
			t.Fatalf("%s: not a binary log file (%v)", name, err)
		}
		// MySQL checksums the format description without the in-use flag
		// (LOG_EVENT_BINLOG_IN_USE_F), which is set while the file is open
		// and cleared when it is closed; its own reader and the binlog
		// sender clear the flag before verifying. go-mysql verifies the raw
		// bytes, so the flag is cleared here as MySQL's reader does.
		inUse := data[4+17]&1 != 0
		data[4+17] &^= 1
		out.inUse = append(out.inUse, inUse)
		err = p.ParseReader(bytes.NewReader(data[4:]), func(e *replication.BinlogEvent) error {
			out.events[name] = append(out.events[name], fmt.Sprintf("%d %s", e.Header.LogPos-e.Header.EventSize, e.Header.EventType))
			switch ev := e.Event.(type) {
			case *replication.FormatDescriptionEvent:
				if ev.Version != 4 || ev.ChecksumAlgorithm != replication.BINLOG_CHECKSUM_ALG_CRC32 {
					t.Errorf("%s: format description version %d checksum %d", name, ev.Version, ev.ChecksumAlgorithm)
				}
			case *replication.PreviousGTIDsEvent:
				out.previous = append(out.previous, ev.GTIDSets)
			case *replication.GTIDEvent:
				cur = newParsedTxn(name, ev, false)
			case *replication.GtidTaggedLogEvent:
				cur = newParsedTxn(name, &ev.GTIDEvent, true)
			case *replication.RowsEvent:
				if cur == nil {
					t.Errorf("%s: rows event outside a transaction", name)
					return nil
				}
				if e.Header.EventType == replication.WRITE_ROWS_EVENTv2 {
					cur.written = append(cur.written, ev.Rows...)
				} else {
					cur.deleted = append(cur.deleted, ev.Rows...)
				}
			case *replication.XIDEvent:
				out.txns, cur = append(out.txns, *cur), nil
			case *replication.QueryEvent:
				if q := string(ev.Query); cur != nil && q != "BEGIN" {
					out.txns, cur = append(out.txns, *cur), nil // DDL, or COMMIT of an empty transaction
				}
			case *replication.RotateEvent:
				rotate = string(ev.NextLogName)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("go-mysql cannot parse %s: %v", name, err)
		}
		if cur != nil {
			t.Errorf("%s ends inside transaction %s", name, cur.gtid)
		}
		out.rotates = append(out.rotates, rotate)
	}
	return out
}

func newParsedTxn(file string, ev *replication.GTIDEvent, tagged bool) *parsedTxn {
	next, _ := ev.GTIDNext()
	return &parsedTxn{gtid: next.String(), original: ev.OriginalCommitTime(), immediate: ev.ImmediateCommitTime(),
		file: file, tagged: tagged, origVersion: ev.OriginalServerVersion, imVerson: ev.ImmediateServerVersion}
}

func (l parsedLog) gtids() []string {
	var out []string
	for _, tx := range l.txns {
		out = append(out, tx.gtid)
	}
	return out
}

// within reports whether ts lies in the window, at the microsecond
// precision the binary log keeps.
func within(ts, before, after time.Time) bool {
	return !ts.Before(before.Truncate(time.Microsecond)) && !ts.After(after)
}

func showRows(t *testing.T, db *sql.DB, q string) [][]string {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = v.String
			if !v.Valid {
				row[i] = "NULL"
			}
		}
		out = append(out, row)
	}
	return out
}

func rowsText(rows [][]any) []string {
	var out []string
	for _, r := range rows {
		var parts []string
		for _, v := range r {
			if v == nil {
				parts = append(parts, "NULL")
				continue
			}
			parts = append(parts, fmt.Sprint(v))
		}
		out = append(out, strings.Join(parts, ","))
	}
	sort.Strings(out)
	return out
}

// TestBinlogFilesReadByGoMySQL drives a source through DDL, inserts (one and
// several per transaction), a tagged GTID, a delete, rotation by FLUSH
// BINARY LOGS and by a small max_binlog_size, and a replica logging what it
// applies (log_replica_updates). go-mysql's parser must read every file of
// both data directories and see exactly the transactions, GTIDs, commit
// timestamps and row values the servers reported.
func TestBinlogFilesReadByGoMySQL(t *testing.T) {
	srcDir, repDir := t.TempDir(), t.TempDir()
	src := simtest.Start(t, mysqlsim.Config{DataDir: srcDir})
	rep := simtest.Start(t, mysqlsim.Config{DataDir: repDir})
	db := adminDB(t, src)
	var recs []commitRecord
	recs = append(recs, commit(t, db, "CREATE DATABASE shop"))
	recs = append(recs, commit(t, db, "CREATE TABLE shop.orders (id INT PRIMARY KEY, note VARCHAR(20))"))
	recs = append(recs, commit(t, db, "INSERT INTO shop.orders VALUES (1, 'first'), (2, NULL)"))
	mustExec(t, db, "FLUSH BINARY LOGS")
	recs = append(recs, commit(t, db, "BEGIN", "INSERT INTO shop.orders (note, id) VALUES ('third', 3)",
		"INSERT INTO shop.orders VALUES (4, 'fourth')", "COMMIT"))
	recs = append(recs, commit(t, db, "SET gtid_next = '"+src.ServerUUID()+":blue:1'",
		"INSERT INTO shop.orders VALUES (5, 'tagged')", "SET gtid_next = 'AUTOMATIC'"))
	mustExec(t, db, "SET GLOBAL max_binlog_size = 4096")
	for i := 6; i < 40; i++ {
		recs = append(recs, commit(t, db, fmt.Sprintf("INSERT INTO shop.orders VALUES (%d, '%s')", i, strings.Repeat("x", 100))))
	}
	table := showRows(t, db, "SELECT id, note FROM shop.orders")
	recs = append(recs, commit(t, db, "DELETE FROM shop.orders"))

	replicate(t, rep, src, "")
	repDB := adminDB(t, rep)
	want := executedSet(t, db)
	eventually(t, 20*time.Second, "replica caught up", func() (bool, string) {
		got := executedSet(t, repDB)
		return got.Equal(want), got.OneLine()
	})
	caughtUp := time.Now()

	srcLog := parseBinlogDir(t, srcDir)
	var wantGTIDs []string
	for _, r := range recs {
		wantGTIDs = append(wantGTIDs, r.gtid.String())
	}
	if got := srcLog.gtids(); !reflect.DeepEqual(got, wantGTIDs) {
		t.Fatalf("source binary log holds\n%v\nclients committed\n%v", got, wantGTIDs)
	}
	if len(srcLog.files) < 4 {
		t.Errorf("source has %d files %v, want rotation by FLUSH and by max_binlog_size", len(srcLog.files), srcLog.files)
	}
	checkFileChain(t, srcLog)
	for i, tx := range srcLog.txns {
		r := recs[i]
		if !tx.original.Equal(tx.immediate) || !within(tx.original, r.before, r.after) {
			t.Errorf("source %s: original %v immediate %v, client saw the commit between %v and %v",
				tx.gtid, tx.original, tx.immediate, r.before, r.after)
		}
		if tx.origVersion != 90700 || tx.imVerson != 90700 {
			t.Errorf("source %s: server versions %d/%d", tx.gtid, tx.origVersion, tx.imVerson)
		}
		if tx.tagged != (r.gtid.Tag != "") {
			t.Errorf("%s logged as tagged=%v", tx.gtid, tx.tagged)
		}
	}
	var written, deleted [][]any
	for _, tx := range srcLog.txns {
		written, deleted = append(written, tx.written...), append(deleted, tx.deleted...)
	}
	var tableText []string
	for _, r := range table {
		tableText = append(tableText, strings.Join(r, ","))
	}
	sort.Strings(tableText)
	if !reflect.DeepEqual(rowsText(written), tableText) || !reflect.DeepEqual(rowsText(deleted), tableText) {
		t.Errorf("rows written %v, deleted %v; SELECT returned %v", rowsText(written), rowsText(deleted), tableText)
	}
	checkShowStatements(t, db, srcDir, srcLog)

	repLog := parseBinlogDir(t, repDir)
	if got := repLog.gtids(); !reflect.DeepEqual(got, wantGTIDs) {
		t.Fatalf("replica binary log holds\n%v\nsource committed\n%v", got, wantGTIDs)
	}
	checkFileChain(t, repLog)
	for i, tx := range repLog.txns {
		srcTx := srcLog.txns[i]
		if !tx.original.Equal(srcTx.original) || tx.immediate.Before(tx.original) || tx.immediate.After(caughtUp) {
			t.Errorf("replica %s: original %v (source %v), immediate %v (caught up by %v)",
				tx.gtid, tx.original, srcTx.original, tx.immediate, caughtUp)
		}
		if !reflect.DeepEqual(rowsText(tx.written), rowsText(srcTx.written)) || !reflect.DeepEqual(rowsText(tx.deleted), rowsText(srcTx.deleted)) {
			t.Errorf("replica %s rows differ from the source's", tx.gtid)
		}
	}
}

// checkFileChain: each file but the last ends with a rotate event naming
// the next, and each file's Previous_gtids is what the files before it hold.
func checkFileChain(t *testing.T, l parsedLog) {
	t.Helper()
	var before gtid.Set
	for i, name := range l.files {
		prev := gtid.MustParse(strings.ReplaceAll(l.previous[i], ",", ",\n"))
		if !prev.Equal(before) {
			t.Errorf("%s: Previous_gtids %q, the earlier files hold %q", name, prev.OneLine(), before.OneLine())
		}
		if l.inUse[i] != (i == len(l.files)-1) {
			t.Errorf("%s: in-use flag %v (only the current file is in use)", name, l.inUse[i])
		}
		if i < len(l.files)-1 && l.rotates[i] != l.files[i+1] {
			t.Errorf("%s rotates to %q, want %q", name, l.rotates[i], l.files[i+1])
		}
		for _, tx := range l.txns {
			if tx.file == name {
				before = before.Add(mustGTID(t, tx.gtid))
			}
		}
	}
}

func mustGTID(t *testing.T, s string) gtid.GTID {
	t.Helper()
	g, err := gtid.ParseGTID(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// checkShowStatements: SHOW BINARY LOGS lists the files with their sizes on
// disk, SHOW BINARY LOG STATUS the current file and its end, SHOW BINLOG
// EVENTS the events go-mysql read at the positions it read them.
func checkShowStatements(t *testing.T, db *sql.DB, dir string, l parsedLog) {
	t.Helper()
	logs := showRows(t, db, "SHOW BINARY LOGS")
	if len(logs) != len(l.files) {
		t.Fatalf("SHOW BINARY LOGS %v, files %v", logs, l.files)
	}
	for i, r := range logs {
		st, err := os.Stat(filepath.Join(dir, l.files[i]))
		if err != nil || r[0] != l.files[i] || r[1] != fmt.Sprint(st.Size()) || r[2] != "No" {
			t.Errorf("SHOW BINARY LOGS row %v, file %s of %d bytes (%v)", r, l.files[i], st.Size(), err)
		}
	}
	status := showRows(t, db, "SHOW BINARY LOG STATUS")
	last := l.files[len(l.files)-1]
	st, _ := os.Stat(filepath.Join(dir, last))
	if len(status) != 1 || status[0][0] != last || status[0][1] != fmt.Sprint(st.Size()) {
		t.Errorf("SHOW BINARY LOG STATUS %v, current file %s is %d bytes", status, last, st.Size())
	}
	events := showRows(t, db, "SHOW BINLOG EVENTS IN '"+l.files[0]+"'")
	names := map[string]string{"FormatDescriptionEvent": "Format_desc", "PreviousGTIDsEvent": "Previous_gtids",
		"GTIDEvent": "Gtid", "QueryEvent": "Query", "TableMapEvent": "Table_map", "WriteRowsEventV2": "Write_rows",
		"DeleteRowsEventV2": "Delete_rows", "XIDEvent": "Xid", "RotateEvent": "Rotate", "StopEvent": "Stop",
		"Gtid_tagged_log_event": "Gtid_tagged_log_event"}
	var got, want []string
	for _, r := range events {
		got = append(got, r[1]+" "+r[2])
	}
	for _, e := range l.events[l.files[0]] {
		pos, typ, _ := strings.Cut(e, " ")
		want = append(want, pos+" "+names[typ])
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SHOW BINLOG EVENTS\n%v\ngo-mysql read\n%v", got, want)
	}
	limited := showRows(t, db, "SHOW BINLOG EVENTS IN '"+l.files[0]+"' FROM "+events[1][1]+" LIMIT 2")
	if len(limited) != 2 || limited[0][1] != events[1][1] || limited[1][1] != events[2][1] {
		t.Errorf("SHOW BINLOG EVENTS FROM %s LIMIT 2: %v", events[1][1], limited)
	}
}

// TestPurgeBinaryLogs: PURGE BINARY LOGS TO and BEFORE delete the files and
// their index lines, move gtid_purged to what the deleted files held, refuse
// an unknown file with 1373, and a replica that needs a purged GTID gets
// error 1236 from the source.
func TestPurgeBinaryLogs(t *testing.T) {
	dir := t.TempDir()
	src := simtest.Start(t, mysqlsim.Config{DataDir: dir})
	db := adminDB(t, src)
	var inFile [3]gtid.Set
	for f := 0; f < 3; f++ {
		for i := 0; i < 2; i++ {
			r := commit(t, db, fmt.Sprintf("CREATE DATABASE IF NOT EXISTS d%d_%d", f, i))
			inFile[f] = inFile[f].Add(r.gtid)
		}
		if f < 2 {
			mustExec(t, db, "FLUSH BINARY LOGS")
		}
	}
	_, err := db.ExecContext(ctx(t), "PURGE BINARY LOGS TO 'binlog.000099'")
	if myErrNo(err) != 1373 {
		t.Fatalf("PURGE TO an unknown file: %v, want error 1373", err)
	}
	mustExec(t, db, "PURGE BINARY LOGS TO 'binlog.000002'")
	l := parseBinlogDir(t, dir)
	if !reflect.DeepEqual(l.files, []string{"binlog.000002", "binlog.000003"}) {
		t.Fatalf("after PURGE TO: files %v", l.files)
	}
	if got := purgedSet(t, db); !got.Equal(inFile[0]) {
		t.Fatalf("gtid_purged %q after purging binlog.000001, which held %q", got.OneLine(), inFile[0].OneLine())
	}

	future := time.Now().UTC().Add(time.Hour).Format("2006-01-02 15:04:05")
	mustExec(t, db, "PURGE BINARY LOGS BEFORE '"+future+"'")
	l = parseBinlogDir(t, dir)
	if !reflect.DeepEqual(l.files, []string{"binlog.000003"}) {
		t.Fatalf("after PURGE BEFORE the future: files %v, want only the current one", l.files)
	}
	if got := purgedSet(t, db); !got.Equal(inFile[0].Union(inFile[1])) {
		t.Fatalf("gtid_purged %q, want %q", got.OneLine(), inFile[0].Union(inFile[1]).OneLine())
	}
	if got := executedSet(t, db); !got.Equal(inFile[0].Union(inFile[1]).Union(inFile[2])) {
		t.Fatalf("gtid_executed changed by the purge: %q", got.OneLine())
	}

	rep := simtest.Start(t, mysqlsim.Config{})
	replicate(t, rep, src, "")
	repDB := adminDB(t, rep)
	eventually(t, 10*time.Second, "receiver error", func() (bool, string) {
		st := replicaStatus(t, repDB)
		return strings.Contains(st.get("Last_IO_Error"), "Got fatal error 1236 from source"), st.get("Last_IO_Error")
	})
}

// TestBinlogExpiry: binlog_expire_logs_seconds removes older files at
// rotation and at startup, and gtid_purged follows.
func TestBinlogExpiry(t *testing.T) {
	dir := t.TempDir()
	src := simtest.Start(t, mysqlsim.Config{DataDir: dir})
	db := adminDB(t, src)
	first := commit(t, db, "CREATE DATABASE expiring")
	mustExec(t, db, "FLUSH BINARY LOGS")
	second := commit(t, db, "CREATE DATABASE kept")
	mustExec(t, db, "SET GLOBAL binlog_expire_logs_seconds = 3600")
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "binlog.000001"), old, old); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, "FLUSH BINARY LOGS")
	if l := parseBinlogDir(t, dir); !reflect.DeepEqual(l.files, []string{"binlog.000002", "binlog.000003"}) {
		t.Fatalf("after rotation with an expired file: %v", l.files)
	}
	if got := purgedSet(t, db); !got.Equal(gtid.Set{}.Add(first.gtid)) {
		t.Fatalf("gtid_purged %q, want %s", got.OneLine(), first.gtid)
	}

	// The variable returns to its default (30 days) at restart; a file
	// older than that expires at startup.
	ancient := time.Now().Add(-31 * 24 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "binlog.000002"), ancient, ancient); err != nil {
		t.Fatal(err)
	}
	if err := src.Restart(); err != nil {
		t.Fatal(err)
	}
	db = adminDB(t, src)
	logs := showRows(t, db, "SHOW BINARY LOGS")
	if len(logs) != 2 || logs[0][0] != "binlog.000003" || logs[1][0] != "binlog.000004" {
		t.Fatalf("after restart: %v", logs)
	}
	if got := purgedSet(t, db); !got.Equal(gtid.Set{}.Add(first.gtid).Add(second.gtid)) {
		t.Fatalf("gtid_purged %q after startup expiry", got.OneLine())
	}
}

// TestBinlogCrashRecovery: a crash that left half a transaction at the end
// of the file: at the restart the partial transaction is cut off, a new
// file starts, and go-mysql reads every file with its checksums.
func TestBinlogCrashRecovery(t *testing.T) {
	dir := t.TempDir()
	src := simtest.Start(t, mysqlsim.Config{DataDir: dir})
	db := adminDB(t, src)
	var recs []string
	for i := 0; i < 3; i++ {
		recs = append(recs, commit(t, db, fmt.Sprintf("CREATE DATABASE c%d", i)).gtid.String())
	}
	src.Crash()
	path := filepath.Join(dir, "binlog.000001")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Append the first half of the file's last transaction again: a torn
	// write of a transaction that never committed.
	l := parseBinlogDir(t, dir)
	lastGTIDPos := 0
	for _, e := range l.events["binlog.000001"] {
		if strings.HasSuffix(e, "GTIDEvent") {
			fmt.Sscan(e, &lastGTIDPos)
		}
	}
	torn := b[lastGTIDPos : lastGTIDPos+(len(b)-lastGTIDPos)/2]
	if err := os.WriteFile(path, append(b, torn...), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := src.Restart(); err != nil {
		t.Fatal(err)
	}
	db = adminDB(t, src)
	if got := showRows(t, db, "SHOW BINARY LOGS"); len(got) != 2 || got[1][0] != "binlog.000002" {
		t.Fatalf("after the restart: %v", got)
	}
	l = parseBinlogDir(t, dir)
	if !reflect.DeepEqual(l.gtids(), recs) {
		t.Fatalf("after recovery the files hold %v, want %v", l.gtids(), recs)
	}
	st, _ := os.Stat(path)
	if st.Size() != int64(len(b)) {
		t.Errorf("binlog.000001 is %d bytes after recovery, was %d before the torn write", st.Size(), len(b))
	}
}

// TestBinlogWithoutDataDir: a server without a data directory keeps its
// binary log in a temporary directory for its lifetime, across a crash and
// restart, and removes it when it closes.
func TestBinlogWithoutDataDir(t *testing.T) {
	s, err := mysqlsim.New(mysqlsim.Config{ServerID: 901, ServerUUID: simtest.UUID(901), Users: simtest.Users()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := adminDB(t, s)
	first := commit(t, db, "CREATE DATABASE nodir")
	dir := s.BinlogDir()
	s.Crash()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	db = adminDB(t, s)
	second := commit(t, db, "CREATE DATABASE nodir2")
	if s.BinlogDir() != dir {
		t.Fatalf("binary log directory moved from %s to %s", dir, s.BinlogDir())
	}
	l := parseBinlogDir(t, dir)
	if want := []string{first.gtid.String(), second.gtid.String()}; !reflect.DeepEqual(l.gtids(), want) {
		t.Fatalf("files hold %v, want %v", l.gtids(), want)
	}
	s.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s still exists after Close (%v)", dir, err)
	}
}

// TestCloneRemovesRecipientBinlog: CLONE removes the recipient's binary
// logs (manual, "Remote Cloning Operation Failure Handling"); after the
// restart the only file starts from the cloned gtid_executed and nothing of
// the recipient's own history is left in it.
func TestCloneRemovesRecipientBinlog(t *testing.T) {
	donor := simtest.Start(t, mysqlsim.Config{})
	recDir := t.TempDir()
	recipient := simtest.Start(t, mysqlsim.Config{DataDir: recDir})
	writeRows(t, adminDB(t, donor), 3)
	own := commit(t, adminDB(t, recipient), "CREATE DATABASE replaced")
	mustExec(t, adminDB(t, recipient), "FLUSH BINARY LOGS")
	cloneFrom(t, recipient, donor) // clone_test.go
	want := donor.Snapshot().Executed
	logs := showRows(t, adminDB(t, recipient), "SHOW BINARY LOGS")
	l := parseBinlogDir(t, recDir)
	if len(logs) != 1 || !reflect.DeepEqual(l.files, []string{"binlog.000001"}) || len(l.txns) != 0 {
		t.Fatalf("after CLONE: SHOW BINARY LOGS %v, files %v holding %v", logs, l.files, l.gtids())
	}
	if prev := gtid.MustParse(l.previous[0]); !prev.Equal(want) || prev.Contains(own.gtid) {
		t.Fatalf("Previous_gtids %q, want the donor's %q (not the recipient's own %s)", prev.OneLine(), want.OneLine(), own.gtid)
	}
}
