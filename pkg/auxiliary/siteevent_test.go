package auxiliary

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/protocol"
)

// oneGroup is a Source holding shop/orders with sites iad and pdx.
type oneGroup struct{}

func (oneGroup) Groups() ([]*v1alpha1.MysqlFailoverGroup, error) {
	g, _ := oneGroup{}.Group("shop", "orders")
	return []*v1alpha1.MysqlFailoverGroup{g}, nil
}

func (oneGroup) Group(ns, name string) (*v1alpha1.MysqlFailoverGroup, error) {
	if ns != "shop" || name != "orders" {
		return nil, ErrGroupNotFound
	}
	g := &v1alpha1.MysqlFailoverGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	g.Spec.Sites = []v1alpha1.SiteSpec{{Name: "iad"}, {Name: "pdx"}}
	return g, nil
}

func (oneGroup) Synced() bool { return true }

func TestSiteEventNudgesOnlyForASiteOfAKnownGroupOnTheLeader(t *testing.T) {
	type nudge struct{ ns, group, site string }
	var got []nudge
	leader := true
	h := New(Options{Source: oneGroup{}, IsLeader: func() bool { return leader },
		OnSiteEvent: func(ns, group, site string) { got = append(got, nudge{ns, group, site}) }})
	post := func(query, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, protocol.PathSiteEvent+query, strings.NewReader(body)))
		return rec
	}
	exited := `{"site":"iad","kind":"MySQLExited"}`
	if rec := post("?namespace=shop&group=orders", exited); rec.Code != http.StatusAccepted || len(got) != 1 || got[0] != (nudge{"shop", "orders", "iad"}) {
		t.Fatalf("valid event: %d %s, nudges %v", rec.Code, rec.Body, got)
	}
	refused := []struct {
		name, query, body string
		code              int
		errCode           string
	}{
		{"unknown group", "?namespace=shop&group=users", exited, http.StatusNotFound, protocol.ErrorNotFound},
		{"no group", "?namespace=shop", exited, http.StatusBadRequest, protocol.ErrorBadRequest},
		{"a site of no group", "?namespace=shop&group=orders", `{"site":"sfo","kind":"MySQLExited"}`, http.StatusBadRequest, protocol.ErrorBadRequest},
		{"not JSON", "?namespace=shop&group=orders", `site=iad`, http.StatusBadRequest, protocol.ErrorBadRequest},
	}
	for _, c := range refused {
		if rec := post(c.query, c.body); rec.Code != c.code || !strings.Contains(rec.Body.String(), `"error":"`+c.errCode+`"`) {
			t.Errorf("%s: %d %s, want %d %s", c.name, rec.Code, rec.Body, c.code, c.errCode)
		}
	}
	leader = false
	if rec := post("?namespace=shop&group=orders", exited); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), protocol.ErrorNotLeader) {
		t.Errorf("not the leader: %d %s", rec.Code, rec.Body)
	}
	if len(got) != 1 {
		t.Fatalf("nudges %v: only the valid event may nudge", got)
	}
	// Without a receiver the route does not exist.
	rec := httptest.NewRecorder()
	New(Options{Source: oneGroup{}, IsLeader: func() bool { return true }}).ServeHTTP(rec,
		httptest.NewRequest(http.MethodPost, protocol.PathSiteEvent+"?namespace=shop&group=orders", strings.NewReader(exited)))
	if rec.Code != http.StatusNotFound {
		t.Errorf("without OnSiteEvent: %d", rec.Code)
	}
}
