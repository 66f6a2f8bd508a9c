package mysqlsh

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/backup/dump"
)

// BenchmarkDump dumps 20,000 rows of about 110 bytes in 4 tables with 4
// threads, zstd and 1M chunks, under the full locking sequence; the
// reported rate is uncompressed data bytes per second.
func BenchmarkDump(b *testing.B) {
	srv, admin := server(b)
	exec(b, admin, "CREATE DATABASE bench")
	for tb := 0; tb < 4; tb++ {
		exec(b, admin, fmt.Sprintf("CREATE TABLE bench.t%d (id BIGINT, note TEXT)", tb))
		for batch := 0; batch < 10; batch++ {
			var vals []string
			for i := 0; i < 500; i++ {
				vals = append(vals, fmt.Sprintf("(%d, '%s')", batch*500+i, strings.Repeat("n", 100)))
			}
			exec(b, admin, fmt.Sprintf("INSERT INTO bench.t%d VALUES %s", tb, strings.Join(vals, ", ")))
		}
	}
	var bytes uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := filepath.Join(b.TempDir(), "dump")
		a := argv(srv, out)
		a = append(a[:len(a)-5], "--threads=4", "--bytesPerChunk=1M", "--compression=zstd", "--consistent=true", "--users=false")
		r := run(b, a, backupPass, Hooks{})
		if r.code != ExitOK {
			b.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		b.StopTimer()
		m, err := dump.Read(out)
		if err != nil || !m.Complete {
			b.Fatalf("%v %+v", err, m)
		}
		bytes = m.DataBytes
		b.StartTimer()
	}
	b.SetBytes(int64(bytes))
}
