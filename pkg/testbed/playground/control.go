package playground

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/faultproxy"
)

// ControlHandler is the playground's own fault API (loopback only), for
// the links the fault proxies stand on:
//
//	GET  /links                          every link and its mode
//	POST /links/{name}?mode=blackhole    one link: open, blackhole or refuse
//	POST /isolate/{site}?mode=blackhole  every link to or from the site's sidecar and the operator's link to its mysqld
func (p *Playground) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /links", func(w http.ResponseWriter, _ *http.Request) {
		out := map[string]string{}
		for _, n := range p.LinkNames() {
			out[n] = p.Link(n).Mode().String()
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("POST /links/{name}", func(w http.ResponseWriter, r *http.Request) {
		m, err := faultproxy.ParseMode(r.URL.Query().Get("mode"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		l := p.Link(r.PathValue("name"))
		if l == nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no link " + r.PathValue("name") + "; GET /links lists them"})
			return
		}
		l.Set(m)
		writeJSON(w, http.StatusOK, map[string]string{l.Name(): m.String()})
	})
	mux.HandleFunc("POST /isolate/{site}", func(w http.ResponseWriter, r *http.Request) {
		m, err := faultproxy.ParseMode(r.URL.Query().Get("mode"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		if err := p.IsolateSite(r.PathValue("site"), m); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{r.PathValue("site"): m.String()})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// ServeControl serves ControlHandler on a free loopback port until ctx
// ends and returns its base URL.
func (p *Playground) ServeControl(ctx context.Context) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: p.ControlHandler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Warn("playground control API stopped", "err", err.Error())
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	p.ControlURL = "http://" + ln.Addr().String()
	return p.ControlURL, nil
}
