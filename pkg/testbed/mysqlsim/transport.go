package mysqlsim

import (
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/go-mysql-org/go-mysql/server"
)

// Transport security (manual, "Configuring Encrypted Connections",
// "require_secure_transport", "ALTER INSTANCE Statement"): the TLS
// material new connections use, the ssl_ca/ssl_cert/ssl_key variables
// ALTER INSTANCE RELOAD TLS reads, and require_secure_transport.

// Transport error numbers (include/mysqld_error.h).
const (
	ErSecureTransportRequired      = 3159 // ER_SECURE_TRANSPORT_REQUIRED
	ErNoSecureTransportsConfigured = 3160 // ER_NO_SECURE_TRANSPORTS_CONFIGURED
	ErDASSLLibraryError            = 3888 // ER_DA_SSL_LIBRARY_ERROR
)

// transportState is guarded by Server.mu.
type transportState struct {
	// active is what a new connection's TLS handshake uses; nil when TLS
	// is off (a RELOAD TLS ... NO ROLLBACK ON ERROR that failed).
	active *tls.Config
	// offered is whether the server greeting offers TLS at all: fixed at
	// New (the simulator cannot add TLS to a server that started without).
	offered bool
	// sslCA, sslCert and sslKey are the variables, as configured (paths of
	// the container's filesystem; root maps them to the host's).
	sslCA, sslCert, sslKey string
	root                   string
	requireSecure          bool
	// seen records each authenticated connection (Transports).
	seen []SessionTransport
}

// initTransport settles TLS at New (bootTransportLocked) and gives the
// protocol server a TLS configuration that asks the server at each
// handshake, so that RELOAD TLS reaches new connections.
func (s *Server) initTransport(key *rsa.PrivateKey) error {
	t := &s.ext.tls
	if err := s.bootTransportLocked(); err != nil {
		return err
	}
	t.offered = t.active != nil
	if t.requireSecure && !t.offered {
		return errNoSecureTransport()
	}
	var wrapper *tls.Config
	if t.offered {
		wrapper = &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.ext.tls.active == nil {
				return nil, errors.New("TLS is disabled")
			}
			return s.ext.tls.active, nil
		}}
	}
	s.proto = s.newProto(key, wrapper) // auth.go: authentication against the account store
	return nil
}

// bootTransportLocked is TLS at a start: Config.TLS, else the files
// ssl_cert, ssl_key and ssl_ca name (read at every start, so a restart
// picks up renewed files; one that cannot be read stops the start), and
// require_secure_transport from the options.
func (s *Server) bootTransportLocked() error {
	o := s.ext.opts
	t := &s.ext.tls
	t.sslCA, t.sslCert, t.sslKey, t.root = o.sslCA, o.sslCert, o.sslKey, s.given.RootDir
	t.requireSecure = o.requireSecureTransport
	switch {
	case s.boot.TLS != nil:
		t.active = s.boot.TLS
	case t.sslCert != "" || t.sslKey != "":
		cfg, err := t.load()
		if err != nil {
			return &errStartup{msg: "Failed to set up SSL because of the following SSL library error: " + err.Error()}
		}
		t.active = cfg
	}
	if t.requireSecure && t.offered && t.active == nil {
		return errNoSecureTransport()
	}
	return nil
}

func errNoSecureTransport() error {
	return &errStartup{msg: "No secure transports (SSL or Shared Memory) are configured, unable to set --require_secure_transport=ON."}
}

// load reads the certificate, key and CA files the variables name.
func (t *transportState) load() (*tls.Config, error) {
	if t.sslCert == "" || t.sslKey == "" {
		return nil, errors.New("ssl_cert and ssl_key must both be set")
	}
	cert, err := tls.LoadX509KeyPair(resolveUnder(t.root, t.sslCert), resolveUnder(t.root, t.sslKey))
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.sslCA != "" {
		pem, err := os.ReadFile(resolveUnder(t.root, t.sslCA))
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate", t.sslCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// secureTransportLocked is mysqld's check after authentication: with
// require_secure_transport=ON a TCP connection without TLS is refused
// with 3159. Every authenticated connection is recorded first (Transports).
func (s *Server) secureTransportLocked(sess *session) error {
	t := &s.ext.tls
	if len(t.seen) < maxTransportRecords {
		t.seen = append(t.seen, SessionTransport{User: sess.user.Name, Program: sess.program, TLS: sess.secure, Admin: sess.viaAdmin})
	}
	if t.requireSecure && !sess.secure {
		return myErr(ErSecureTransportRequired, "Connections using insecure transport are prohibited while --require_secure_transport=ON.")
	}
	return nil
}

// maxTransportRecords bounds Transports' memory in long runs.
const maxTransportRecords = 100000

// SessionTransport is how one client connection reached the server, as
// the server saw it after authentication (a test accessor: what MySQL shows
// per session in performance_schema.status_by_thread's Ssl_version).
type SessionTransport struct {
	User    string
	Program string // the program_name connection attribute
	TLS     bool   // the client switched the connection to TLS
	Admin   bool   // on the administrative connection interface
}

// Transports lists every connection that authenticated since New (refused
// ones included), in order, so a test can tell whether any managed
// session travelled without TLS.
func (s *Server) Transports() []SessionTransport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SessionTransport(nil), s.ext.tls.seen...)
}

// peerTLS is the TLS of a connection this server opens to another as a
// client (the replication receiver, the clone plugin), with the SSL mode
// rpl_replica.cc gives the receiver: SOURCE_SSL_VERIFY_SERVER_CERT=1 is
// VERIFY_IDENTITY (the chain against SOURCE_SSL_CA, the name against
// SOURCE_HOST as given, not the address ResolveSource maps it to), a
// SOURCE_SSL_CA alone VERIFY_CA (the chain only), neither REQUIRED
// (encrypted, nothing checked). caFile is a container path (under RootDir).
func (s *Server) peerTLS(host, caFile string, verify bool) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	var pool *x509.CertPool
	if caFile != "" {
		pem, err := os.ReadFile(resolveUnder(s.given.RootDir, caFile)) // given is fixed at New
		if err != nil {
			return nil, &peerTLSError{fmt.Sprintf("SSL_CTX_load_verify_locations failed: %v", err)}
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &peerTLSError{fmt.Sprintf("SSL_CTX_load_verify_locations failed: %s holds no PEM certificate", caFile)}
		}
	}
	switch {
	case verify:
		cfg.RootCAs = pool // nil: the system's roots, as OpenSSL's defaults
	case pool != nil:
		cfg.InsecureSkipVerify = true
		cfg.VerifyPeerCertificate = verifyChainOnly(pool)
	default:
		cfg.InsecureSkipVerify = true
	}
	return cfg, nil
}

// verifyChainOnly is VERIFY_CA: the certificate must chain to pool, any name.
func verifyChainOnly(pool *x509.CertPool) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("no peer certificate")
		}
		certs := make([]*x509.Certificate, 0, len(raw))
		for _, r := range raw {
			c, err := x509.ParseCertificate(r)
			if err != nil {
				return err
			}
			certs = append(certs, c)
		}
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter})
		return err
	}
}

// crSSLConnectionError is CR_SSL_CONNECTION_ERROR, what libmysqlclient
// reports for a TLS handshake the client refused (errmsg.h).
const crSSLConnectionError = 2026

// tlsClientErrno maps a failed TLS handshake of a peer connection to 2026.
func tlsClientErrno(err error) (int, string, bool) {
	var verr *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var alert tls.AlertError
	var setup *peerTLSError
	if errors.As(err, &setup) {
		return crSSLConnectionError, "SSL connection error: " + setup.msg, true
	}
	if errors.As(err, &verr) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) || errors.As(err, &alert) {
		return crSSLConnectionError, "SSL connection error: " + rootCause(err).Error(), true
	}
	return 0, "", false
}

// peerTLSError is a peer TLS configuration that could not be built (an
// unreadable SOURCE_SSL_CA).
type peerTLSError struct{ msg string }

func (e *peerTLSError) Error() string { return e.msg }

// connIsTLS reports whether the client switched the connection to TLS.
func connIsTLS(c *server.Conn) bool {
	_, ok := c.Conn.Conn.(*tls.Conn)
	return ok
}

// execAlterInstance is ALTER INSTANCE RELOAD TLS [NO ROLLBACK ON ERROR]
// (CONNECTION_ADMIN): it reads the files ssl_cert, ssl_key and ssl_ca name
// now; new connections use them, existing ones keep theirs. A file that
// cannot be loaded leaves the old configuration in place and gives 3888;
// with NO ROLLBACK ON ERROR it disables TLS for new connections instead.
func (s *Server) execAlterInstance(sess *session, c *cursor) error {
	if !c.acceptKw("INSTANCE") {
		return errNotSupported("ALTER other than ALTER INSTANCE RELOAD TLS in the Bloodraven MySQL simulator")
	}
	if !c.acceptKw("RELOAD", "TLS") {
		return errNotSupported("ALTER INSTANCE other than RELOAD TLS in the Bloodraven MySQL simulator")
	}
	noRollback := c.acceptKw("NO", "ROLLBACK", "ON", "ERROR")
	if err := c.expectEnd(); err != nil {
		return err
	}
	if !sess.hasPrivilege("CONNECTION_ADMIN") {
		return errNeedPrivilege("CONNECTION_ADMIN")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &s.ext.tls
	if !t.offered {
		return myErr(ErDASSLLibraryError, "Failed to set up SSL because of the following SSL library error: the simulator was started without TLS and cannot add it")
	}
	if t.sslCert == "" && t.sslKey == "" && t.sslCA == "" {
		return nil // TLS from Config.TLS, no files to re-read
	}
	cfg, err := t.load()
	if err != nil {
		if noRollback {
			t.active = nil
			s.log.Warn("RELOAD TLS failed; TLS disabled for new connections (NO ROLLBACK ON ERROR)", "err", err.Error())
			return nil
		}
		return myErr(ErDASSLLibraryError, "Failed to set up SSL because of the following SSL library error: %v", err)
	}
	t.active = cfg
	s.log.Info("TLS reloaded", "sslCert", t.sslCert, "user", sess.user.Name)
	return nil
}

// tlsVarLocked reads ssl_ca, ssl_cert, ssl_key, require_secure_transport
// and have_ssl.
func (s *Server) tlsVarLocked(name string) any {
	t := &s.ext.tls
	switch name {
	case "ssl_ca":
		return nullIfEmpty(t.sslCA)
	case "ssl_cert":
		return nullIfEmpty(t.sslCert)
	case "ssl_key":
		return nullIfEmpty(t.sslKey)
	case "require_secure_transport":
		return boolInt(t.requireSecure)
	}
	if t.active != nil {
		return "YES"
	}
	return "DISABLED"
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// setTLSVarLocked is SET GLOBAL of ssl_ca/ssl_cert/ssl_key (takes effect
// at the next RELOAD TLS, as in MySQL) and require_secure_transport
// (refused with 3160 on a server without TLS).
func (s *Server) setTLSVarLocked(name string, v any) error {
	t := &s.ext.tls
	if name == "require_secure_transport" {
		b, err := parseBoolValue(name, v)
		if err != nil {
			return err
		}
		if b && !t.offered {
			return myErr(ErNoSecureTransportsConfigured, "No secure transports (SSL or Shared Memory) are configured, unable to set --require_secure_transport=ON.")
		}
		t.requireSecure = b
		return nil
	}
	str, ok := v.(string)
	if !ok {
		return myErr(ErWrongValueForVar, "Variable '%s' can't be set to the value of '%v'", name, v)
	}
	switch name {
	case "ssl_ca":
		t.sslCA = str
	case "ssl_cert":
		t.sslCert = str
	case "ssl_key":
		t.sslKey = str
	}
	return nil
}
