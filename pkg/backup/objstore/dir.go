package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// tmpMarker is part of every temporary file name of the directory store; List never shows such
// files and keys may not contain it.
const tmpMarker = ".bloodraven-tmp-"

// dirStore is the PVC store: files below root, the claim's mount path.
type dirStore struct {
	claim    string
	root     string // as given, cleaned
	realRoot string // root with symlinks resolved: every write must stay below it

	probeMu sync.Mutex
	probed  bool
}

// NewDir is the PVC store rooted at a mounted claim. With requireMountPoint it refuses a root
// that is not a mount point: a pod whose volume is missing would otherwise write into its
// container's own filesystem, and the artifact would vanish with the pod. It then checks that it
// can create and remove a file there.
func NewDir(claim, root string, requireMountPoint bool) (Store, error) {
	if claim == "" {
		return nil, errors.New("pvc store: the claim name is empty")
	}
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("pvc store: mount path %q is not absolute", root)
	}
	root = filepath.Clean(root)
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("pvc store: mount path %s of claim %s: %w", root, claim, err)
	}
	if fi, err := os.Stat(realRoot); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("pvc store: mount path %s of claim %s is not a directory", root, claim)
	}
	if requireMountPoint {
		mounted, err := isMountPoint(realRoot)
		if err != nil {
			return nil, fmt.Errorf("pvc store: checking whether %s is a mount point: %w", root, err)
		}
		if !mounted {
			return nil, fmt.Errorf("pvc store: %s is not a mount point, so claim %s is not mounted there "+
				"(writes would land in the container's own filesystem)", root, claim)
		}
	}
	s := &dirStore{claim: claim, root: root, realRoot: realRoot}
	if err := s.checkWritable(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *dirStore) checkWritable() error {
	name, err := tempName(filepath.Join(s.realRoot, ".write-probe"))
	if err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("pvc store: claim %s at %s is not writable: %w", s.claim, s.root, err)
	}
	_ = f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("pvc store: removing the write probe %s: %w", name, err)
	}
	return nil
}

func tempName(base string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	dir, file := filepath.Split(base)
	return filepath.Join(dir, "."+file+tmpMarker+hex.EncodeToString(b[:])), nil
}

func (s *dirStore) Location(key string) string { return "pvc://" + s.claim + "/" + key }

func validateDirKey(key string) error {
	if err := validateKey(key); err != nil {
		return err
	}
	if strings.Contains(key, tmpMarker) {
		return fmt.Errorf("key %q: must not contain %q", key, tmpMarker)
	}
	return nil
}

// parentDir returns the directory that holds key, creating missing directories one segment at a
// time. A symlink on the way is followed only if it stays on the volume: a write prefix that
// leaves it through a symlink (to another volume) is refused before anything is created there.
func (s *dirStore) parentDir(key string, create bool) (string, error) {
	segs := strings.Split(key, "/")
	cur := s.realRoot
	for _, seg := range segs[:len(segs)-1] {
		next := filepath.Join(cur, seg)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) && create:
			if err := os.Mkdir(next, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", err
			}
			fi, err = os.Lstat(next)
			if err != nil {
				return "", err
			}
		case err != nil:
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			resolved, err := filepath.EvalSymlinks(next)
			if err != nil {
				return "", err
			}
			if !within(s.realRoot, resolved) {
				return "", fmt.Errorf("%s leads outside the volume of claim %s (a symlink to %s); "+
					"use a directory on the volume instead", filepath.Join(s.root, filepath.FromSlash(key)), s.claim, resolved)
			}
			next = resolved
		} else if !fi.IsDir() {
			return "", fmt.Errorf("%s is not a directory", next)
		}
		cur = next
	}
	return cur, nil
}

func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// Create writes r to a temporary file opened with O_EXCL next to the key, syncs it, and publishes
// it with link(2), which fails when the name exists; rename(2) would silently replace it. Readers
// never see a partial file under the key, and a crash leaves only a temporary file.
func (s *dirStore) Create(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	if err := validateDirKey(key); err != nil {
		return ObjectInfo{}, err
	}
	n, err := s.create(ctx, key, r, size)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("create %s: %w", s.Location(key), err)
	}
	return ObjectInfo{Key: key, Size: n}, nil
}

func (s *dirStore) create(ctx context.Context, key string, r io.Reader, size int64) (int64, error) {
	dir, err := s.parentDir(key, true)
	if err != nil {
		return 0, err
	}
	final := filepath.Join(dir, filepath.Base(filepath.FromSlash(key)))
	if _, err := os.Lstat(final); err == nil {
		return 0, ErrExists
	}
	tmp, err := tempName(final)
	if err != nil {
		return 0, err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.Remove(tmp) }()
	n, err := writeAll(f, ctxReader{ctx, r}, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := os.Link(tmp, final); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return 0, ErrExists
		}
		return 0, fmt.Errorf("publishing the file: %w", err)
	}
	return n, syncDir(dir)
}

// writeAll copies r to f and syncs it; a known size must match exactly.
func writeAll(f *os.File, r io.Reader, size int64) (int64, error) {
	var n int64
	var err error
	if size >= 0 {
		n, err = io.CopyN(f, r, size)
		if errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("%w: %d bytes given, %d read", errSizeMismatch, size, n)
		}
		if err == nil {
			var one [1]byte
			if k, _ := io.ReadFull(r, one[:]); k > 0 {
				return 0, fmt.Errorf("%w: %d bytes given, more read", errSizeMismatch, size)
			}
		}
	} else {
		n, err = io.Copy(f, r)
	}
	if err != nil {
		return 0, err
	}
	return n, f.Sync()
}

// ctxReader stops a copy once its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	return d.Sync()
}

func (s *dirStore) path(key string) (string, error) {
	if err := validateDirKey(key); err != nil {
		return "", err
	}
	dir, err := s.parentDir(key, false)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(filepath.FromSlash(key))), nil
}

func (s *dirStore) Open(_ context.Context, key string) (io.ReadCloser, error) {
	p, err := s.path(key)
	if err == nil {
		var f *os.File
		if f, err = os.Open(p); err == nil {
			return f, nil
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		err = ErrNotFound
	}
	return nil, fmt.Errorf("open %s: %w", s.Location(key), err)
}

func (s *dirStore) Delete(_ context.Context, key string) error {
	p, err := s.path(key)
	if err == nil {
		err = os.Remove(p)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", s.Location(key), err)
	}
	return nil
}

// List walks the volume (symlinks are not followed) and returns the files whose key starts with
// prefix, leaving out temporary files.
func (s *dirStore) List(_ context.Context, prefix string) ([]ObjectInfo, error) {
	if err := validateListPrefix(prefix); err != nil {
		return nil, err
	}
	var out []ObjectInfo
	err := filepath.WalkDir(s.realRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.Contains(d.Name(), tmpMarker) || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(s.realRoot, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, ObjectInfo{Key: key, Size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.Location(prefix), err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Probe creates a probe file twice and requires the second Create to be refused.
func (s *dirStore) Probe(ctx context.Context) error {
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if s.probed {
		return nil
	}
	key, _, err := probeKeys()
	if err != nil {
		return err
	}
	defer func() { _ = s.Delete(ctx, key) }()
	if _, err := s.Create(ctx, key, strings.NewReader("first\n"), -1); err != nil {
		return fmt.Errorf("probe of %s: %w", s.Location(""), err)
	}
	_, err = s.Create(ctx, key, strings.NewReader("second\n"), -1)
	if err := refused(err, "a second create of the same file"); err != nil {
		return fmt.Errorf("probe of %s: %w", s.Location(""), err)
	}
	s.probed = true
	return nil
}
