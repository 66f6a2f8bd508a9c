package deployclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// OutcomeRecord is the runner's record of a run, written to the outcome
// file when the command wrote none.
type OutcomeRecord struct {
	Group       string         `json:"group"`
	Namespace   string         `json:"namespace"`
	OperationID string         `json:"operationId"`
	Instance    string         `json:"instance"`
	Cause       Cause          `json:"cause"`
	Command     CommandOutcome `json:"command"`
	RecordedAt  time.Time      `json:"recordedAt"`
}

// recordOutcome makes the outcome durable at path before the mutex may be
// released (client rule 6). A file the command wrote there is its own
// record and is kept (only synced); otherwise the runner writes rec
// atomically. source says which.
func recordOutcome(path string, rec OutcomeRecord) (source string, err error) {
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		return "command", syncFile(path)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	return "runner", writeAtomic(path, append(raw, '\n'))
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// writeAtomic writes a temporary file beside path, syncs it, renames it
// over path and syncs the directory, so a crash leaves the old state or
// the whole record.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncFile(dir)
}

// checkOutcomePath refuses an outcome file that already exists: it would be
// taken for this run's record.
func checkOutcomePath(path string) error {
	if path == "" {
		return nil
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("outcome file %s already exists (a previous run's record?)", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return fmt.Errorf("outcome file directory %s does not exist", filepath.Dir(path))
	}
	return nil
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
