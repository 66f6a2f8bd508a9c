package managerintegration

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
	"github.com/shipstream/bloodraven/pkg/testbed/kubeenv"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
	"github.com/shipstream/bloodraven/pkg/testbed/testca"
)

const tlsSecretName = "orders-tls"

// tlsEnv is newEnv with TLS: each site's simulated mysqld reads its
// certificate from <root>/etc/mysql/tls as the rendered my.cnf names it
// (ssl-ca, ssl-cert, ssl-key, require-secure-transport=ON), and the group's
// TLS Secret holds the CA. certFor says which name each site's certificate
// carries (a wrong name is a test case).
type tlsEnv struct {
	*env
	ca    *testca.CA
	roots map[string]string
}

func newTLSEnv(t *testing.T, sites []siteDef, certFor func(e *env, site string) string) *tlsEnv {
	t.Helper()
	ca, err := testca.New("managerintegration CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ke := newEnvShell(t)
	te := &tlsEnv{env: ke, ca: ca, roots: map[string]string{}}
	var mu sync.Mutex
	resolve := func(host string, port int) string {
		mu.Lock()
		m := te.addrs
		mu.Unlock()
		if m == nil {
			return fmt.Sprintf("%s:%d", host, port)
		}
		return m.ResolveMySQL(host, port)
	}
	var entries []devsitemap.Entry
	for _, s := range sites {
		root := t.TempDir()
		pair, err := ca.Issue(certFor(ke, s.name))
		if err != nil {
			t.Fatal(err)
		}
		if err := ca.WriteDir(filepath.Join(root, "etc/mysql/tls"), pair); err != nil {
			t.Fatal(err)
		}
		srv := simtest.Start(t, mysqlsim.Config{Name: s.name, SuperReadOnly: true, SkipReplicaStart: true, ResolveSource: resolve,
			RootDir: root, Options: []string{"ssl-ca=/etc/mysql/tls/ca.crt", "ssl-cert=/etc/mysql/tls/tls.crt",
				"ssl-key=/etc/mysql/tls/tls.key", "require-secure-transport=ON", "plugin-load-add=mysql_clone.so"}})
		te.sites[s.name], te.roots[s.name] = srv, root
		sc := newSidecarStandIn(t, s.name)
		te.sidecars[s.name] = sc
		entries = append(entries, devsitemap.Entry{Site: siteaddr.SiteKey{Namespace: te.ns, Group: groupName, Site: s.name}, MySQL: srv.Addr(), Sidecar: sc.addr})
	}
	m, err := devsitemap.New(entries...)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	te.addrs = m
	mu.Unlock()
	te.createOperatorSecret()
	te.putTLSSecret(ca.CertPEM)
	return te
}

// putTLSSecret creates or replaces the TLS Secret with caPEM as ca.crt.
func (te *tlsEnv) putTLSSecret(caPEM []byte) {
	te.t.Helper()
	pair, err := te.ca.Issue("unused-by-the-operator")
	if err != nil {
		te.t.Fatal(err)
	}
	data := te.ca.SecretData(pair)
	data["ca.crt"] = caPEM
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: tlsSecretName}, Type: corev1.SecretTypeTLS, Data: data}
	api := te.kube.CoreV1().Secrets(te.ns)
	if _, err := api.Get(context.Background(), tlsSecretName, metav1.GetOptions{}); err == nil {
		_, err = api.Update(context.Background(), sec, metav1.UpdateOptions{})
		if err != nil {
			te.t.Fatal(err)
		}
		return
	}
	if _, err := api.Create(context.Background(), sec, metav1.CreateOptions{}); err != nil {
		te.t.Fatal(err)
	}
}

// db opens a TLS connection to a site as the admin account, verifying the
// site's certificate as the operator does.
func (te *tlsEnv) db(site string) *sql.DB {
	te.t.Helper()
	cfg, err := mysql.TLSConfig(te.ca.CertPEM, te.fqdn(site))
	if err != nil {
		te.t.Fatal(err)
	}
	c := driver.NewConfig()
	c.Net, c.Addr, c.User, c.Passwd, c.TLS = "tcp", te.sites[site].Addr(), simtest.AdminUser, simtest.AdminPass, cfg
	conn, err := driver.NewConnector(c)
	if err != nil {
		te.t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	te.t.Cleanup(func() { _ = db.Close() })
	return db
}

func (te *tlsEnv) execTLS(site string, stmts ...string) {
	te.t.Helper()
	db := te.db(site)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			te.t.Fatalf("%s on %s: %v", s, site, err)
		}
	}
}

// plaintextSessions lists, per site, every connection the simulated server
// saw without TLS (require_secure_transport refuses them, but one must
// never even be tried).
func (te *tlsEnv) plaintextSessions() []string {
	var out []string
	for name, s := range te.sites {
		for _, r := range s.Transports() {
			if !r.TLS {
				out = append(out, fmt.Sprintf("%s: %+v", name, r))
			}
		}
	}
	return out
}

func (te *tlsEnv) tlsGroup(sites []siteDef) *v1alpha1.MysqlFailoverGroup {
	g := te.failoverGroup(sites)
	g.Spec.TLS = &v1alpha1.TLSSpec{SecretName: tlsSecretName}
	return g
}

// TestTLSEndToEnd: a group with spec.tls bootstraps (the follower is
// cloned: the active site's binary logs are purged), fails over when the
// primary crashes and reclones a site on request, with every managed
// session TLS as the simulated servers saw it, each replication channel
// verifying its source's certificate against ca.crt and the source's
// internal Service name, and TLSReady True.
func TestTLSEndToEnd(t *testing.T) {
	te := newTLSEnv(t, threeSites, func(e *env, site string) string { return e.fqdn(site) })
	te.execTLS("iad", "SET GLOBAL read_only = OFF", "CREATE DATABASE history", "SET GLOBAL super_read_only = ON")
	te.sites["iad"].PurgeBinaryLogs()
	te.startOperator(withFailover)
	te.create(te.tlsGroup(threeSites))
	te.waitEvent(v1alpha1.EventCloneSucceeded, corev1.EventTypeNormal)
	te.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	g := te.waitCondition(v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonTLSVerified)
	if g.Status.ActiveSite != "iad" {
		t.Fatalf("active site %q, want iad", g.Status.ActiveSite)
	}
	for _, name := range []string{"pdx", "reader"} {
		var allowed, verify, caFile string
		err := te.db(name).QueryRow("SELECT SSL_ALLOWED, SSL_VERIFY_SERVER_CERTIFICATE, SSL_CA_FILE FROM performance_schema.replication_connection_configuration").
			Scan(&allowed, &verify, &caFile)
		if err != nil || allowed != "YES" || verify != "YES" || caFile != "/etc/mysql/tls/ca.crt" {
			t.Fatalf("%s's channel: SSL_ALLOWED %q, SSL_VERIFY_SERVER_CERTIFICATE %q, SSL_CA_FILE %q (%v)", name, allowed, verify, caFile, err)
		}
	}
	te.execTLS("iad", "CREATE DATABASE orders")
	committed := te.sites["iad"].Snapshot().Executed
	eventually(t, waitFor, "pdx applied iad's writes over the verified channel", func() error {
		if !committed.IsSubsetOf(te.sites["pdx"].Snapshot().Executed) {
			return fmt.Errorf("pdx behind")
		}
		return nil
	})

	te.sites["iad"].Crash()
	te.waitActive("pdx", 2)
	eventually(t, waitFor, "reader follows pdx", func() error {
		if st := site(te.get(), "reader"); st.SourceHost != te.fqdn("pdx") || st.Replication != v1alpha1.ReplicationRunning {
			return fmt.Errorf("reader %s %s", st.SourceHost, st.Replication)
		}
		return nil
	})

	clonesBefore := len(te.eventsOf(v1alpha1.EventCloneSucceeded))
	te.annotateReclone("reader:confirm=" + groupName + ":uid=" + string(te.get().UID))
	eventually(t, waitFor, "reader recloned from pdx", func() error {
		if n := len(te.eventsOf(v1alpha1.EventCloneSucceeded)); n <= clonesBefore {
			return fmt.Errorf("%d CloneSucceeded Events, want more than %d", n, clonesBefore)
		}
		return nil
	})
	te.waitRecloneCleared()
	te.execTLS("pdx", "CREATE DATABASE after_reclone")
	want := te.sites["pdx"].Snapshot().Executed
	eventually(t, waitFor, "reader replicates from pdx after the reclone", func() error {
		if !want.IsSubsetOf(te.sites["reader"].Snapshot().Executed) {
			return fmt.Errorf("reader behind")
		}
		return nil
	})

	if bad := te.plaintextSessions(); len(bad) > 0 {
		t.Fatalf("sessions without TLS:\n%s", strings.Join(bad, "\n"))
	}
	// Each kind of managed session reached the servers (over TLS, as just
	// checked): the operator's, and the receivers' and clone's.
	kinds := map[string]bool{}
	for _, s := range te.sites {
		for _, r := range s.Transports() {
			switch {
			case r.Program == topologymanager.DefaultProgram:
				kinds["operator"] = true
			case strings.HasPrefix(r.Program, "mysqlsim:") && r.User == simtest.ReplUser:
				kinds["replication"] = true
			}
		}
	}
	if !kinds["operator"] || !kinds["replication"] {
		t.Fatalf("managed sessions seen: %v, want the operator's and the replication account's", kinds)
	}
}

// TestTLSVerificationFailuresAreReported: a TLS Secret whose ca.crt did not
// sign the servers' certificates, and then (with the right CA) a site whose
// certificate names another site, each give TLSReady=False with reason
// TLSVerificationFailed naming the site and the cause, and a Warning Event;
// the operator never tries a connection without TLS, and picks up the
// corrected ca.crt from the Secret without a restart.
func TestTLSVerificationFailuresAreReported(t *testing.T) {
	sites := threeSites[:2]
	te := newTLSEnv(t, sites, func(e *env, site string) string { return e.fqdn("iad") }) // pdx's certificate names iad
	wrong, err := testca.New("some other CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	te.putTLSSecret(wrong.CertPEM)
	te.startOperator()
	te.create(te.tlsGroup(sites))
	g := te.waitCondition(v1alpha1.ConditionTLSReady, metav1.ConditionFalse, v1alpha1.ReasonTLSVerificationFailed)
	// pdx's certificate has both faults; Go checks the name first.
	eventually(t, waitFor, "iad named with the wrong CA, pdx with its wrong name", func() error {
		c := condition(te.get(), v1alpha1.ConditionTLSReady)
		if !contains(c.Message, "site iad: ", "wrong CA", te.fqdn("iad"), "site pdx: ", "does not name "+te.fqdn("pdx")) {
			return fmt.Errorf("TLSReady message %q", c.Message)
		}
		return nil
	})
	eventually(t, waitFor, "a Warning Event for iad's wrong CA", func() error {
		for _, ev := range te.eventsOf(v1alpha1.EventTLSVerificationFailed) {
			if ev.Type == corev1.EventTypeWarning && contains(ev.Message, "site iad", "wrong CA", "does not connect without TLS") {
				return nil
			}
		}
		return fmt.Errorf("no Event for the wrong CA")
	})
	if g.Status.ActiveSite != "" {
		t.Fatalf("a group whose sites cannot be verified was bootstrapped: active site %q", g.Status.ActiveSite)
	}
	for name, s := range te.sites {
		if n := len(s.Transports()); n != 0 {
			t.Fatalf("%s saw %d authenticated sessions with the wrong CA: %+v", name, n, s.Transports())
		}
	}

	te.putTLSSecret(te.ca.CertPEM)
	eventually(t, waitFor, "only pdx refused, for its name", func() error {
		c := condition(te.get(), v1alpha1.ConditionTLSReady)
		if c == nil || c.Reason != v1alpha1.ReasonTLSVerificationFailed || strings.Contains(c.Message, "site iad") ||
			!contains(c.Message, "site pdx: ", "does not name "+te.fqdn("pdx"), "wrong name") {
			return fmt.Errorf("TLSReady %+v", c)
		}
		return nil
	})
	eventually(t, waitFor, "a Warning Event for pdx's wrong name", func() error {
		for _, ev := range te.eventsOf(v1alpha1.EventTLSVerificationFailed) {
			if contains(ev.Message, "site pdx", "wrong name") {
				return nil
			}
		}
		return fmt.Errorf("no Event for the wrong name")
	})
	if bad := te.plaintextSessions(); len(bad) > 0 {
		t.Fatalf("sessions without TLS:\n%s", strings.Join(bad, "\n"))
	}
	var iadTLS bool
	for _, r := range te.sites["iad"].Transports() {
		iadTLS = iadTLS || r.Program == topologymanager.DefaultProgram
	}
	if !iadTLS {
		t.Fatalf("the corrected ca.crt was not used: iad saw %+v", te.sites["iad"].Transports())
	}
	if n := len(te.sites["pdx"].Transports()); n != 0 {
		t.Fatalf("pdx, whose certificate names iad, saw %d authenticated sessions: %+v", n, te.sites["pdx"].Transports())
	}

	// A Secret without ca.crt: no site is reached, and the condition names
	// the Secret and the key.
	te.putTLSSecret(nil)
	eventually(t, waitFor, "TLSReady False/TLSSecretInvalid", func() error {
		c := condition(te.get(), v1alpha1.ConditionTLSReady)
		if c == nil || c.Reason != v1alpha1.ReasonTLSSecretInvalid || !contains(c.Message, te.ns+"/"+tlsSecretName, `"ca.crt"`) {
			return fmt.Errorf("TLSReady %+v", c)
		}
		return nil
	})
	if bad := te.plaintextSessions(); len(bad) > 0 {
		t.Fatalf("sessions without TLS once ca.crt was gone:\n%s", strings.Join(bad, "\n"))
	}
}

// newEnvShell is newEnv's namespace and clients without simulated sites.
func newEnvShell(t *testing.T) *env {
	t.Helper()
	ke := kubeenv.New(t, cp)
	return &env{t: t, kubeenv: ke, ns: ke.Namespace, kube: ke.Kube, ship: ke.Ship, dyn: ke.Dyn, sites: map[string]*mysqlsim.Server{},
		sidecars: map[string]*sidecarStandIn{}}
}

// createOperatorSecret is newEnv's operator Secret.
func (e *env) createOperatorSecret() {
	e.t.Helper()
	_, err := e.kube.CoreV1().Secrets(e.ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName},
		Data: map[string][]byte{
			"username": []byte(simtest.AdminUser), "password": []byte(simtest.AdminPass), "MYSQL_ROOT_PASSWORD": []byte("unused"),
			"MYSQL_REPLICATION_USER": []byte(simtest.ReplUser), "MYSQL_REPLICATION_PASSWORD": []byte(simtest.ReplPass),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
}
