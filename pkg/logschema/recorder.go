package logschema

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/shipstream/bloodraven/pkg/logging"
)

// Recorder keeps every record a test's components log, rendered as the
// processes render them (pkg/logging's JSON handler, redaction included),
// so the in-process suites check the same lines a process writes.
type Recorder struct {
	process string
	mu      sync.Mutex
	lines   [][]byte
}

// NewRecorder records lines of process (Operator, Sidecar, DeployClient).
func NewRecorder(process string) *Recorder { return &Recorder{process: process} }

// Write takes one JSON line; slog's JSON handler writes each record in one
// call.
func (r *Recorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	r.lines = append(r.lines, append([]byte(nil), b...))
	r.mu.Unlock()
	return len(b), nil
}

// Logger returns a logger that records every level into r and also passes
// each record to next (nil: records only).
func (r *Recorder) Logger(next slog.Handler) *slog.Logger {
	h := logging.New(r, slog.LevelDebug).Handler()
	if next == nil {
		return slog.New(h)
	}
	return slog.New(slog.NewMultiHandler(h, next))
}

// Len is how many records were recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lines)
}

// Problems checks every recorded line against the document and returns each
// problem with its line.
func (r *Recorder) Problems() ([]string, error) {
	s, err := Load()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	lines := slices.Clone(r.lines)
	r.mu.Unlock()
	var out []string
	for _, l := range lines {
		for _, p := range s.CheckLine(r.process, l) {
			out = append(out, fmt.Sprintf("%s: %s", p, trimNL(l)))
		}
	}
	return out, nil
}

// TB is the part of testing.TB Check needs.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// Check fails t on every recorded line the document does not cover.
func (r *Recorder) Check(t TB) {
	t.Helper()
	ps, err := r.Problems()
	if err != nil {
		t.Errorf("log schema: %v", err)
		return
	}
	for _, p := range ps {
		t.Errorf("log record not in docs/logs.md: %s", p)
	}
}

func trimNL(b []byte) string {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return string(b)
}
