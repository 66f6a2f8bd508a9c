package siteaddr

import (
	"fmt"
	"net"
	"strconv"
)

// Resolver tells the operator which address to dial for a site's mysqld and
// sidecar. Production uses Cluster (the internal Service); the playground and
// the tests use the development map (package devsitemap).
type Resolver interface {
	MySQLAddr(k SiteKey) (string, error)
	SidecarAddr(k SiteKey) (string, error)
}

// Cluster resolves sites through their internal Service in the cluster.
type Cluster struct {
	// SidecarPort is the sidecar's port on the internal Service.
	SidecarPort int
}

// MySQLAddr returns <internal Service FQDN>:3306.
func (c Cluster) MySQLAddr(k SiteKey) (string, error) {
	return net.JoinHostPort(k.InternalServiceFQDN(), strconv.Itoa(MySQLPort)), nil
}

// SidecarAddr returns <internal Service FQDN>:<SidecarPort>.
func (c Cluster) SidecarAddr(k SiteKey) (string, error) {
	if c.SidecarPort == 0 {
		return "", fmt.Errorf("site %s: no sidecar port configured", k)
	}
	return net.JoinHostPort(k.InternalServiceFQDN(), strconv.Itoa(c.SidecarPort)), nil
}

var _ Resolver = Cluster{}
