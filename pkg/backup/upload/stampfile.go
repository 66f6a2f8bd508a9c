package upload

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/shipstream/bloodraven/pkg/backup/dump"
	"github.com/shipstream/bloodraven/pkg/backup/envelope"
	"github.com/shipstream/bloodraven/pkg/backup/objstore"
	"github.com/shipstream/bloodraven/pkg/backup/stamp"
)

func newStamp(a Args, m dump.Manifest, encrypted bool, stored []storedFile) stamp.Stamp {
	s := stamp.Stamp{
		Backup:         stamp.Object{Name: a.BackupName, UID: a.BackupUID},
		Group:          stamp.Object{Name: a.GroupName, UID: a.GroupUID},
		Attempt:        a.Attempt,
		GTIDExecuted:   m.GTIDExecuted,
		BinlogPosition: stamp.BinlogPosition{File: m.BinlogFile, Position: m.BinlogPosition},
		Encryption:     stamp.EncryptionNone,
	}
	if encrypted {
		s.Encryption = envelope.Algorithm
	}
	for _, f := range stored {
		s.Files = append(s.Files, stamp.File{Key: f.Key, Size: f.Size, SHA256: f.SHA256})
	}
	return s
}

// writeStamp creates the stamp, last: its presence is what says the attempt
// is whole.
// It returns the stamp's bytes as stored.
func writeStamp(ctx context.Context, store objstore.Store, key string, s stamp.Stamp) ([]byte, error) {
	data, err := stamp.Encode(s)
	if err != nil {
		return nil, fmt.Errorf("encoding the backup stamp: %w", err)
	}
	if _, err := store.Create(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
		return nil, fmt.Errorf("storing the backup stamp as %s: %w", store.Location(key), err)
	}
	return data, nil
}

// readBack reads the stamp as the store now holds it, checks it is the one
// written, and reads every file it lists against its size and SHA-256.
func readBack(ctx context.Context, store objstore.Store, key string, wrote stamp.Stamp) error {
	want, err := stamp.Encode(wrote)
	if err != nil {
		return err
	}
	rc, err := store.Open(ctx, key)
	if err != nil {
		return fmt.Errorf("reading back the backup stamp %s: %w", store.Location(key), err)
	}
	got, err := io.ReadAll(io.LimitReader(rc, int64(len(want))+1))
	rc.Close()
	if err != nil {
		return fmt.Errorf("reading back the backup stamp %s: %w", store.Location(key), err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("the backup stamp read back from %s is not the one written", store.Location(key))
	}
	s, err := stamp.Decode(got)
	if err != nil {
		return fmt.Errorf("the backup stamp read back from %s: %w", store.Location(key), err)
	}
	err = stamp.Verify(s, func(k string) (io.ReadCloser, error) { return store.Open(ctx, k) })
	if err != nil {
		return fmt.Errorf("verifying the stored backup against its stamp: %w", err)
	}
	return nil
}
