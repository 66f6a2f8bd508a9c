package objstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// probeKeyPrefix starts every probe key; a probe interrupted before its cleanup leaves at most
// two objects with it, which a later Delete may remove.
const probeKeyPrefix = ".bloodraven-probe-"

func probeKeys() (string, string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	base := probeKeyPrefix + hex.EncodeToString(b[:])
	return base + "-single", base + "-multipart", nil
}

// Probe writes under two fresh probe keys and checks what the store must refuse:
//
//  1. a conditional single PUT of a fresh key succeeds;
//  2. a conditional multipart upload of a fresh key succeeds;
//  3. a conditional single PUT of the now existing key is refused (412);
//  4. a conditional multipart completion of the existing key is refused (412).
//
// Steps 1 and 2 keep a store that refuses every conditional write from passing and then
// reporting every new key as ErrExists. Both probe objects are deleted afterwards.
func (s *s3Store) Probe(ctx context.Context) error {
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if s.probed {
		return nil
	}
	if err := s.probe(ctx); err != nil {
		return fmt.Errorf("probe of %s: %w", s.Location(""), err)
	}
	s.probed = true
	return nil
}

func (s *s3Store) probe(ctx context.Context) error {
	single, multi, err := probeKeys()
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = s.Delete(cctx, single)
		_ = s.Delete(cctx, multi)
	}()
	first, second := []byte("bloodraven conditional-write probe: first\n"), []byte("bloodraven conditional-write probe: second\n")
	if _, err := s.putSingle(ctx, single, first); err != nil {
		return fmt.Errorf("a conditional PUT of a new key failed: %w", err)
	}
	if _, err := s.putMultipartOnce(ctx, multi, first); err != nil {
		return fmt.Errorf("a conditional multipart upload of a new key failed: %w", err)
	}
	_, err = s.putSingle(ctx, single, second)
	if err := refused(err, "a PUT with If-None-Match: *"); err != nil {
		return err
	}
	_, err = s.putMultipartOnce(ctx, multi, second)
	return refused(err, "a CompleteMultipartUpload with If-None-Match: *")
}

// refused judges the answer to a conditional write of an existing key: only ErrExists is right.
func refused(err error, what string) error {
	switch {
	case errors.Is(err, ErrExists):
		return nil
	case err == nil:
		return fmt.Errorf("%w: %s replaced an existing object", ErrConditionalWritesNotEnforced, what)
	default:
		return fmt.Errorf("%w: %s of an existing key failed with %v instead of 412 Precondition Failed",
			ErrConditionalWritesNotEnforced, what, err)
	}
}

// putMultipartOnce stores data as a one-part conditional multipart upload (the last part of an
// upload may be smaller than the minimum part size).
func (s *s3Store) putMultipartOnce(ctx context.Context, key string, data []byte) (ObjectInfo, error) {
	pr := &partReader{r: bytes.NewReader(nil), total: int64(len(data))}
	up := &multipartUpload{s: s, key: s.objectKey(key), size: int64(len(data)), maxParts: s.maxParts}
	return up.run(ctx, pr, data, len(data), true)
}
