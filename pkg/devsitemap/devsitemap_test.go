package devsitemap

import (
	"github.com/shipstream/bloodraven/pkg/siteaddr"

	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `
# playground
shop/orders/iad mysqld=127.0.0.1:33061 sidecar=127.0.0.1:39001
shop/orders/pdx   mysqld=127.0.0.1:33062
  other/billing/fra sidecar=[::1]:39003 mysqld=[::1]:33063
`

func TestParseSample(t *testing.T) {
	m, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	iad, ok := m.Lookup(siteaddr.SiteKey{Namespace: "shop", Group: "orders", Site: "iad"})
	if !ok || iad.MySQL != "127.0.0.1:33061" || iad.Sidecar != "127.0.0.1:39001" {
		t.Fatalf("iad = %+v, %v", iad, ok)
	}
	pdx, _ := m.Lookup(siteaddr.SiteKey{Namespace: "shop", Group: "orders", Site: "pdx"})
	if pdx.Sidecar != "" {
		t.Fatalf("pdx has no sidecar in the file, got %q", pdx.Sidecar)
	}
	fra, _ := m.Lookup(siteaddr.SiteKey{Namespace: "other", Group: "billing", Site: "fra"})
	if fra.MySQL != "[::1]:33063" || fra.Sidecar != "[::1]:39003" {
		t.Fatalf("fra = %+v", fra)
	}
	if n := len(m.Entries()); n != 3 {
		t.Fatalf("entries = %d, want 3", n)
	}
}

func TestLookupHostForms(t *testing.T) {
	m, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{
		"orders-iad-internal.shop.svc",
		"orders-iad-internal.shop.svc.",
		"orders-iad-internal.shop.svc.cluster.local",
		"ORDERS-IAD-internal.shop.svc.cluster.local.",
	} {
		e, ok := m.LookupHost(host)
		if !ok || e.Site.Site != "iad" {
			t.Errorf("LookupHost(%q) = %+v, %v; want site iad", host, e, ok)
		}
	}
	for _, host := range []string{"orders-iad.shop.svc", "orders-iad-internal.other.svc", "127.0.0.1", ""} {
		if e, ok := m.LookupHost(host); ok {
			t.Errorf("LookupHost(%q) = %+v; want no match", host, e)
		}
	}
}

func TestResolveMySQL(t *testing.T) {
	m, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		host string
		port int
		want string
	}{
		{"orders-pdx-internal.shop.svc", 3306, "127.0.0.1:33062"},
		{"orders-pdx-internal.shop.svc.cluster.local", 3306, "127.0.0.1:33062"},
		{"orders-pdx-internal.shop.svc", 0, "127.0.0.1:33062"},
		// A different port on a mapped name is not the site's mysqld: dial as given.
		{"orders-pdx-internal.shop.svc", 3307, "orders-pdx-internal.shop.svc:3307"},
		{"127.0.0.1", 33061, "127.0.0.1:33061"},
	}
	for _, c := range cases {
		if got := m.ResolveMySQL(c.host, c.port); got != c.want {
			t.Errorf("ResolveMySQL(%q, %d) = %q, want %q", c.host, c.port, got, c.want)
		}
	}
}

func TestParseErrorsNameLineAndField(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"bad key", "shop/orders mysqld=127.0.0.1:1", "line 1: site key \"shop/orders\": want namespace/group/site"},
		{"group not DNS-1035", "shop/1orders/iad mysqld=127.0.0.1:1", "group \"1orders\""},
		{"site too long", "shop/orders/abcdefghijklmnopqrstu mysqld=127.0.0.1:1", "must be no more than 20 characters"},
		{"group+site too long", "shop/" + strings.Repeat("g", 25) + "/" + strings.Repeat("s", 17) + " mysqld=127.0.0.1:1", "no more than 41 characters"},
		{"namespace upper case", "Shop/orders/iad mysqld=127.0.0.1:1", "namespace \"Shop\""},
		{"missing mysqld", "\n\nshop/orders/iad sidecar=127.0.0.1:2", "line 3: site shop/orders/iad: mysqld=<host:port> is required"},
		{"unknown key", "shop/orders/iad mysqld=127.0.0.1:1 mysql=127.0.0.1:2", "unknown key \"mysql\""},
		{"not key=value", "shop/orders/iad 127.0.0.1:1", "is not key=value"},
		{"repeated key", "shop/orders/iad mysqld=127.0.0.1:1 mysqld=127.0.0.1:2", "mysqld is given twice"},
		{"no port", "shop/orders/iad mysqld=127.0.0.1", "mysqld=\"127.0.0.1\": want host:port"},
		{"port range", "shop/orders/iad mysqld=127.0.0.1:70000", "port must be a number from 1 to 65535"},
		{"empty host", "shop/orders/iad mysqld=:3306", "host is empty"},
		{"bad sidecar", "shop/orders/iad mysqld=127.0.0.1:1 sidecar=x", "sidecar=\"x\""},
		{"duplicate site", "shop/orders/iad mysqld=127.0.0.1:1\nshop/orders/iad mysqld=127.0.0.1:2", "site shop/orders/iad is listed twice"},
		{"shared mysqld", "shop/orders/iad mysqld=127.0.0.1:1\nshop/orders/pdx mysqld=127.0.0.1:1", "already the address of site shop/orders/iad"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestWriteFileRoundTrip(t *testing.T) {
	in, err := New(
		Entry{Site: siteaddr.SiteKey{Namespace: "shop", Group: "orders", Site: "pdx"}, MySQL: "127.0.0.1:33062"},
		Entry{Site: siteaddr.SiteKey{Namespace: "shop", Group: "orders", Site: "iad"}, MySQL: "127.0.0.1:33061", Sidecar: "127.0.0.1:39001"},
	)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sites")
	if err := in.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	out, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got, want := out.Entries(), in.Entries()
	if len(got) != len(want) {
		t.Fatalf("entries = %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "shop/orders/iad mysqld=127.0.0.1:33061 sidecar=127.0.0.1:39001\n") {
		t.Fatalf("file text:\n%s", data)
	}
	// Sorted: iad before pdx regardless of the order given.
	if strings.Index(string(data), "/iad ") > strings.Index(string(data), "/pdx ") {
		t.Fatalf("entries not sorted:\n%s", data)
	}
}

func TestLoadMissingFileNamesMap(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "absent"))
	if err == nil || !strings.Contains(err.Error(), "development site-address map") {
		t.Fatalf("err = %v", err)
	}
}

func TestMapResolver(t *testing.T) {
	k := siteaddr.SiteKey{Namespace: "shop", Group: "orders", Site: "iad"}
	m, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if a, err := m.MySQLAddr(k); err != nil || a != "127.0.0.1:33061" {
		t.Errorf("map mysqld = %q, %v", a, err)
	}
	if _, err := m.SidecarAddr(siteaddr.SiteKey{Namespace: "shop", Group: "orders", Site: "pdx"}); err == nil || !strings.Contains(err.Error(), "no sidecar=") {
		t.Errorf("pdx sidecar err = %v", err)
	}
	if _, err := m.MySQLAddr(siteaddr.SiteKey{Namespace: "shop", Group: "orders", Site: "nrt"}); !errors.Is(err, ErrNotMapped) {
		t.Errorf("unmapped site err = %v, want ErrNotMapped", err)
	}
	var empty Map
	if _, ok := empty.Lookup(k); ok {
		t.Error("zero Map must be empty")
	}
}
