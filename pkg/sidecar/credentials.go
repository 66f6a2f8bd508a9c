package sidecar

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/shipstream/bloodraven/pkg/accounts"
)

// PasswordFile is the sidecar's MySQL password source during and after a
// password rotation (docs/credentials.md): the operator writes the
// operator account's password into the sidecars' password Secret only once
// the server accepts it (ALTER USER ... RETAIN CURRENT PASSWORD applied)
// and keeps the previous one accepted until the overlap ends, the kubelet
// refreshes the mounted files, and every new connection reads the file
// again. An environment variable would keep the first password for the
// life of the container.
type PasswordFile struct {
	dir, initial string

	mu   sync.Mutex
	last string
}

// NewPasswordFile reads dir's password file; initial is the password until
// the file exists (the pod's environment: the operator Secret's password,
// which the servers accept until the first rotation).
func NewPasswordFile(dir, initial string) *PasswordFile {
	return &PasswordFile{dir: dir, initial: initial}
}

// Password is the password to connect with now: the file's, else the
// previous file's while the current one is unreadable (mid-refresh), else
// the last one read, else initial.
func (p *PasswordFile) Password() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, key := range []string{accounts.SidecarPasswordKey, accounts.SidecarPreviousPasswordKey} {
		b, err := os.ReadFile(filepath.Join(p.dir, key))
		if v := strings.TrimRight(string(b), "\r\n"); err == nil && v != "" {
			p.last = v
			return v
		}
	}
	if p.last != "" {
		return p.last
	}
	return p.initial
}
