package playground

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
	"github.com/shipstream/bloodraven/pkg/testbed/testca"
)

// writeSelfSignedCert writes a self-signed certificate for 127.0.0.1 and
// localhost (its own CA, so the certificate file is also the CA file a
// client trusts) and its key.
func writeSelfSignedCert(certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "bloodraven-playground"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// mysqlCAFile is the playground's MySQL CA under Dir (the banner's
// --ssl-ca).
const mysqlCAFile = "mysql-ca.crt"

// createMySQLTLS is cert-manager's part (docs/tls.md): with spec.tls, a CA
// of the playground's own and one certificate in the group's TLS Secret
// (tls.crt, tls.key, ca.crt). One Secret serves every site (spec.tls names
// one), so the certificate's names are every site's internal Service, what
// the operator, the sidecars and replication verify; then the group's DNS
// name, which applications verify, and 127.0.0.1, the playground's only
// route to a site from the host (the banner's mysql line).
func (p *Playground) createMySQLTLS(ctx context.Context, g *v1alpha1.MysqlFailoverGroup) error {
	if g.Spec.TLS == nil {
		return nil
	}
	ca, err := testca.New("bloodraven playground MySQL CA", 30*24*time.Hour)
	if err != nil {
		return err
	}
	var names []string
	for _, s := range g.Spec.Sites {
		names = append(names, siteaddr.SiteKey{Namespace: p.Namespace, Group: g.Name, Site: s.Name}.InternalServiceFQDN())
	}
	if g.Spec.DNS.Hostname != "" {
		names = append(names, g.Spec.DNS.Hostname)
	}
	pair, err := ca.Issue(append(names, "127.0.0.1")...)
	if err != nil {
		return err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: g.Spec.TLS.SecretName}, Type: corev1.SecretTypeTLS, Data: ca.SecretData(pair)}
	if _, err := p.CP.Client().CoreV1().Secrets(p.Namespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return err
	}
	p.MySQLCAFile, p.mysqlCA, p.mysqlHost = filepath.Join(p.Dir, mysqlCAFile), ca.CertPEM, g.Spec.DNS.Hostname
	p.mysqlIssuer, p.mysqlNames, p.mysqlSecret = ca, append(names, "127.0.0.1"), g.Spec.TLS.SecretName
	return os.WriteFile(p.MySQLCAFile, ca.CertPEM, 0o644)
}

// RenewMySQLCertificate is cert-manager renewing the TLS Secret: a new
// certificate and key for the same names, signed by the same CA. It
// returns the new certificate (DER) as a client will see it served.
func (p *Playground) RenewMySQLCertificate(ctx context.Context) ([]byte, error) {
	if p.mysqlIssuer == nil {
		return nil, errors.New("the sample group has no spec.tls")
	}
	pair, err := p.mysqlIssuer.Issue(p.mysqlNames...)
	if err != nil {
		return nil, err
	}
	api := p.CP.Client().CoreV1().Secrets(p.Namespace)
	sec, err := api.Get(ctx, p.mysqlSecret, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	sec.Data = p.mysqlIssuer.SecretData(pair)
	if _, err := api.Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		return nil, err
	}
	return cert.Certificate[0], nil
}

// MySQLClientTLS is how an application of the playground connects with
// spec.tls: the playground's CA, the group's DNS name verified; nil
// without spec.tls.
func (p *Playground) MySQLClientTLS() (*tls.Config, error) {
	if p.mysqlCA == nil {
		return nil, nil
	}
	return mysql.TLSConfig(p.mysqlCA, p.mysqlHost)
}

// AppTLS is how the sample group's application account connects over TLS
// from the host: to the active site's mysqld on 127.0.0.1, the certificate
// verified against MySQLCAFile and the name dialled (mysql's
// --ssl-mode=VERIFY_IDENTITY). The password stays in its Secret.
type AppTLS struct {
	User, Password string
	Secret         string // namespace/name of spec.credentials.appSecretName
	Host           string // 127.0.0.1
	Port           string
	CAFile         string
}

// AppTLS reads the application account and the active site; an error
// without spec.tls, spec.credentials.appSecretName or an active site.
func (p *Playground) AppTLS(ctx context.Context) (AppTLS, error) {
	g, err := p.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.Namespace).Get(ctx, p.Group, metav1.GetOptions{})
	if err != nil {
		return AppTLS{}, err
	}
	if g.Spec.TLS == nil || p.MySQLCAFile == "" || g.Spec.Credentials.AppSecretName == "" {
		return AppTLS{}, fmt.Errorf("group %s/%s has no spec.tls or no spec.credentials.appSecretName", p.Namespace, p.Group)
	}
	plan, ok := p.Site(g.Status.ActiveSite)
	if !ok {
		return AppTLS{}, fmt.Errorf("group %s/%s has no active site yet", p.Namespace, p.Group)
	}
	sec, err := p.CP.Client().CoreV1().Secrets(p.Namespace).Get(ctx, g.Spec.Credentials.AppSecretName, metav1.GetOptions{})
	if err != nil {
		return AppTLS{}, err
	}
	host, port, err := net.SplitHostPort(plan.MySQLAddr)
	if err != nil {
		return AppTLS{}, err
	}
	return AppTLS{User: string(sec.Data["username"]), Password: string(sec.Data["password"]),
		Secret: p.Namespace + "/" + g.Spec.Credentials.AppSecretName, Host: host, Port: port, CAFile: p.MySQLCAFile}, nil
}

// Command is the mysql client line (MySQL's client: --ssl-mode), the
// password read from its Secret.
func (a AppTLS) Command(kubectl string) string {
	return a.command("--ssl-mode=VERIFY_IDENTITY", kubectl)
}

// MariaDBCommand is the same with MariaDB's client, which has no
// --ssl-mode and verifies the CA and the name with --ssl-verify-server-cert.
func (a AppTLS) MariaDBCommand(kubectl string) string {
	return a.command("--ssl --ssl-verify-server-cert", kubectl)
}

func (a AppTLS) command(mode, kubectl string) string {
	ns, name, _ := strings.Cut(a.Secret, "/")
	return fmt.Sprintf("mysql %s --ssl-ca=%s -h %s -P %s -u %s --password=\"$(%s get secret -n %s %s -o jsonpath='{.data.password}' | base64 -d)\"",
		mode, a.CAFile, a.Host, a.Port, a.User, kubectl, ns, name)
}

// ClientTLS is the Go equivalent of Command's TLS options.
func (a AppTLS) ClientTLS() (*tls.Config, error) {
	pem, err := os.ReadFile(a.CAFile)
	if err != nil {
		return nil, err
	}
	return mysql.TLSConfig(pem, a.Host)
}
