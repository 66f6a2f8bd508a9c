package devaddr

import (
	"fmt"
	"net"
	"strconv"
)

// Resolver tells the operator which address to dial for a site's mysqld and
// sidecar. Production uses Cluster (the internal Service); the playground and
// the tests use a Map.
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

// MySQLAddr returns the mapped mysqld address of a site.
func (m *Map) MySQLAddr(k SiteKey) (string, error) {
	e, ok := m.Lookup(k)
	if !ok {
		return "", fmt.Errorf("site %s: %w", k, ErrNotMapped)
	}
	return e.MySQL, nil
}

// SidecarAddr returns the mapped sidecar address of a site.
func (m *Map) SidecarAddr(k SiteKey) (string, error) {
	e, ok := m.Lookup(k)
	if !ok {
		return "", fmt.Errorf("site %s: %w", k, ErrNotMapped)
	}
	if e.Sidecar == "" {
		return "", fmt.Errorf("site %s: no sidecar= address in the development site-address map", k)
	}
	return e.Sidecar, nil
}

var (
	_ Resolver = Cluster{}
	_ Resolver = (*Map)(nil)
)
