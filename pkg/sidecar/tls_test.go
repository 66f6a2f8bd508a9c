package sidecar_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/logschema"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/sidecar"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
	"github.com/shipstream/bloodraven/pkg/testbed/testca"
)

// servedCert dials addr and returns the leaf certificate mysqld serves.
func servedCert(t *testing.T, addr string) []byte {
	t.Helper()
	var mu sync.Mutex
	var got []byte
	c := driver.NewConfig()
	c.Net, c.Addr, c.User, c.Passwd = "tcp", addr, simtest.AdminUser, simtest.AdminPass
	c.TLS = &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			mu.Lock()
			defer mu.Unlock()
			got = raw[0]
			return nil
		}}
	conn, err := driver.NewConnector(c)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return got
}

func leaf(t *testing.T, p testca.Pair) []byte {
	t.Helper()
	c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c.Certificate[0]
}

// TestSidecarTLS: with TLSDir the sidecar reaches a mysqld that requires
// secure transport only over TLS verified against ca.crt and the site's
// internal Service name (while dialling 127.0.0.1), and when the mounted
// files change (a renewed certificate, then a new CA) it runs ALTER
// INSTANCE RELOAD TLS: mysqld, never restarted, serves the new certificate
// to new connections, and the sidecar keeps reaching it under the new CA.
// A sidecar for another site refuses the certificate.
func TestSidecarTLS(t *testing.T) {
	ca, err := testca.New("sidecar test CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	name := siteaddr.SiteKey{Namespace: testNS, Group: testGroup, Site: "iad"}.InternalServiceFQDN()
	first, _ := ca.Issue(name)
	root := t.TempDir()
	dir := filepath.Join(root, "etc/mysql/tls")
	if err := ca.WriteDir(dir, first); err != nil {
		t.Fatal(err)
	}
	sim := simtest.Start(t, mysqlsim.Config{Name: "iad", RootDir: root, Options: []string{
		"ssl-ca=/etc/mysql/tls/ca.crt", "ssl-cert=/etc/mysql/tls/tls.crt", "ssl-key=/etc/mysql/tls/tls.key", "require-secure-transport=ON",
	}})
	op := startOperator(t, newNetwork(), "iad", 1)
	logs := logschema.NewRecorder(logschema.Sidecar)
	t.Cleanup(func() { logs.Check(t) })
	start := func(site string) *sidecar.Sidecar {
		sc, err := sidecar.New(sidecar.Config{Namespace: testNS, Group: testGroup, Site: site,
			MySQL:            mysql.Options{Addr: sim.Addr(), User: simtest.AdminUser, Password: simtest.AdminPass},
			OperatorEndpoint: op.addr, LeaseTimeout: 2 * time.Second, PeerCheckInterval: 500 * time.Millisecond,
			TLSDir: dir, Version: "test", Logger: logs.Logger(nil)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); sc.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-ran; sc.Close() })
		return sc
	}
	sc := start("iad")
	sidecarSessions := func() (tlsN, plain int) {
		for _, r := range sim.Transports() {
			if r.Program == sidecar.Program {
				if r.TLS {
					tlsN++
				} else {
					plain++
				}
			}
		}
		return
	}
	eventually(t, 10*time.Second, "the sidecar reports mysqld healthy over TLS", func() bool {
		n, _ := sidecarSessions()
		return n > 0 && reachable(sc)
	})

	second, _ := ca.Issue(name)
	if err := ca.WriteDir(dir, second); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the renewed certificate served without a restart", func() bool {
		return string(servedCert(t, sim.Addr())) == string(leaf(t, second))
	})

	newCA, err := testca.New("sidecar test CA, renewed", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	third, _ := newCA.Issue(name)
	if err := newCA.WriteDir(dir, third); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the certificate of the new CA served", func() bool {
		return string(servedCert(t, sim.Addr())) == string(leaf(t, third))
	})
	// A second sidecar process started now trusts only what the files say.
	again := start("iad")
	eventually(t, 10*time.Second, "a sidecar started under the new CA reaches mysqld", func() bool {
		return reachable(again)
	})
	if _, plain := sidecarSessions(); plain != 0 {
		t.Fatalf("%d sidecar sessions without TLS: %+v", plain, sim.Transports())
	}

	before := len(sim.Transports())
	wrong := start("pdx") // its name is orders-pdx-internal.shop.svc; the certificate names iad
	eventually(t, 10*time.Second, "the pdx sidecar refuses iad's certificate by name", func() bool {
		st := wrong.Status().MySQL
		return st != nil && !st.Reachable && strings.Contains(st.Error, "orders-pdx-internal.shop.svc")
	})
	for _, r := range sim.Transports()[before:] {
		if r.Program == sidecar.Program {
			t.Fatalf("the pdx sidecar authenticated with a certificate that does not name it: %+v", r)
		}
	}
}

func reachable(sc *sidecar.Sidecar) bool {
	st := sc.Status()
	return st.MySQL != nil && st.MySQL.Reachable
}
