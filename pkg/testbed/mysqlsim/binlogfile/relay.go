package binlogfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// A relay log is a replica's copy of what its receiver got from the source
// (manual, "The Relay Log and Replication Metadata Repositories"): numbered
// files and an index like the binary log's. Each file starts with the
// replica's own format description and a Previous_gtids event holding the
// GTIDs the earlier relay log files held (so the received set survives
// purges of applied files); then the source's events as they arrived, byte
// for byte (the source's rotate and format description included, headers
// and checksums unchanged); a rotate event of the replica's own names the
// next file. Heartbeats and the source's Previous_gtids are not written, as
// MySQL's receiver (queue_event) does not write them.

// RelayOptions configures a RelayLog.
type RelayOptions struct {
	Dir      string
	Basename string // e.g. "iad-relay-bin"
	ServerID uint32 // the replica's
	// ServerVersion is "9.7.0" when empty.
	ServerVersion string
	// MaxSize is max_relay_log_size (or max_binlog_size when that is 0):
	// after a transaction ends at or beyond it, the next file is started.
	MaxSize int64
	Now     func() time.Time
}

// RelayLog is the open relay log of a running replica. Appends go to an
// in-process buffer; Flush writes them to the file (write(2)) and Sync also
// fsyncs, so the caller decides durability (sync_relay_log). Not safe for
// concurrent use.
type RelayLog struct {
	opts  RelayOptions
	names []string
	appendFile
	logged gtid.Set // the current file's Previous_gtids plus its complete transactions
}

// OpenRelay reads the relay log index in opts.Dir. No file is written until
// NewFile; index entries whose files are gone are dropped (a lost disk).
func OpenRelay(opts RelayOptions) (*RelayLog, error) {
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
	r := &RelayLog{opts: opts}
	fs := &FileSet{opts: Options{Dir: opts.Dir, Basename: opts.Basename}}
	names, err := fs.readIndexLenient()
	if err != nil {
		return nil, err
	}
	r.names = names
	return r, nil
}

// readIndexLenient reads the index, skipping names whose file is missing.
func (fs *FileSet) readIndexLenient() ([]string, error) {
	b, err := os.ReadFile(fs.IndexPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range splitLines(string(b)) {
		name := filepath.Base(line)
		if _, err := os.Stat(fs.path(name)); err == nil {
			names = append(names, name)
		}
	}
	return names, nil
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '\n' {
			if line := s[start:i]; len(line) > 0 {
				out = append(out, line)
			}
			start = i + 1
		}
	}
	return out
}

func (r *RelayLog) fileSet() *FileSet {
	return &FileSet{opts: Options{Dir: r.opts.Dir, Basename: r.opts.Basename}, names: r.names}
}

func (r *RelayLog) path(name string) string { return filepath.Join(r.opts.Dir, name) }

// IndexPath is relay_log_index.
func (r *RelayLog) IndexPath() string { return r.fileSet().IndexPath() }

// Basename is relay_log_basename.
func (r *RelayLog) Basename() string { return filepath.Join(r.opts.Dir, r.opts.Basename) }

// Names lists the files, oldest first.
func (r *RelayLog) Names() []string { return append([]string(nil), r.names...) }

// Current is the file being written and its end (buffer included); "" when
// no file was started.
func (r *RelayLog) Current() (string, int64) {
	if r.cur == nil || len(r.names) == 0 {
		return "", 0
	}
	return r.names[len(r.names)-1], r.size + int64(len(r.buf))
}

// ReadAll reads every file back (the relay log's on-disk truth: what a
// restart sees). The file being written is read from disk, without what
// is still buffered.
func (r *RelayLog) ReadAll() ([]*FileContents, error) {
	var out []*FileContents
	for _, n := range r.names {
		fc, err := ReadRelayFile(r.path(n))
		if fc == nil {
			return out, err
		}
		out = append(out, fc)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// ReadRelayFile reads one relay log file. Its own format description (the
// first event) decides InUse; the source's, later in the file, does not.
func ReadRelayFile(path string) (*FileContents, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fc := &FileContents{Name: baseName(path), Size: int64(len(data))}
	err = fc.parse(data)
	fc.InUse = len(data) > 4+flagsOffset && data[4+flagsOffset]&flagInUse != 0
	return fc, err
}

// ClearInUse clears the in-use flag of a file a crash left open.
func (r *RelayLog) ClearInUse(name string) error { return clearInUse(r.path(name)) }

// Truncate cuts file name at pos (a torn tail, or a lost disk's).
func (r *RelayLog) Truncate(name string, pos int64) error {
	return os.Truncate(r.path(name), pos)
}

// NewFile ends the current file with a rotate event naming the next one
// and starts the next: magic, the replica's format description (in use)
// and Previous_gtids = prev.
func (r *RelayLog) NewFile(prev gtid.Set) error {
	next := r.fileSet().nextName()
	if r.cur != nil {
		if err := r.finish(rotateBody(next)); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(r.path(next), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	now := uint32(r.opts.Now().Unix())
	fde := formatDescriptionBody(r.opts.ServerVersion, now)
	pos := int64(4 + eventLen(len(fde)))
	b := append([]byte(magic), event(typeFormatDescription, now, r.opts.ServerID, uint32(pos), flagInUse, fde)...)
	pb := previousGTIDsBody(prev)
	pos += int64(eventLen(len(pb)))
	b = append(b, event(typePreviousGTIDs, now, r.opts.ServerID, uint32(pos), 0, pb)...)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	r.cur, r.size, r.buf, r.logged = f, int64(len(b)), nil, prev
	r.names = append(r.names, next)
	return r.fileSet().writeIndex()
}

// finish writes the rotate event, clears the in-use flag, fsyncs, closes.
func (r *RelayLog) finish(rotate []byte) error {
	if err := r.Flush(); err != nil {
		return err
	}
	_, pos := r.Current()
	pos += int64(eventLen(len(rotate)))
	ev := event(typeRotate, uint32(r.opts.Now().Unix()), r.opts.ServerID, uint32(pos), 0, rotate)
	if _, err := r.cur.Write(ev); err != nil {
		return err
	}
	if _, err := r.cur.WriteAt([]byte{0}, 4+flagsOffset); err != nil {
		return err
	}
	if err := r.cur.Sync(); err != nil {
		return err
	}
	err := r.cur.Close()
	r.cur = nil
	return err
}

// Append adds one received event, as received; it returns the file and
// the event's end position there.
func (r *RelayLog) Append(ev []byte) (string, int64, error) {
	if r.cur == nil {
		return "", 0, errors.New("binlogfile: relay log not open")
	}
	r.buf = append(r.buf, ev...)
	name, end := r.Current()
	return name, end, nil
}

// EndTxn records a complete transaction; at or beyond MaxSize the next
// file is started (transactions are never split across relay files).
func (r *RelayLog) EndTxn(g gtid.GTID) error {
	r.logged = r.logged.Add(g)
	if _, end := r.Current(); end >= r.opts.MaxSize {
		return r.NewFile(r.logged)
	}
	return nil
}

// Logged is the current file's Previous_gtids plus what it holds.
func (r *RelayLog) Logged() gtid.Set { return r.logged }

// SetMaxSize changes the rotation size from the next transaction.
func (r *RelayLog) SetMaxSize(n int64) { r.opts.MaxSize = n }

// Pending is the number of bytes appended but not yet written.
func (r *RelayLog) Pending() int { return len(r.buf) }

// Space is the size of all files (Relay_Log_Space).
func (r *RelayLog) Space() int64 {
	var n int64
	for i, name := range r.names {
		if i == len(r.names)-1 && r.cur != nil {
			n += r.size + int64(len(r.buf))
			continue
		}
		if st, err := os.Stat(r.path(name)); err == nil {
			n += st.Size()
		}
	}
	return n
}

// PurgeBefore deletes the files before name (relay_log_purge: the applier
// is done with them); the index is rewritten first.
func (r *RelayLog) PurgeBefore(name string) error {
	k := -1
	for i, n := range r.names {
		if n == name {
			k = i
		}
	}
	if k <= 0 {
		return nil
	}
	gone := r.names[:k]
	r.names = append([]string(nil), r.names[k:]...)
	if err := r.fileSet().writeIndex(); err != nil {
		return err
	}
	for _, n := range gone {
		if err := os.Remove(r.path(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// DropAfter keeps file name up to pos and deletes every later file (a
// disk that lost the tail). The current file, if cut, is reopened for
// appending at pos.
func (r *RelayLog) DropAfter(name string, pos int64) error {
	k := -1
	for i, n := range r.names {
		if n == name {
			k = i
		}
	}
	if k < 0 {
		return fmt.Errorf("binlogfile: relay log %s not in the index", name)
	}
	curName, _ := r.Current()
	r.buf = nil
	if r.cur != nil {
		r.cur.Close()
		r.cur = nil
	}
	gone := r.names[k+1:]
	r.names = append([]string(nil), r.names[:k+1]...)
	if err := r.fileSet().writeIndex(); err != nil {
		return err
	}
	for _, n := range gone {
		if err := os.Remove(r.path(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.Truncate(r.path(name), pos); err != nil {
		return err
	}
	if curName == "" {
		return nil
	}
	f, err := os.OpenFile(r.path(name), os.O_RDWR|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	r.cur, r.size = f, pos
	return nil
}

// SetLogged resets what the current file is known to hold (after DropAfter).
func (r *RelayLog) SetLogged(s gtid.Set) { r.logged = s }

// Close ends a clean shutdown: the buffer written, the in-use flag
// cleared, fsync.
func (r *RelayLog) Close() error {
	if r.cur == nil {
		return nil
	}
	if err := r.Flush(); err != nil {
		return err
	}
	if _, err := r.cur.WriteAt([]byte{0}, 4+flagsOffset); err != nil {
		return err
	}
	if err := r.cur.Sync(); err != nil {
		return err
	}
	err := r.cur.Close()
	r.cur = nil
	return err
}

// Abandon drops the buffer as a crash does; the file keeps its in-use flag.
func (r *RelayLog) Abandon() {
	r.buf = nil
	if r.cur != nil {
		r.cur.Close()
		r.cur = nil
	}
}

// RemoveAll deletes every file and the index (RESET REPLICA, CHANGE
// REPLICATION SOURCE TO with both threads stopped, relay_log_recovery).
func (r *RelayLog) RemoveAll() error {
	r.Abandon()
	for _, n := range r.names {
		if err := os.Remove(r.path(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	r.names, r.logged = nil, gtid.Set{}
	if err := os.Remove(r.IndexPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
