package main

import (
	"context"
	"crypto/tls"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// siteTLS is how gtid-audit reaches a site's mysqld with spec.tls, as the
// operator does (docs/tls.md): TLS only, ca.crt of the TLS Secret trusted,
// the site's internal Service name required whatever address is dialled;
// nil without spec.tls.
func (c *clients) siteTLS(ctx context.Context, g *v1alpha1.MysqlFailoverGroup, site string) (*tls.Config, error) {
	if g.Spec.TLS == nil {
		return nil, nil
	}
	name := g.Spec.TLS.SecretName
	s, err := c.kube.CoreV1().Secrets(g.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read the TLS Secret %s/%s (spec.tls.secretName): %w", g.Namespace, name, err)
	}
	cfg, err := mysql.TLSConfig(s.Data["ca.crt"], siteaddr.SiteKey{Namespace: g.Namespace, Group: g.Name, Site: site}.InternalServiceFQDN())
	if err != nil {
		return nil, fmt.Errorf("the TLS Secret %s/%s: %w", g.Namespace, name, err)
	}
	return cfg, nil
}
