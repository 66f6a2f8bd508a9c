package managerintegration

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/protocol"
)

// sidecarStandIn answers the one sidecar endpoint the topology manager
// calls (POST /peer/active-site, a transition announcement) and records
// what it received. The real sidecar is another component's work; this
// stand-in checks only what the operator sends.
type sidecarStandIn struct {
	addr string
	mu   sync.Mutex
	got  []announcement
}

type announcement struct {
	at  time.Time
	doc protocol.ActiveSite
}

func newSidecarStandIn(t testing.TB, site string) *sidecarStandIn {
	s := &sidecarStandIn{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != protocol.PathPeerActiveSite {
			http.NotFound(w, r)
			return
		}
		var doc protocol.ActiveSite
		if err := json.NewDecoder(r.Body).Decode(&doc); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.got = append(s.got, announcement{at: time.Now(), doc: doc})
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(protocol.PeerActiveSite{Site: site, ActiveSite: doc.ActiveSite,
			TopologyGeneration: doc.TopologyGeneration, Transition: doc.Transition})
	}))
	t.Cleanup(srv.Close)
	s.addr = srv.Listener.Addr().String()
	return s
}

func (s *sidecarStandIn) announcements() []announcement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]announcement(nil), s.got...)
}
