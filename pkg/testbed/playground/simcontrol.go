package playground

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"
)

// Each site's fault API (SitePlan.ControlAddr, the URL the playground
// prints and the e2e tests use) is served by the node agent, in front of
// the simulator's own API on a private port, because a crash is a real
// process kill and a killed process answers nothing:
//
//	POST /crash    SIGKILL the site's bloodraven-mysqlsim by PID; it stays
//	               down (a container whose restart is held back) until
//	               /restart or a new pod
//	POST /restart  start the process again on the site's data directory;
//	               on a running one, the simulator's own clean restart
//	GET  /state    {"running":false} while the process is down
//
// Everything else is passed to the running simulator (503 while it is down).

// serveControlFronts listens on every site's control address until ctx ends.
func (a *NodeAgent) serveControlFronts(ctx context.Context) {
	for _, s := range a.sites {
		ln, err := net.Listen("tcp", s.plan.ControlAddr)
		if err != nil {
			a.log.Error("node agent: fault API", "site", s.plan.Name, "err", err.Error())
			continue
		}
		srv := &http.Server{Handler: a.controlFront(s), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		go func() {
			<-ctx.Done()
			_ = srv.Close()
		}()
	}
}

func (a *NodeAgent) controlFront(s *siteRuntime) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /crash", func(w http.ResponseWriter, _ *http.Request) {
		a.mu.Lock()
		err := a.killSimLocked(s, true)
		a.mu.Unlock()
		answer(w, err)
	})
	mux.HandleFunc("POST /restart", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		if !exitedOrNil(s.sim) {
			a.mu.Unlock()
			a.proxy(w, r, s)
			return
		}
		var err error
		if s.dataDir == "" {
			err = errors.New("the site has no pod: nothing to restart")
		} else {
			err = a.startSimLocked(s)
		}
		a.mu.Unlock()
		answer(w, err)
	})
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		down := exitedOrNil(s.sim)
		a.mu.Unlock()
		if down {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"running":false}`+"\n")
			return
		}
		a.proxy(w, r, s)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { a.proxy(w, r, s) })
	return mux
}

func answer(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusConflict)
		_, _ = fmt.Fprintf(w, "{\"error\":%q}\n", err.Error())
		return
	}
	_, _ = io.WriteString(w, `{"result":"ok"}`+"\n")
}

// proxy passes a request to the running simulator's own fault API.
func (a *NodeAgent) proxy(w http.ResponseWriter, r *http.Request, s *siteRuntime) {
	a.mu.Lock()
	target, down := s.simControl, exitedOrNil(s.sim)
	a.mu.Unlock()
	if down {
		http.Error(w, "mysqld is not running (POST /restart starts it)", http.StatusServiceUnavailable)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+target+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		http.Error(w, "mysqld's fault API: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// killSimLocked sends SIGKILL to the site's simulator by PID and waits for
// it to end: nothing of its memory survives, its data directory does.
// hold keeps it down until /restart or a new pod.
func (a *NodeAgent) killSimLocked(s *siteRuntime, hold bool) error {
	s.held = s.held || hold
	p := s.sim
	if exitedOrNil(p) {
		return nil
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) survived SIGKILL", p.Name(), p.PID())
	}
	a.log.Info("node agent: mysqld killed", "site", s.plan.Name, "pid", p.PID(), "held", s.held)
	return nil
}
