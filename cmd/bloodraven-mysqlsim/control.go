package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
)

// startControl serves the fault-injection API on a loopback address and
// returns a function that stops it.
func startControl(addr string, srv *mysqlsim.Server, log *slog.Logger) (func(), error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("-control-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("-control-addr %q: must be a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-control-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", mysqlsim.ControlHandler(srv))
	mux.HandleFunc("POST /crash", crashProcess)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("control API stopped", "err", err.Error())
		}
	}()
	log.Info("control API listening", "controlAddr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}, nil
}

// crashProcess answers, then kills this process with SIGKILL: a crash of
// the whole mysqld, not only of its listener. Nothing is flushed or
// closed; what the journal had not written is lost, and the data
// directory is what the next start recovers from. A supervisor (the
// playground's node agent, as the kubelet) starts the process again.
func crashProcess(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"result":"ok"}` + "\n"))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
}
