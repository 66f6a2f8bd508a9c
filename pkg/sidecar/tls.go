package sidecar

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// TLS with spec.tls (docs/tls.md). The sidecar mounts the same Secret
// volume as mysqld (Config.TLSDir). It connects to mysqld with TLS only,
// trusting ca.crt and requiring the certificate to name the site's internal
// Service (also over the loopback address it dials), and it is the one that
// runs ALTER INSTANCE RELOAD TLS when the files change: it sees the files
// mysqld reads, at the moment the kubelet swaps them, whereas the operator
// sees the Secret object, which may change a minute before the pod's volume
// does (a reload then would re-read the old files and nothing would run it
// again).

// TLS file names in the mounted Secret (cert-manager's keys).
const (
	tlsCAFile   = "ca.crt"
	tlsCertFile = "tls.crt"
	tlsKeyFile  = "tls.key"
)

// tlsWatch is the sidecar's view of the mounted Secret.
type tlsWatch struct {
	dir   string
	trust *mysql.TLSTrust
	// loaded is the digest of the files mysqld was last told to load;
	// nil until the first reload (done at start: mysqld may have started
	// before a renewal the sidecar never saw).
	loaded []byte
	// lastErr is the last failed reload's error, logged once.
	lastErr string
}

// setupTLS reads ca.crt and puts a TLS configuration that verifies the
// site's internal Service name into cfg.MySQL (also used by the fence's
// administrative connection). Without TLSDir it does nothing.
func setupTLS(cfg *Config) (*tlsWatch, error) {
	if cfg.TLSDir == "" {
		return nil, nil
	}
	ca, err := os.ReadFile(filepath.Join(cfg.TLSDir, tlsCAFile))
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	name := siteaddr.SiteKey{Namespace: cfg.Namespace, Group: cfg.Group, Site: cfg.Site}.InternalServiceFQDN()
	trust, err := mysql.NewTLSTrust(ca, name)
	if err != nil {
		return nil, fmt.Errorf("tls: %s: %w", filepath.Join(cfg.TLSDir, tlsCAFile), err)
	}
	cfg.MySQL.TLS = trust.Config()
	return &tlsWatch{dir: cfg.TLSDir, trust: trust}, nil
}

// digest hashes the three files as they are now, and returns ca.crt.
func (w *tlsWatch) digest() (sum, ca []byte, err error) {
	h := sha256.New()
	for _, f := range []string{tlsCAFile, tlsCertFile, tlsKeyFile} {
		b, err := os.ReadFile(filepath.Join(w.dir, f))
		if err != nil {
			return nil, nil, err
		}
		if f == tlsCAFile {
			ca = b
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return h.Sum(nil), ca, nil
}

// checkTLS reloads mysqld's TLS when the mounted files differ from what it
// last loaded, then trusts the new ca.crt for new connections. A reload
// that fails (files that do not match yet, mysqld down) is retried at the
// next check; the trust changes only after mysqld serves the new files.
func (s *Sidecar) checkTLS(ctx context.Context) {
	w := s.tls
	sum, ca, err := w.digest()
	if err != nil {
		s.log.Warn("TLS files unreadable; keeping the current ones", "dir", w.dir, "err", err.Error())
		return
	}
	if bytes.Equal(sum, w.loaded) {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	if err := s.db.ReloadTLS(rctx); err != nil {
		// Once per distinct error: mysqld down (a crash, a clone's
		// restart) would otherwise log at every check.
		if err.Error() != w.lastErr {
			s.log.Warn("ALTER INSTANCE RELOAD TLS failed; retried at the next check", "err", err.Error())
		}
		w.lastErr = err.Error()
		return
	}
	w.lastErr = ""
	if err := w.trust.SetCA(ca); err != nil {
		s.log.Warn("the renewed ca.crt holds no certificate; keeping the previous CA", "err", err.Error())
	}
	first := w.loaded == nil
	w.loaded = sum
	if first {
		s.log.Info("mysqld TLS loaded from the mounted Secret", "dir", w.dir)
	} else {
		s.log.Info("mysqld TLS reloaded: the mounted Secret changed", "dir", w.dir)
	}
}

// watchTLS runs checkTLS every interval until ctx ends.
func (s *Sidecar) watchTLS(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.checkTLS(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
