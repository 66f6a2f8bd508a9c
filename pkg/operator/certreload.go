package operator

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// certReloader serves the TLS listener's key pair and reloads it when the
// mounted Secret rotates. Kubernetes swaps a Secret volume's files through a
// symlink, so the check stats the paths (following links) and reloads when
// the modification time or size of either file changed. A pair that fails to
// load (for example caught mid-rotation) keeps the previous one in service.
type certReloader struct {
	certFile, keyFile string
	interval          time.Duration
	log               *slog.Logger

	mu        sync.Mutex
	cert      *tls.Certificate
	stamp     string
	lastCheck time.Time
}

func newCertReloader(certFile, keyFile string, interval time.Duration, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, interval: interval, log: log}
	stamp, err := r.fileStamp()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file/--tls-key-file: cannot load the key pair: %w", err)
	}
	r.cert, r.stamp, r.lastCheck = &cert, stamp, time.Now()
	return r, nil
}

func (r *certReloader) fileStamp() (string, error) {
	var s string
	for _, f := range []struct{ flag, path string }{{"--tls-cert-file", r.certFile}, {"--tls-key-file", r.keyFile}} {
		fi, err := os.Stat(f.path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", f.flag, err)
		}
		s += fmt.Sprintf("%d/%d;", fi.ModTime().UnixNano(), fi.Size())
	}
	return s, nil
}

// GetCertificate is the tls.Config hook: it checks the files at most once per
// interval and returns the current pair.
func (r *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.lastCheck) >= r.interval {
		r.lastCheck = time.Now()
		r.reloadLocked()
	}
	return r.cert, nil
}

func (r *certReloader) reloadLocked() {
	stamp, err := r.fileStamp()
	if err != nil || stamp == r.stamp {
		return
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		r.log.Warn("TLS key pair changed but does not load; keeping the previous one", "certFile", r.certFile, "err", err.Error())
		return
	}
	r.cert, r.stamp = &cert, stamp
	r.log.Info("TLS key pair reloaded", "certFile", r.certFile)
}

// tlsConfig is the listener's configuration: TLS 1.2 or later, the
// reloading certificate, nothing else negotiable.
func (r *certReloader) tlsConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate}
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
