package netcut

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestCutsAreBothWaysAndHeal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	n := New()
	n.Name(srv.Listener.Addr().String(), "b")
	get := func(from string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := n.Client(from).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get("a"); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	n.Sever("b", "a")
	if err := get("a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("across the cut: %v, want the deadline", err)
	}
	if !n.Blocked("a", srv.Listener.Addr().String()) || n.Blocked("c", srv.Listener.Addr().String()) {
		t.Fatal("Blocked disagrees with the cut")
	}
	n.Heal()
	if err := get("a"); err != nil {
		t.Fatalf("after healing: %v", err)
	}
}
