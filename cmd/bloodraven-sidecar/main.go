// Command bloodraven-sidecar runs next to each mysqld of a failover group: it
// serves the local mysqld's health and state to the kubelet, the operator and
// the peer sidecars, and fences the local mysqld when this site may no longer
// be the writable one. docs/sidecar.md describes its endpoints, its
// configuration and the self-fencing rule.
//
// Configuration comes from flags, each with an environment variable the
// operator's pod template sets. It has no Kubernetes client.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shipstream/bloodraven/pkg/logging"
	"github.com/shipstream/bloodraven/pkg/sidecar"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "bloodraven-sidecar:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string) error {
	o, err := parse(args, getenv)
	if err != nil {
		return err
	}
	log := logging.New(os.Stdout, o.logLevel)
	logging.Install(log)
	cfg, err := o.sidecarConfig()
	if err != nil {
		return err
	}
	cfg.Logger, cfg.Version = log, version
	sc, err := sidecar.New(cfg)
	if err != nil {
		return err
	}
	defer sc.Close()

	ln, err := net.Listen("tcp", o.listenAddr)
	if err != nil {
		return fmt.Errorf("--listen-addr: cannot listen on %s: %w", o.listenAddr, err)
	}
	srv := &http.Server{Handler: sc.Handler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("sidecar listening", "addr", ln.Addr().String(), "version", version, "namespace", cfg.Namespace,
		"group", cfg.Group, "site", cfg.Site, "mysqlAddr", cfg.MySQL.Addr, "operatorEndpoint", cfg.OperatorEndpoint,
		"peers", peerList(cfg.Peers))

	loopCtx, cancelLoop := context.WithCancel(ctx)
	loopDone := make(chan struct{})
	go func() { defer close(loopDone); sc.Run(loopCtx) }()

	select {
	case <-ctx.Done():
	case err = <-serveErr:
		err = fmt.Errorf("http server: %w", err)
	}
	cancelLoop()
	<-loopDone
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("sidecar stopped")
	return nil
}

func peerList(ps []sidecar.Peer) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Site+"="+p.Addr)
	}
	return out
}
