// Package databaseintegration tests the MysqlDatabase controller against a
// real kube-apiserver and a simulated mysqld per site. Every check judges
// by what the servers hold (SHOW DATABASES, information_schema, mysql.user,
// SHOW GRANTS, who can log in, the binary log) and by what the API server
// stores, never by the controller's own definitions.
package databaseintegration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/database"
	"github.com/shipstream/bloodraven/pkg/mysql"
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
	opSecret   = "orders-operator"
	appSecret  = "orders-app"
	ownerUser  = "orders_owner"
	ownerPass1 = "owner-pw-1"
	dropWait   = 2 * time.Second
	overlap    = 1500 * time.Millisecond
	// resync is long: a test that changes a server behind the
	// controller's back wakes it with touch, so what a check sees is the
	// result of the reconcile it meant.
	resync = 30 * time.Second
)

// resolver maps each site of the test's group to its simulator.
type resolver map[string]*mysqlsim.Server

func (r resolver) MySQLAddr(k siteaddr.SiteKey) (string, error) {
	if s := r[k.Site]; s != nil && k.Group == groupName {
		return s.Addr(), nil
	}
	return "", fmt.Errorf("no site %s", k)
}

func (r resolver) SidecarAddr(k siteaddr.SiteKey) (string, error) {
	return "", errors.New("no sidecars in these tests")
}

// env is one test's namespace, sites and running controller.
type env struct {
	t     *testing.T
	ke    *kubeenv.Env
	ns    string
	sites resolver
}

// newEnv starts the sites (iad, and pdx replicating from it when two) and
// the controller. The operator Secret holds the simulator's admin account;
// the app Secret its application account.
func newEnv(t *testing.T, siteCount int, before ...func(*kubeenv.Instance)) *env {
	t.Helper()
	ke := kubeenv.New(t, cp)
	e := &env{t: t, ke: ke, ns: ke.Namespace, sites: resolver{}}
	e.sites["iad"] = simtest.Start(t, mysqlsim.Config{Name: "iad"})
	if siteCount > 1 {
		pdx := simtest.Start(t, mysqlsim.Config{Name: "pdx", SuperReadOnly: true})
		e.sites["pdx"] = pdx
		if err := e.admin("pdx").Repoint(context.Background(), e.sourceOf("iad")); err != nil {
			t.Fatal(err)
		}
	}
	e.secret(opSecret, map[string]string{"username": simtest.AdminUser, "password": simtest.AdminPass})
	e.secret(appSecret, map[string]string{"username": simtest.AppUser, "password": simtest.AppPass})
	inst := ke.NewInstance()
	for _, f := range before {
		f(inst)
	}
	c, err := database.New(inst.Deps, database.Options{Resolver: e.sites, DropWait: dropWait, RotationOverlap: overlap, Resync: resync})
	if err != nil {
		t.Fatal(err)
	}
	inst.Start(2, c)
	t.Cleanup(ke.CheckMessages)
	return e
}

func (e *env) sourceOf(site string) mysql.Source {
	addr := e.sites[site].Addr()
	i := strings.LastIndexByte(addr, ':')
	var port int
	fmt.Sscanf(addr[i+1:], "%d", &port)
	return mysql.Source{Host: addr[:i], Port: port, User: simtest.ReplUser, Password: simtest.ReplPass, ConnectRetry: time.Second}
}

func (e *env) secret(name string, data map[string]string) {
	e.t.Helper()
	ctx := context.Background()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, StringData: data}
	if _, err := e.ke.Kube.CoreV1().Secrets(e.ns).Create(ctx, sec, metav1.CreateOptions{}); err == nil {
		return
	}
	cur, err := e.ke.Kube.CoreV1().Secrets(e.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	cur.StringData = data
	if _, err := e.ke.Kube.CoreV1().Secrets(e.ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// group creates the group and publishes active as its writable active
// site (the topology manager's part, which does not run here).
func (e *env) group(active string) *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	ctx := context.Background()
	g := &v1alpha1.MysqlFailoverGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: groupName},
		Spec: v1alpha1.MysqlFailoverGroupSpec{
			Sites:       []v1alpha1.SiteSpec{site("iad", 101, "10.0.1.1"), site("pdx", 102, "10.0.2.1")},
			Credentials: v1alpha1.CredentialsSpec{OperatorSecretName: opSecret, AppSecretName: appSecret},
			DNS:         v1alpha1.DNSSpec{Hostname: "orders.db.example.com"},
		},
	}
	g, err := e.ke.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Create(ctx, g, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if active == "" {
		return g
	}
	return e.setActive(active, false)
}

// setActive publishes site as the active site (Writable) and the others
// ReadOnly, with or without a transition in flight.
func (e *env) setActive(active string, transition bool) *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	ctx := context.Background()
	g, err := e.ke.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Get(ctx, groupName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	g.Status.ActiveSite = active
	g.Status.Sites = nil
	for _, s := range []string{"iad", "pdx"} {
		st := v1alpha1.SiteReadOnly
		if s == active {
			st = v1alpha1.SiteWritable
		}
		g.Status.Sites = append(g.Status.Sites, v1alpha1.SiteStatus{Name: s, State: st})
	}
	g.Status.Transition = nil
	if transition {
		g.Status.Transition = &v1alpha1.Transition{ID: "t1", Kind: v1alpha1.TransitionAutomatic, SourceSite: "iad", TargetSite: "pdx",
			TopologyGeneration: 1, Step: v1alpha1.StepRecorded, StartTime: metav1.Now()}
	}
	meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonHealthy, Message: "test"})
	g, err = e.ke.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).UpdateStatus(ctx, g, metav1.UpdateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return g
}

// touch changes a label of the group, which wakes its databases.
func (e *env) touch() {
	e.t.Helper()
	ctx := context.Background()
	g, err := e.ke.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Get(ctx, groupName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if g.Labels == nil {
		g.Labels = map[string]string{}
	}
	g.Labels["touch"] = fmt.Sprint(time.Now().UnixNano())
	if _, err := e.ke.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Update(ctx, g, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func site(name string, id int64, ip string) v1alpha1.SiteSpec {
	return v1alpha1.SiteSpec{
		Name: name, Role: "PrimaryCandidate", ServerID: id, Zone: "zone-" + name, LoadBalancerIP: ip,
		TaintNodeSelector: map[string]string{"bloodraven.shipstream.io/site": name},
		Storage:           v1alpha1.StorageSpec{StorageClassName: "fast", Size: "10Gi"},
	}
}

// database creates a MysqlDatabase; mutate adjusts it first.
func (e *env) database(name, dbName string, mutate ...func(*v1alpha1.MysqlDatabase)) *v1alpha1.MysqlDatabase {
	e.t.Helper()
	db := &v1alpha1.MysqlDatabase{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec:       v1alpha1.MysqlDatabaseSpec{FailoverGroupRef: v1alpha1.FailoverGroupReference{Name: groupName}, DatabaseName: dbName},
	}
	for _, m := range mutate {
		m(db)
	}
	db, err := e.ke.Ship.ShipstreamV1alpha1().MysqlDatabases(e.ns).Create(context.Background(), db, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return db
}

func owned(secret string) func(*v1alpha1.MysqlDatabase) {
	return func(db *v1alpha1.MysqlDatabase) {
		db.Spec.Owner = &v1alpha1.DatabaseOwner{Username: ownerUser, PasswordSecretKeyRef: v1alpha1.PasswordSecretKeySelector{Name: secret}}
	}
}

func dropPolicy(db *v1alpha1.MysqlDatabase) { db.Spec.DeletionPolicy = v1alpha1.DatabaseDrop }

// wait polls until the database has phase and Ready reason for its
// current generation.
func (e *env) wait(name string, phase v1alpha1.DatabasePhase, reason string) *v1alpha1.MysqlDatabase {
	e.t.Helper()
	return e.waitMsg(name, phase, reason, "")
}

// waitMsg is wait for a message containing msg.
func (e *env) waitMsg(name string, phase v1alpha1.DatabasePhase, reason, msg string) *v1alpha1.MysqlDatabase {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last *v1alpha1.MysqlDatabase
	for time.Now().Before(deadline) {
		db, err := e.ke.Ship.ShipstreamV1alpha1().MysqlDatabases(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		last = db
		c := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionReady)
		if c != nil && c.Reason == reason && db.Status.Phase == phase && strings.Contains(c.Message, msg) && db.Status.ObservedGeneration == db.Generation && c.ObservedGeneration == db.Generation {
			if (c.Status == metav1.ConditionTrue) != (phase == database.PhaseReady) {
				e.t.Fatalf("Ready=%s with phase %s", c.Status, phase)
			}
			return db
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("MysqlDatabase %s never reached %s/%s; last status %+v", name, phase, reason, last.Status)
	return nil
}

// gone waits until the object no longer exists.
func (e *env) gone(name string) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		_, err := e.ke.Ship.ShipstreamV1alpha1().MysqlDatabases(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("MysqlDatabase %s was never released", name)
}

func (e *env) delete(name string) {
	e.t.Helper()
	if err := e.ke.Ship.ShipstreamV1alpha1().MysqlDatabases(e.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) events(name string) map[string]corev1.Event {
	e.t.Helper()
	return kubeenv.EventsOn(e.t, e.ke.Kube, e.ns, name)
}

// event waits for an Event of reason and type on name.
func (e *env) event(name, reason, typ string) corev1.Event {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ev, ok := e.events(name)[reason]; ok {
			if ev.Type != typ {
				e.t.Fatalf("Event %s is %s, want %s", reason, ev.Type, typ)
			}
			return ev
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("no Event %s on %s; have %v", reason, name, keys(e.events(name)))
	return corev1.Event{}
}

func keys(m map[string]corev1.Event) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The simulated world, read as the admin account.

func (e *env) admin(site string) *mysql.Client {
	e.t.Helper()
	return e.login(site, simtest.AdminUser, simtest.AdminPass)
}

func (e *env) login(site, user, pass string) *mysql.Client {
	e.t.Helper()
	c, err := mysql.Open(mysql.Options{Addr: e.sites[site].Addr(), User: user, Password: pass, StatementTimeout: 5 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// canLogin reports whether user authenticates on site with pass.
func (e *env) canLogin(site, user, pass string) bool {
	e.t.Helper()
	c, err := mysql.Open(mysql.Options{Addr: e.sites[site].Addr(), User: user, Password: pass, StatementTimeout: 5 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	err = c.Ping(context.Background())
	if err != nil && !mysql.IsAccessDenied(err) {
		e.t.Fatalf("login of %s on %s: %v", user, site, err)
	}
	return err == nil
}

// schemas is SHOW DATABASES on site.
func (e *env) schemas(site string) map[string]bool {
	e.t.Helper()
	rows, err := e.admin(site).DB().Query("SHOW DATABASES")
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			e.t.Fatal(err)
		}
		out[n] = true
	}
	return out
}

// users are mysql.user's User column on site.
func (e *env) users(site string) map[string]bool {
	e.t.Helper()
	rows, err := e.admin(site).DB().Query("SELECT User FROM mysql.user")
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			e.t.Fatal(err)
		}
		out[n] = true
	}
	return out
}

func (e *env) grants(site, user string) string {
	e.t.Helper()
	lines, err := e.admin(site).ShowGrants(context.Background(), user)
	if err != nil {
		e.t.Fatalf("SHOW GRANTS FOR %s: %v", user, err)
	}
	return strings.Join(lines, "\n")
}

// binlogQueries are the Query events' statements in site's binary logs.
func (e *env) binlogQueries(site string) []string {
	e.t.Helper()
	c := e.admin(site)
	rows, err := c.DB().Query("SHOW BINARY LOGS")
	if err != nil {
		e.t.Fatal(err)
	}
	var files []string
	for rows.Next() {
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			e.t.Fatal(err)
		}
		files = append(files, fmt.Sprintf("%s", vals[0]))
	}
	rows.Close()
	var out []string
	for _, f := range files {
		rows, err := c.DB().Query("SHOW BINLOG EVENTS IN '" + f + "'")
		if err != nil {
			e.t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				e.t.Fatal(err)
			}
			if fmt.Sprintf("%s", vals[2]) == "Query" {
				out = append(out, fmt.Sprintf("%s", vals[5]))
			}
		}
		rows.Close()
	}
	return out
}
