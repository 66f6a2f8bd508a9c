package upload

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/backup/envelope"
	"github.com/shipstream/bloodraven/pkg/backup/objstore"
	"github.com/shipstream/bloodraven/pkg/backup/stamp"
)

// The dump fixture's coordinates, as its @.json states them: the truth the
// stamp must carry.
const (
	fixtureGTID       = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77,8a94f357-aab4-11df-86ab-c80aa9429562:1-5"
	fixtureBinlogFile = "binlog.000003"
	fixtureBinlogPos  = 4711
)

// dumpFixture is a staging directory laid out as mysqlsh's dumpInstance
// writes it, and the bytes of each of its files.
type dumpFixture struct {
	dir   string
	files map[string][]byte
}

// writeDump writes a dump with chunk files at and around the envelope's
// chunk size, an empty chunk, and, with bigChunk, one chunk above the S3
// store's multipart threshold (16 MiB), all random (incompressible, and
// different in every fixture).
func writeDump(t *testing.T, bigChunk bool) dumpFixture {
	t.Helper()
	last := 200_001
	if bigChunk {
		last = objstore.DefaultPartSize + 123_457
	}
	chunks := map[string]int{
		"shop@orders@0.tsv.zst":  envelope.ChunkSize,
		"shop@orders@1.tsv.zst":  2*envelope.ChunkSize + 1,
		"shop@orders@@2.tsv.zst": last,
		"shop@empty@@0.tsv.zst":  0,
	}
	started := map[string]any{
		"dumper":  "mysqlsh Ver 9.7.0 for Linux on x86_64 - for MySQL 9.7.0 (MySQL Community Server (GPL))",
		"version": "2.0.1", "origin": "dumpInstance", "schemas": []string{"shop"},
		"basenames": map[string]string{"shop": "shop"}, "consistent": true, "server": "orders-iad-0",
		"serverVersion": "9.7.0", "gtidExecuted": fixtureGTID, "gtidExecutedInconsistent": false,
		"binlogFile": fixtureBinlogFile, "binlogPosition": fixtureBinlogPos, "begin": "2026-12-01 23:00:00",
	}
	f := dumpFixture{dir: t.TempDir(), files: map[string][]byte{
		"@.json":                     mustJSON(t, started),
		"@.sql":                      []byte("-- MySQL Shell dump 2.0.1\nSET NAMES 'utf8mb4';\n"),
		"@.post.sql":                 []byte("-- MySQL Shell dump 2.0.1\n"),
		"shop.json":                  mustJSON(t, map[string]any{"schema": "shop", "tables": []string{"orders", "empty"}}),
		"shop.sql":                   []byte("CREATE DATABASE IF NOT EXISTS `shop`;\n"),
		"shop@orders.json":           mustJSON(t, map[string]any{"options": map[string]any{"schema": "shop", "table": "orders"}}),
		"shop@orders.sql":            []byte("CREATE TABLE IF NOT EXISTS `orders` (`id` bigint PRIMARY KEY);\n"),
		"shop@empty.json":            mustJSON(t, map[string]any{"options": map[string]any{"schema": "shop", "table": "empty"}}),
		"shop@empty.sql":             []byte("CREATE TABLE IF NOT EXISTS `empty` (`id` bigint PRIMARY KEY);\n"),
		"shop@orders@@2.tsv.zst.idx": randomBytes(t, 8),
	}}
	chunkBytes := map[string]int{}
	var data int
	for name, n := range chunks {
		f.files[name] = randomBytes(t, n)
		chunkBytes[name] = n
		data += n
	}
	f.files["@.done.json"] = mustJSON(t, map[string]any{"end": "2026-12-01 23:00:09", "dataBytes": data, "chunkFileBytes": chunkBytes})
	for name, b := range f.files {
		if err := os.WriteFile(filepath.Join(f.dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// world is one real store and a view of what it holds that does not go
// through pkg/backup/objstore: the files of the directory store, or of the
// S3 server's own data directory.
type world struct {
	args Args
	// open opens the store the step uses (a real one).
	open func(Args) (objstore.Store, error)
	// read is the stored bytes of key (relative to the store's root), nil when absent.
	read func(t *testing.T, key string) []byte
	// keys lists every object key below the store's root.
	keys func(t *testing.T) []string
	// tamper flips one byte of key's stored bytes, in place, as bit rot or a
	// stray writer would.
	tamper func(t *testing.T, key string)
	// remove deletes key's stored object behind the store's back.
	remove func(t *testing.T, key string)
}

// dirWorld is the directory (PVC) store on a temporary directory, which is
// not a mount point: the store's other rules are tested here, the mount
// rule in TestPVCNotMountedFailsAtStart.
func dirWorld(t *testing.T) *world {
	root := t.TempDir()
	return fileWorld(t, root, Args{StoreType: StorePVC, PVCClaim: "orders-backups", PVCMountPath: root},
		func(a Args) (objstore.Store, error) { return openStore(a, false) })
}

// fileWorld reads a store whose objects are files below root, named by key.
func fileWorld(t *testing.T, root string, a Args, open func(Args) (objstore.Store, error)) *world {
	t.Helper()
	path := func(key string) string { return filepath.Join(root, filepath.FromSlash(key)) }
	return &world{
		args: a, open: open,
		read: func(t *testing.T, key string) []byte {
			b, err := os.ReadFile(path(key))
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		keys: func(t *testing.T) []string {
			var keys []string
			if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
				return nil // the S3 server makes the prefix's directory at the first write
			}
			err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, err := filepath.Rel(root, p)
				keys = append(keys, filepath.ToSlash(rel))
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(keys)
			return keys
		},
		tamper: func(t *testing.T, key string) {
			b, err := os.ReadFile(path(key))
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x01
			if err := os.WriteFile(path(key), b, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		remove: func(t *testing.T, key string) {
			if err := os.Remove(path(key)); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// step is one run of the upload step against w.
type step struct {
	attempt    int
	passphrase string // "" = no encryption; written to a file with surrounding whitespace
	backupUID  string
	// beforeCreate and afterCreate, when set, run before each Create the
	// step calls and after each object it created.
	beforeCreate, afterCreate func(key string)
}

const testBackupName, testGroupName, testGroupUID = "orders-nightly", "orders", "5c0e4b8a-2f6d-4e1a-9b7c-3d2e1f0a9b8c"

func (w *world) argsFor(t *testing.T, f dumpFixture, s step) Args {
	a := w.args
	a.StagingDir = f.dir
	a.BackupName, a.BackupUID, a.GroupName, a.GroupUID, a.Attempt = testBackupName, s.backupUID, testGroupName, testGroupUID, s.attempt
	if a.BackupUID == "" {
		a.BackupUID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	}
	if s.passphrase != "" {
		a.PassphraseFile = filepath.Join(t.TempDir(), "passphrase")
		if err := os.WriteFile(a.PassphraseFile, []byte("\n  "+s.passphrase+" \t\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// run runs the step and returns its error and what it wrote on stderr.
func (w *world) run(t *testing.T, f dumpFixture, s step) (Args, string, error) {
	t.Helper()
	a := w.argsFor(t, f, s)
	var stderr bytes.Buffer
	open := w.open
	if s.beforeCreate != nil || s.afterCreate != nil {
		open = func(a Args) (objstore.Store, error) {
			st, err := w.open(a)
			return hookStore{Store: st, before: s.beforeCreate, after: s.afterCreate}, err
		}
	}
	err := run(context.Background(), a, &stderr, open)
	return a, stderr.String(), err
}

// hookStore is a real store with callbacks around each Create.
type hookStore struct {
	objstore.Store
	before, after func(key string)
}

func (h hookStore) Create(ctx context.Context, key string, r io.Reader, size int64) (objstore.ObjectInfo, error) {
	if h.before != nil {
		h.before(key)
	}
	info, err := h.Store.Create(ctx, key, r, size)
	if err == nil && h.after != nil {
		h.after(key)
	}
	return info, err
}

// snapshot is every object of the store with its bytes.
func (w *world) snapshot(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, k := range w.keys(t) {
		out[k] = string(w.read(t, k))
	}
	return out
}

// checkStored judges a finished attempt by what the store holds: exactly
// one object per dump file plus the stamp in the attempt's location; each
// object the staging file's bytes (or their envelope, which decrypts to
// them); and a stamp naming the backup, the dump's own GTID set and binlog
// position, and every object with the size and SHA-256 of its stored bytes.
func (w *world) checkStored(t *testing.T, a Args, f dumpFixture, passphrase string) {
	t.Helper()
	dir := AttemptDir(a.BackupName, a.BackupUID, a.Attempt)
	var want, got []string
	for name := range f.files {
		want = append(want, dir+name)
	}
	want = append(want, dir+stamp.Name)
	slices.Sort(want)
	for _, k := range w.keys(t) {
		if strings.HasPrefix(k, dir) {
			got = append(got, k)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the attempt's location holds\n%q\nwant\n%q", got, want)
	}
	sums := map[string]stamp.File{}
	for name, plain := range f.files {
		key := dir + name
		stored := w.read(t, key)
		sum := sha256.Sum256(stored)
		sums[key] = stamp.File{Key: key, Size: int64(len(stored)), SHA256: hex.EncodeToString(sum[:])}
		if passphrase == "" {
			if !bytes.Equal(stored, plain) {
				t.Errorf("%s: stored %d bytes differ from the staging file's %d", key, len(stored), len(plain))
			}
			continue
		}
		checkEnvelope(t, key, stored, plain, passphrase)
	}
	st, err := stamp.Decode(w.read(t, dir+stamp.Name))
	if err != nil {
		t.Fatalf("the stored stamp: %v", err)
	}
	wantEnc := stamp.EncryptionNone
	if passphrase != "" {
		wantEnc = envelope.Algorithm
	}
	if st.Backup != (stamp.Object{Name: a.BackupName, UID: a.BackupUID}) || st.Group != (stamp.Object{Name: a.GroupName, UID: a.GroupUID}) ||
		st.Attempt != a.Attempt || st.Encryption != wantEnc {
		t.Errorf("stamp names %+v %+v attempt %d encryption %q, want %s/%s %s/%s attempt %d %q",
			st.Backup, st.Group, st.Attempt, st.Encryption, a.BackupName, a.BackupUID, a.GroupName, a.GroupUID, a.Attempt, wantEnc)
	}
	if st.GTIDExecuted != fixtureGTID || st.BinlogPosition != (stamp.BinlogPosition{File: fixtureBinlogFile, Position: fixtureBinlogPos}) {
		t.Errorf("stamp has GTID %q at %+v, the dump's @.json says %q at %s:%d", st.GTIDExecuted, st.BinlogPosition, fixtureGTID, fixtureBinlogFile, fixtureBinlogPos)
	}
	if len(st.Files) != len(sums) {
		t.Errorf("stamp lists %d files, the location holds %d", len(st.Files), len(sums))
	}
	for _, sf := range st.Files {
		if sums[sf.Key] != sf {
			t.Errorf("stamp says %+v, the store holds %+v", sf, sums[sf.Key])
		}
	}
}

// checkEnvelope: stored is a BRV1 envelope that decrypts to plain with the
// whitespace-stripped passphrase, and with nothing else.
func checkEnvelope(t *testing.T, key string, stored, plain []byte, passphrase string) {
	t.Helper()
	if !envelope.IsEnvelope(stored) {
		t.Errorf("%s is not a BRV1 envelope", key)
		return
	}
	if len(plain) >= 16 && bytes.Contains(stored, plain[:16]) {
		t.Errorf("%s holds its plaintext", key)
	}
	r, err := envelope.NewReader(bytes.NewReader(stored), []byte(passphrase))
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	dec, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: decrypting: %v", key, err)
	}
	if !bytes.Equal(dec, plain) {
		t.Errorf("%s decrypts to %d bytes that differ from the staging file's %d", key, len(dec), len(plain))
	}
	// And with no other passphrase.
	if r, err := envelope.NewReader(bytes.NewReader(stored), []byte(passphrase+"x")); err == nil {
		if _, err := io.ReadAll(r); err == nil {
			t.Errorf("%s decrypts with another passphrase too", key)
		}
	}
}
