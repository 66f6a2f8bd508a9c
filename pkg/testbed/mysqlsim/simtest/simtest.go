// Package simtest starts simulated MySQL servers for tests: on free loopback
// ports, with known users and optional TLS, closed at test cleanup.
package simtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
)

// Test accounts every server started by Start has: created at its first
// boot as 'name'@'%' with the grants of their role shorthand (admin: ALL
// PRIVILEGES WITH GRANT OPTION; app: data privileges; repl: REPLICATION
// SLAVE, REPLICATION CLIENT, BACKUP_ADMIN, CLONE_ADMIN), then kept in the
// data directory.
const (
	AdminUser  = "bloodraven" // RoleAdmin, caching_sha2_password
	AdminPass  = "admin-secret"
	NativeUser = "legacy" // RoleAdmin, mysql_native_password
	NativePass = "native-secret"
	AppUser    = "app" // RoleApp, caching_sha2_password
	AppPass    = "app-secret"
	ReplUser   = "repl" // RoleReplication
	ReplPass   = "repl-secret"
)

// Users returns the standard test accounts.
func Users() []mysqlsim.User {
	return []mysqlsim.User{
		{Name: AdminUser, Password: AdminPass, Plugin: mysqlsim.CachingSHA2Password, Role: mysqlsim.RoleAdmin},
		{Name: NativeUser, Password: NativePass, Plugin: mysqlsim.NativePassword, Role: mysqlsim.RoleAdmin},
		{Name: AppUser, Password: AppPass, Plugin: mysqlsim.CachingSHA2Password, Role: mysqlsim.RoleApp},
		{Name: ReplUser, Password: ReplPass, Plugin: mysqlsim.CachingSHA2Password, Role: mysqlsim.RoleReplication},
	}
}

var serial atomic.Uint32

// UUID returns a distinct, valid server UUID for server number n.
func UUID(n uint32) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n)
}

// Start creates and starts a server. Zero fields of cfg get defaults: a
// unique ServerID and ServerUUID, the standard Users, 127.0.0.1:0,
// replica_net_timeout=5, the clone plugin loaded, a fresh data directory under t.TempDir(). The server is closed at test cleanup.
func Start(t testing.TB, cfg mysqlsim.Config) *mysqlsim.Server {
	t.Helper()
	n := serial.Add(1) + 100
	if cfg.ServerID == 0 {
		cfg.ServerID = n
	}
	if cfg.ServerUUID == "" {
		cfg.ServerUUID = UUID(cfg.ServerID)
	}
	if cfg.Users == nil {
		cfg.Users = Users()
	}
	if cfg.Name == "" {
		cfg.Name = fmt.Sprintf("sim%d", cfg.ServerID)
	}
	if cfg.ReplicaNetTimeout == 0 {
		// as the operator's my.cnf sets it: a dead source is noticed in 5 s
		// (MySQL's default 60 s would leave replicas "Yes" long after a partition)
		cfg.ReplicaNetTimeout = 5
	}
	if cfg.Options == nil && cfg.DefaultsFile == "" {
		// as the operator's my.cnf loads it: CLONE needs the clone plugin
		// (pass Options: []string{} for a server without it)
		cfg.Options = []string{"plugin-load-add=mysql_clone.so"}
	}
	if cfg.DataDir == "" {
		// A real data directory: Crash and Restart go through the files.
		cfg.DataDir = t.TempDir()
	}
	s, err := mysqlsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TLS is a CA and a server certificate for 127.0.0.1.
type TLS struct {
	Server *tls.Config // for mysqlsim.Config.TLS
	Client *tls.Config // trusts the CA, verifies 127.0.0.1
}

// NewTLS creates a throw-away CA and server certificate.
func NewTLS(t testing.TB) TLS {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "simtest CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return TLS{
		Server: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12},
		Client: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12},
	}
}
