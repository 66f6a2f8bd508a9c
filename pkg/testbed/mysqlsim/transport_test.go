package mysqlsim_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/siteaddr"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
	"github.com/shipstream/bloodraven/pkg/testbed/testca"
)

func tlsCA(t *testing.T) *testca.CA {
	t.Helper()
	ca, err := testca.New("transport test CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func issue(t *testing.T, ca *testca.CA, names ...string) testca.Pair {
	t.Helper()
	p, err := ca.Issue(names...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// openTLS opens a one-connection pool with cfg (nil: no TLS).
func openTLS(t *testing.T, addr string, cfg *tls.Config) *sql.DB {
	t.Helper()
	c := driver.NewConfig()
	c.Net, c.Addr, c.User, c.Passwd, c.TLS = "tcp", addr, simtest.AdminUser, simtest.AdminPass, cfg
	c.Timeout, c.ReadTimeout = 2*time.Second, 5*time.Second
	conn, err := driver.NewConnector(c)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// capture is a client TLS configuration that accepts any certificate and
// records the one served at each handshake.
func capture(got *[]byte) *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			*got = raw[0]
			return nil
		}}
}

func leafDER(t *testing.T, p testca.Pair) []byte {
	t.Helper()
	c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c.Certificate[0]
}

// TestRequireSecureTransportAndReloadTLSKeepsSessions: with the TLS
// options as pkg/render writes them, a plaintext client is refused with
// 3159 (and Transports records it as such); ALTER INSTANCE RELOAD TLS
// serves renewed files to new connections while an established session
// keeps its connection (same CONNECTION_ID, still answering).
func TestRequireSecureTransportAndReloadTLSKeepsSessions(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc/mysql/tls")
	ca := tlsCA(t)
	first, second := issue(t, ca, "orders-iad-internal.shop.svc"), issue(t, ca, "orders-iad-internal.shop.svc")
	if err := ca.WriteDir(dir, first); err != nil {
		t.Fatal(err)
	}
	s := simtest.Start(t, mysqlsim.Config{RootDir: root, Options: []string{
		"ssl-ca=/etc/mysql/tls/ca.crt", "ssl-cert=/etc/mysql/tls/tls.crt", "ssl-key=/etc/mysql/tls/tls.key",
		"require-secure-transport=ON",
	}})
	if err := openTLS(t, s.Addr(), nil).Ping(); errNumber(err) != 3159 {
		t.Fatalf("plaintext with require_secure_transport=ON: %v, want 3159", err)
	}
	if seen := s.Transports(); len(seen) != 1 || seen[0].TLS {
		t.Fatalf("Transports after a plaintext attempt = %+v, want one non-TLS record", seen)
	}

	var oldServed, newServed []byte
	old := openTLS(t, s.Addr(), capture(&oldServed))
	ctx := context.Background()
	conn, err := old.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var idBefore, idAfter uint64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&idBefore); err != nil {
		t.Fatal(err)
	}
	if string(oldServed) != string(leafDER(t, first)) {
		t.Fatal("the first connection was not served tls.crt as started")
	}
	if err := ca.WriteDir(dir, second); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "ALTER INSTANCE RELOAD TLS"); err != nil {
		t.Fatal(err)
	}
	if err := openTLS(t, s.Addr(), capture(&newServed)).Ping(); err != nil {
		t.Fatal(err)
	}
	if string(newServed) != string(leafDER(t, second)) {
		t.Fatal("a connection after RELOAD TLS was not served the renewed tls.crt")
	}
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&idAfter); err != nil || idAfter != idBefore {
		t.Fatalf("the established session after RELOAD TLS: id %d, err %v; want it to keep connection %d", idAfter, err, idBefore)
	}
	for _, r := range s.Transports()[1:] {
		if !r.TLS {
			t.Fatalf("a session after the refused one was not TLS: %+v", s.Transports())
		}
	}
}

// TestReceiverVerifiesSourceCertificate: the receiver's SSL mode follows
// rpl_replica.cc: SOURCE_SSL_VERIFY_SERVER_CERT=1 checks the chain against
// SOURCE_SSL_CA and the name against SOURCE_HOST as given (the site's
// internal Service name, which the site map resolves to 127.0.0.1), and a
// refusal is Last_IO_Errno 2026; without verification another site's name
// is not noticed. The source saw the receiver's session as TLS.
func TestReceiverVerifiesSourceCertificate(t *testing.T) {
	ca, other := tlsCA(t), tlsCA(t)
	iad := siteaddr.SiteKey{Namespace: "shop", Group: "orders", Site: "iad"}
	pdx := siteaddr.SiteKey{Namespace: "shop", Group: "orders", Site: "pdx"}
	pair := issue(t, ca, iad.InternalServiceFQDN())
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	src := simtest.Start(t, mysqlsim.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		Options: []string{"require-secure-transport=ON"}})
	// Both names lead to the same server: only the certificate check can
	// tell them apart.
	resolve := func(host string, port int) string {
		if host == iad.InternalServiceFQDN() || host == pdx.InternalServiceFQDN() {
			return src.Addr()
		}
		return fmt.Sprintf("%s:%d", host, port)
	}
	root := t.TempDir()
	if err := ca.WriteDir(filepath.Join(root, "etc/mysql/tls"), pair); err != nil {
		t.Fatal(err)
	}
	if err := other.WriteDir(filepath.Join(root, "etc/other"), issue(t, other, "x")); err != nil {
		t.Fatal(err)
	}
	rep := simtest.Start(t, mysqlsim.Config{RootDir: root, ResolveSource: resolve})
	db := adminDB(t, rep)
	point := func(host, caFile string, verify int) {
		t.Helper()
		mustExec(t, db, "STOP REPLICA")
		mustExec(t, db, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST = '%s', SOURCE_PORT = 3306, SOURCE_USER = '%s', "+
			"SOURCE_PASSWORD = '%s', SOURCE_AUTO_POSITION = 1, SOURCE_CONNECT_RETRY = 1, SOURCE_SSL = 1, SOURCE_SSL_CA = '%s', "+
			"SOURCE_SSL_VERIFY_SERVER_CERT = %d", host, simtest.ReplUser, simtest.ReplPass, caFile, verify))
		mustExec(t, db, "START REPLICA")
	}
	refused := func(what string) {
		t.Helper()
		eventually(t, 10*time.Second, what+": Last_IO_Errno 2026", func() (bool, string) {
			st := replicaStatus(t, db)
			return st.get("Last_IO_Errno") == "2026" && strings.Contains(st.get("Last_IO_Error"), "SSL connection error"),
				st.get("Last_IO_Errno") + " " + st.get("Last_IO_Error")
		})
	}
	replicates := func(what string) {
		t.Helper()
		writeRows(t, openTLS(t, src.Addr(), &tls.Config{InsecureSkipVerify: true}), 1)
		eventually(t, 10*time.Second, what, func() (bool, string) {
			st := replicaStatus(t, db)
			return src.Snapshot().Executed.IsSubsetOf(rep.Snapshot().Executed), st.get("Last_IO_Errno") + " " + st.get("Last_IO_Error")
		})
	}

	point(pdx.InternalServiceFQDN(), "/etc/mysql/tls/ca.crt", 1)
	refused("another site's name, verified")
	point(iad.InternalServiceFQDN(), "/etc/other/ca.crt", 1)
	refused("another CA, verified")
	point(iad.InternalServiceFQDN(), "/etc/mysql/tls/ca.crt", 1)
	replicates("the right CA and name")
	var replTLS bool
	for _, r := range src.Transports() {
		if r.User == simtest.ReplUser {
			if !r.TLS {
				t.Fatalf("the receiver's session was not TLS: %+v", r)
			}
			replTLS = true
		}
	}
	if !replTLS {
		t.Fatalf("the source saw no receiver session: %+v", src.Transports())
	}
	point(pdx.InternalServiceFQDN(), "", 0)
	replicates("another site's name without verification (SSL mode REQUIRED checks nothing)")
}
