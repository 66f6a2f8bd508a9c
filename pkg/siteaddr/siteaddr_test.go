package siteaddr

import "testing"

func TestInternalServiceFQDN(t *testing.T) {
	k := SiteKey{Namespace: "shop", Group: "orders", Site: "iad"}
	if got := k.InternalServiceFQDN(); got != "orders-iad-internal.shop.svc" {
		t.Fatalf("fqdn = %q", got)
	}
}

func TestClusterResolver(t *testing.T) {
	k := SiteKey{Namespace: "shop", Group: "orders", Site: "iad"}
	c := Cluster{SidecarPort: 9090}
	if a, _ := c.MySQLAddr(k); a != "orders-iad-internal.shop.svc:3306" {
		t.Errorf("cluster mysqld = %q", a)
	}
	if a, _ := c.SidecarAddr(k); a != "orders-iad-internal.shop.svc:9090" {
		t.Errorf("cluster sidecar = %q", a)
	}
	if _, err := (Cluster{}).SidecarAddr(k); err == nil {
		t.Error("cluster resolver without a sidecar port must fail")
	}

}
