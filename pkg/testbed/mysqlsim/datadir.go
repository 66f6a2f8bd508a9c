package mysqlsim

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The data directory holds what a mysqld keeps on disk (docs/mysql-simulator.md,
// "Data directory and crash recovery"):
//
//	auto.cnf               server_uuid, written at first boot as mysqld does
//	mysqld-auto.cnf        SET PERSIST values, in MySQL's JSON layout
//	sim-checkpoint.json    table data, GTID state, binary-log content and the
//	                       replication channel (connection metadata, relay log)
//	sim-redo.log           the redo journal: one record per commit or relay-log
//	                       append since the checkpoint
//	mysqld.pid             the pid file (command default; Config.PIDFile)
//
// An empty directory is a first boot; otherwise the server recovers from
// the checkpoint and the journal.
const (
	autoCnfFile     = "auto.cnf"
	persistFile     = "mysqld-auto.cnf"
	checkpointFile  = "sim-checkpoint.json"
	redoFile        = "sim-redo.log"
	checkpointVer   = 1
	persistFormatV2 = 2
)

// disk is the storage under a data directory. Write-then-Sync is the only
// durability there is: a process kill keeps what was written, and only what
// was written.
type disk interface {
	readFile(name string) ([]byte, error) // fs.ErrNotExist when absent
	// writeFileAtomic replaces name with data durably (temp file, fsync, rename).
	writeFileAtomic(name string, data []byte) error
	openAppend(name string) (appendFile, error)
	// names lists the files present.
	names() ([]string, error)
}

type appendFile interface {
	Write(p []byte) (int, error)
	Sync() error
	Close() error
}

// osDisk is a real directory.
type osDisk struct{ dir string }

func (d osDisk) readFile(name string) ([]byte, error) { return os.ReadFile(filepath.Join(d.dir, name)) }

func (d osDisk) writeFileAtomic(name string, data []byte) error {
	tmp, err := os.CreateTemp(d.dir, "."+name+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(d.dir, name)); err != nil {
		return err
	}
	return syncDir(d.dir)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func (d osDisk) openAppend(name string) (appendFile, error) {
	return os.OpenFile(filepath.Join(d.dir, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}

func (d osDisk) names() ([]string, error) {
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out, nil
}

// memDisk stands in for a directory when Config.DataDir is empty. It lives
// in the Server, so it outlives Crash as files outlive a process: what was
// written to it survives, what sat in the journal's buffer does not.
type memDisk struct {
	mu    sync.Mutex
	files map[string][]byte
}

func newMemDisk() *memDisk { return &memDisk{files: map[string][]byte{}} }

func (d *memDisk) readFile(name string) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.files[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return append([]byte(nil), b...), nil
}

func (d *memDisk) writeFileAtomic(name string, data []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.files[name] = append([]byte(nil), data...)
	return nil
}

func (d *memDisk) openAppend(name string) (appendFile, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.files[name]; !ok {
		d.files[name] = nil
	}
	return &memAppend{d: d, name: name}, nil
}

func (d *memDisk) names() ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for n := range d.files {
		out = append(out, n)
	}
	return out, nil
}

type memAppend struct {
	d    *memDisk
	name string
}

func (f *memAppend) Write(p []byte) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	f.d.files[f.name] = append(f.d.files[f.name], p...)
	return len(p), nil
}

func (f *memAppend) Sync() error  { return nil }
func (f *memAppend) Close() error { return nil }

// newDisk opens the data directory, creating it if absent (mode 0750).
func newDisk(dir string) (disk, error) {
	if dir == "" {
		return newMemDisk(), nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("mysqlsim: data directory: %w", err)
	}
	return osDisk{dir: dir}, nil
}

// firstBoot reports an empty data directory: nothing but what a fresh
// volume or the pid file may hold.
func firstBoot(d disk) (bool, error) {
	names, err := d.names()
	if err != nil {
		return false, err
	}
	hasCheckpoint := false
	var foreign []string
	for _, n := range names {
		switch {
		case n == checkpointFile:
			hasCheckpoint = true
		case n == "lost+found", strings.HasSuffix(n, ".pid"), strings.HasPrefix(n, "."):
		case n == autoCnfFile, n == persistFile, n == redoFile:
		default:
			if !isBinlogFileName(n) {
				foreign = append(foreign, n)
			}
		}
	}
	if hasCheckpoint {
		return false, nil
	}
	if len(foreign) > 0 {
		sort.Strings(foreign)
		return false, fmt.Errorf("mysqlsim: data directory holds %s but no %s: not a simulator data directory", strings.Join(foreign, ", "), checkpointFile)
	}
	return true, nil
}

// isBinlogFileName accepts the binary-log files (binlog.000001,
// binlog.index) the binlogfile package writes beside ours.
func isBinlogFileName(n string) bool {
	return strings.HasPrefix(n, "binlog.") || strings.Contains(n, "-bin.")
}

// readServerUUID reads auto.cnf ("[auto]\nserver-uuid=..."), "" when absent.
func readServerUUID(d disk) (string, error) {
	b, err := d.readFile(autoCnfFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && strings.TrimSpace(k) == "server-uuid" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("mysqlsim: %s has no server-uuid", autoCnfFile)
}

func writeServerUUID(d disk, uuid string) error {
	return d.writeFileAtomic(autoCnfFile, []byte("[auto]\nserver-uuid="+uuid+"\n"))
}

// randomUUID is what mysqld generates when auto.cnf is missing.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x10 // MySQL's are version 1 UUIDs
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// persistedVar is one entry of mysqld-auto.cnf.
type persistedVar struct {
	Value    string          `json:"Value"`
	Metadata persistMetadata `json:"Metadata"`
}

type persistMetadata struct {
	Timestamp int64  `json:"Timestamp"` // microseconds since the epoch
	User      string `json:"User"`
	Host      string `json:"Host"`
}

// persistFileJSON is mysqld-auto.cnf as MySQL 9.7 writes it (format
// version 2; the simulator only has dynamic variables).
type persistFileJSON struct {
	Version          int                     `json:"Version"`
	DynamicVariables map[string]persistedVar `json:"mysql_dynamic_variables"`
}

// readPersisted loads SET PERSIST values; a missing file is none.
func readPersisted(d disk) (map[string]persistedVar, error) {
	b, err := d.readFile(persistFile)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]persistedVar{}, nil
	}
	if err != nil {
		return nil, err
	}
	var f persistFileJSON
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("mysqlsim: %s: %w", persistFile, err)
	}
	if f.DynamicVariables == nil {
		f.DynamicVariables = map[string]persistedVar{}
	}
	return f.DynamicVariables, nil
}

func writePersisted(d disk, vars map[string]persistedVar) error {
	b, err := json.Marshal(persistFileJSON{Version: persistFormatV2, DynamicVariables: vars})
	if err != nil {
		return err
	}
	return d.writeFileAtomic(persistFile, b)
}

// persistValue is the text mysqld-auto.cnf stores for a SET PERSIST value.
func persistValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// persistedArg turns a stored value back into what SET would have parsed.
func persistedArg(s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	return s
}

func newPersisted(v any, user string) persistedVar {
	return persistedVar{Value: persistValue(v), Metadata: persistMetadata{Timestamp: time.Now().UnixMicro(), User: user, Host: "%"}}
}

// writePIDFile writes the pid file as mysqld does at start.
func writePIDFile(path string) error {
	if path == "" {
		return nil
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%d\n", os.Getpid())
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("mysqlsim: pid file: %w", err)
	}
	return os.Rename(tmp, path)
}
