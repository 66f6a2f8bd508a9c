package mysql_test

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
	"github.com/shipstream/bloodraven/pkg/testbed/testca"
)

const (
	iadName = "orders-iad-internal.shop.svc"
	pdxName = "orders-pdx-internal.shop.svc"
)

func newCA(t *testing.T) *testca.CA {
	t.Helper()
	ca, err := testca.New("test CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// serving is a server TLS configuration with a certificate for names.
func serving(t *testing.T, ca *testca.CA, names ...string) *tls.Config {
	t.Helper()
	p, err := ca.Issue(names...)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

func pingWith(t *testing.T, srv *mysqlsim.Server, cfg *tls.Config) error {
	t.Helper()
	c, err := mysql.Open(mysql.Options{Addr: srv.Addr(), User: simtest.AdminUser, Password: simtest.AdminPass, TLS: cfg,
		DialTimeout: 2 * time.Second, StatementTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.Ping(ctx)
}

// TestTLSConfigVerifiesCAAndServiceName: the client trusts only ca.crt and
// requires the internal Service name although it dials 127.0.0.1; each
// refusal is classified, and a server without TLS is refused, not used in
// plaintext. Judged by what the server saw: the accepted session was TLS,
// and no refused attempt ever authenticated.
func TestTLSConfigVerifiesCAAndServiceName(t *testing.T) {
	ca, other := newCA(t), newCA(t)
	srv := simtest.Start(t, mysqlsim.Config{TLS: serving(t, ca, iadName), Options: []string{"require-secure-transport=ON"}})
	plain := simtest.Start(t, mysqlsim.Config{})

	good, err := mysql.TLSConfig(ca.CertPEM, iadName)
	if err != nil {
		t.Fatal(err)
	}
	if err := pingWith(t, srv, good); err != nil {
		t.Fatalf("right CA and name over 127.0.0.1: %v", err)
	}
	seen := srv.Transports()
	if len(seen) != 1 || !seen[0].TLS || seen[0].User != simtest.AdminUser {
		t.Fatalf("the server saw %+v, want one TLS session of %s", seen, simtest.AdminUser)
	}

	wrongCA, _ := mysql.TLSConfig(other.CertPEM, iadName)
	wrongName, _ := mysql.TLSConfig(ca.CertPEM, pdxName)
	for _, tc := range []struct {
		name string
		srv  *mysqlsim.Server
		cfg  *tls.Config
		want mysql.TLSFailure
	}{
		{"wrong CA", srv, wrongCA, mysql.TLSUnknownAuthority},
		{"wrong name", srv, wrongName, mysql.TLSNameMismatch},
		{"server without TLS", plain, good, mysql.TLSNotOffered},
	} {
		err := pingWith(t, tc.srv, tc.cfg)
		got, ok := mysql.ClassifyTLS(err)
		if !ok || got != tc.want {
			t.Errorf("%s: error %v classified %q (%v), want %q", tc.name, err, got, ok, tc.want)
		}
	}
	if n := len(srv.Transports()); n != 1 {
		t.Errorf("a refused handshake authenticated: the server saw %d sessions, want 1", n)
	}
	if n := len(plain.Transports()); n != 0 {
		t.Errorf("the client fell back to plaintext: the server without TLS saw %+v", plain.Transports())
	}
	if _, ok := mysql.ClassifyTLS(errors.New("dial tcp: connection refused")); ok {
		t.Error("a non-TLS error classified as a TLS failure")
	}
	if _, err := mysql.TLSConfig([]byte("junk"), iadName); err == nil {
		t.Error("a ca.crt without a certificate accepted")
	}
	if _, err := mysql.TLSConfig(ca.CertPEM, ""); err == nil {
		t.Error("an empty server name accepted")
	}
}

// TestTLSTrustSetCA: a pool opened with TLSTrust verifies new connections
// against the CA set last, with the same name checks as TLSConfig.
func TestTLSTrustSetCA(t *testing.T) {
	ca, other := newCA(t), newCA(t)
	srv := simtest.Start(t, mysqlsim.Config{TLS: serving(t, ca, iadName)})
	trust, err := mysql.NewTLSTrust(other.CertPEM, iadName)
	if err != nil {
		t.Fatal(err)
	}
	c, err := mysql.Open(mysql.Options{Addr: srv.Addr(), User: simtest.AdminUser, Password: simtest.AdminPass, TLS: trust.Config(),
		DialTimeout: 2 * time.Second, StatementTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := bg(t)
	if f, ok := mysql.ClassifyTLS(c.Ping(ctx)); !ok || f != mysql.TLSUnknownAuthority {
		t.Fatalf("before SetCA: %q %v, want UnknownAuthority", f, ok)
	}
	if err := trust.SetCA(ca.CertPEM); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("after SetCA with the server's CA: %v", err)
	}
	wrongName, _ := mysql.NewTLSTrust(ca.CertPEM, pdxName)
	if f, ok := mysql.ClassifyTLS(pingWith(t, srv, wrongName.Config())); !ok || f != mysql.TLSNameMismatch {
		t.Fatalf("TLSTrust with another site's name: %q %v, want NameMismatch", f, ok)
	}
	if err := trust.SetCA([]byte("junk")); err == nil {
		t.Fatal("SetCA accepted a bundle without a certificate")
	}
	if err := pingWith(t, srv, trust.Config()); err != nil { // a new connection
		t.Fatalf("a refused SetCA changed the trust: %v", err)
	}
}
