package upload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"

	"github.com/shipstream/bloodraven/pkg/backup/stamp"
	"github.com/shipstream/bloodraven/pkg/gtid"
)

// ResultVersion is the only result format this package writes and reads.
const ResultVersion = 1

// MaxResultBytes is the most a result may take: the kubelet keeps at most
// 4096 bytes of a container's termination message and drops the rest, so a
// longer result would reach the operator cut short.
const MaxResultBytes = 4096

// Result is what a finished attempt reports through its container's
// termination message (--result-file): everything the operator records in
// the backup's status, and which stamp vouches for it. It exists for stores
// the operator cannot read itself (a claim mounted only into the Job's pod).
// It is written only after the stamp was written, read back and every file
// verified against it, so a result says the stamp at Stamp.Location is
// whole; it never replaces the stamp, which stays the artifact's own proof.
type Result struct {
	Backup     stamp.Object `json:"backup"`
	Group      stamp.Object `json:"group"`
	Attempt    int          `json:"attempt"`
	Encryption string       `json:"encryption"`
	Stamp      StampRef     `json:"stamp"`
	// GTIDExecuted and BinlogPosition are the stamp's (the dump's @.json).
	GTIDExecuted   string               `json:"gtidExecuted"`
	BinlogPosition stamp.BinlogPosition `json:"binlogPosition"`
	// SizeBytes is the sum of the stored files' sizes; Files their number.
	SizeBytes int64 `json:"sizeBytes"`
	Files     int   `json:"files"`
}

// StampRef names the stamp a result stands for: its location as the store
// names it (pvc://<claim>/<key>) and the SHA-256 of its bytes, so that
// anyone holding the claim can check the stamp there is the one reported.
type StampRef struct {
	Location string `json:"location"`
	SHA256   string `json:"sha256"`
}

type resultDocument struct {
	Version int `json:"version"`
	Result
}

var (
	// ErrResultTooLarge: the result does not fit in a termination message.
	ErrResultTooLarge = errors.New("backup result larger than a termination message")
	// ErrResultInvalid: what was read is not a well-formed result.
	ErrResultInvalid = errors.New("invalid backup result")
)

var sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// NewResult is the result of an attempt that stored st, whose encoded
// bytes are stampBytes, at stampLocation.
func NewResult(st stamp.Stamp, stampBytes []byte, stampLocation string) Result {
	sum := sha256.Sum256(stampBytes)
	var size int64
	for _, f := range st.Files {
		size += f.Size
	}
	return Result{
		Backup: st.Backup, Group: st.Group, Attempt: st.Attempt, Encryption: st.Encryption,
		Stamp:        StampRef{Location: stampLocation, SHA256: hex.EncodeToString(sum[:])},
		GTIDExecuted: st.GTIDExecuted, BinlogPosition: st.BinlogPosition, SizeBytes: size, Files: len(st.Files),
	}
}

// EncodeResult is r's compact JSON. A result larger than MaxResultBytes is
// refused whole (ErrResultTooLarge), never shortened: the GTID set is what
// makes a result long, and a shortened one would be a different backup's
// coordinates.
func EncodeResult(r Result) ([]byte, error) {
	if err := validateResult(r); err != nil {
		return nil, err
	}
	data, err := json.Marshal(resultDocument{Version: ResultVersion, Result: r})
	if err != nil {
		return nil, err
	}
	if len(data) > MaxResultBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d fit (the gtidExecuted set alone is %d bytes)",
			ErrResultTooLarge, len(data), MaxResultBytes, len(r.GTIDExecuted))
	}
	return data, nil
}

// DecodeResult parses a result strictly: an unknown version or field,
// trailing data, a missing field or more than MaxResultBytes is refused.
func DecodeResult(data []byte) (Result, error) {
	if len(data) > MaxResultBytes {
		return Result{}, fmt.Errorf("%w: %d bytes, more than %d", ErrResultInvalid, len(data), MaxResultBytes)
	}
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrResultInvalid, err)
	}
	if head.Version == nil || *head.Version != ResultVersion {
		return Result{}, fmt.Errorf("%w: version is not %d", ErrResultInvalid, ResultVersion)
	}
	var doc resultDocument
	if err := stamp.DecodeStrict(data, &doc); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrResultInvalid, err)
	}
	if err := validateResult(doc.Result); err != nil {
		return Result{}, err
	}
	return doc.Result, nil
}

func validateResult(r Result) error {
	invalid := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrResultInvalid, fmt.Sprintf(format, a...))
	}
	switch {
	case r.Backup.Name == "" || r.Backup.UID == "":
		return invalid("backup name and UID are required")
	case r.Group.Name == "" || r.Group.UID == "":
		return invalid("group name and UID are required")
	case r.Attempt < 0:
		return invalid("attempt %d is negative", r.Attempt)
	case r.Encryption == "":
		return invalid("encryption is required")
	case r.Stamp.Location == "":
		return invalid("the stamp's location is required")
	case !sha256Pattern.MatchString(r.Stamp.SHA256):
		return invalid("the stamp's sha256 %q is not 64 lower-case hex digits", r.Stamp.SHA256)
	case r.SizeBytes < 0 || r.Files <= 0:
		return invalid("%d files of %d bytes", r.Files, r.SizeBytes)
	}
	if set, err := gtid.Parse(r.GTIDExecuted); err != nil || set.OneLine() != r.GTIDExecuted {
		return invalid("gtidExecuted %q is not a GTID set in canonical form", r.GTIDExecuted)
	}
	return nil
}

// checkResultFits refuses, before anything is stored, a backup whose result
// could not be reported: its GTID set and location with the widest numbers
// a result can hold. Storing first and failing after would leave a stamped
// attempt the operator never confirms, and every retry would do the same.
func checkResultFits(a Args, gtidExecuted, stampLocation string, files int) error {
	worst := Result{
		Backup: stamp.Object{Name: a.BackupName, UID: a.BackupUID}, Group: stamp.Object{Name: a.GroupName, UID: a.GroupUID},
		Attempt: a.Attempt, Encryption: "AES-256-GCM", Stamp: StampRef{Location: stampLocation, SHA256: hex.EncodeToString(make([]byte, 32))},
		GTIDExecuted: gtidExecuted, BinlogPosition: stamp.BinlogPosition{File: "binlog.999999", Position: math.MaxUint64},
		SizeBytes: math.MaxInt64, Files: max(files, 1),
	}
	if set, err := gtid.Parse(gtidExecuted); err == nil {
		worst.GTIDExecuted = set.OneLine()
	}
	if _, err := EncodeResult(worst); err != nil {
		return fmt.Errorf("this backup's result cannot be reported through the termination message (%s): %w; nothing was stored", a.ResultFile, err)
	}
	return nil
}

// writeResult writes the result to the termination-message file the
// kubelet reads when the container exits.
func writeResult(path string, r Result) error {
	data, err := EncodeResult(r)
	if err != nil {
		return fmt.Errorf("the backup is stored and verified, but its result: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("writing the result to %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing the result to %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the result to %s: %w", path, err)
	}
	return nil
}
