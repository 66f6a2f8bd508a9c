// Package dump reads the output directory of MySQL Shell's
// util.dumpInstance: its dump-wide metadata (@.json, written when the dump
// starts, and @.done.json, written last), and the list of files a backup must
// store. It also names files as MySQL Shell names them, for the test bed's
// stand-in that writes the same layout. The layout is described in
// docs/backup-dump-layout.md.
package dump

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// The dump-wide files MySQL Shell writes at the top of the output directory.
const (
	StartedFile  = "@.json"      // written when the dump starts
	DoneFile     = "@.done.json" // written last: the dump is complete
	PreSQLFile   = "@.sql"       // run before a load
	PostSQLFile  = "@.post.sql"  // run after a load
	UsersSQLFile = "@.users.sql" // accounts; absent with users: false
)

var (
	// ErrNotDump: the directory holds no @.json, so it is not a dump (or
	// the dump never started).
	ErrNotDump = errors.New("not a MySQL Shell dump: no @.json")
	// ErrMalformed: a metadata file of the dump cannot be read as MySQL
	// Shell writes it, or the files contradict it.
	ErrMalformed = errors.New("malformed MySQL Shell dump")
)

// Manifest is what a dump directory holds.
type Manifest struct {
	// Dumper is the program and version that wrote the dump ("mysqlsh
	// Ver 9.7.0 ..."), Origin the utility ("dumpInstance"; empty in dumps of
	// MySQL Shell 8.0's first dump format, which did not record it).
	Dumper, Origin string
	// ServerVersion is the dumped server's version; Server its host name as
	// the server reports it.
	ServerVersion, Server string
	Schemas               []string
	// GTIDExecuted is @@GLOBAL.gtid_executed as read under the dump's lock,
	// in canonical one-line form (pkg/gtid).
	GTIDExecuted string
	// GTIDExecutedInconsistent is true when the dump did not lock (consistent:
	// false): the set is then not guaranteed to match the data.
	GTIDExecutedInconsistent bool
	Consistent               bool
	// BinlogFile and BinlogPosition are the source's binary log coordinates
	// at the lock; HasBinlogInfo says whether @.json carries them at all.
	BinlogFile     string
	BinlogPosition uint64
	HasBinlogInfo  bool
	// Users is whether the dump holds accounts (@.json lists them).
	Users bool
	// Begin is when the dump started, End when it finished (empty while
	// incomplete), as MySQL Shell writes them.
	Begin, End string
	// Complete is true when @.done.json is present: only then is the dump
	// whole. DataBytes is the uncompressed data size it records.
	Complete  bool
	DataBytes uint64
	// Files is every file of the directory, by name, sorted.
	Files []string
}

// started is the part of @.json this package reads. MySQL Shell writes more
// keys (options, basenames, defaultCharacterSet, tzUtc, bytesPerChunk, user,
// hostname, targetVersion, partialRevokes, compatibilityOptions,
// capabilities, checksum); they are left alone, not refused, so a newer
// MySQL Shell's dump still reads.
type started struct {
	Dumper                   string    `json:"dumper"`
	Version                  string    `json:"version"`
	Origin                   string    `json:"origin"`
	Schemas                  []string  `json:"schemas"`
	Users                    *[]string `json:"users"`
	Server                   string    `json:"server"`
	ServerVersion            string    `json:"serverVersion"`
	BinlogFile               *string   `json:"binlogFile"`
	BinlogPosition           *uint64   `json:"binlogPosition"`
	GTIDExecuted             *string   `json:"gtidExecuted"`
	GTIDExecutedInconsistent bool      `json:"gtidExecutedInconsistent"`
	Consistent               bool      `json:"consistent"`
	Begin                    string    `json:"begin"`
}

type done struct {
	End            string            `json:"end"`
	DataBytes      *uint64           `json:"dataBytes"`
	ChunkFileBytes map[string]uint64 `json:"chunkFileBytes"`
}

// Read reads the dump in dir. A dump that has started but not finished
// reads with Complete false; a directory without @.json is ErrNotDump.
// Anything in dir but regular files (a subdirectory, a symbolic link) is
// refused: MySQL Shell writes none, and a backup must store what the dump
// wrote, never what a link points at.
func Read(dir string) (Manifest, error) {
	files, err := listFiles(dir)
	if err != nil {
		return Manifest{}, err
	}
	present := map[string]bool{}
	for _, f := range files {
		present[f] = true
	}
	if !present[StartedFile] {
		return Manifest{}, fmt.Errorf("%s: %w", dir, ErrNotDump)
	}
	m, err := readStarted(filepath.Join(dir, StartedFile))
	if err != nil {
		return Manifest{}, err
	}
	m.Files = files
	if !present[DoneFile] {
		return m, nil
	}
	if err := readDone(filepath.Join(dir, DoneFile), present, &m); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

func listFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if e.Type()&fs.ModeType != 0 {
			return nil, fmt.Errorf("%w: %s is not a regular file (%s)", ErrMalformed, filepath.Join(dir, e.Name()), e.Type())
		}
		files = append(files, e.Name())
	}
	sort.Strings(files)
	return files, nil
}

func readStarted(path string) (Manifest, error) {
	var s started
	if err := readJSON(path, &s); err != nil {
		return Manifest{}, err
	}
	if s.GTIDExecuted == nil {
		return Manifest{}, fmt.Errorf("%w: %s has no gtidExecuted", ErrMalformed, path)
	}
	set, err := gtid.Parse(*s.GTIDExecuted)
	if err != nil {
		return Manifest{}, fmt.Errorf("%w: %s: gtidExecuted: %v", ErrMalformed, path, err)
	}
	if (s.BinlogFile == nil) != (s.BinlogPosition == nil) {
		return Manifest{}, fmt.Errorf("%w: %s has only one of binlogFile and binlogPosition", ErrMalformed, path)
	}
	m := Manifest{
		Dumper: s.Dumper, Origin: s.Origin, Server: s.Server, ServerVersion: s.ServerVersion,
		Schemas: s.Schemas, GTIDExecuted: set.OneLine(), GTIDExecutedInconsistent: s.GTIDExecutedInconsistent,
		Consistent: s.Consistent, Users: s.Users != nil, Begin: s.Begin,
	}
	if s.BinlogFile != nil {
		m.BinlogFile, m.BinlogPosition, m.HasBinlogInfo = *s.BinlogFile, *s.BinlogPosition, true
	}
	return m, nil
}

// readDone reads @.done.json and checks that every chunk file it counts is
// present: a chunk missing from a "complete" dump would restore as a table
// silently short of rows.
func readDone(path string, present map[string]bool, m *Manifest) error {
	var d done
	if err := readJSON(path, &d); err != nil {
		return err
	}
	if d.End == "" || d.DataBytes == nil {
		return fmt.Errorf("%w: %s has no end or no dataBytes", ErrMalformed, path)
	}
	var missing []string
	for name := range d.ChunkFileBytes {
		if !present[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("%w: %s counts chunk files that are not in the dump: %v", ErrMalformed, path, missing)
	}
	m.Complete, m.End, m.DataBytes = true, d.End, *d.DataBytes
	return nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformed, path, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: %s: data after the JSON document", ErrMalformed, path)
	}
	return nil
}
