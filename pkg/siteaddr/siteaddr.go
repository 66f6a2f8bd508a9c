// Package siteaddr names the sites of a failover group as the cluster knows
// them: the key namespace/group/site, the internal Service each site's mysqld
// and sidecar are reached through, its in-cluster DNS name and port, and the
// Resolver interface through which the operator dials a site. In a cluster
// the Resolver is Cluster; the development site-address map (package
// devsitemap) is the other implementation.
package siteaddr

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MySQLPort is the port mysqld listens on behind a site's internal Service in
// a cluster; a SOURCE_PORT of this value on a mapped FQDN means "that site's mysqld".
const MySQLPort = 3306

// SiteKey names one site of one failover group.
type SiteKey struct {
	Namespace string
	Group     string
	Site      string
}

// String renders the key as the file writes it: namespace/group/site.
func (k SiteKey) String() string { return k.Namespace + "/" + k.Group + "/" + k.Site }

// InternalServiceFQDN is the in-cluster DNS name of the site's internal Service,
// the name the operator puts in SOURCE_HOST.
func (k SiteKey) InternalServiceFQDN() string {
	return InternalServiceName(k.Group, k.Site) + "." + k.Namespace + ".svc"
}

// InternalServiceName is the name of a site's internal Service object.
func InternalServiceName(group, site string) string { return group + "-" + site + "-internal" }

// ParseSiteKey reads namespace/group/site and validates each part with the
// same naming rules the CRDs enforce.
func ParseSiteKey(s string) (SiteKey, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return SiteKey{}, fmt.Errorf("site key %q: want namespace/group/site", s)
	}
	k := SiteKey{Namespace: parts[0], Group: parts[1], Site: parts[2]}
	return k, k.Validate()
}

// Validate checks the key's parts: a namespace is a DNS label, a group a
// DNS-1035 label, a site a DNS label of at most 20 characters, and group plus
// site at most 41 characters (they form the site's Service names).
func (k SiteKey) Validate() error {
	if errs := validation.IsDNS1123Label(k.Namespace); len(errs) > 0 {
		return fmt.Errorf("site key %q: namespace %q: %s", k, k.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1035Label(k.Group); len(errs) > 0 {
		return fmt.Errorf("site key %q: group %q: %s", k, k.Group, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(k.Site); len(errs) > 0 || len(k.Site) > 20 {
		if len(errs) == 0 {
			errs = []string{"must be no more than 20 characters"}
		}
		return fmt.Errorf("site key %q: site %q: %s", k, k.Site, strings.Join(errs, "; "))
	}
	if len(k.Group)+len(k.Site) > 41 {
		return fmt.Errorf("site key %q: group and site names together must be no more than 41 characters", k)
	}
	return nil
}
