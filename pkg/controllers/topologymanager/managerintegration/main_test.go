// Package managerintegration runs the topology controller with its topology
// manager against a real kube-apiserver, with every site a wire-level
// simulated MySQL 9.7 server on loopback, addressed through the development
// site-address map (so a follower given SOURCE_HOST=<group>-<site>-internal.
// <namespace>.svc replicates from the right simulated server).
package managerintegration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/groupobjects"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/operator"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
	"github.com/shipstream/bloodraven/pkg/testbed/kubeenv"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{CRDDir: "deploy/crds"}, &cp)
}

const (
	groupName  = "orders"
	secretName = "orders-operator-creds"
	waitFor    = 60 * time.Second
)

// env is one test's namespace, simulated sites and clients.
type env struct {
	t       testing.TB
	kubeenv *kubeenv.Env
	ns      string
	kube    kubernetes.Interface
	ship    versioned.Interface
	dyn     dynamic.Interface
	sites   map[string]*mysqlsim.Server
	// sidecars stand in for each site's sidecar (the real ones run in
	// harness_sidecars_test.go): they record the transition announcements
	// the operator POSTs.
	sidecars map[string]*sidecarStandIn
	addrs    *devsitemap.Map
	// created are the groups to delete at cleanup.
	created []string
}

// siteDef is a simulated site: its name, role and server UUID number.
type siteDef struct {
	name string
	role v1alpha1.SiteRole
}

var threeSites = []siteDef{{"iad", v1alpha1.SiteRolePrimaryCandidate}, {"pdx", v1alpha1.SiteRolePrimaryCandidate}, {"reader", v1alpha1.SiteRoleReadOnly}}

// newEnv creates a namespace, the operator Secret and one simulated mysqld
// per site, started super-read-only as the rendered my.cnf starts MySQL.
func newEnv(t testing.TB, sites []siteDef) *env {
	t.Helper()
	ke := kubeenv.New(t, cp)
	e := &env{t: t, kubeenv: ke, ns: ke.Namespace, kube: ke.Kube, ship: ke.Ship, dyn: ke.Dyn, sites: map[string]*mysqlsim.Server{},
		sidecars: map[string]*sidecarStandIn{}}
	var mu sync.Mutex
	resolve := func(host string, port int) string {
		mu.Lock()
		m := e.addrs
		mu.Unlock()
		if m == nil {
			return fmt.Sprintf("%s:%d", host, port)
		}
		return m.ResolveMySQL(host, port)
	}
	var entries []devsitemap.Entry
	for _, s := range sites {
		srv := simtest.Start(t, mysqlsim.Config{Name: s.name, SuperReadOnly: true, SkipReplicaStart: true, ResolveSource: resolve})
		e.sites[s.name] = srv
		sc := newSidecarStandIn(t, s.name)
		e.sidecars[s.name] = sc
		entries = append(entries, devsitemap.Entry{Site: siteaddr.SiteKey{Namespace: e.ns, Group: groupName, Site: s.name}, MySQL: srv.Addr(), Sidecar: sc.addr})
	}
	m, err := devsitemap.New(entries...)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	e.addrs = m
	mu.Unlock()
	_, err = e.kube.CoreV1().Secrets(e.ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName},
		Data: map[string][]byte{
			"username": []byte(simtest.AdminUser), "password": []byte(simtest.AdminPass), "MYSQL_ROOT_PASSWORD": []byte("unused"),
			"MYSQL_REPLICATION_USER": []byte(simtest.ReplUser), "MYSQL_REPLICATION_PASSWORD": []byte(simtest.ReplPass),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// operatorRun is one running controller, standing for one operator process.
type operatorRun struct {
	// stop ends the operator and waits for it; kill only cancels it (safe
	// from inside a reconcile, as a process dying mid-step).
	stop, kill func()
	metrics    *prometheus.Registry
	// informers are the run's informer factories (the invariant harness
	// serves the auxiliary endpoints from the same cache).
	informers *operator.Informers
	// manager is the run's topology controller (sidecars' site events
	// nudge it).
	manager *topologymanager.Controller
}

// startOperator runs one operator instance, the group objects controller
// and the topology manager on informers limited to the test namespace, until
// stop (or test cleanup).
func (e *env) startOperator(tweak ...func(*topologymanager.Options)) *operatorRun {
	e.t.Helper()
	return startOperatorOn([]*env{e}, 2, 2, tweak...)
}

// startOperatorOn runs one operator instance over the namespaces of envs
// (the first env's test owns it), with the given workers on the objects
// queue and on the topology queue.
func startOperatorOn(envs []*env, objectWorkers, topologyWorkers int, tweak ...func(*topologymanager.Options)) *operatorRun {
	e := envs[0]
	e.t.Helper()
	var others []*kubeenv.Env
	var entries []devsitemap.Entry
	for _, o := range envs {
		if o != e {
			others = append(others, o.kubeenv)
		}
		entries = append(entries, o.addrs.Entries()...)
	}
	addrs, err := devsitemap.New(entries...)
	if err != nil {
		e.t.Fatal(err)
	}
	op := e.kubeenv.NewInstance(others...)
	reg := prometheus.NewRegistry()
	mo := topologymanager.Options{
		Resolver: addrs, StatementTimeout: 2 * time.Second, CloneRetryDelay: 2 * time.Second,
		StatusRefresh: 5 * time.Second, Metrics: topologymanager.NewMetrics(reg),
	}
	for _, f := range tweak {
		f(&mo)
	}
	objects, err := groupobjects.New(op.Deps, groupobjects.Options{
		SidecarImage: "ghcr.io/shipstream/bloodraven-sidecar:1.7.0-test", DNSCRDRecheck: time.Minute, Now: mo.Now, NewID: mo.NewID,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	manager, err := topologymanager.New(op.Deps, mo)
	if err != nil {
		e.t.Fatal(err)
	}
	op.Start(objectWorkers, objects)
	op.Start(topologyWorkers, manager)
	// At cleanup the groups are deleted while this operator still runs, so
	// its finalizer is released; then it stops.
	e.t.Cleanup(func() {
		for _, o := range envs {
			o.kubeenv.CheckMessages()
			o.deleteGroups()
		}
		op.Stop()
	})
	return &operatorRun{stop: op.Stop, kill: op.Kill, metrics: reg, informers: op.Deps.Informers, manager: manager}
}

// group is a minimal valid group over the env's sites, polled every 200ms.
func (e *env) group(sites []siteDef) *v1alpha1.MysqlFailoverGroup {
	g := &v1alpha1.MysqlFailoverGroup{
		ObjectMeta: metav1.ObjectMeta{Name: groupName, Namespace: e.ns},
		Spec: v1alpha1.MysqlFailoverGroupSpec{
			Credentials:       v1alpha1.CredentialsSpec{OperatorSecretName: secretName},
			DNS:               v1alpha1.DNSSpec{Hostname: "orders.db.example.com"},
			PollInterval:      &metav1.Duration{Duration: 200 * time.Millisecond},
			FailureThreshold:  ptr.To(int32(3)),
			RecoveryThreshold: ptr.To(int32(2)),
			CloneTimeout:      &metav1.Duration{Duration: time.Minute},
		},
	}
	for i, s := range sites {
		spec := v1alpha1.SiteSpec{Name: s.name, Role: s.role, ServerID: int64(101 + i), Zone: "zone-" + s.name,
			Storage: v1alpha1.StorageSpec{StorageClassName: "standard", Size: "1Gi"}}
		if s.role != v1alpha1.SiteRoleReadOnly {
			spec.LoadBalancerIP = fmt.Sprintf("10.0.%d.1", i+1)
			spec.TaintNodeSelector = map[string]string{"bloodraven.shipstream.io/site": s.name}
		}
		g.Spec.Sites = append(g.Spec.Sites, spec)
	}
	return g
}

func (e *env) create(g *v1alpha1.MysqlFailoverGroup) {
	e.t.Helper()
	if _, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Create(context.Background(), g, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create group: %v", err)
	}
	e.created = append(e.created, g.Name)
}

// deleteGroups deletes the groups the test created and waits until they
// are gone (the running operator releases its finalizer).
func (e *env) deleteGroups() {
	api := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns)
	for _, name := range e.created {
		_ = api.Delete(context.Background(), name, metav1.DeleteOptions{})
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := api.Get(context.Background(), name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	e.created = nil
}

func (e *env) get() *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	g, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Get(context.Background(), groupName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return g
}

func eventually(t testing.TB, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: still not true after %s: %v", what, timeout, err)
}

func condition(g *v1alpha1.MysqlFailoverGroup, typ string) *metav1.Condition {
	for i := range g.Status.Conditions {
		if g.Status.Conditions[i].Type == typ {
			return &g.Status.Conditions[i]
		}
	}
	return nil
}

func site(g *v1alpha1.MysqlFailoverGroup, name string) *v1alpha1.SiteStatus {
	for i := range g.Status.Sites {
		if g.Status.Sites[i].Name == name {
			return &g.Status.Sites[i]
		}
	}
	return nil
}

func (e *env) waitCondition(typ string, status metav1.ConditionStatus, reason string) *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	var g *v1alpha1.MysqlFailoverGroup
	eventually(e.t, waitFor, fmt.Sprintf("%s=%s/%s", typ, status, reason), func() error {
		g = e.get()
		c := condition(g, typ)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("%s is %+v", typ, c)
		}
		return nil
	})
	return g
}

// eventsOf lists the group's Events with reason.
func (e *env) eventsOf(reason string) []corev1.Event {
	list, err := e.kube.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		if ev.Reason == reason && ev.InvolvedObject.Kind == "MysqlFailoverGroup" {
			out = append(out, ev)
		}
	}
	return out
}

func (e *env) waitEvent(reason, typ string) corev1.Event {
	e.t.Helper()
	var got corev1.Event
	eventually(e.t, waitFor, "Event "+reason, func() error {
		for _, ev := range e.eventsOf(reason) {
			if ev.Type == typ {
				got = ev
				return nil
			}
		}
		return fmt.Errorf("no %s Event %s yet", typ, reason)
	})
	return got
}

// exec runs SQL on a site as the admin account.
func (e *env) exec(site string, stmts ...string) {
	e.t.Helper()
	db := adminDB(e.t, e.sites[site])
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			e.t.Fatalf("%s on %s: %v", s, site, err)
		}
	}
}

func (e *env) fqdn(site string) string {
	return siteaddr.SiteKey{Namespace: e.ns, Group: groupName, Site: site}.InternalServiceFQDN()
}

func contains(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
