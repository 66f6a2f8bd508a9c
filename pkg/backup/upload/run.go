// Package upload is the backup Job's second step, `bloodraven
// encrypt-upload`: it stores the dump mysqlsh wrote into the staging
// directory, file by file, in the attempt's own location of the profile's
// store, and writes the backup stamp last.
//
// The rules it keeps, in order:
//   - an incomplete dump (no @.done.json) is never stored;
//   - the store is probed at first use and refused when it does not enforce
//     conditional writes, since every write below relies on them;
//   - an occupied location is refused before anything is written to it, and
//     every object is created without overwriting, so a second writer (a
//     retry, a stray Job) can never replace what another stored;
//   - with a passphrase every file goes through the BRV1 envelope as a
//     stream: memory stays one envelope chunk plus the store's part buffer,
//     whatever the dump's size;
//   - the SHA-256 in the stamp is of the bytes handed to the store, counted
//     while streaming; the stamp is written after every file, then read back
//     and every file read again and checked against it, so a stamp that
//     exists vouches for a complete, intact backup;
//   - with --result-file, the step then writes its Result (the stamp's
//     coordinates and SHA-256) there, for an operator that cannot read the
//     store (a claim): a backup whose result would not fit a termination
//     message is refused before anything is stored.
//
// Nothing secret is ever in its arguments (Args holds file paths) or in its
// output.
package upload

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/shipstream/bloodraven/pkg/backup/dump"
	"github.com/shipstream/bloodraven/pkg/backup/envelope"
	"github.com/shipstream/bloodraven/pkg/backup/objstore"
)

// Run stores the dump of a.StagingDir as one attempt of the backup and
// reports progress on stderr. An error names the file and the cause.
func Run(ctx context.Context, a Args, stderr io.Writer) error {
	return run(ctx, a, stderr, func(a Args) (objstore.Store, error) { return openStore(a, true) })
}

// run is Run with the store's opening given: the tests open the directory
// store on a plain directory, or wrap a real store to change what it holds
// between two steps, as another writer would.
func run(ctx context.Context, a Args, stderr io.Writer, open func(Args) (objstore.Store, error)) error {
	if err := a.Validate(); err != nil {
		return err
	}
	passphrase, err := readPassphrase(a.PassphraseFile)
	if err != nil {
		return err
	}
	store, err := open(a)
	if err != nil {
		return err
	}
	m, err := dump.Read(a.StagingDir)
	if err != nil {
		return fmt.Errorf("reading the dump in %s: %w", a.StagingDir, err)
	}
	if !m.Complete {
		return fmt.Errorf("the dump in %s is incomplete (no @.done.json): mysqlsh did not finish it, nothing was stored", a.StagingDir)
	}
	files, err := orderFiles(a.StagingDir, m.Files)
	if err != nil {
		return err
	}
	if a.ResultFile != "" {
		if err := checkResultFits(a, m.GTIDExecuted, store.Location(a.stampKey()), len(files)); err != nil {
			return err
		}
	}
	if err := store.Probe(ctx); err != nil {
		return err // it names the store's location
	}
	location := store.Location(a.attemptDir())
	if err := checkEmpty(ctx, store, a.attemptDir(), location); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "encrypt-upload: storing %d files of %s at %s (%s)\n", len(files), a.StagingDir, location, encryptionLabel(passphrase))
	start := time.Now()
	stored, err := storeFiles(ctx, store, a, files, passphrase)
	if err != nil {
		return err
	}
	st := newStamp(a, m, passphrase != nil, stored)
	stampBytes, err := writeStamp(ctx, store, a.stampKey(), st)
	if err != nil {
		return err
	}
	storing := time.Since(start)
	if err := readBack(ctx, store, a.stampKey(), st); err != nil {
		return err
	}
	if a.ResultFile != "" {
		if err := writeResult(a.ResultFile, NewResult(st, stampBytes, store.Location(a.stampKey()))); err != nil {
			return err
		}
	}
	var total int64
	for _, f := range stored {
		total += f.Size
	}
	fmt.Fprintf(stderr, "encrypt-upload: stored %d files, %d bytes in %s (%.1f MB/s), read back and verified in %s; stamp %s\n",
		len(stored), total, storing.Round(time.Millisecond), float64(total)/1e6/storing.Seconds(),
		(time.Since(start) - storing).Round(time.Millisecond), store.Location(a.stampKey()))
	return nil
}

func encryptionLabel(passphrase []byte) string {
	if passphrase == nil {
		return "not encrypted"
	}
	return "encrypted, " + envelope.Algorithm
}

// checkEmpty refuses a location holding anything at all: a retry's own
// partial output, another backup's artifact, a stray file. It only lists.
func checkEmpty(ctx context.Context, store objstore.Store, dir, location string) error {
	objs, err := store.List(ctx, dir)
	if err != nil {
		return fmt.Errorf("listing %s: %w", location, err)
	}
	if len(objs) > 0 {
		return fmt.Errorf("location %s is occupied (%d objects, among them %s): refusing to write there, nothing was changed",
			location, len(objs), objs[0].Key)
	}
	return nil
}
