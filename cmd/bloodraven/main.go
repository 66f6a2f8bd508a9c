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

	"k8s.io/client-go/tools/cache"

	shipv1alpha1 "github.com/shipstream/bloodraven/generated/informers/externalversions/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/auxiliary"
	"github.com/shipstream/bloodraven/pkg/backup/upload"
	"github.com/shipstream/bloodraven/pkg/controllers/backup"
	"github.com/shipstream/bloodraven/pkg/controllers/database"
	"github.com/shipstream/bloodraven/pkg/controllers/groupobjects"
	"github.com/shipstream/bloodraven/pkg/controllers/leaserevocation"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/deployapi"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/logging"
	"github.com/shipstream/bloodraven/pkg/operator"
	"github.com/shipstream/bloodraven/pkg/protocol"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == upload.Command {
		os.Exit(runEncryptUpload(os.Args[1:])) // the backup Job's upload step, not the operator
	}
	os.Exit(run())
}

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

// registerModules adds every controller and route to the process, here in
// one place, before the informers start. Every controller is built the
// same way: New(operator.Deps, Options).
func registerModules(p *operator.Process) error {
	d := p.Deps()
	// One lease store for the API and the controller: it keeps nothing in
	// memory, the Leases in the API server are the state.
	store := leasestore.New(p.Kube, leasestore.Options{})
	if !p.Config.AutomaticFailover {
		p.Log.Warn("automatic failover is off (--automatic-failover=false): an unreachable primary is reported, not replaced")
	}
	var topo *topologymanager.Controller // the sidecars' site events nudge it
	controllers := []struct {
		build   func() (operator.Controller, error)
		workers int
	}{
		{func() (operator.Controller, error) {
			return database.New(d, database.Options{Resolver: p.Resolver, StatementTimeout: p.Config.LeaderElection.StatementTimeout(), Leadership: p.MayMutate})
		}, p.Config.Workers},
		{func() (operator.Controller, error) {
			return groupobjects.New(d, groupobjects.Options{
				SidecarImage: p.Config.SidecarImage, OperatorEndpoint: p.Config.SidecarOperatorEndpoint,
			})
		}, p.Config.Workers},
		{func() (operator.Controller, error) {
			var err error
			topo, err = topologymanager.New(d, topologymanager.Options{
				Resolver:          p.Resolver,
				StatementTimeout:  p.Config.LeaderElection.StatementTimeout(),
				Metrics:           topologymanager.NewMetrics(p.Metrics.Registry),
				AutomaticFailover: p.Config.AutomaticFailover,
				Leadership:        p.MayMutate,
				RotationOverlap:   devRotationOverlap(os.Getenv),
			})
			return topo, err
		}, p.Config.TopologyWorkers},
		{func() (operator.Controller, error) {
			return leaserevocation.New(d, leaserevocation.Options{Store: store})
		}, p.Config.Workers},
	}
	if img := p.Config.BackupUploadImage; img != "" {
		// Stamps are read from S3 with the profile's credentials Secret;
		// the operator mounts no claims: a PVC profile's result comes from
		// the Job's pod (its upload container's termination message).
		controllers = append(controllers, struct {
			build   func() (operator.Controller, error)
			workers int
		}{func() (operator.Controller, error) {
			return backup.New(d, backup.Options{Image: img, Results: backup.StoreResults{}})
		}, p.Config.Workers})
	} else {
		p.Log.Warn("no --backup-upload-image: MysqlBackups are not acted on (the backup controller is not started)")
	}
	for _, c := range controllers {
		ctrl, err := c.build()
		if err != nil {
			return err
		}
		p.AddControllerWorkers(ctrl, c.workers)
	}
	groups := groupInformers(p)
	if p.Config.DeployAPIEnabled {
		h, err := deployapi.NewHandler(deployapi.Config{
			Kube: p.Kube, Shipstream: p.Shipstream, Store: store, Audience: p.Config.DeployAPIAudience,
			Namespaces: p.Config.Namespaces, Logger: p.Log, IsLeader: p.Leading, Registerer: p.Metrics.Registry,
		})
		if err != nil {
			return err
		}
		p.SetDeployAPI(h)
	}
	registerAuxiliary(p, groups, topo.NudgeSite)
	return nil
}

// groupInformers returns the shared MysqlFailoverGroup informers of every
// watched-namespace factory.
func groupInformers(p *operator.Process) []shipv1alpha1.MysqlFailoverGroupInformer {
	var groups []shipv1alpha1.MysqlFailoverGroupInformer
	for _, ns := range p.Informers.Namespaces() {
		groups = append(groups, p.Informers.Shipstream[ns].Shipstream().V1alpha1().MysqlFailoverGroups())
	}
	return groups
}

// registerAuxiliary mounts the sidecar-facing endpoints on the :8082 mux,
// answering from the group informers' caches.
func registerAuxiliary(p *operator.Process, groups []shipv1alpha1.MysqlFailoverGroupInformer, onSiteEvent func(namespace, group, site string)) {
	aux := auxiliary.New(auxiliary.Options{Source: groupSource{p: p, groups: groups}, IsLeader: p.Leading, Logger: p.Log, OnSiteEvent: onSiteEvent})
	for _, path := range auxiliary.Paths {
		if path == protocol.PathOperatorHealthz {
			continue // the process serves its own /healthz on this listener
		}
		p.AuxiliaryMux.Handle(path, aux)
	}
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { aux.Notify() },
		UpdateFunc: func(any, any) { aux.Notify() },
		DeleteFunc: func(any) { aux.Notify() },
	}
	for _, g := range groups {
		_, _ = g.Informer().AddEventHandler(notify)
	}
}
