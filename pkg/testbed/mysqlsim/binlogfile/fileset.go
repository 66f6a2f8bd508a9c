package binlogfile

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// DefaultMaxSize is max_binlog_size's default (1 GiB).
const DefaultMaxSize = 1 << 30

// ErrUnknownLog is returned by PurgeTo for a name the index does not list
// (MySQL: ER_UNKNOWN_TARGET_BINLOG, 1373).
var ErrUnknownLog = errors.New("binlogfile: target log not found in binlog index")

// Options configures a FileSet.
type Options struct {
	Dir           string
	Basename      string // "binlog" when empty
	ServerID      uint32
	ServerVersion string // "9.7.0" when empty
	// MaxSize is max_binlog_size: after a transaction ends at or beyond it
	// the file is rotated. DefaultMaxSize when 0.
	MaxSize int64
	// ExpireSeconds is binlog_expire_logs_seconds: at Open and after each
	// rotation, files last modified that long ago are purged. 0 disables.
	ExpireSeconds int64
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Executed is gtid_executed at start; with what the files hold it is
	// the first new file's Previous_gtids.
	Executed gtid.Set
	// TrimToExecuted cuts off, at Open, the first logged transaction whose
	// GTID is not in Executed and everything after it. The simulator's
	// storage engine journal is the truth of what committed
	// (docs/mysql-simulator.md, "Data directory and crash recovery"): a
	// transaction it lost in a crash must not stay in the binary log, or its
	// GTID would be issued again for another transaction.
	TrimToExecuted bool
}

// FileSet is the binary log of one server: numbered files and the index in
// one directory. Appends go to an in-process buffer; Flush writes it to the
// file and Sync also fsyncs it, so the caller decides durability (sync_binlog).
// Rotation, Close and purges flush first. A FileSet is not safe for
// concurrent use.
type FileSet struct {
	opts  Options
	names []string // index order, oldest first
	appendFile
	enc     encoder
	logged  gtid.Set // Previous_gtids of the current file plus what it holds
	started bool     // the first file since Open has been created
	purges  int      // counts purges, so callers can tell gtid_purged may have moved
	closed  bool
}

// FileInfo is a row of SHOW BINARY LOGS.
type FileInfo struct {
	Name string
	Size int64
}

// Open recovers the binary log in opts.Dir as mysqld does at start: it reads
// the index, truncates a partially written last transaction of a file that
// was not closed properly, and starts a new file whose Previous_gtids is
// what the logs held. Missing files named by the index are an error.
func Open(opts Options) (*FileSet, error) {
	if opts.Basename == "" {
		opts.Basename = "binlog"
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = "9.7.0"
	}
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(opts.Dir, 0o750); err != nil {
		return nil, err
	}
	fs := &FileSet{opts: opts, enc: encoder{serverVersion: serverVersionNumber(opts.ServerVersion), tableIDs: map[string]uint64{}}}
	if err := fs.readIndex(); err != nil {
		return nil, err
	}
	if opts.TrimToExecuted {
		if err := fs.trimToExecuted(); err != nil {
			return nil, err
		}
	}
	if err := fs.recoverLast(); err != nil {
		return nil, err
	}
	fs.logged = fs.logged.Union(opts.Executed)
	if err := fs.newFile(); err != nil {
		return nil, err
	}
	return fs, fs.expire()
}

// IndexPath is the index file (log_bin_index).
func (fs *FileSet) IndexPath() string {
	return filepath.Join(fs.opts.Dir, fs.opts.Basename+".index")
}

// Basename is the path of the files without their number (log_bin_basename).
func (fs *FileSet) Basename() string { return filepath.Join(fs.opts.Dir, fs.opts.Basename) }

func (fs *FileSet) readIndex() error {
	f, err := os.Open(fs.IndexPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		name := filepath.Base(line)
		if _, err := os.Stat(filepath.Join(fs.opts.Dir, name)); err != nil {
			return fmt.Errorf("binlogfile: %s lists %s: %w", fs.IndexPath(), name, err)
		}
		fs.names = append(fs.names, name)
	}
	return sc.Err()
}

// recoverLast reads the newest file: GTIDs for the next Previous_gtids, and
// a crash leftover (a partially written transaction) cut off.
func (fs *FileSet) recoverLast() error {
	if len(fs.names) == 0 {
		return nil
	}
	last := fs.path(fs.names[len(fs.names)-1])
	fc, err := ReadFile(last)
	if fc == nil {
		return err
	}
	if fc.ValidEnd < fc.Size && (fc.InUse || err != nil) {
		if terr := os.Truncate(last, fc.ValidEnd); terr != nil {
			return terr
		}
	} else if err != nil {
		return err
	}
	fs.logged = fc.Previous
	for _, t := range fc.Txns {
		fs.logged = fs.logged.Add(t.GTID)
	}
	if fc.InUse {
		return clearInUse(last)
	}
	return nil
}

// trimToExecuted truncates the file holding the first transaction outside
// opts.Executed at that transaction's start and drops the files after it.
func (fs *FileSet) trimToExecuted() error {
	for i, name := range fs.names {
		fc, err := ReadFile(fs.path(name))
		if fc == nil {
			return err
		}
		for _, t := range fc.Txns {
			if fs.opts.Executed.Contains(t.GTID) {
				continue
			}
			if err := os.Truncate(fs.path(name), t.Start); err != nil {
				return err
			}
			for _, later := range fs.names[i+1:] {
				if err := os.Remove(fs.path(later)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
			fs.names = fs.names[:i+1]
			return fs.writeIndex()
		}
	}
	return nil
}

func (fs *FileSet) path(name string) string { return filepath.Join(fs.opts.Dir, name) }

func (fs *FileSet) nextName() string {
	n := 1
	if len(fs.names) > 0 {
		last := fs.names[len(fs.names)-1]
		k, err := strconv.Atoi(last[strings.LastIndexByte(last, '.')+1:])
		if err == nil {
			n = k + 1
		}
	}
	return fmt.Sprintf("%s.%06d", fs.opts.Basename, n)
}

// newFile starts the next file: magic, the format description (in use) and
// Previous_gtids. The first file after Open carries the start time as its
// creation time, as mysqld's first binary log after start does.
func (fs *FileSet) newFile() error {
	name := fs.nextName()
	f, err := os.OpenFile(fs.path(name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	created := uint32(0)
	if !fs.started {
		created = uint32(fs.opts.Now().Unix())
		fs.started = true
	}
	now := uint32(fs.opts.Now().Unix())
	fde := formatDescriptionBody(fs.opts.ServerVersion, created)
	pos := int64(4 + eventLen(len(fde)))
	b := append([]byte(magic), event(typeFormatDescription, now, fs.opts.ServerID, uint32(pos), flagInUse, fde)...)
	prev := previousGTIDsBody(fs.logged)
	pos += int64(eventLen(len(prev)))
	b = append(b, event(typePreviousGTIDs, now, fs.opts.ServerID, uint32(pos), 0, prev)...)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	fs.cur, fs.size, fs.buf = f, int64(len(b)), nil
	fs.enc.tableIDs, fs.enc.sequence = map[string]uint64{}, 0
	fs.names = append(fs.names, name)
	return fs.writeIndex()
}

// writeIndex replaces the index atomically (a temporary file renamed over
// it, as mysqld's crash-safe index update does).
func (fs *FileSet) writeIndex() error {
	var b strings.Builder
	for _, n := range fs.names {
		b.WriteString("./" + n + "\n")
	}
	tmp := fs.IndexPath() + "_crash_safe"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o640); err != nil {
		return err
	}
	return os.Rename(tmp, fs.IndexPath())
}

// Current is the file being written and the position after its last
// appended transaction (SHOW BINARY LOG STATUS).
func (fs *FileSet) Current() (string, int64) {
	return fs.names[len(fs.names)-1], fs.size + int64(len(fs.buf))
}

// Append adds a transaction to the buffer and returns the file it lies in
// and its end position. A transaction ending at or beyond MaxSize rotates
// the log afterwards.
func (fs *FileSet) Append(t Txn) (string, int64, error) {
	if fs.closed {
		return "", 0, errors.New("binlogfile: file set closed")
	}
	if t.ServerID == 0 {
		t.ServerID = fs.opts.ServerID
	}
	name, start := fs.Current()
	b := fs.enc.encodeTxn(t, start)
	fs.buf = append(fs.buf, b...)
	fs.logged = fs.logged.Add(t.GTID)
	end := start + int64(len(b))
	if end >= fs.opts.MaxSize {
		if err := fs.Rotate(); err != nil {
			return name, end, err
		}
	}
	return name, end, nil
}

// MergeExecuted adds GTIDs executed without being logged (SET GLOBAL
// gtid_purged) so the next file's Previous_gtids holds them.
func (fs *FileSet) MergeExecuted(s gtid.Set) { fs.logged = fs.logged.Union(s) }

// SetMaxSize changes max_binlog_size; it applies from the next append.
func (fs *FileSet) SetMaxSize(n int64) { fs.opts.MaxSize = n }

// SetExpireSeconds changes binlog_expire_logs_seconds.
func (fs *FileSet) SetExpireSeconds(n int64) { fs.opts.ExpireSeconds = n }

// finish ends the current file with a rotate or stop event, clears its
// in-use flag and fsyncs it.
func (fs *FileSet) finish(typ byte, body []byte) error {
	if err := fs.Flush(); err != nil {
		return err
	}
	_, pos := fs.Current()
	pos += int64(eventLen(len(body)))
	ev := event(typ, uint32(fs.opts.Now().Unix()), fs.opts.ServerID, uint32(pos), 0, body)
	if _, err := fs.cur.Write(ev); err != nil {
		return err
	}
	fs.size += int64(len(ev))
	if _, err := fs.cur.WriteAt([]byte{0}, 4+flagsOffset); err != nil {
		return err
	}
	if err := fs.cur.Sync(); err != nil {
		return err
	}
	err := fs.cur.Close()
	fs.cur = nil
	return err
}

// Rotate closes the current file with a rotate event naming the next one
// and starts it (FLUSH BINARY LOGS), then purges expired files.
func (fs *FileSet) Rotate() error {
	if fs.closed {
		return errors.New("binlogfile: file set closed")
	}
	if err := fs.finish(typeRotate, rotateBody(fs.nextName())); err != nil {
		return err
	}
	if err := fs.newFile(); err != nil {
		return err
	}
	return fs.expire()
}

// Close ends the log as a clean shutdown does: a stop event, the in-use
// flag cleared, fsync.
func (fs *FileSet) Close() error {
	if fs.closed {
		return nil
	}
	fs.closed = true
	return fs.finish(typeStop, nil)
}

// Abandon drops the file set as a crash does: the buffer is lost, nothing
// more is written, and the file keeps its in-use flag.
func (fs *FileSet) Abandon() {
	if fs.closed {
		return
	}
	fs.closed = true
	fs.buf = nil
	if fs.cur != nil {
		fs.cur.Close()
		fs.cur = nil
	}
}

// Reset deletes every file and starts again with binlog.000001 and an
// empty Previous_gtids (RESET BINARY LOGS AND GTIDS).
func (fs *FileSet) Reset() error {
	if fs.closed {
		return errors.New("binlogfile: file set closed")
	}
	fs.buf = nil
	if fs.cur != nil {
		fs.cur.Close()
		fs.cur = nil
	}
	gone := fs.names
	fs.names, fs.logged = nil, gtid.Set{}
	if err := fs.writeIndex(); err != nil {
		return err
	}
	for _, n := range gone {
		if err := os.Remove(fs.path(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	fs.purges++
	return fs.newFile()
}

// RemoveAll closes the file set and deletes every file and the index, as
// CLONE removes the recipient's binary logs; the next Open starts again at
// binlog.000001.
func (fs *FileSet) RemoveAll() error {
	fs.Abandon()
	for _, n := range fs.names {
		if err := os.Remove(fs.path(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	fs.names = nil
	if err := os.Remove(fs.IndexPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Files lists the files in index order with their sizes; the current file's
// size includes what is still buffered.
func (fs *FileSet) Files() ([]FileInfo, error) {
	out := make([]FileInfo, 0, len(fs.names))
	for i, n := range fs.names {
		if i == len(fs.names)-1 {
			_, size := fs.Current()
			out = append(out, FileInfo{n, size})
			continue
		}
		st, err := os.Stat(fs.path(n))
		if err != nil {
			return nil, err
		}
		out = append(out, FileInfo{n, st.Size()})
	}
	return out, nil
}

// Has reports whether the index lists name.
func (fs *FileSet) Has(name string) bool {
	for _, n := range fs.names {
		if n == name {
			return true
		}
	}
	return false
}

// Purges counts the purges done so far (explicit or by expiry).
func (fs *FileSet) Purges() int { return fs.purges }

// PurgeTo deletes every file before name (PURGE BINARY LOGS TO); name itself
// stays, so the current file is never deleted.
func (fs *FileSet) PurgeTo(name string) ([]string, error) {
	for i, n := range fs.names {
		if n == name {
			return fs.purgeFirst(i)
		}
	}
	return nil, ErrUnknownLog
}

// PurgeBefore deletes files last modified before t, oldest first, stopping
// at the first newer one and never deleting the current file (PURGE BINARY
// LOGS BEFORE, purge_logs_before_date).
func (fs *FileSet) PurgeBefore(t time.Time) ([]string, error) {
	k := 0
	for ; k < len(fs.names)-1; k++ {
		st, err := os.Stat(fs.path(fs.names[k]))
		if err != nil {
			return nil, err
		}
		if !st.ModTime().Before(t) {
			break
		}
	}
	return fs.purgeFirst(k)
}

func (fs *FileSet) purgeFirst(k int) ([]string, error) {
	if k == 0 {
		return nil, nil
	}
	gone := append([]string(nil), fs.names[:k]...)
	fs.names = append([]string(nil), fs.names[k:]...)
	// The index is rewritten before the files go, as MySQL does, so a
	// crash in between leaves unlisted files, never listed missing ones.
	if err := fs.writeIndex(); err != nil {
		return nil, err
	}
	for _, n := range gone {
		if err := os.Remove(fs.path(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return gone, err
		}
	}
	fs.purges++
	return gone, nil
}

func (fs *FileSet) expire() error {
	if fs.opts.ExpireSeconds <= 0 {
		return nil
	}
	_, err := fs.PurgeBefore(fs.opts.Now().Add(-time.Duration(fs.opts.ExpireSeconds) * time.Second))
	return err
}

// FirstPrevious is the Previous_gtids of the oldest file: every GTID the
// server executed before its logs begin, from which gtid_purged follows.
func (fs *FileSet) FirstPrevious() (gtid.Set, error) {
	if err := fs.Flush(); err != nil {
		return gtid.Set{}, err
	}
	fc, err := ReadFile(fs.path(fs.names[0]))
	if fc == nil {
		return gtid.Set{}, err
	}
	return fc.Previous, nil
}

// ReadAll flushes the buffer and reads every file in index order.
func (fs *FileSet) ReadAll() ([]*FileContents, error) {
	if err := fs.Flush(); err != nil {
		return nil, err
	}
	return ReadDir(fs.opts.Dir, fs.opts.Basename)
}

// ReadDir reads every file the index in dir lists, in order.
func ReadDir(dir, basename string) ([]*FileContents, error) {
	if basename == "" {
		basename = "binlog"
	}
	raw, err := os.ReadFile(filepath.Join(dir, basename+".index"))
	if err != nil {
		return nil, err
	}
	var out []*FileContents
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		fc, err := ReadFile(filepath.Join(dir, filepath.Base(line)))
		if err != nil {
			return out, err
		}
		out = append(out, fc)
	}
	return out, nil
}

// clearInUse clears the in-use flag of a file's format description, as
// mysqld does once it has recovered the file.
func clearInUse(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte{0}, 4+flagsOffset); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
