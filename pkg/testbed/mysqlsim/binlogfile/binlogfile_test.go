package binlogfile

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

const uuidA = "3e11fa47-71ca-11e1-9e33-c80aa9429562"

func mustGTID(t *testing.T, s string) gtid.GTID {
	t.Helper()
	g, err := gtid.ParseGTID(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func open(t *testing.T, dir string, opts Options) *FileSet {
	t.Helper()
	opts.Dir = dir
	if opts.ServerID == 0 {
		opts.ServerID = 7
	}
	fs, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func sampleTxns(t *testing.T) []Txn {
	t0 := time.UnixMicro(1764590000123456)
	return []Txn{
		{GTID: mustGTID(t, uuidA+":1"), OriginalCommit: t0, ImmediateCommit: t0,
			Ops: []Op{{Kind: OpQuery, DB: "shop", Query: "CREATE DATABASE shop"}}},
		{GTID: mustGTID(t, uuidA+":2"), OriginalCommit: t0.Add(time.Second), ImmediateCommit: t0.Add(3 * time.Second),
			Ops: []Op{{Kind: OpInsert, DB: "shop", Table: "orders", Rows: [][]any{{"1", "a"}, {"2", nil}}}}},
		{GTID: mustGTID(t, uuidA+":blue:1"), OriginalCommit: t0.Add(2 * time.Second), ImmediateCommit: t0.Add(4 * time.Second),
			Ops: []Op{{Kind: OpDelete, DB: "shop", Table: "orders", Rows: [][]any{{"1", "a"}, {"2", nil}}}}},
	}
}

// TestAppendReadBack: what is appended is read back with the same GTIDs,
// commit timestamps (to the microsecond) and row values.
func TestAppendReadBack(t *testing.T) {
	dir := t.TempDir()
	fs := open(t, dir, Options{})
	want := sampleTxns(t)
	for _, tx := range want {
		if _, _, err := fs.Append(tx); err != nil {
			t.Fatal(err)
		}
	}
	files, err := fs.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || len(files[0].Txns) != len(want) {
		t.Fatalf("files %d, txns %v", len(files), files)
	}
	for i, got := range files[0].Txns {
		w := want[i]
		w.ServerID = 7
		if !reflect.DeepEqual(got.Txn, w) {
			t.Errorf("txn %d:\n got %+v\nwant %+v", i, got.Txn, w)
		}
		if got.OriginalServerVersion != 90700 || got.ImmediateServerVersion != 90700 {
			t.Errorf("txn %d: server versions %d/%d", i, got.OriginalServerVersion, got.ImmediateServerVersion)
		}
	}
	if !files[0].InUse {
		t.Error("the open file does not carry the in-use flag")
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	fc, err := ReadFile(filepath.Join(dir, "binlog.000001"))
	if err != nil || fc.InUse || !fc.Closed || fc.Events[len(fc.Events)-1].Type != "Stop" {
		t.Fatalf("after Close: in use %v, closed %v, err %v", fc.InUse, fc.Closed, err)
	}
}

// TestGoMySQLParsesFile: go-mysql's parser, a second implementation, reads
// the file with checksums verified and decodes the same GTIDs, timestamps
// and rows, the tagged GTID event included.
func TestGoMySQLParsesFile(t *testing.T) {
	dir := t.TempDir()
	fs := open(t, dir, Options{})
	want := sampleTxns(t)
	for _, tx := range want {
		if _, _, err := fs.Append(tx); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	p := replication.NewBinlogParser()
	p.SetVerifyChecksum(true)
	var gtids []string
	var orig, imm []time.Time
	var rows [][]any
	var types []string
	err := p.ParseFile(filepath.Join(dir, "binlog.000001"), 0, func(e *replication.BinlogEvent) error {
		types = append(types, e.Header.EventType.String())
		switch ev := e.Event.(type) {
		case *replication.FormatDescriptionEvent:
			if ev.Version != 4 || !strings.HasPrefix(ev.ServerVersion, "9.7.0") || ev.ChecksumAlgorithm != 1 {
				t.Errorf("format description: version %d server %q checksum %d", ev.Version, ev.ServerVersion, ev.ChecksumAlgorithm)
			}
		case *replication.GTIDEvent:
			g, _ := ev.GTIDNext()
			gtids = append(gtids, g.String())
			orig, imm = append(orig, ev.OriginalCommitTime()), append(imm, ev.ImmediateCommitTime())
		case *replication.GtidTaggedLogEvent:
			g, _ := ev.GTIDNext()
			gtids = append(gtids, g.String())
			orig, imm = append(orig, ev.OriginalCommitTime()), append(imm, ev.ImmediateCommitTime())
		case *replication.RowsEvent:
			for _, r := range ev.Rows {
				rows = append(rows, r)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("go-mysql: %v (events %v)", err, types)
	}
	wantGTIDs := []string{uuidA + ":1", uuidA + ":2", uuidA + ":blue:1"}
	if !reflect.DeepEqual(gtids, wantGTIDs) {
		t.Errorf("gtids %v, want %v", gtids, wantGTIDs)
	}
	for i, tx := range want {
		if i < len(orig) && (!orig[i].Equal(tx.OriginalCommit) || !imm[i].Equal(tx.ImmediateCommit)) {
			t.Errorf("txn %d: timestamps %v/%v, want %v/%v", i, orig[i], imm[i], tx.OriginalCommit, tx.ImmediateCommit)
		}
	}
	wantRows := [][]any{{"1", "a"}, {"2", nil}, {"1", "a"}, {"2", nil}}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("rows %v, want %v", rows, wantRows)
	}
}

// TestRotationBySize: a small max size rotates after each transaction; each
// file ends with a rotate event and the next one's Previous_gtids holds
// everything logged before it.
func TestRotationBySize(t *testing.T) {
	dir := t.TempDir()
	fs := open(t, dir, Options{MaxSize: 300})
	for _, tx := range sampleTxns(t) {
		if _, _, err := fs.Append(tx); err != nil {
			t.Fatal(err)
		}
	}
	files, err := fs.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Fatalf("%d files, want 4 (one per transaction and the new current one)", len(files))
	}
	wantPrev := []string{"", uuidA + ":1", uuidA + ":1-2", uuidA + ":1-2:blue:1"}
	for i, fc := range files {
		if fc.Previous.OneLine() != wantPrev[i] {
			t.Errorf("%s: Previous_gtids %q, want %q", fc.Name, fc.Previous.OneLine(), wantPrev[i])
		}
		if i < 3 {
			last := fc.Events[len(fc.Events)-1]
			if last.Type != "Rotate" || !strings.HasPrefix(last.Info, files[i+1].Name+";pos=4") || fc.InUse {
				t.Errorf("%s ends with %+v, in use %v", fc.Name, last, fc.InUse)
			}
		}
	}
	index, _ := os.ReadFile(filepath.Join(dir, "binlog.index"))
	if string(index) != "./binlog.000001\n./binlog.000002\n./binlog.000003\n./binlog.000004\n" {
		t.Errorf("index %q", index)
	}
}

// TestOpenRecoversAfterCrash: a crash leaves the in-use flag and half a
// transaction; Open cuts it off, keeps the complete ones, and starts a new
// file whose Previous_gtids holds exactly those.
func TestOpenRecoversAfterCrash(t *testing.T) {
	dir := t.TempDir()
	fs := open(t, dir, Options{})
	txns := sampleTxns(t)
	for _, tx := range txns[:2] {
		fs.Append(tx)
	}
	if err := fs.Flush(); err != nil {
		t.Fatal(err)
	}
	_, goodEnd := fs.Current()
	fs.Append(txns[2])
	whole := append([]byte(nil), fs.buf...)
	fs.buf = whole[:len(whole)/2] // half of the third transaction reaches the file
	fs.Flush()
	fs.Abandon()

	fs2 := open(t, dir, Options{})
	st, _ := os.Stat(filepath.Join(dir, "binlog.000001"))
	if st.Size() != goodEnd {
		t.Errorf("recovered file is %d bytes, want %d", st.Size(), goodEnd)
	}
	files, err := fs2.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || len(files[0].Txns) != 2 || files[1].Previous.OneLine() != uuidA+":1-2" {
		t.Fatalf("after recovery: %d files, first holds %d txns, second starts after %q", len(files), len(files[0].Txns), files[1].Previous.OneLine())
	}
}

// TestPurge: PURGE TO keeps the named file; PURGE BEFORE stops at the first
// newer file; unknown names are refused; the index follows.
func TestPurge(t *testing.T) {
	dir := t.TempDir()
	fs := open(t, dir, Options{})
	for i := 0; i < 3; i++ {
		if err := fs.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fs.PurgeTo("binlog.000009"); err != ErrUnknownLog {
		t.Fatalf("unknown target: %v", err)
	}
	gone, err := fs.PurgeTo("binlog.000002")
	if err != nil || !reflect.DeepEqual(gone, []string{"binlog.000001"}) {
		t.Fatalf("PurgeTo: %v %v", gone, err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "binlog.000002"), old, old)
	gone, err = fs.PurgeBefore(time.Now().Add(-time.Minute))
	if err != nil || !reflect.DeepEqual(gone, []string{"binlog.000002"}) {
		t.Fatalf("PurgeBefore: %v %v", gone, err)
	}
	gone, _ = fs.PurgeBefore(time.Now().Add(time.Hour))
	if !reflect.DeepEqual(gone, []string{"binlog.000003"}) {
		t.Fatalf("PurgeBefore the future purged %v, want all but the current file", gone)
	}
	files, _ := fs.Files()
	if len(files) != 1 || files[0].Name != "binlog.000004" {
		t.Fatalf("files %v", files)
	}
	if _, err := os.Stat(filepath.Join(dir, "binlog.000001")); !os.IsNotExist(err) {
		t.Error("purged file still exists")
	}
}

// TestVarlenIntegers checks the examples of libs/mysql/serialization/readme.md.
func TestVarlenIntegers(t *testing.T) {
	cases := []struct {
		got, want []byte
	}{
		{putVarUint(nil, 65535), []byte{0xfb, 0xff, 0x07}},
		{putVarInt(nil, 65535), []byte{0xf3, 0xff, 0x0f}},
		{putVarInt(nil, -65535), []byte{0xeb, 0xff, 0x0f}},
		{putVarInt(nil, -65536), []byte{0xfb, 0xff, 0x0f}},
	}
	for i, c := range cases {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("case %d: % x, want % x", i, c.got, c.want)
		}
	}
	for _, v := range []uint64{0, 1, 127, 128, 1 << 20, 1<<56 - 1, 1 << 56, 1<<64 - 1} {
		got, n, err := readVarUint(putVarUint(nil, v))
		if err != nil || got != v || n != len(putVarUint(nil, v)) {
			t.Errorf("%d: read back %d (%d bytes, %v)", v, got, n, err)
		}
	}
}

// BenchmarkAppend measures encoding and writing one single-row insert
// transaction (no fsync), the per-commit cost the simulator adds.
func BenchmarkAppend(b *testing.B) {
	fs, err := Open(Options{Dir: b.TempDir(), ServerID: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer fs.Close()
	now := time.Now()
	for i := 0; i < b.N; i++ {
		tx := Txn{GTID: gtid.GTID{UUID: uuidA, GNO: int64(i + 1)}, OriginalCommit: now, ImmediateCommit: now,
			Ops: []Op{{Kind: OpInsert, DB: "bench", Table: "t", Rows: [][]any{{int64(i), "some text"}}}}}
		if _, _, err := fs.Append(tx); err != nil {
			b.Fatal(err)
		}
		if err := fs.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadFileRejectsDamage: a flipped byte fails the event's CRC32; the
// reader stops there and reports where the intact part ends.
func TestReadFileRejectsDamage(t *testing.T) {
	dir := t.TempDir()
	fs := open(t, dir, Options{})
	txns := sampleTxns(t)
	fs.Append(txns[0])
	if err := fs.Flush(); err != nil {
		t.Fatal(err)
	}
	_, firstEnd := fs.Current()
	fs.Append(txns[1])
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "binlog.000001")
	b, _ := os.ReadFile(path)
	b[firstEnd+30] ^= 0xff // inside the second transaction's GTID event
	os.WriteFile(path, b, 0o640)
	fc, err := ReadFile(path)
	if err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("damaged file read without error: %v", err)
	}
	if fc.ValidEnd != firstEnd || len(fc.Txns) != 1 {
		t.Fatalf("intact part ends at %d with %d txns, want %d with 1", fc.ValidEnd, len(fc.Txns), firstEnd)
	}
}
