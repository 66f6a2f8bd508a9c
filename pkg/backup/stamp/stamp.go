// Package stamp is the backup stamp: the one JSON document an upload step
// writes last into a backup attempt's location, naming the backup and the
// group it belongs to, the GTID set and binary log position the dump
// corresponds to, the encryption used, and every stored file with its size
// and the SHA-256 of the bytes as stored (ciphertext when encrypted), so that
// anyone holding the store can check an artifact is whole and is the one the
// stamp says (docs/backup-stamp.md).
//
// Pure Go: the store is reached only through the open function Verify takes.
package stamp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// FormatVersion is the only stamp format this package writes and reads.
// A reader never guesses at a newer format: Decode refuses it.
const FormatVersion = 1

// Name is the file name of the stamp inside an attempt's location. It starts
// with "@." like MySQL Shell's own dump-wide files, and no schema or table
// file of a dump can take it: MySQL Shell percent-encodes "@" in schema and
// table basenames (docs/backup-dump-layout.md).
const Name = "@.bloodraven-backup.json"

// EncryptionNone is Encryption for a backup stored in plaintext.
const EncryptionNone = "none"

// Stamp is one backup attempt's stamp.
type Stamp struct {
	Backup  Object `json:"backup"`
	Group   Object `json:"group"`
	Attempt int    `json:"attempt"`
	// GTIDExecuted is the dump's gtidExecuted as its @.json states it; Encode
	// writes it in canonical one-line form (pkg/gtid), Decode requires that.
	GTIDExecuted   string         `json:"gtidExecuted"`
	BinlogPosition BinlogPosition `json:"binlogPosition"`
	// Encryption is the envelope algorithm every stored file is in
	// ("AES-256-GCM"), or EncryptionNone.
	Encryption string `json:"encryption"`
	Files      []File `json:"files"`
}

// Object names a Kubernetes object by name and UID: a name can be reused
// after deletion, a UID cannot.
type Object struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// BinlogPosition is the source's binary log coordinates at the dump's lock.
type BinlogPosition struct {
	File     string `json:"file"`
	Position uint64 `json:"position"`
}

// File is one stored file: its key (as the writer named it to the store),
// its size and the SHA-256 of its stored bytes, lower-case hex.
type File struct {
	Key    string `json:"key"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// document is the wire form: the version first, so a reader of any version
// can tell what it holds.
type document struct {
	Version int `json:"version"`
	Stamp
}

var (
	// ErrUnknownVersion: the stamp is of a format this build does not know.
	ErrUnknownVersion = errors.New("unknown backup stamp format version")
	// ErrInvalid: the stamp is not a well-formed stamp.
	ErrInvalid = errors.New("invalid backup stamp")
	// ErrMismatch: a stored file is not what the stamp says.
	ErrMismatch = errors.New("stored file differs from the backup stamp")
)

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Encode validates s and returns its JSON, with the GTID set in canonical
// one-line form and the files in key order.
func Encode(s Stamp) ([]byte, error) {
	if set, err := gtid.Parse(s.GTIDExecuted); err == nil {
		s.GTIDExecuted = set.OneLine()
	}
	s.Files = append([]File(nil), s.Files...)
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Key < s.Files[j].Key })
	if err := validate(s); err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(document{Version: FormatVersion, Stamp: s}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// Decode parses a stamp strictly: an unknown version, an unknown field,
// trailing data or a stamp Encode would not write is refused.
func Decode(data []byte) (Stamp, error) {
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Stamp{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if head.Version == nil {
		return Stamp{}, fmt.Errorf("%w: no version", ErrInvalid)
	}
	if *head.Version != FormatVersion {
		return Stamp{}, fmt.Errorf("%w %d (this build reads version %d)", ErrUnknownVersion, *head.Version, FormatVersion)
	}
	var doc document
	if err := DecodeStrict(data, &doc); err != nil {
		return Stamp{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := validate(doc.Stamp); err != nil {
		return Stamp{}, err
	}
	return doc.Stamp, nil
}

// DecodeStrict decodes one JSON document into v, refusing unknown fields
// and anything after the document: what the backup Job writes is read
// back exactly, never leniently.
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the document")
	}
	return nil
}

func validate(s Stamp) error {
	invalid := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	switch {
	case s.Backup.Name == "" || s.Backup.UID == "":
		return invalid("backup name and UID are required")
	case s.Group.Name == "" || s.Group.UID == "":
		return invalid("group name and UID are required")
	case s.Attempt < 0:
		return invalid("attempt %d is negative", s.Attempt)
	case s.Encryption == "":
		return invalid("encryption is required (%q for none)", EncryptionNone)
	case len(s.Files) == 0:
		return invalid("no files")
	}
	set, err := gtid.Parse(s.GTIDExecuted)
	if err != nil {
		return invalid("gtidExecuted: %v", err)
	}
	if set.OneLine() != s.GTIDExecuted {
		return invalid("gtidExecuted %q is not in canonical form %q", s.GTIDExecuted, set.OneLine())
	}
	seen := map[string]bool{}
	for i, f := range s.Files {
		switch {
		case f.Key == "":
			return invalid("file %d has no key", i)
		case seen[f.Key]:
			return invalid("file %q listed twice", f.Key)
		case i > 0 && s.Files[i-1].Key > f.Key:
			return invalid("files not in key order at %q", f.Key)
		case f.Size < 0:
			return invalid("file %q has negative size %d", f.Key, f.Size)
		case !sha256Hex.MatchString(f.SHA256):
			return invalid("file %q: sha256 %q is not 64 lower-case hex digits", f.Key, f.SHA256)
		}
		seen[f.Key] = true
	}
	return nil
}

// Sum reads r to its end and returns the File entry for key.
func Sum(key string, r io.Reader) (File, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return File{}, err
	}
	return File{Key: key, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// Verify reads every file of s through open, in key order, and returns an
// error naming the first one that cannot be read or whose size or SHA-256
// differs from the stamp (wrapping ErrMismatch for a difference).
func Verify(s Stamp, open func(key string) (io.ReadCloser, error)) error {
	for _, want := range s.Files {
		if err := verifyFile(want, open); err != nil {
			return err
		}
	}
	return nil
}

func verifyFile(want File, open func(key string) (io.ReadCloser, error)) error {
	rc, err := open(want.Key)
	if err != nil {
		return fmt.Errorf("file %q: open: %w", want.Key, err)
	}
	got, err := Sum(want.Key, rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("file %q: read: %w", want.Key, err)
	}
	if got.Size != want.Size {
		return fmt.Errorf("%w: file %q is %d bytes, the stamp says %d", ErrMismatch, want.Key, got.Size, want.Size)
	}
	if got.SHA256 != want.SHA256 {
		return fmt.Errorf("%w: file %q has SHA-256 %s, the stamp says %s", ErrMismatch, want.Key, got.SHA256, want.SHA256)
	}
	return nil
}
