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
// with 3159.
func (s *Server) secureTransportLocked(secure bool) error {
	if s.ext.tls.requireSecure && !secure {
		return myErr(ErSecureTransportRequired, "Connections using insecure transport are prohibited while --require_secure_transport=ON.")
	}
	return nil
}

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
