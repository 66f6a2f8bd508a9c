package mysql

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"

	mysqldriver "github.com/go-sql-driver/mysql"
)

// TLSConfig is the client side of a connection to a site's mysqld with
// spec.tls: trust only the CAs in caPEM (the TLS Secret's ca.crt, which may
// hold more than one certificate while a CA is replaced) and require the
// server's certificate to name serverName, the site's internal Service FQDN
// (siteaddr.SiteKey.InternalServiceFQDN). The name is fixed here rather than
// taken from the dialled address: the development site-address map dials a
// loopback address, and a check against 127.0.0.1 would either fail or, with
// a certificate for 127.0.0.1, prove nothing about which site answered.
func TLSConfig(caPEM []byte, serverName string) (*tls.Config, error) {
	if serverName == "" {
		return nil, errors.New("tls: the server name to verify is empty")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("tls: ca.crt holds no PEM certificate")
	}
	return &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}, nil
}

// TLSTrust is TLSConfig whose CAs can be replaced while connections are
// pooled (a renewed ca.crt): each new connection verifies against the CAs
// set last; established ones keep the session they have.
type TLSTrust struct {
	serverName string
	pool       atomic.Pointer[x509.CertPool]
}

// NewTLSTrust trusts caPEM and requires serverName, as TLSConfig.
func NewTLSTrust(caPEM []byte, serverName string) (*TLSTrust, error) {
	if serverName == "" {
		return nil, errors.New("tls: the server name to verify is empty")
	}
	t := &TLSTrust{serverName: serverName}
	return t, t.SetCA(caPEM)
}

// SetCA replaces the trusted CAs for new connections.
func (t *TLSTrust) SetCA(caPEM []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("tls: ca.crt holds no PEM certificate")
	}
	t.pool.Store(pool)
	return nil
}

// Config is the configuration to put in Options.TLS. Go's own verification
// is replaced by VerifyConnection, which does the same checks (chain and
// name) against the current CAs.
func (t *TLSTrust) Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.serverName, InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
				DNSName: t.serverName, Roots: t.pool.Load(), Intermediates: inter,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
			return err
		}}
}

// CAFingerprint identifies a CA bundle (a connection pool built with one is
// reopened when it changes); it is a digest, safe to log.
func CAFingerprint(caPEM []byte) string {
	sum := sha256.Sum256(caPEM)
	return hex.EncodeToString(sum[:8])
}

// TLSFailure is why a TLS connection to mysqld was refused on the client
// side. The client never falls back to a connection without TLS.
type TLSFailure string

// The failures ClassifyTLS tells apart.
const (
	// TLSUnknownAuthority: the certificate is not signed by a CA of ca.crt.
	TLSUnknownAuthority TLSFailure = "UnknownAuthority"
	// TLSNameMismatch: the certificate does not name the site's internal
	// Service.
	TLSNameMismatch TLSFailure = "NameMismatch"
	// TLSInvalidCertificate: expired, not yet valid, or not usable for a
	// server.
	TLSInvalidCertificate TLSFailure = "InvalidCertificate"
	// TLSNotOffered: the server does not offer TLS at all.
	TLSNotOffered TLSFailure = "ServerWithoutTLS"
	// TLSHandshakeFailed: any other TLS handshake failure (protocol
	// version, alert from the server).
	TLSHandshakeFailed TLSFailure = "HandshakeFailed"
)

// ClassifyTLS tells whether err is a refused TLS connection and why; ok is
// false for every other error (a refused TCP connection, a bad password).
func ClassifyTLS(err error) (f TLSFailure, ok bool) {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var alert tls.AlertError
	var recErr tls.RecordHeaderError
	switch {
	case err == nil:
		return "", false
	case errors.As(err, &unknown):
		return TLSUnknownAuthority, true
	case errors.As(err, &host):
		return TLSNameMismatch, true
	case errors.As(err, &invalid):
		return TLSInvalidCertificate, true
	case errors.Is(err, mysqldriver.ErrNoTLS):
		return TLSNotOffered, true
	case errors.As(err, &verify), errors.As(err, &alert), errors.As(err, &recErr):
		return TLSHandshakeFailed, true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && strings.Contains(opErr.Error(), "tls:") {
		return TLSHandshakeFailed, true
	}
	return "", false
}

// Explain says in words what a failure means for serverName (for a
// condition message or an Event).
func (f TLSFailure) Explain(serverName string) string {
	switch f {
	case TLSUnknownAuthority:
		return fmt.Sprintf("the certificate mysqld serves as %s is not signed by a CA in ca.crt (wrong CA)", serverName)
	case TLSNameMismatch:
		return fmt.Sprintf("the certificate mysqld serves does not name %s (wrong name)", serverName)
	case TLSInvalidCertificate:
		return fmt.Sprintf("the certificate mysqld serves as %s is expired, not yet valid or not a server certificate", serverName)
	case TLSNotOffered:
		return fmt.Sprintf("mysqld at %s does not offer TLS", serverName)
	}
	return fmt.Sprintf("the TLS handshake with mysqld at %s failed", serverName)
}

// StmtReloadTLS makes mysqld read ssl_cert, ssl_key and ssl_ca again: new
// connections get the renewed certificate, established ones keep theirs
// (manual, "ALTER INSTANCE Statement"). Without NO ROLLBACK ON ERROR, files
// that cannot be loaded leave the old ones in use (error 3888).
var StmtReloadTLS = Statement{
	Name:    "reload-tls",
	SQL:     "ALTER INSTANCE RELOAD TLS",
	Purpose: "The sidecar: serve a renewed spec.tls Secret without restarting mysqld.",
}

// ReloadTLS runs StmtReloadTLS (CONNECTION_ADMIN).
func (c *Client) ReloadTLS(ctx context.Context) error {
	return c.exec(ctx, StmtReloadTLS, StmtReloadTLS.SQL)
}
