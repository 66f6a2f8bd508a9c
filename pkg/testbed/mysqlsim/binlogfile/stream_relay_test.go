package binlogfile

import (
	"encoding/binary"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// splitEvents cuts a byte run of whole events into events.
func splitEvents(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= headerLen {
		n := int(binary.LittleEndian.Uint32(b[9:]))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// TestDecoderAndRelayLog: a binary log's events fed to the stream decoder
// give back the transactions as written, and written to a relay log as
// received they read back the same, the relay log's own Previous_gtids
// first; a corrupted event is refused.
func TestDecoderAndRelayLog(t *testing.T) {
	dir := t.TempDir()
	fs := open(t, dir, Options{})
	want := sampleTxns(t)
	for _, tx := range want {
		if _, _, err := fs.Append(tx); err != nil {
			t.Fatal(err)
		}
	}
	name, _ := fs.Current()
	data, _, err := fs.ReadEvents(name, 4, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := OpenRelay(RelayOptions{Dir: dir, Basename: "r-relay-bin", ServerID: 9})
	if err != nil {
		t.Fatal(err)
	}
	prev := gtid.MustParse(uuidA + ":100")
	if err := rl.NewFile(prev); err != nil {
		t.Fatal(err)
	}
	dec := NewDecoder()
	var got []Txn
	for _, ev := range splitEvents(data) {
		_, start := rl.Current()
		se, err := dec.Feed(ev, start)
		if err != nil {
			t.Fatal(err)
		}
		if se.Type == TypePrevGTIDs {
			continue // not written to a relay log
		}
		if _, _, err := rl.Append(ev); err != nil {
			t.Fatal(err)
		}
		if se.Txn != nil {
			got = append(got, se.Txn.Txn)
			if err := rl.EndTxn(se.Txn.GTID); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range want {
		want[i].ServerID = 7
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n %+v\nwant\n %+v", got, want)
	}
	if err := rl.Close(); err != nil {
		t.Fatal(err)
	}
	fc, err := ReadRelayFile(filepath.Join(dir, "r-relay-bin.000001"))
	if err != nil {
		t.Fatal(err)
	}
	if !fc.Previous.Equal(prev) || fc.InUse || len(fc.Txns) != len(want) || fc.ValidEnd != fc.Size {
		t.Fatalf("relay file: previous %s, in use %v, %d txns, valid %d of %d", fc.Previous, fc.InUse, len(fc.Txns), fc.ValidEnd, fc.Size)
	}
	for i := range want {
		if !reflect.DeepEqual(fc.Txns[i].Txn, want[i]) {
			t.Fatalf("relay txn %d: %+v, want %+v", i, fc.Txns[i].Txn, want[i])
		}
	}
	bad := append([]byte(nil), splitEvents(data)[2]...)
	bad[len(bad)-5] ^= 0xff
	if _, err := NewDecoder().Feed(bad, 4); err == nil {
		t.Fatal("an event with a bad checksum was accepted")
	}
}
