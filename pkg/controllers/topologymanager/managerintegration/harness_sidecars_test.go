package managerintegration

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/shipstream/bloodraven/pkg/auxiliary"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/logschema"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/sidecar"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
	"github.com/shipstream/bloodraven/pkg/testbed/faultproxy"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
	"github.com/shipstream/bloodraven/pkg/testbed/netcut"
)

// The invariant harness's world: every site is a simulated mysqld with the
// real sidecar (pkg/sidecar, in-process) next to it, and the operator serves
// the real auxiliary endpoints (pkg/auxiliary) from its own informer cache,
// as cmd/bloodraven does. Every link the faults cut is explicit:
//
//   - operator → mysqld: the simulator's partition of the operator's
//     program_name (statements hang, as on a partitioned network);
//   - operator → sidecar: a faultproxy in the site-address map;
//   - sidecar → operator and sidecar → peer sidecar: the sidecar's HTTP
//     client, which hangs a request across a cut until its deadline;
//   - mysqld ↔ mysqld (replication, clone): mysqlsim.PartitionPeers.
//
// The write-load client is never cut off: an isolated primary keeps taking
// its writes until it fences itself, the hardest case for invariants 1 and 4.

// operatorName is the operator's endpoint name in the cut table.
const operatorName = "operator"

// auxEndpoint is the operator's auxiliary listener at one address for the
// whole test, as a Service in front of the operator pod would be. Each
// operator run installs its handler; while no operator runs, connections
// are dropped unanswered, as a dead process's would be.
type auxEndpoint struct {
	addr    string
	current atomic.Pointer[auxiliary.Handler]
}

func startAuxEndpoint(t testing.TB) *auxEndpoint {
	t.Helper()
	a := &auxEndpoint{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := a.current.Load()
		if h == nil {
			panic(http.ErrAbortHandler) // no operator process: the connection just drops
		}
		h.ServeHTTP(w, r)
	})}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	a.addr = ln.Addr().String()
	return a
}

// harnessSite is one site of the harness: its mysqld, its sidecar and the
// proxy the operator reaches the sidecar through.
type harnessSite struct {
	name      string
	podUID    string // the pod's metadata.uid its sidecar reports
	sim       *mysqlsim.Server
	sc        *sidecar.Sidecar
	scAddr    string
	opProxy   *faultproxy.Proxy // operator → sidecar
	frozen    atomic.Bool
	thawedAt  atomic.Int64 // unix nanos of the last thaw
	isolation atomic.Int32 // 0 none, 1 from the operator, 2 from the operator and the peers
	healedAt  atomic.Int64 // unix nanos of the last healAll

	// The sidecar process: its timers, the handler its address serves
	// (nil while none runs), how to stop it, and how many were started.
	lease, interval time.Duration
	handler         atomic.Pointer[http.Handler]
	scMu            sync.Mutex
	scStop          func()
	scRuns          int
	// stops counts the mysqld process stops its sidecar asked for.
	stops atomic.Int32
	proc  mysqldProcess // harness_process_test.go
}

// reachableFor is how long the operator has been able to reach s's mysqld
// (running, not frozen, not isolated); zero when it cannot.
func (f *fabric) reachableFor(s string, now time.Time) time.Duration {
	hs := f.sites[s]
	if hs.frozen.Load() || hs.isolation.Load() != 0 || !hs.sim.Running() {
		return 0
	}
	return now.Sub(time.Unix(0, hs.healedAt.Load()))
}

// fabric is one harness sequence's sites, sidecars, links and operator.
type fabric struct {
	e     *env
	net   *netcut.Network
	aux   *auxEndpoint
	sites map[string]*harnessSite
	order []string
	op    *operatorRun
	// operatorDown is set while no operator process runs.
	operatorDown atomic.Bool
	// sidecarLogs records every sidecar record, checked against
	// docs/logs.md at cleanup.
	sidecarLogs *logschema.Recorder
}

// newFabric starts, per site, a simulated mysqld and the real sidecar, and
// the auxiliary endpoint the sidecars ask. The sidecars use the group's
// spec.sidecar timers (failoverGroup's), so the operator's self-fence
// deadline is the bound these sidecars keep.
func newFabric(t testing.TB, defs []siteDef, lease, interval time.Duration) *fabric {
	t.Helper()
	// newEnv without sites: the namespace, the clients, the operator Secret.
	f := &fabric{e: newEnv(t, nil), net: netcut.New(), aux: startAuxEndpoint(t), sites: map[string]*harnessSite{},
		sidecarLogs: logschema.NewRecorder(logschema.Sidecar)}
	t.Cleanup(func() { f.sidecarLogs.Check(t) })
	f.net.Name(f.aux.addr, operatorName)
	var mu sync.Mutex
	resolve := func(host string, port int) string {
		mu.Lock()
		m := f.e.addrs
		mu.Unlock()
		if m == nil {
			return fmt.Sprintf("%s:%d", host, port)
		}
		return m.ResolveMySQL(host, port)
	}
	lns := map[string]net.Listener{}
	var entries []devsitemap.Entry
	for _, d := range defs {
		// With its administrative interface (admin_address), which the
		// sidecar's fence uses whatever max_connections.
		sim := simtest.Start(t, mysqlsim.Config{Name: d.name, SuperReadOnly: true, SkipReplicaStart: true, ResolveSource: resolve,
			AdminAddr: "127.0.0.1:0", Logger: harnessLogger(f.e.ns, "mysqld "+d.name)})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[d.name] = ln
		p, err := faultproxy.New("operator->"+d.name+"-sidecar", "127.0.0.1:0", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		hs := &harnessSite{name: d.name, podUID: string(uuid.NewUUID()), sim: sim, scAddr: ln.Addr().String(), opProxy: p}
		f.sites[d.name], f.e.sites[d.name] = hs, sim
		f.order = append(f.order, d.name)
		f.net.Name(hs.scAddr, d.name)
		entries = append(entries, devsitemap.Entry{Site: siteaddr.SiteKey{Namespace: f.e.ns, Group: groupName, Site: d.name}, MySQL: sim.Addr(), Sidecar: p.Addr()})
	}
	m, err := devsitemap.New(entries...)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	f.e.addrs = m
	mu.Unlock()
	for _, d := range defs {
		f.startProcess(f.sites[d.name])
		f.startSidecar(f.sites[d.name], lns[d.name], lease, interval)
	}
	// Runs first at cleanup: a failed sequence may stop mid-fault, and
	// nothing (operator, sidecars, group deletion) must hang on it.
	t.Cleanup(f.healAll)
	return f
}

// startSidecar serves hs's sidecar address until the test ends and runs
// its first sidecar process. The address outlives the process, as the pod's
// IP and port do: while no sidecar runs (stopSidecar), connections to it
// drop unanswered.
func (f *fabric) startSidecar(hs *harnessSite, ln net.Listener, lease, interval time.Duration) {
	t := f.e.t
	hs.lease, hs.interval = lease, interval
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := hs.handler.Load()
		if h == nil {
			panic(http.ErrAbortHandler) // no sidecar process: the connection just drops
		}
		(*h).ServeHTTP(w, r)
	})}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	f.runSidecar(hs)
	t.Cleanup(func() {
		f.stopSidecar(hs)
		srv.Close()
		<-served
	})
}

// runSidecar starts a fresh sidecar process for hs (empty state, as a
// restarted container has). It does nothing if one runs.
func (f *fabric) runSidecar(hs *harnessSite) {
	t := f.e.t
	hs.scMu.Lock()
	defer hs.scMu.Unlock()
	if hs.scStop != nil {
		return
	}
	var peers []sidecar.Peer
	for _, name := range f.order {
		if name != hs.name {
			peers = append(peers, sidecar.Peer{Site: name, Addr: f.sites[name].scAddr})
		}
	}
	sc, err := sidecar.New(sidecar.Config{
		Namespace: f.e.ns, Group: groupName, Site: hs.name, PodUID: hs.podUID,
		MySQL:          mysql.Options{Addr: hs.sim.Addr(), User: simtest.AdminUser, Password: simtest.AdminPass},
		MySQLAdminAddr: hs.sim.AdminAddr(), MySQLPIDFile: hs.proc.pidFile,
		OperatorEndpoint: f.aux.addr, Peers: peers, LeaseTimeout: hs.lease, PeerCheckInterval: hs.interval,
		Version: "harness", HTTPClient: f.net.Client(hs.name), Logger: f.sidecarLogs.Logger(harnessHandler(f.e.ns, "sidecar "+hs.name)),
	})
	if err != nil {
		t.Fatal(err)
	}
	hs.sc = sc
	h := sc.Handler()
	hs.handler.Store(&h)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); sc.Run(ctx) }()
	hs.scStop = func() {
		hs.handler.Store(nil)
		cancel()
		// A round blocked on a frozen mysqld ends at its statement
		// deadlines; a dead process would not wait even for those.
		<-ran
		_ = sc.Close()
	}
	hs.scRuns++
}

// stopSidecar ends hs's sidecar process, as a crash of its container
// would: it stops answering and fencing at once. It does nothing if none
// runs.
func (f *fabric) stopSidecar(hs *harnessSite) {
	hs.scMu.Lock()
	defer hs.scMu.Unlock()
	if hs.scStop != nil {
		hs.scStop()
		hs.scStop = nil
	}
}

// harnessLogger discards the sidecars' and simulators' records unless
// HARNESS_REAL_LOGS is set: then they go to stderr, tagged with the
// sequence's namespace, to follow one sequence's fences.
func harnessLogger(ns, who string) *slog.Logger {
	if h := harnessHandler(ns, who); h != nil {
		return slog.New(h)
	}
	return nil
}

// harnessHandler is harnessLogger's handler; nil unless HARNESS_REAL_LOGS.
func harnessHandler(ns, who string) slog.Handler {
	if os.Getenv("HARNESS_REAL_LOGS") == "" {
		return nil
	}
	return slog.NewTextHandler(os.Stderr, nil).WithAttrs([]slog.Attr{slog.String("namespace", ns), slog.String("who", who)})
}

// startOperator starts an operator run and puts its auxiliary handler,
// reading the run's own group informer, behind the auxiliary endpoint.
func (f *fabric) startOperator(tweak ...func(*topologymanager.Options)) {
	op := f.e.startOperator(append([]func(*topologymanager.Options){withFailover}, tweak...)...)
	groups := op.informers.Shipstream[f.e.ns].Shipstream().V1alpha1().MysqlFailoverGroups()
	f.aux.current.Store(auxiliary.New(auxiliary.Options{
		Source:      auxiliary.ListerSource{Lister: groups.Lister(), HasSynced: groups.Informer().HasSynced},
		IsLeader:    func() bool { return true }, // one operator process at a time here
		OnSiteEvent: op.manager.NudgeSite,
	}))
	f.op = op
	f.operatorDown.Store(false)
}

// stopOperator ends the operator run as a dying process: its auxiliary
// endpoint stops answering first, then the controller stops mid-step.
func (f *fabric) stopOperator() {
	// The test's operator run reports a stop before its caches synced as
	// an error; a process killed that early is no different from one
	// killed later for what the harness checks.
	timeout := make(chan struct{})
	timer := time.AfterFunc(waitFor, func() { close(timeout) })
	defer timer.Stop()
	f.op.informers.Shipstream[f.e.ns].WaitForCacheSync(timeout)
	f.op.informers.Kube[f.e.ns].WaitForCacheSync(timeout)
	f.operatorDown.Store(true)
	f.aux.current.Store(nil)
	f.op.kill()
	f.op.stop()
}

// isolate cuts site s off from the operator (its mysqld and sidecar, both
// ways), and with peers also from every other site (replication and the
// sidecars' peer checks). Clients still reach it.
func (f *fabric) isolate(s string, peers bool) {
	hs := f.sites[s]
	hs.sim.Partition(topologymanager.DefaultProgram)
	hs.opProxy.Set(faultproxy.Blackhole)
	f.net.Sever(s, operatorName)
	hs.isolation.Store(1)
	if !peers {
		return
	}
	for _, o := range f.order {
		if o != s {
			mysqlsim.PartitionPeers(hs.sim, f.sites[o].sim)
			f.net.Sever(s, o)
		}
	}
	hs.isolation.Store(2)
}

func (f *fabric) freeze(s string) {
	hs := f.sites[s]
	hs.frozen.Store(true)
	hs.sim.Freeze()
}

// healAll lifts every partition, freeze and injected lag, and restarts
// crashed servers.
func (f *fabric) healAll() {
	f.net.Heal()
	for _, name := range f.order {
		hs := f.sites[name]
		hs.opProxy.Set(faultproxy.Open)
		hs.sim.Heal()
		hs.isolation.Store(0)
		if hs.frozen.Load() {
			hs.thawedAt.Store(time.Now().UnixNano())
			hs.sim.Thaw()
			hs.frozen.Store(false)
		}
		_ = hs.sim.InjectApplyLag(0) // no channel (a primary): nothing to lift
		hs.sim.SetRollbackTime(0)
		hs.sim.SetMaxConnections(0) // MySQL's default
		f.restartMySQLD(hs)         // a crashed or stopped mysqld starts again, read-only
		f.runSidecar(hs)            // a stopped sidecar is restarted (nothing if it runs)
		hs.healedAt.Store(time.Now().UnixNano())
	}
}

// serving reports whether s can take writes now: running, not frozen and
// read_only=OFF. A thawed server runs the statements it held in any order,
// the write-load client's and the sidecar's queued fence alike, and the
// operator fences it at its next poll if it is not the active site: it is
// judged again thawGrace after the thaw.
func (f *fabric) serving(s string, now time.Time) bool {
	hs := f.sites[s]
	if hs.frozen.Load() || now.Sub(time.Unix(0, hs.thawedAt.Load())) < thawGrace {
		return false
	}
	snap := hs.sim.Snapshot()
	return snap.Running && !snap.ReadOnly
}

// thawGrace: a poll interval (200ms), a fence statement, and scheduling.
const thawGrace = time.Second
