package operator

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// DeployAPIPrefix is the path prefix of the deployment API on the TLS listener.
const DeployAPIPrefix = "/deploy/v1"

// processState is what the probes and the leader guard read.
type processState struct {
	leading atomic.Bool
	synced  atomic.Bool
	// leaderHealth reports an error while the leader fails to renew (nil-safe).
	leaderHealth func(*http.Request) error
}

// listener is one bound port and the server that serves it.
type listener struct {
	name   string // the flag, for errors and logs
	ln     net.Listener
	server *http.Server
}

// bind opens every configured port before anything else starts, so a port
// in use fails the start with the flag's name.
func bind(flag, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot listen on %s: %w", flag, addr, err)
	}
	return ln, nil
}

func newServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.With("logger", "net/http").Handler(), slog.LevelWarn), // net/http's own messages (docs/logs.md)
	}
}

// serveAll serves every listener until shutdown; failures other than a
// normal close are logged.
func serveAll(ls []*listener, log *slog.Logger) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, l := range ls {
		wg.Go(func() {
			log.Info("listening", "listener", l.name, "addr", l.ln.Addr().String())
			if err := l.server.Serve(l.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("listener failed", "listener", l.name, "err", err.Error())
			}
		})
	}
	return &wg
}

func shutdownAll(ctx context.Context, ls []*listener) {
	var wg sync.WaitGroup
	for _, l := range ls {
		wg.Go(func() {
			if err := l.server.Shutdown(ctx); err != nil {
				l.server.Close()
			}
		})
	}
	wg.Wait()
}

// probeHandler serves /healthz (the process and, while leading, its Lease
// renewals are alive) and /readyz (caches have synced).
func probeHandler(st *processState) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if st.leaderHealth != nil {
			if err := st.leaderHealth(r); err != nil {
				http.Error(w, "leader election: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !st.synced.Load() {
			http.Error(w, "informer caches not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// writeJSONError writes {"error": code} with status.
func writeJSONError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
}

// FollowerRefuser is a deploy API handler that itself answers 503
// {"error":"not_leader"} while this process does not lead, logging the
// request like every other one (the contract wants one record per request).
type FollowerRefuser interface {
	RefusesFollowers() bool
}

// leaderOnly answers 503 {"error":"not_leader"} unless this process leads,
// so a deploy API request never acts on a follower's possibly stale view. A
// follower passes the request on only to a handler that refuses it there
// itself (FollowerRefuser), so that it is logged and counted. A nil next
// (deploy API enabled but no handler installed) answers 404.
func leaderOnly(st *processState, next func() http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := next()
		if !st.leading.Load() {
			if fr, ok := h.(FollowerRefuser); ok && fr.RefusesFollowers() {
				h.ServeHTTP(w, r)
				return
			}
			writeJSONError(w, http.StatusServiceUnavailable, "not_leader")
			return
		}
		if h == nil {
			writeJSONError(w, http.StatusNotFound, "not_found")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// tlsListener wraps ln so that only TLS is spoken on it: a plain-text client
// fails the handshake and is never served.
func tlsListener(ln net.Listener, cfg *tls.Config) net.Listener { return tls.NewListener(ln, cfg) }
