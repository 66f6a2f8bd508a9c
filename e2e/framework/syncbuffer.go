package framework

import (
	"bytes"
	"sync"
)

// SyncBuffer is an io.Writer that many goroutines may write to while a test
// reads it: a child process's output, or a logger shared by concurrent
// requests.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
