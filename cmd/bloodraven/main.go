// Command bloodraven is the Bloodraven operator: one leader-elected process
// that runs every controller, plus the metrics, probe, auxiliary and TLS
// listeners. Configuration is by flags or environment variables; run it with
// -h for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/shipstream/bloodraven/pkg/controllers/database"
	"github.com/shipstream/bloodraven/pkg/controllers/topology"
	"github.com/shipstream/bloodraven/pkg/logging"
	"github.com/shipstream/bloodraven/pkg/operator"
)

func main() { os.Exit(run()) }

func run() int {
	cfg, err := operator.ParseConfig(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0 // the flag package printed the usage
	}
	if err != nil {
		// Even a refusal to start is one JSON line, like every other line.
		logging.New(os.Stdout, slog.LevelInfo).Error("invalid configuration", "err", err.Error())
		return 2
	}
	level, _ := logging.ParseLevel(cfg.LogLevel)
	log := logging.New(os.Stdout, level)
	logging.Install(log)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	p, err := operator.New(cfg, log)
	if err != nil {
		log.Error("cannot start", "err", err.Error())
		return 1
	}
	if err := registerModules(p); err != nil {
		log.Error("cannot start", "err", err.Error())
		return 1
	}
	log.Info("starting", "identity", cfg.LeaderElection.Identity, "namespaces", fmt.Sprint(cfg.Namespaces),
		"lease", cfg.LeaderElection.Namespace+"/"+cfg.LeaderElection.Name,
		"statementTimeout", cfg.LeaderElection.StatementTimeout().String())
	if err := p.Run(ctx); err != nil {
		log.Error("operator failed", "err", err.Error())
		return 1
	}
	return 0
}

// registerModules adds every controller and route to the process. Each
// module registers itself here, in one place, before the informers start.
func registerModules(p *operator.Process) error {
	if _, err := database.New(p); err != nil {
		return err
	}
	if _, err := topology.New(p); err != nil {
		return err
	}
	return nil
}
