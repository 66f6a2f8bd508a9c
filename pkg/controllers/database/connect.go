package database

import (
	"context"
	"crypto/tls"
	"fmt"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// secretKeyCA is the TLS Secret's CA bundle key (docs/tls.md).
const secretKeyCA = "ca.crt"

// connect opens a client to site as the operator account. The password
// the servers accept comes from the sidecars' password Secret, which the
// topology manager keeps at the operator account's current password, also
// mid-rotation (accounts.SidecarSecretName); the operator Secret's own
// password is tried after it (a group whose manager has not written that
// Secret yet). With spec.tls the connection verifies the site's internal
// Service name and never falls back to plaintext.
func (c *Controller) connect(ctx context.Context, g *v1alpha1.MysqlFailoverGroup, site string) (*mysql.Client, error) {
	key := siteaddr.SiteKey{Namespace: g.Namespace, Group: g.Name, Site: site}
	addr, err := c.opts.Resolver.MySQLAddr(key)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := c.siteTLS(g, key)
	if err != nil {
		return nil, err
	}
	get := c.secretData(g.Namespace)
	op, err := get(g.Spec.Credentials.OperatorSecretName)
	if err != nil {
		return nil, fmt.Errorf("spec.credentials.operatorSecretName %s: %v", g.Spec.Credentials.OperatorSecretName, err)
	}
	user := string(op[accounts.SecretKeyUsername])
	var candidates []string
	if side, err := get(accounts.SidecarSecretName(g.Name)); err == nil && len(side[accounts.SidecarPasswordKey]) > 0 {
		candidates = append(candidates, string(side[accounts.SidecarPasswordKey]))
	}
	if pw := string(op[accounts.SecretKeyPassword]); pw != "" && (len(candidates) == 0 || candidates[0] != pw) {
		candidates = append(candidates, pw)
	}
	if user == "" || len(candidates) == 0 {
		return nil, fmt.Errorf("Secret %s lacks the operator account's username or password", g.Spec.Credentials.OperatorSecretName)
	}
	var last error
	for _, pw := range candidates {
		cl, err := c.open(addr, user, pw, tlsCfg)
		if err == nil {
			err = cl.Ping(ctx)
			if err == nil {
				return cl, nil
			}
			_ = cl.Close()
		}
		last = err
		if !mysql.IsAccessDenied(err) {
			break
		}
	}
	return nil, last
}

func (c *Controller) open(addr, user, pw string, tlsCfg *tls.Config) (*mysql.Client, error) {
	return mysql.Open(mysql.Options{Addr: addr, User: user, Password: pw, TLS: tlsCfg, Program: c.opts.Program,
		DialTimeout: c.opts.StatementTimeout, StatementTimeout: c.opts.StatementTimeout})
}

// authenticates reports whether user logs in on site with pw (an account
// that exists before its MysqlDatabase is taken over only if it does).
func (c *Controller) authenticates(ctx context.Context, g *v1alpha1.MysqlFailoverGroup, site, user, pw string) (bool, error) {
	key := siteaddr.SiteKey{Namespace: g.Namespace, Group: g.Name, Site: site}
	addr, err := c.opts.Resolver.MySQLAddr(key)
	if err != nil {
		return false, err
	}
	tlsCfg, err := c.siteTLS(g, key)
	if err != nil {
		return false, err
	}
	cl, err := c.open(addr, user, pw, tlsCfg)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	err = cl.Ping(ctx)
	if mysql.IsAccessDenied(err) {
		return false, nil
	}
	return err == nil, err
}

// siteTLS is the client TLS configuration of a site; nil without spec.tls.
func (c *Controller) siteTLS(g *v1alpha1.MysqlFailoverGroup, key siteaddr.SiteKey) (*tls.Config, error) {
	if g.Spec.TLS == nil {
		return nil, nil
	}
	data, err := c.secretData(g.Namespace)(g.Spec.TLS.SecretName)
	if err != nil {
		return nil, fmt.Errorf("spec.tls.secretName %s: %v (the operator does not connect without TLS)", g.Spec.TLS.SecretName, err)
	}
	if len(data[secretKeyCA]) == 0 {
		return nil, fmt.Errorf("spec.tls.secretName %s: key %s is missing or empty", g.Spec.TLS.SecretName, secretKeyCA)
	}
	return mysql.TLSConfig(data[secretKeyCA], key.InternalServiceFQDN())
}
