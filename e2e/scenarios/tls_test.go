//go:build e2e

package scenarios

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/mysql"
)

// TestAppConnectsOverTLS does what the banner tells a user: the
// application account connects to the active site with the certificate
// verified against the playground's CA and the name dialled (the banner's
// mysql --ssl-mode=VERIFY_IDENTITY line, here with the product's driver);
// without TLS mysqld refuses it (3159); TLSReady says the operator verified
// every site. Then the TLS Secret is renewed, as cert-manager does: the
// sidecar reloads mysqld's TLS and new connections are served the new
// certificate, while mysqld is never restarted.
func TestAppConnectsOverTLS(t *testing.T) {
	requireReady(t)
	g := group(t)
	if c := apimeta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionTLSReady); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonTLSVerified {
		t.Fatalf("TLSReady %+v, want True/%s", c, v1alpha1.ReasonTLSVerified)
	}
	ctx := context.Background()
	app, err := pg.AppTLS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cmd := app.Command("kubectl"); !strings.Contains(cmd, "--ssl-mode=VERIFY_IDENTITY --ssl-ca="+pg.MySQLCAFile) {
		t.Fatalf("banner command %q", cmd)
	}
	cfg, err := app.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(app.Host, app.Port)
	query := func(cfg *tls.Config) error {
		c, err := mysql.Open(mysql.Options{Addr: addr, User: app.User, Password: app.Password, TLS: cfg, Program: "bloodraven-e2e-app"})
		if err != nil {
			return err
		}
		defer c.Close()
		var one int
		return c.DB().QueryRowContext(ctx, "SELECT 1").Scan(&one)
	}
	if err := query(cfg); err != nil {
		t.Fatalf("the banner's connection: %v", err)
	}
	if err := query(nil); !mysql.IsNumber(err, 3159) {
		t.Fatalf("the application without TLS: %v, want 3159", err)
	}

	site := g.Status.ActiveSite
	starts := pg.Agent().Starts(site)
	served := func() []byte {
		var mu sync.Mutex
		var got []byte
		capture := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12,
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				mu.Lock()
				defer mu.Unlock()
				got = raw[0]
				return nil
			}}
		_ = query(capture)
		mu.Lock()
		defer mu.Unlock()
		return got
	}
	renewed, err := pg.RenewMySQLCertificate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() string {
		if string(served()) != string(renewed) {
			return "the active site still serves the certificate from before the renewal"
		}
		return ""
	})
	if n := pg.Agent().Starts(site); n != starts {
		t.Fatalf("mysqld of %s was started %d times during the renewal, want no restart", site, n-starts)
	}
	if err := query(cfg); err != nil {
		t.Fatalf("the banner's connection after the renewal: %v", err)
	}
}
