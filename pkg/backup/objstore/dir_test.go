package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shipstream/bloodraven/pkg/backup/objstore"
)

func newDir(t *testing.T) (objstore.Store, string) {
	t.Helper()
	root := t.TempDir()
	st, err := objstore.NewDir("backup-claim", root, false)
	if err != nil {
		t.Fatal(err)
	}
	return st, root
}

// files lists every file below root as the filesystem shows it, temporary files included.
func files(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDirCreateOpenListDelete(t *testing.T) {
	st, root := newDir(t)
	ctx := context.Background()
	data := randomBytes(5, 3*mib+1)
	info, err := st.Create(ctx, "b1/1/data@@0.tsv", bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(data)) || info.Key != "b1/1/data@@0.tsv" {
		t.Errorf("create returned %+v", info)
	}
	if onDisk, err := os.ReadFile(filepath.Join(root, "b1", "1", "data@@0.tsv")); err != nil || !bytes.Equal(onDisk, data) {
		t.Fatalf("file on the volume: %d bytes, %v", len(onDisk), err)
	}
	if _, err := st.Create(ctx, "b1/1/@.json", strings.NewReader("{}"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, "b2/x", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	r, err := st.Open(ctx, "b1/1/data@@0.tsv")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	_ = r.Close()
	if !bytes.Equal(got, data) {
		t.Fatal("open returned other bytes")
	}
	list, err := st.List(ctx, "b1/")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(list) != fmt.Sprintf("[{b1/1/@.json 2 } {b1/1/data@@0.tsv %d }]", len(data)) {
		t.Errorf("list b1/: %v", list)
	}
	if loc := st.Location("b1/1/@.json"); loc != "pvc://backup-claim/b1/1/@.json" {
		t.Errorf("location %q", loc)
	}
	if err := st.Delete(ctx, "b2/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "b2", "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("deleted file still there: %v", err)
	}
	if err := st.Delete(ctx, "b2/x"); err != nil {
		t.Errorf("deleting a missing key: %v", err)
	}
	if _, err := st.Open(ctx, "b2/x"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("open of a deleted key: %v", err)
	}
	if err := st.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(files(t, root), " "); got != "b1/1/@.json b1/1/data@@0.tsv" {
		t.Errorf("volume holds %s after the probe", got)
	}
	for _, bad := range []string{"", "/abs", "a//b", "../x", "a/./b", "a/.x.bloodraven-tmp-1"} {
		if _, err := st.Create(ctx, bad, strings.NewReader("x"), 1); err == nil {
			t.Errorf("key %q accepted", bad)
		}
	}
}

func TestDirCreateNeverOverwrites(t *testing.T) {
	st, root := newDir(t)
	ctx := context.Background()
	if _, err := st.Create(ctx, "k", strings.NewReader("first"), -1); err != nil {
		t.Fatal(err)
	}
	_, err := st.Create(ctx, "k", strings.NewReader("second"), -1)
	if !errors.Is(err, objstore.ErrExists) || !strings.Contains(err.Error(), "pvc://backup-claim/k") {
		t.Fatalf("second create: %v, want ErrExists naming the location", err)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "k")); string(data) != "first" {
		t.Fatalf("file holds %q", data)
	}
}

// TestDirRacingWritersOneWins: writers of one key that all have their data written when they
// publish it; exactly one may win and the file must hold its bytes. gate holds each writer's
// stream open at its end until all have written everything else.
func TestDirRacingWritersOneWins(t *testing.T) {
	st, root := newDir(t)
	const writers = 8
	for round := 0; round < 5; round++ {
		key := fmt.Sprintf("r%d/data", round)
		var arrived sync.WaitGroup
		arrived.Add(writers)
		errs := make([]error, writers)
		payloads := make([][]byte, writers)
		var done sync.WaitGroup
		for i := range writers {
			payloads[i] = randomBytes(uint64(round*writers+i), 256<<10)
			done.Add(1)
			go func() {
				defer done.Done()
				_, errs[i] = st.Create(context.Background(), key, &barrierReader{data: payloads[i], arrived: &arrived}, -1)
			}()
		}
		done.Wait()
		var winners []int
		for i, err := range errs {
			if err == nil {
				winners = append(winners, i)
			} else if !errors.Is(err, objstore.ErrExists) {
				t.Fatalf("writer %d: %v", i, err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: writers %v succeeded, want exactly one", round, winners)
		}
		held, _ := os.ReadFile(filepath.Join(root, filepath.FromSlash(key)))
		if !bytes.Equal(held, payloads[winners[0]]) {
			t.Fatalf("round %d: the file is not the winner's", round)
		}
	}
	for _, f := range files(t, root) {
		if strings.Contains(f, "bloodraven-tmp") {
			t.Errorf("temporary file left: %s", f)
		}
	}
}

func TestDirSizeMismatchStoresNothing(t *testing.T) {
	st, root := newDir(t)
	for _, c := range []struct{ have, said int }{{9, 10}, {11, 10}} {
		key := fmt.Sprintf("k%d", c.have)
		if _, err := st.Create(context.Background(), key, bytes.NewReader(make([]byte, c.have)), int64(c.said)); err == nil {
			t.Errorf("%d bytes stored as %d", c.have, c.said)
		}
	}
	if f := files(t, root); len(f) != 0 {
		t.Errorf("volume holds %v", f)
	}
}

// TestDirRefusesRootThatIsNotAMountPoint: with the v1.7.0 rule, a directory that is not a mount
// point is refused (the claim is not mounted there); /dev/shm, a tmpfs mount, is accepted.
func TestDirRefusesRootThatIsNotAMountPoint(t *testing.T) {
	root := t.TempDir()
	_, err := objstore.NewDir("claim", root, true)
	if err == nil || !strings.Contains(err.Error(), "is not a mount point") || !strings.Contains(err.Error(), root) {
		t.Fatalf("NewDir on a plain directory: %v, want a refusal naming it", err)
	}
	if _, err := objstore.NewDir("claim", root, false); err != nil {
		t.Fatalf("without the rule: %v", err)
	}
	if _, err := objstore.NewDir("claim", "/dev/shm", true); err != nil {
		t.Fatalf("NewDir on the tmpfs mount /dev/shm: %v", err)
	}
	link := filepath.Join(t.TempDir(), "mnt")
	if err := os.Symlink("/dev/shm", link); err != nil {
		t.Fatal(err)
	}
	if _, err := objstore.NewDir("claim", link, true); err != nil {
		t.Fatalf("a symlink to a mount point: %v", err)
	}
	if _, err := objstore.NewDir("claim", filepath.Join(root, "missing"), false); err == nil {
		t.Fatal("a missing mount path was accepted")
	}
}

// TestDirRefusesPrefixLeavingTheVolumeThroughASymlink: a key whose directory is a symlink to
// another volume is refused before anything is written there; one inside the volume is fine.
func TestDirRefusesPrefixLeavingTheVolumeThroughASymlink(t *testing.T) {
	st, root := newDir(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "binlogs")); err != nil {
		t.Fatal(err)
	}
	_, err := st.Create(context.Background(), "binlogs/sub/f", strings.NewReader("x"), 1)
	if err == nil || !strings.Contains(err.Error(), "outside the volume") {
		t.Fatalf("create through a symlink leaving the volume: %v", err)
	}
	if f := files(t, outside); len(f) != 0 {
		t.Fatalf("written outside the volume: %v", f)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("created outside the volume: %v", entries)
	}
	if err := os.Mkdir(filepath.Join(root, "real"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(root, "inside")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(context.Background(), "inside/f", strings.NewReader("x"), 1); err != nil {
		t.Fatalf("a symlink within the volume: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "real", "f")); string(data) != "x" {
		t.Fatal("file not written through the in-volume symlink")
	}
}

func TestDirCancelledCreateLeavesNothing(t *testing.T) {
	st, root := newDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &cancellingReader{r: bytes.NewReader(make([]byte, 4*mib)), after: mib, cancel: cancel}
	if _, err := st.Create(ctx, "d/f", src, -1); !errors.Is(err, context.Canceled) {
		t.Fatalf("create with a cancelled context: %v, want context.Canceled", err)
	}
	if f := files(t, root); len(f) != 0 {
		t.Errorf("volume holds %v", f)
	}
}
