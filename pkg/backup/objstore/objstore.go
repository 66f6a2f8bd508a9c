// Package objstore stores a backup's files: in an S3-compatible bucket (NewS3) or on a mounted
// PersistentVolumeClaim (NewDir). Both stores have the same semantics, which the backup steps rely
// on to never overwrite another attempt's or another backup's artifact:
//
//   - Create never overwrites: a key that exists is ErrExists. On S3 every write carries
//     If-None-Match: * (the single PUT and, for a multipart upload, the CompleteMultipartUpload
//     request, where the object comes into being); on a directory the file is written under a
//     temporary name and published with link(2), which never replaces an existing name.
//   - An object is complete or absent: a failed or refused write leaves nothing under its key.
//   - An object larger than the store's multipart limits is refused with ErrTooLarge, never
//     stored truncated.
//   - Probe checks, at first use, that the store really enforces the conditional writes above.
//
// Keys are "/"-separated relative paths below the store's prefix (S3) or root (directory), with no
// empty, "." or ".." segment. docs/backup-storage.md describes the stores for operators.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ObjectInfo describes one stored object. ETag is the S3 entity tag without quotes; the
// directory store leaves it empty.
type ObjectInfo struct {
	Key  string
	Size int64
	ETag string
}

// Store holds a backup's objects.
type Store interface {
	// Location of key for status/docs: s3://bucket/prefix/key or pvc://claim/key.
	Location(key string) string
	// Create writes a new object and never overwrites: an existing key is ErrExists. size is
	// the number of bytes r yields, or -1 when unknown (a stream); r yielding a different number
	// of bytes than a known size is an error and stores nothing. A stream larger than the
	// store's part limit is refused with ErrTooLarge before any byte past it is written.
	Create(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error)
	// Open reads an object; a missing key is ErrNotFound.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// List returns every object whose key starts with prefix ("" = all), sorted by key.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// Delete removes an object; a missing key is not an error (as on S3).
	Delete(ctx context.Context, key string) error
	// Probe checks once that the store enforces conditional writes (single and multipart)
	// under a probe key it cleans up; ErrConditionalWritesNotEnforced otherwise. A successful
	// probe is remembered; a failed one is retried on the next call.
	Probe(ctx context.Context) error
}

var (
	// ErrExists: Create found the key already present and wrote nothing.
	ErrExists = errors.New("object already exists")
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("object not found")
	// ErrTooLarge: the object would exceed the store's part limit (parts × part size).
	ErrTooLarge = errors.New("object larger than the store's multipart limit")
	// ErrConditionalWritesNotEnforced: the store accepted a write that should have been refused
	// because its key existed, so it cannot protect artifacts from being overwritten.
	ErrConditionalWritesNotEnforced = errors.New("store does not enforce conditional writes")
)

// MaxPrefixLength is the longest S3 prefix the v1.7.0 API accepts.
const MaxPrefixLength = 512

// ValidatePrefix applies the v1.7.0 prefix rules of the API (S3Storage.prefix): at most 512
// characters, a leading "/" ignored, and no empty ("a//b", trailing "/"), "." or ".." segment.
func ValidatePrefix(prefix string) error {
	if len(prefix) > MaxPrefixLength {
		return fmt.Errorf("prefix is %d characters, at most %d are allowed", len(prefix), MaxPrefixLength)
	}
	if err := validSegments(strings.TrimPrefix(prefix, "/")); err != nil {
		return fmt.Errorf("prefix %q: %w", prefix, err)
	}
	return nil
}

// cleanPrefix is the prefix as stored: validated, without its leading "/".
func cleanPrefix(prefix string) (string, error) {
	if err := ValidatePrefix(prefix); err != nil {
		return "", err
	}
	return strings.TrimPrefix(prefix, "/"), nil
}

// validateKey refuses a key that could name something outside the store's prefix or root, or
// that two spellings could name (a leading "/", "a//b").
func validateKey(key string) error {
	if err := validSegments(key); err != nil {
		return fmt.Errorf("key %q: %w", key, err)
	}
	return nil
}

func validSegments(path string) error {
	if path == "" {
		return errors.New("must not be empty")
	}
	for _, seg := range strings.Split(path, "/") {
		switch seg {
		case "":
			return errors.New(`must not contain an empty segment (a leading or trailing "/", or "//")`)
		case ".", "..":
			return fmt.Errorf("must not contain a %q segment", seg)
		}
	}
	return nil
}

// validateListPrefix accepts "" (everything) or a key prefix that may end in "/".
func validateListPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return validateKey(strings.TrimSuffix(prefix, "/"))
}
