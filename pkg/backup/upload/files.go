package upload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shipstream/bloodraven/pkg/backup/dump"
	"github.com/shipstream/bloodraven/pkg/backup/envelope"
	"github.com/shipstream/bloodraven/pkg/backup/objstore"
	"github.com/shipstream/bloodraven/pkg/backup/stamp"
)

// dump.DoneFile marks a mysqlsh dump complete; it is stored last of the
// dump's files so that a partial upload never looks like a finished dump,
// even to a reader that ignores the stamp.
const doneFile = dump.DoneFile

// storedFile is one object as stored: its key, the number of bytes handed to
// the store and their SHA-256 (hex).
type storedFile struct {
	Key    string
	Size   int64
	SHA256 string
}

// localFile is one dump file: its name relative to the dump directory
// ("/"-separated) and its path on disk.
type localFile struct {
	name, path string
}

// orderFiles checks the manifest's file names (relative, inside the dump,
// regular files: a symlink could point at a mounted Secret) and orders them
// with @.done.json last.
func orderFiles(dir string, names []string) ([]localFile, error) {
	var files []localFile
	seen := map[string]bool{}
	for _, n := range names {
		clean := path.Clean(filepath.ToSlash(n))
		if n == "" || path.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
			return nil, fmt.Errorf("dump file %q is not inside the dump directory", n)
		}
		if clean == stamp.Name {
			return nil, fmt.Errorf("the dump holds a file named %s, the backup stamp's name: refusing to store it", clean)
		}
		if seen[clean] {
			continue
		}
		seen[clean] = true
		p := filepath.Join(dir, filepath.FromSlash(clean))
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, fmt.Errorf("dump file %s: %w", clean, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("dump file %s is not a regular file (%s): refusing to store it", clean, fi.Mode().Type())
		}
		files = append(files, localFile{name: clean, path: p})
	}
	slices.SortStableFunc(files, func(x, y localFile) int {
		switch {
		case x.name == doneFile && y.name != doneFile:
			return 1
		case y.name == doneFile && x.name != doneFile:
			return -1
		}
		return strings.Compare(x.name, y.name)
	})
	return files, nil
}

// storeFiles creates one object per dump file, in order, stopping at the
// first failure.
func storeFiles(ctx context.Context, store objstore.Store, a Args, files []localFile, passphrase []byte) ([]storedFile, error) {
	var stored []storedFile
	for _, f := range files {
		key := a.dumpKey(f.name)
		s, err := storeOne(ctx, store, key, f.path, passphrase)
		if err != nil {
			return nil, fmt.Errorf("storing dump file %s: %w", f.name, err) // err names the location
		}
		stored = append(stored, s)
	}
	return stored, nil
}

// storeOne streams one file to a new object, through the envelope when a
// passphrase is given, hashing exactly the bytes the store reads.
func storeOne(ctx context.Context, store objstore.Store, key, p string, passphrase []byte) (storedFile, error) {
	src, err := os.Open(p)
	if err != nil {
		return storedFile{}, err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return storedFile{}, err
	}
	var body io.Reader = src
	size := fi.Size()
	if passphrase != nil {
		enc := encrypt(src, passphrase)
		defer enc.stop()
		body, size = enc, envelope.EncryptedSize(size)
	}
	hr := &hashingReader{r: body, h: sha256.New()}
	// Create stores exactly size bytes or nothing: a stream of another
	// length (a file that changed while it was read) is its error, so the
	// bytes hashed are the bytes stored.
	if _, err := store.Create(ctx, key, hr, size); err != nil {
		return storedFile{}, err
	}
	return storedFile{Key: key, Size: hr.n, SHA256: hex.EncodeToString(hr.h.Sum(nil))}, nil
}

// hashingReader counts and hashes what is read through it.
type hashingReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	return n, err
}

// encrypted is the envelope of one file as a stream: a goroutine encrypts
// into a pipe the store reads from, so only the envelope's one chunk and the
// pipe's handoff are ever in memory.
type encrypted struct {
	*io.PipeReader
	done chan struct{}
}

func encrypt(src io.Reader, passphrase []byte) *encrypted {
	pr, pw := io.Pipe()
	e := &encrypted{PipeReader: pr, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		w, err := envelope.NewWriter(pw, passphrase)
		if err == nil {
			_, err = io.Copy(w, src)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			err = fmt.Errorf("encrypting: %w", err)
		}
		pw.CloseWithError(err) // nil: the reader sees io.EOF
	}()
	return e
}

// stop ends the encrypting goroutine (a store that gave up reading leaves
// it blocked on the pipe) and waits for it, so the source file is no longer
// read when it is closed.
func (e *encrypted) stop() {
	e.CloseWithError(errStopped)
	<-e.done
}

var errStopped = errors.New("upload stopped")
