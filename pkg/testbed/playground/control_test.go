package playground

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/testbed/faultproxy"
)

// A playground's links without the rest of it: three sites, proxies on
// loopback (nothing behind them is needed to set modes).
func linksOnly(t *testing.T) *Playground {
	t.Helper()
	sites := []SitePlan{
		{Name: "iad", MySQLAddr: "127.0.0.1:1", SidecarAddr: "127.0.0.1:2"},
		{Name: "pdx", MySQLAddr: "127.0.0.1:3", SidecarAddr: "127.0.0.1:4"},
		{Name: "reader", MySQLAddr: "127.0.0.1:5", SidecarAddr: "127.0.0.1:6"},
	}
	l, err := newLinks(t.TempDir(), "playground", "orders", sites, "127.0.0.1:7")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	return &Playground{Sites: sites, links: l}
}

func post(t *testing.T, h http.Handler, url string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, url, nil))
	return rec
}

func TestIsolateCutsExactlyTheSiteLinks(t *testing.T) {
	p := linksOnly(t)
	h := p.ControlHandler()
	if rec := post(t, h, "/isolate/iad?mode=blackhole"); rec.Code != http.StatusOK {
		t.Fatalf("isolate: %d %s", rec.Code, rec.Body)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/links", nil))
	var modes map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &modes); err != nil {
		t.Fatal(err)
	}
	// 3 operator links per site, and 6 directed sidecar pairs.
	if len(modes) != 3*3+6 {
		t.Fatalf("%d links: %v", len(modes), modes)
	}
	cut := map[string]bool{
		"operator-mysql-iad": true, "operator-sidecar-iad": true, "sidecar-iad-operator": true,
		"sidecar-iad-sidecar-pdx": true, "sidecar-pdx-sidecar-iad": true,
		"sidecar-iad-sidecar-reader": true, "sidecar-reader-sidecar-iad": true,
	}
	for name, mode := range modes {
		want := "open"
		if cut[name] {
			want = "blackhole"
		}
		if mode != want {
			t.Errorf("link %s is %s, want %s", name, mode, want)
		}
	}
	if rec := post(t, h, "/isolate/iad?mode=open"); rec.Code != http.StatusOK {
		t.Fatalf("heal: %d %s", rec.Code, rec.Body)
	}
	if m := p.Link("sidecar-pdx-sidecar-iad").Mode(); m != faultproxy.Open {
		t.Fatalf("after heal: %s", m)
	}
}

func TestControlRejectsBadInput(t *testing.T) {
	h := linksOnly(t).ControlHandler()
	for url, code := range map[string]int{
		"/links/operator-mysql-iad?mode=drop":   http.StatusBadRequest,
		"/links/no-such-link?mode=refuse":       http.StatusNotFound,
		"/isolate/nowhere?mode=blackhole":       http.StatusBadRequest,
		"/links/operator-mysql-iad?mode=refuse": http.StatusOK,
	} {
		if rec := post(t, h, url); rec.Code != code {
			t.Errorf("POST %s: %d %s, want %d", url, rec.Code, rec.Body, code)
		}
	}
}

// Each sidecar's map sends it to its peers through its own proxies and to
// its own mysqld directly; the operator's map goes through its proxies.
func TestEveryProcessGetsItsOwnMap(t *testing.T) {
	p := linksOnly(t)
	m, err := loadMap(p.links.sidecarMaps["iad"])
	if err != nil {
		t.Fatal(err)
	}
	if got := m["iad"]; got[0] != "127.0.0.1:1" || got[1] != "127.0.0.1:2" {
		t.Fatalf("iad's own entry in its map: %v", got)
	}
	if got := m["pdx"][1]; got != p.Link("sidecar-iad-sidecar-pdx").Addr() {
		t.Fatalf("iad reaches pdx's sidecar at %s, want its proxy %s", got, p.Link("sidecar-iad-sidecar-pdx").Addr())
	}
	op, err := loadMap(p.links.operatorMap)
	if err != nil {
		t.Fatal(err)
	}
	if got := op["reader"][0]; got != p.Link("operator-mysql-reader").Addr() {
		t.Fatalf("operator reaches reader's mysqld at %s, want its proxy", got)
	}
}

func loadMap(path string) (map[string][2]string, error) {
	m, err := devsitemap.Load(path)
	if err != nil {
		return nil, err
	}
	out := map[string][2]string{}
	for _, e := range m.Entries() {
		out[e.Site.Site] = [2]string{e.MySQL, e.Sidecar}
	}
	return out, nil
}
