package upload

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/backup/objstore"
	"github.com/shipstream/bloodraven/pkg/testbed/s3server"
)

// benchEnv turns TestBenchBackupStore on (scripts/bench-backup-store sets
// it); benchBinEnv names the bloodraven binary to run as the step.
const (
	benchEnv     = "BLOODRAVEN_BENCH_BACKUP_STORE"
	benchBinEnv  = "BLOODRAVEN_BIN"
	benchRunsEnv = "BLOODRAVEN_BENCH_RUNS" // runs per mode and size, default 2
)

// TestBenchBackupStore is the backup store benchmark (not a CI test; run
// it with scripts/bench-backup-store). It runs `bloodraven encrypt-upload`
// as a child process, as the backup Job does, against a real versitygw on
// loopback, plain and encrypted in turn, on the same generated dump of 1 GiB
// and of 4 GiB, and prints each run's throughput (dump bytes over the step's
// wall time: store, stamp, read-back and verification), the encrypted/plain
// ratio of the best runs (the machine is shared: the best run is the one
// least disturbed), and the step's peak RSS (getrusage of the child). It fails only
// when the peak RSS grows with the dump's size: the step's memory must be
// constant.
func TestBenchBackupStore(t *testing.T) {
	if os.Getenv(benchEnv) == "" {
		t.Skip("the backup store benchmark: run scripts/bench-backup-store (" + benchEnv + "=1)")
	}
	bin := os.Getenv(benchBinEnv)
	if bin == "" {
		t.Fatal(benchBinEnv + " must name the bloodraven binary (scripts/bench-backup-store builds bin/bloodraven)")
	}
	srv := s3server.StartT(t)
	const bucket, prefix = "bench", "bench"
	if err := srv.Bucket(bucket); err != nil {
		t.Fatal(err)
	}
	creds := t.TempDir()
	writeFile(t, filepath.Join(creds, AccessKeyFile), srv.AccessKey)
	writeFile(t, filepath.Join(creds, SecretKeyFile), srv.SecretKey)
	passFile := filepath.Join(t.TempDir(), "passphrase")
	writeFile(t, passFile, hexString(t, 32)+"\n")
	store, err := objstore.NewS3(srv.Config(bucket, prefix))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("backup store benchmark: bloodraven encrypt-upload to versitygw on %s (same machine, %s), sparse dump files\n",
		srv.Endpoint(), strconv.Itoa(runtime.NumCPU())+" CPUs")
	runs := 2
	if n, err := strconv.Atoi(os.Getenv(benchRunsEnv)); err == nil && n > 0 {
		runs = n
	}
	fmt.Printf("%-6s %-10s %9s %9s %10s\n", "dump", "mode", "seconds", "MB/s", "peak RSS")
	peak := map[string]map[int64]int64{"plain": {}, "encrypted": {}}
	attempt := 0
	for _, size := range []int64{1 << 30, 4 << 30} {
		staging := t.TempDir()
		writeSparseDump(t, staging, size)
		best := map[string]float64{}
		for r := range runs {
			// Alternate which mode goes first, so neither always runs on
			// a warmer or a busier machine.
			modes := []string{"plain", "encrypted"}
			if r%2 == 1 {
				modes[0], modes[1] = modes[1], modes[0]
			}
			for _, mode := range modes {
				attempt++
				a := Args{StagingDir: staging, StoreType: StoreS3, S3Endpoint: srv.Endpoint(), S3Region: s3server.Region,
					S3Bucket: bucket, S3Prefix: prefix, S3CredentialsDir: creds,
					BackupName: "bench", BackupUID: "00000000-0000-4000-8000-000000000001", GroupName: "bench",
					GroupUID: "00000000-0000-4000-8000-000000000002", Attempt: attempt}
				if mode == "encrypted" {
					a.PassphraseFile = passFile
				}
				secs, rss, last := runChild(t, bin, a)
				rate := float64(size) / 1e6 / secs
				best[mode] = max(best[mode], rate)
				peak[mode][size] = max(peak[mode][size], rss)
				fmt.Printf("%-6s %-10s %9.1f %9.1f %6d MiB\n       %s\n", gib(size), mode, secs, rate, rss>>20, last)
				deleteAttempt(t, store, a.attemptDir())
			}
		}
		fmt.Printf("%-6s best of %d: plain %.1f MB/s, encrypted %.1f MB/s, encrypted/plain ratio %.2f (goal >= 0.8); peak RSS plain %d MiB, encrypted %d MiB\n",
			gib(size), runs, best["plain"], best["encrypted"], best["encrypted"]/best["plain"], peak["plain"][size]>>20, peak["encrypted"][size]>>20)
	}
	// Constant memory: 4 GiB may not take more than 1 GiB did, give or
	// take the allocator's and the runtime's noise.
	const slack = 16 << 20
	for mode, p := range peak {
		if p[4<<30] > p[1<<30]+slack {
			t.Errorf("%s: peak RSS %d MiB for 4 GiB against %d MiB for 1 GiB: the step's memory grows with the dump",
				mode, p[4<<30]>>20, p[1<<30]>>20)
		}
	}
}

// runChild runs the step as its own process and returns its wall time,
// peak resident set size (bytes) and last line of output.
func runChild(t *testing.T, bin string, a Args) (float64, int64, string) {
	t.Helper()
	cmd := exec.Command(bin, a.Argv()...)
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, a.Argv(), err, out.b)
	}
	secs := time.Since(start).Seconds()
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage for the child")
	}
	lines := strings.Split(strings.TrimSpace(string(out.b)), "\n")
	return secs, ru.Maxrss << 10, lines[len(lines)-1] // Linux reports KiB
}

// writeSparseDump writes a complete dump of about total bytes whose chunk
// files are sparse (they read as zeros and take no disk or memory): one
// chunk of half the size, as a table dumped without chunking, and 64 MiB
// chunks (mysqlsh's default bytesPerChunk) for the rest.
func writeSparseDump(t *testing.T, dir string, total int64) {
	t.Helper()
	chunks := map[string]int64{"shop@big@@0.tsv.zst": total / 2}
	const chunk = 64 << 20
	n := (total - total/2) / chunk
	for i := range n {
		name := "shop@rows@" + strconv.FormatInt(i, 10) + ".tsv.zst"
		if i == n-1 {
			name = "shop@rows@@" + strconv.FormatInt(i, 10) + ".tsv.zst"
		}
		chunks[name] = chunk
	}
	chunkJSON := "{"
	for name, size := range chunks {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if len(chunkJSON) > 1 {
			chunkJSON += ","
		}
		chunkJSON += strconv.Quote(name) + ":" + strconv.FormatInt(size, 10)
	}
	chunkJSON += "}"
	writeFile(t, filepath.Join(dir, "@.json"), `{"dumper":"mysqlsh Ver 9.7.0","version":"2.0.1","origin":"dumpInstance",`+
		`"schemas":["shop"],"consistent":true,"gtidExecuted":"`+fixtureGTID+`","binlogFile":"binlog.000001","binlogPosition":157,`+
		`"begin":"2026-12-01 23:00:00"}`)
	writeFile(t, filepath.Join(dir, "shop.sql"), "CREATE DATABASE IF NOT EXISTS `shop`;\n")
	writeFile(t, filepath.Join(dir, "@.done.json"), `{"end":"2026-12-01 23:10:00","dataBytes":`+strconv.FormatInt(total, 10)+
		`,"chunkFileBytes":`+chunkJSON+`}`)
}

func deleteAttempt(t *testing.T, store objstore.Store, dir string) {
	t.Helper()
	ctx := context.Background()
	objs, err := store.List(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := store.Delete(ctx, o.Key); err != nil {
			t.Fatal(err)
		}
	}
}

func gib(n int64) string { return strconv.FormatInt(n>>30, 10) + " GiB" }

// limitedBuffer keeps the first 64 KiB the child writes.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
