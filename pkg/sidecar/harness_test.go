package sidecar_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/auxiliary"
	"github.com/shipstream/bloodraven/pkg/logschema"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/sidecar"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
	"github.com/shipstream/bloodraven/pkg/testbed/netcut"
)

const (
	testNS    = "shop"
	testGroup = "orders"
	lease     = 2 * time.Second
	interval  = 500 * time.Millisecond
)

// network cuts HTTP traffic between named endpoints (package netcut) and
// lets a test isolate one endpoint from several others at once.
type network struct{ *netcut.Network }

func newNetwork() *network { return &network{netcut.New()} }

func (n *network) name(addr, name string) { n.Name(addr, name) }

// isolate cuts name from every other endpoint listed, both ways.
func (n *network) isolate(name string, from ...string) { n.Sever(name, from...) }

func (n *network) heal() { n.Heal() }

func (n *network) client(from string) *http.Client { return n.Client(from) }

// groups is the operator's view of the failover groups: what its informer
// cache would hold. Tests change status as the topology manager would.
type groups struct {
	mu sync.Mutex
	g  *v1alpha1.MysqlFailoverGroup
}

func (s *groups) Groups() ([]*v1alpha1.MysqlFailoverGroup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []*v1alpha1.MysqlFailoverGroup{s.g.DeepCopy()}, nil
}

func (s *groups) Group(ns, name string) (*v1alpha1.MysqlFailoverGroup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ns != s.g.Namespace || name != s.g.Name {
		return nil, auxiliary.ErrGroupNotFound
	}
	return s.g.DeepCopy(), nil
}

func (s *groups) Synced() bool { return true }

func (s *groups) update(f func(st *v1alpha1.MysqlFailoverGroupStatus)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.g.Status)
}

// operator is the real auxiliary handler on a loopback port.
type operator struct {
	addr   string
	groups *groups
	leader *atomic.Bool
	// siteEvents receives the site of every POST /site-event.
	siteEvents chan string
}

func startOperator(t testing.TB, net0 *network, active string, gen int64) *operator {
	t.Helper()
	g := &groups{g: &v1alpha1.MysqlFailoverGroup{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: testGroup}}}
	g.g.Status.ActiveSite, g.g.Status.TopologyGeneration = active, gen
	g.g.Spec.Sites = []v1alpha1.SiteSpec{{Name: "iad"}, {Name: "pdx"}, {Name: "sfo"}}
	leader := &atomic.Bool{}
	leader.Store(true)
	events := make(chan string, 16)
	h := auxiliary.New(auxiliary.Options{Source: g, IsLeader: leader.Load, OnSiteEvent: func(_, _, site string) {
		select {
		case events <- site:
		default:
		}
	}})
	addr := serve(t, h)
	net0.name(addr, "operator")
	return &operator{addr: addr, groups: g, leader: leader, siteEvents: events}
}

// serve runs h on a free loopback port until the test ends.
func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// site is one simulated mysqld with its sidecar.
type site struct {
	name string
	sim  *mysqlsim.Server
	sc   *sidecar.Sidecar
	addr string // sidecar
}

type siteSpec struct {
	name     string
	writable bool
}

type clusterOpts struct {
	fenceTimeout time.Duration
	wedgedAfter  time.Duration
	peers        []sidecar.Peer // extra peers beyond the started sites
}

// startSites starts one simulator and one sidecar per site; every sidecar
// knows all others as peers. Everything stops at test cleanup.
func startSites(t testing.TB, net0 *network, op *operator, specs []siteSpec, o clusterOpts) map[string]*site {
	t.Helper()
	sites := map[string]*site{}
	lns := map[string]net.Listener{}
	logs := logschema.NewRecorder(logschema.Sidecar) // every record checked against docs/logs.md
	t.Cleanup(func() { logs.Check(t) })
	for _, sp := range specs {
		sim := simtest.Start(t, mysqlsim.Config{Name: sp.name, ReadOnly: !sp.writable, SuperReadOnly: !sp.writable})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[sp.name] = ln
		sites[sp.name] = &site{name: sp.name, sim: sim, addr: ln.Addr().String()}
		net0.name(ln.Addr().String(), sp.name)
	}
	for _, sp := range specs {
		s := sites[sp.name]
		var peers []sidecar.Peer
		for _, other := range specs {
			if other.name != sp.name {
				peers = append(peers, sidecar.Peer{Site: other.name, Addr: sites[other.name].addr})
			}
		}
		peers = append(peers, o.peers...)
		sc, err := sidecar.New(sidecar.Config{
			Namespace: testNS, Group: testGroup, Site: sp.name,
			MySQL:            mysql.Options{Addr: s.sim.Addr(), User: simtest.AdminUser, Password: simtest.AdminPass},
			OperatorEndpoint: op.addr, Peers: peers, LeaseTimeout: lease, PeerCheckInterval: interval,
			FenceTimeout: o.fenceTimeout, WedgedAfter: o.wedgedAfter, Version: "test",
			HTTPClient: net0.client(sp.name), Logger: logs.Logger(nil),
		})
		if err != nil {
			t.Fatal(err)
		}
		s.sc = sc
		srv := &http.Server{Handler: sc.Handler(), ReadHeaderTimeout: 5 * time.Second}
		served := make(chan struct{})
		go func() { defer close(served); _ = srv.Serve(lns[sp.name]) }()
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); sc.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			// Thaw first: a round blocked on a frozen mysqld must be able to end.
			s.sim.Thaw()
			<-ran
			srv.Close()
			<-served
			sc.Close()
		})
	}
	return sites
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *site) decision() string {
	st := s.sc.Status()
	if st.Fencing == nil {
		return ""
	}
	return st.Fencing.LastDecision
}

// appWriteRefused tries a write as the application user: MySQL's own verdict
// on whether the site is fenced.
func (s *site) appWriteRefused(t *testing.T) bool {
	t.Helper()
	c, err := mysql.Open(mysql.Options{Addr: s.sim.Addr(), User: simtest.AppUser, Password: simtest.AppPass, Program: "app-probe"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = c.DB().ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS probe_"+s.name)
	if err != nil && !mysql.IsReadOnly(err) {
		t.Fatalf("app write on %s failed for another reason: %v", s.name, err)
	}
	return mysql.IsReadOnly(err)
}
