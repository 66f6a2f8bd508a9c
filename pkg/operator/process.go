package operator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/eventrecorder"
	"github.com/shipstream/bloodraven/pkg/metrics"
	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// Controller is anything the leader runs: Run blocks until ctx ends.
type Controller interface {
	Name() string
	Run(ctx context.Context, workers int) error
}

// Process is one operator process. New builds the clients, informers,
// metrics and listeners; modules then add controllers and routes; Run runs it.
type Process struct {
	Config     Config
	Log        *slog.Logger
	Kube       kubernetes.Interface
	Shipstream versioned.Interface
	// Dynamic reaches kinds without a typed client (external-dns DNSEndpoints).
	Dynamic   dynamic.Interface
	Informers *Informers
	Metrics   *metrics.Registry
	Recorder  record.EventRecorder
	// Resolver addresses sites: the internal Services, or the development map.
	Resolver siteaddr.Resolver
	// AuxiliaryMux serves the plain-HTTP auxiliary listener (sidecar-facing routes).
	AuxiliaryMux *http.ServeMux
	// TLSMux serves the TLS listener (keyring escrow; the deploy API is mounted by SetDeployAPI).
	TLSMux *http.ServeMux

	// Exit ends the process; tests replace it. Called with 1 when the Lease is lost.
	Exit func(code int)

	state       processState
	deployAPI   atomic.Pointer[http.Handler]
	controllers []registered
	listeners   []*listener
	stopEvents  func()
	eventsCtx   context.CancelFunc

	health     *leaderelection.HealthzAdaptor
	leadership *Leadership
	mu         sync.Mutex
	ctrlDone   chan struct{} // closed when the controllers started by startLeading returned
}

// restConfig builds the API client configuration: the kubeconfig if given,
// else the in-cluster ServiceAccount. Like kubectl, a KUBECONFIG holding a
// list of files (colon-separated) merges them, the first one winning.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if paths := filepath.SplitList(kubeconfig); len(paths) > 1 {
		rules := &clientcmd.ClientConfigLoadingRules{Precedence: paths}
		c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig: %q: %w", kubeconfig, err)
		}
		return c, nil
	}
	if kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		return c, nil
	}
	c, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig is not set and there is no in-cluster configuration: %w", err)
	}
	return c, nil
}

// New prepares a process: everything that can fail on bad configuration
// fails here, before any listener serves or any election starts.
func New(cfg Config, log *slog.Logger) (_ *Process, err error) {
	rc, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.UserAgent = "bloodraven"
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	ship, err := versioned.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("shipstream client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	p := &Process{
		Config: cfg, Log: log, Kube: kube, Shipstream: ship, Dynamic: dyn,
		Informers:    newInformers(kube, ship, cfg.Namespaces),
		Metrics:      metrics.NewRegistry(),
		Resolver:     siteaddr.Cluster{SidecarPort: protocol.SidecarPort},
		AuxiliaryMux: http.NewServeMux(),
		TLSMux:       http.NewServeMux(),
		Exit:         os.Exit,
		leadership:   NewLeadership(cfg.LeaderElection, time.Now),
	}
	metrics.RegisterClientGo(p.Metrics.Registry)
	// /healthz fails while this process leads but has stopped renewing.
	p.health = leaderelection.NewLeaderHealthzAdaptor(cfg.LeaderElection.RenewDeadline)
	p.state.leaderHealth = p.health.Check
	if cfg.DevSiteAddresses != "" {
		m, err := devsitemap.Load(cfg.DevSiteAddresses)
		if err != nil {
			return nil, fmt.Errorf("--dev-site-addresses: %w", err)
		}
		p.Resolver = m
		log.Warn("development site-address map in use; sites are not addressed through their Services", "path", cfg.DevSiteAddresses, "sites", len(m.Entries()))
	}
	defer func() {
		if err != nil {
			p.closeListeners()
		}
	}()
	if err := p.bindListeners(); err != nil {
		return nil, err
	}
	var ectx context.Context
	ectx, p.eventsCtx = context.WithCancel(context.Background())
	p.Recorder, p.stopEvents = eventrecorder.NewRecorder(ectx, kube)
	return p, nil
}

func (p *Process) bindListeners() error {
	cfg := p.Config
	add := func(flag, addr string, h http.Handler) (*listener, error) {
		ln, err := bind(flag, addr)
		if err != nil {
			return nil, err
		}
		l := &listener{name: flag, ln: ln, server: newServer(h, p.Log)}
		p.listeners = append(p.listeners, l)
		return l, nil
	}
	if _, err := add("--metrics-addr", cfg.MetricsAddr, p.Metrics.Handler()); err != nil {
		return err
	}
	if _, err := add("--probe-addr", cfg.ProbeAddr, probeHandler(&p.state)); err != nil {
		return err
	}
	p.AuxiliaryMux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	if _, err := add("--auxiliary-addr", cfg.AuxiliaryAddr, p.AuxiliaryMux); err != nil {
		return err
	}
	if !cfg.TLSEnabled() {
		return nil
	}
	certs, err := newCertReloader(cfg.TLSCertFile, cfg.TLSKeyFile, time.Second, p.Log)
	if err != nil {
		return err
	}
	if cfg.DeployAPIEnabled {
		guard := leaderOnly(&p.state, func() http.Handler {
			if h := p.deployAPI.Load(); h != nil {
				return *h
			}
			return nil
		})
		p.TLSMux.Handle(DeployAPIPrefix+"/", guard)
		p.TLSMux.Handle(DeployAPIPrefix, guard)
	}
	l, err := add("--escrow-tls-addr", cfg.EscrowTLSAddr, p.TLSMux)
	if err != nil {
		return err
	}
	l.ln = tlsListener(l.ln, certs.tlsConfig())
	return nil
}

func (p *Process) closeListeners() {
	for _, l := range p.listeners {
		l.ln.Close()
	}
}

// SetDeployAPI installs the handler of /deploy/v1 (requests reach it only
// while this process leads and the deploy API is enabled).
func (p *Process) SetDeployAPI(h http.Handler) { p.deployAPI.Store(&h) }

// Deps are what every controller is built from: the process's clients,
// informers, Event recorder, metrics and logger. Every controller package
// has the same constructor, New(Deps, Options), so a test builds a
// controller on a real API server exactly as the process does.
type Deps struct {
	Kube       kubernetes.Interface
	Shipstream versioned.Interface
	Dynamic    dynamic.Interface
	Informers  *Informers
	Recorder   record.EventRecorder
	Metrics    *metrics.Registry
	Log        *slog.Logger
}

// Deps returns the process's shared dependencies.
func (p *Process) Deps() Deps {
	return Deps{Kube: p.Kube, Shipstream: p.Shipstream, Dynamic: p.Dynamic, Informers: p.Informers,
		Recorder: p.Recorder, Metrics: p.Metrics, Log: p.Log}
}

// Logger is d.Log, or slog's default when unset.
func (d Deps) Logger() *slog.Logger {
	if d.Log == nil {
		return slog.Default()
	}
	return d.Log
}

// WorkqueueMetrics is the provider queues are created with; nil (client-go's
// global provider) without a registry.
func (d Deps) WorkqueueMetrics() workqueue.MetricsProvider {
	if d.Metrics == nil {
		return nil
	}
	return d.Metrics.Workqueue
}

// AddController registers a controller the leader runs with --workers
// workers.
func (p *Process) AddController(c Controller) { p.AddControllerWorkers(c, p.Config.Workers) }

// AddControllerWorkers registers a controller the leader runs with the
// given number of workers.
func (p *Process) AddControllerWorkers(c Controller, workers int) {
	p.controllers = append(p.controllers, registered{Controller: c, workers: workers})
}

// registered is a controller with its worker count.
type registered struct {
	Controller
	workers int
}

// Addr returns the bound address of a listener by its flag name (for tests
// that bind port 0).
func (p *Process) Addr(flag string) string {
	for _, l := range p.listeners {
		if l.name == flag {
			return l.ln.Addr().String()
		}
	}
	return ""
}

// Leading reports whether this process currently holds the Lease.
func (p *Process) Leading() bool { return p.state.leading.Load() }

// MayMutate is nil while this process leads and a MySQL statement started
// now ends before another process could hold the Lease (Leadership).
func (p *Process) MayMutate() error {
	if !p.Leading() {
		return errors.New("not leading")
	}
	return p.leadership.MayMutate()
}

// Run serves the listeners, starts the informers and takes part in the
// election until ctx ends. While leading it runs the controllers. When ctx
// ends it stops the controllers, releases the Lease, and stops the
// listeners, all within the shutdown grace period. Losing the Lease calls
// Exit(1): no work may continue on a lost Lease.
func (p *Process) Run(ctx context.Context) error {
	log := p.Log
	elector, err := p.newElector(ctx)
	if err != nil {
		p.closeListeners()
		return err
	}
	serving := serveAll(p.listeners, log)
	p.Informers.Start(ctx.Done())
	go func() {
		if p.Informers.WaitForSync(ctx) {
			p.state.synced.Store(true)
			log.Info("informer caches synced")
		}
	}()

	electionCtx, stopElection := context.WithCancel(context.Background())
	defer stopElection()
	electionDone := make(chan struct{})
	go func() {
		defer close(electionDone)
		elector.Run(electionCtx)
	}()

	<-ctx.Done()
	grace := p.Config.ShutdownGracePeriod
	log.Info("shutting down", "gracePeriod", grace.String())
	watchdog := time.AfterFunc(grace, func() {
		log.Error("shutdown exceeded the grace period; exiting", "gracePeriod", grace.String())
		p.Exit(1)
	})
	defer watchdog.Stop()
	deadline := time.Now().Add(grace)

	// Controllers stop first (ctx is theirs); only then is the Lease released,
	// so the next leader never overlaps with this one's last reconcile. A
	// controller that does not stop in time keeps the Lease: the process
	// exits holding it, and a successor waits for it to expire.
	if !p.waitControllers(time.Until(deadline) / 2) {
		log.Error("controllers did not stop in time; exiting without releasing the Lease so no successor overlaps them")
		p.Exit(1)
		return errors.New("controllers did not stop within the shutdown grace period")
	}
	stopElection()
	<-electionDone

	sctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	shutdownAll(sctx, p.listeners)
	serving.Wait()
	p.eventsCtx()
	p.stopEvents()
	p.Informers.Shutdown()
	log.Info("shutdown complete")
	return nil
}

func (p *Process) newElector(ctx context.Context) (*leaderelection.LeaderElector, error) {
	le := p.Config.LeaderElection
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     p.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity, EventRecorder: p.Recorder},
	}
	return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            renewalLock{Interface: lock, l: p.leadership},
		Name:            le.Name,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        p.health,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaseCtx context.Context) { p.startLeading(ctx, leaseCtx) },
			OnStoppedLeading: func() { p.stopLeading(ctx) },
			OnNewLeader: func(identity string) {
				p.Log.Info("leader observed", "leader", identity, "self", identity == le.Identity)
			},
		},
	})
}

// startLeading runs the controllers for as long as the Lease is held.
func (p *Process) startLeading(processCtx, leaseCtx context.Context) {
	// Controllers stop when the process shuts down or the Lease is lost.
	ctx, cancel := context.WithCancel(processCtx)
	context.AfterFunc(leaseCtx, cancel)
	var wg sync.WaitGroup
	done := make(chan struct{})
	p.mu.Lock()
	p.ctrlDone = done
	p.mu.Unlock()
	p.state.leading.Store(true)
	p.Metrics.Leading.Set(1)
	p.Log.Info("leading", "identity", p.Config.LeaderElection.Identity, "controllers", len(p.controllers))
	for _, c := range p.controllers {
		wg.Go(func() {
			if err := c.Run(ctx, c.workers); err != nil && ctx.Err() == nil {
				p.Log.Error("controller ended", "controller", c.Name(), "err", err.Error())
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
}

func (p *Process) stopLeading(processCtx context.Context) {
	wasLeading := p.state.leading.Swap(false)
	p.Metrics.Leading.Set(0)
	if !wasLeading {
		return
	}
	if processCtx.Err() != nil {
		p.Log.Info("stopped leading for shutdown; Lease released")
		return
	}
	p.Log.Error("leader election lost; exiting so no work continues on a lost Lease", "identity", p.Config.LeaderElection.Identity)
	p.Exit(1)
}

// waitControllers waits (at most d) for the controllers to return after
// their context ended; false means they are still running.
func (p *Process) waitControllers(d time.Duration) bool {
	p.mu.Lock()
	done := p.ctrlDone
	p.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// Registerer receives a controller's own metrics; nil without a registry.
func (d Deps) Registerer() prometheus.Registerer {
	if d.Metrics == nil {
		return nil
	}
	return d.Metrics.Registry
}
