package managerintegration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/render"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
	"github.com/shipstream/bloodraven/pkg/testbed/kubeenv"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// The accounts tests' world: every site's simulated mysqld boots as the
// image boots a pod's container, from the init script the product renders
// (render.InitDBSecret from the credential Secrets) and MYSQL_ROOT_PASSWORD,
// with no test accounts of its own. The tests judge by what the servers
// hold (SHOW GRANTS as root, who can log in) and by the simulator's count
// of failed authentications per user.

const (
	acctRootPass = "root-secret"
	acctOpUser   = "bloodraven-op"
	acctReplUser = "bloodraven-repl"
)

// credSecrets are the credential Secrets' names in the accounts tests.
var credSecrets = map[accounts.Role]string{
	accounts.RoleOperator: secretName, accounts.RoleApp: "orders-app", accounts.RoleReadOnly: "orders-ro",
	accounts.RoleMonitor: "orders-monitor", accounts.RoleBackup: "orders-backup",
}

// credUsers are the accounts' usernames by role.
var credUsers = map[accounts.Role]string{
	accounts.RoleOperator: acctOpUser, accounts.RoleReplication: acctReplUser, accounts.RoleApp: "orders_app",
	accounts.RoleReadOnly: "orders_ro", accounts.RoleMonitor: "exporter", accounts.RoleBackup: "backup",
}

// acctEnv is the accounts tests' env: the shared env plus each role's
// current Secret password.
type acctEnv struct {
	*env
	mu        sync.Mutex
	passwords map[accounts.Role]string
}

// newAccountsEnv creates the credential Secrets of roles (the operator's
// always, with a separate replication account), renders the init script
// from them and boots every site from it.
func newAccountsEnv(t *testing.T, sites []siteDef, roles ...accounts.Role) *acctEnv {
	t.Helper()
	ke := kubeenv.New(t, cp)
	e := &acctEnv{env: &env{t: t, kubeenv: ke, ns: ke.Namespace, kube: ke.Kube, ship: ke.Ship, dyn: ke.Dyn,
		sites: map[string]*mysqlsim.Server{}, sidecars: map[string]*sidecarStandIn{}}, passwords: map[accounts.Role]string{}}
	e.passwords[accounts.RoleOperator] = "op-pw-1"
	e.passwords[accounts.RoleReplication] = "repl-pw-1"
	for _, r := range roles {
		e.passwords[r] = string(r) + "-pw-1"
	}
	for _, r := range append([]accounts.Role{accounts.RoleOperator}, roles...) {
		e.writeSecret(r)
	}
	g := e.groupWith(sites)
	script := e.renderedScript(g)
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
	for i, s := range sites {
		// The pod's files: the image's /etc/my.cnf including the rendered
		// ConfigMap's directory, and the init script Secret.
		r, err := render.RenderSite(g, i, render.Config{SidecarImage: "ghcr.io/shipstream/bloodraven-sidecar:1.7.0-test", OperatorEndpoint: "bloodraven.bloodraven.svc:8082"})
		if err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		files := map[string]string{
			"etc/my.cnf": "[mysqld]\ndatadir=/var/lib/mysql\n!includedir " + render.ConfigDir + "/\n",
			strings.TrimPrefix(render.ConfigDir, "/") + "/" + render.MyCnfKey:  r.ConfigMap.Data[render.MyCnfKey],
			strings.TrimPrefix(render.InitDBDir, "/") + "/" + render.InitDBKey: script,
		}
		for p, text := range files {
			full := filepath.Join(root, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		srv := simtest.Start(t, mysqlsim.Config{Name: s.name, ResolveSource: resolve, Users: []mysqlsim.User{},
			DefaultsFile: "/etc/my.cnf", RootDir: root, DataDir: filepath.Join(root, "var/lib/mysql"), AdminAddr: "127.0.0.1:0",
			InitDBDir: render.InitDBDir, Env: map[string]string{render.RootPasswordKey: acctRootPass}})
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
	return e
}

// renderedScript is the init script the product renders for g from the
// Secrets in the API server.
func (e *acctEnv) renderedScript(g *v1alpha1.MysqlFailoverGroup) string {
	e.t.Helper()
	get := func(name string) (map[string][]byte, error) {
		s, err := e.kube.CoreV1().Secrets(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return s.Data, nil
	}
	accts, err := render.AccountsFromSecrets(g, get)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(render.InitDBSecret(g, accts).Data[render.InitDBKey])
}

// groupWith is the env's group naming every role that has a password.
func (e *acctEnv) groupWith(sites []siteDef) *v1alpha1.MysqlFailoverGroup {
	g := e.group(sites)
	c := &g.Spec.Credentials
	e.mu.Lock()
	defer e.mu.Unlock()
	for r := range e.passwords {
		switch r {
		case accounts.RoleApp:
			c.AppSecretName = credSecrets[r]
		case accounts.RoleReadOnly:
			c.ReadOnlySecretName = credSecrets[r]
		case accounts.RoleMonitor:
			c.MonitorSecretName = credSecrets[r]
		case accounts.RoleBackup:
			c.BackupSecretName = credSecrets[r]
		}
	}
	return g
}

// writeSecret creates or updates role's Secret with its current password.
func (e *acctEnv) writeSecret(r accounts.Role) {
	e.t.Helper()
	e.mu.Lock()
	data := map[string][]byte{"username": []byte(credUsers[r]), "password": []byte(e.passwords[r])}
	if r == accounts.RoleOperator || r == accounts.RoleReplication {
		r = accounts.RoleOperator
		data = map[string][]byte{"username": []byte(acctOpUser), "password": []byte(e.passwords[accounts.RoleOperator]),
			"MYSQL_ROOT_PASSWORD": []byte(acctRootPass), "MYSQL_REPLICATION_USER": []byte(acctReplUser),
			"MYSQL_REPLICATION_PASSWORD": []byte(e.passwords[accounts.RoleReplication])}
	}
	e.mu.Unlock()
	api := e.kube.CoreV1().Secrets(e.ns)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: credSecrets[r]}, Data: data}
	if live, err := api.Get(context.Background(), sec.Name, metav1.GetOptions{}); err == nil {
		live.Data = data
		if _, err := api.Update(context.Background(), live, metav1.UpdateOptions{}); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	if _, err := api.Create(context.Background(), sec, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// setPassword changes role's Secret to pw.
func (e *acctEnv) setPassword(r accounts.Role, pw string) {
	e.mu.Lock()
	e.passwords[r] = pw
	e.mu.Unlock()
	e.writeSecret(r)
}

// rootDB connects to a site as root (not a managed consumer).
func (e *acctEnv) rootDB(site string) *sql.DB {
	return e.dbAs(site, "root", acctRootPass)
}

func (e *acctEnv) dbAs(site, user, pass string) *sql.DB {
	e.t.Helper()
	db, err := sql.Open("mysql", user+":"+pass+"@tcp("+e.sites[site].Addr()+")/?timeout=3s")
	if err != nil {
		e.t.Fatal(err)
	}
	db.SetMaxIdleConns(0)
	e.t.Cleanup(func() { _ = db.Close() })
	return db
}

// showGrants is SHOW GRANTS FOR user on site, or an error (1141: no such
// account).
func (e *acctEnv) showGrants(site, user string) ([]string, error) {
	rows, err := e.rootDB(site).Query("SHOW GRANTS FOR " + accounts.Name(user))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// loginWorks reports whether user authenticates on site with pass (a
// refused login counts in the simulator's failed authentications: call it
// only for users the managed consumers never use, or after counting).
func (e *acctEnv) loginWorks(site, user, pass string) error {
	db := e.dbAs(site, user, pass)
	defer db.Close()
	return db.Ping()
}

// failedAuths sums the simulators' failed authentications of users.
func (e *acctEnv) failedAuths(users ...string) map[string]uint64 {
	out := map[string]uint64{}
	for _, s := range e.sites {
		for u, n := range s.FailedAuthentications() {
			for _, want := range users {
				if u == want {
					out[u] += n
				}
			}
		}
	}
	return out
}

func isAccessDenied(err error) bool {
	var me *driver.MySQLError
	return errors.As(err, &me) && me.Number == 1045
}

// writeLoad writes through the active site as the application account
// until stop, counting acknowledged writes; a write refused by a fence is
// not an error (the group may move), any failure to authenticate is.
type writeLoad struct {
	acked   atomic.Int64
	authErr atomic.Value // error
	stop    func()
}

func (e *acctEnv) startWriteLoad(user string, password func() string) *writeLoad {
	w := &writeLoad{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w.stop = func() { cancel(); <-done }
	e.exec0("iad", "CREATE DATABASE IF NOT EXISTS load", "CREATE TABLE IF NOT EXISTS load.t (id INT PRIMARY KEY)")
	go func() {
		defer close(done)
		for i := 1; ctx.Err() == nil; i++ {
			db, err := sql.Open("mysql", user+":"+password()+"@tcp("+e.sites[e.active()].Addr()+")/?timeout=3s")
			if err == nil {
				_, err = db.ExecContext(ctx, "INSERT INTO load.t VALUES (?)", i)
				_ = db.Close()
			}
			if err == nil {
				w.acked.Add(1)
			} else if isAccessDenied(err) {
				w.authErr.Store(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	e.t.Cleanup(w.stop)
	return w
}

// active is the group's published active site.
func (e *acctEnv) active() string {
	g, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Get(context.Background(), groupName, metav1.GetOptions{})
	if err != nil || g.Status.ActiveSite == "" {
		return "iad"
	}
	return g.Status.ActiveSite
}

// exec0 runs statements on a site as root.
func (e *acctEnv) exec0(site string, stmts ...string) {
	e.t.Helper()
	db := e.rootDB(site)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			e.t.Fatalf("%s on %s: %v", s, site, err)
		}
	}
}

// waitRoleEverywhere waits until every site holds user with exactly role's
// grants (the server's SHOW GRANTS, judged against the role).
func (e *acctEnv) waitRoleEverywhere(r accounts.Role, user string) {
	e.t.Helper()
	names := make([]string, 0, len(e.sites))
	for s := range e.sites {
		names = append(names, s)
	}
	sort.Strings(names)
	eventually(e.t, waitFor, fmt.Sprintf("the %s account %s with its grants on every site", r, user), func() error {
		for _, s := range names {
			lines, err := e.showGrants(s, user)
			if err != nil {
				return fmt.Errorf("site %s: %v", s, err)
			}
			if fix, err := accounts.Drift(r, user, lines); err != nil || len(fix) > 0 {
				return fmt.Errorf("site %s holds %q", s, lines)
			}
		}
		return nil
	})
}
