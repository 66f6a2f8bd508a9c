package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/pluginview"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// auditSites is the sample group's three sites as simulated servers: iad
// writable and active, pdx and reader read-only replicas of it, a dev map
// file listing them, and the operator Secret the sample names.
type auditSites struct {
	t       *testing.T
	sims    map[string]*mysqlsim.Server
	mapPath string
}

func (e *env) stageAudit() *auditSites {
	e.t.Helper()
	s := &auditSites{t: e.t, sims: map[string]*mysqlsim.Server{}}
	serving, tlsSecret := sampleTLS(e.t, e.ns) // the sample's spec.tls (gtidaudit_tls_test.go)
	var entries []devsitemap.Entry
	for _, site := range []string{"iad", "pdx", "reader"} {
		srv := simtest.Start(e.t, mysqlsim.Config{Name: site, SuperReadOnly: site != "iad", ReadOnly: site != "iad", TLS: serving})
		s.sims[site] = srv
		entries = append(entries, devsitemap.Entry{Site: siteaddr.SiteKey{Namespace: e.ns, Group: "orders", Site: site}, MySQL: srv.Addr()})
	}
	m, err := devsitemap.New(entries...)
	if err != nil {
		e.t.Fatal(err)
	}
	s.mapPath = filepath.Join(e.t.TempDir(), "dev-site-addresses")
	if err := m.WriteFile(s.mapPath); err != nil {
		e.t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		e.t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: e.group().Spec.Credentials.OperatorSecretName, Namespace: e.ns},
		Data: map[string][]byte{secretKeyUsername: []byte(simtest.AdminUser), secretKeyPassword: []byte(simtest.AdminPass)}}
	if _, err := kube.CoreV1().Secrets(e.ns).Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := kube.CoreV1().Secrets(e.ns).Create(context.Background(), tlsSecret, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.stage(func(st *v1alpha1.MysqlFailoverGroupStatus) { st.ActiveSite = "iad" })

	// Transactions on the primary, replicated to both followers, so that
	// "clean" is checked with followers that hold something.
	s.exec("iad", "CREATE DATABASE audit1", "CREATE DATABASE audit2")
	for _, f := range []string{"pdx", "reader"} {
		host, port, _ := net.SplitHostPort(s.sims["iad"].Addr())
		s.exec(f, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='%s', SOURCE_PORT=%s, SOURCE_USER='%s', SOURCE_PASSWORD='%s', SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1",
			host, port, simtest.ReplUser, simtest.ReplPass), "START REPLICA")
	}
	want := s.sims["iad"].Snapshot().Executed
	for _, f := range []string{"pdx", "reader"} {
		deadline := time.Now().Add(10 * time.Second)
		for !s.sims[f].Snapshot().Executed.Equal(want) {
			if time.Now().After(deadline) {
				e.t.Fatalf("%s did not replicate %s: has %s", f, want, s.sims[f].Snapshot().Executed)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return s
}

func (s *auditSites) exec(site string, stmts ...string) {
	s.t.Helper()
	db, err := sql.Open("mysql", simtest.AdminUser+":"+simtest.AdminPass+"@tcp("+s.sims[site].Addr()+")/")
	if err != nil {
		s.t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			s.t.Fatalf("%s on %s: %v", q, site, err)
		}
	}
}

func TestGTIDAuditCleanThenErrant(t *testing.T) {
	e := newEnv(t)
	s := e.stageAudit()

	out, stderr, code := e.run("", false, "gtid-audit", "orders", "--dev-site-addresses", s.mapPath)
	t.Log("\n" + out + stderr)
	if code != 0 || !strings.Contains(out, "Every follower is clean") || !strings.Contains(out, "reader    0") {
		t.Fatalf("clean: exit %d\n%s\n%s", code, out, stderr)
	}
	if strings.Contains(out+stderr, simtest.AdminPass) {
		t.Fatal("the output shows the operator password")
	}

	errant := s.sims["pdx"].InjectErrantTransactions(2)
	out, stderr, code = e.run("", false, "gtid-audit", "orders", "--dev-site-addresses", s.mapPath)
	t.Log("\n" + out + stderr)
	if code != 1 || !strings.Contains(out, "pdx       2           "+errant.OneLine()) || !strings.Contains(out, "reader    0           -") {
		t.Fatalf("errant: exit %d\n%s\n%s", code, out, stderr)
	}

	// The map from the environment, as the operator takes it, and -o json.
	t.Setenv(devsitemap.EnvVar, s.mapPath)
	out, stderr, code = e.run("", false, "gtid-audit", "orders", "-o", "json")
	if code != 1 {
		t.Fatalf("json: exit %d\n%s\n%s", code, out, stderr)
	}
	var rep pluginview.GTIDAudit
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Verdict != pluginview.AuditExtra || rep.ActiveSite != "iad" || rep.PrimaryUUID != s.sims["iad"].ServerUUID() || len(rep.Followers) != 2 ||
		rep.Followers[0].Site != "pdx" || rep.Followers[0].Extra != errant.OneLine() || rep.Followers[0].ExtraTransactions != 2 ||
		rep.Followers[1].Site != "reader" || !rep.Followers[1].Clean {
		t.Fatalf("json report: %+v", rep)
	}
}

// TestGTIDAuditPrimaryChanged: a failover between the followers' reads and
// the primary's makes the result meaningless; the command says so (exit 4)
// instead of reporting clean or extra.
func TestGTIDAuditPrimaryChanged(t *testing.T) {
	e := newEnv(t)
	s := e.stageAudit()
	afterFollowerReads = func() { e.stage(func(st *v1alpha1.MysqlFailoverGroupStatus) { st.ActiveSite = "pdx" }) }
	t.Cleanup(func() { afterFollowerReads = func() {} })
	out, stderr, code := e.run("", false, "gtid-audit", "orders", "--dev-site-addresses", s.mapPath)
	t.Log("\n" + out + stderr)
	if code != pluginview.AuditExitPrimaryChanged || !strings.Contains(out, "INCONCLUSIVE") ||
		!strings.Contains(stderr, `status.activeSite changed from "iad" to "pdx" during the audit; run gtid-audit again`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
}

func TestGTIDAuditErrors(t *testing.T) {
	e := newEnv(t)
	// No active site yet: nothing to compare with, an error (3), not "extra" (1).
	_, stderr, code := e.run("", false, "gtid-audit", "orders", "--dev-site-addresses", filepath.Join(t.TempDir(), "none"))
	if code != pluginview.AuditExitError || !strings.Contains(stderr, "no status.activeSite") {
		t.Fatalf("no active site: exit %d %s", code, stderr)
	}
	e.stage(func(st *v1alpha1.MysqlFailoverGroupStatus) { st.ActiveSite = "iad" })
	_, stderr, code = e.run("", false, "gtid-audit", "orders", "--dev-site-addresses", filepath.Join(t.TempDir(), "none"))
	if code != pluginview.AuditExitError || !strings.Contains(stderr, "operator Secret "+e.ns+"/orders-operator-creds does not exist") {
		t.Fatalf("no secret: exit %d %s", code, stderr)
	}
	_, stderr, code = e.run("", false, "gtid-audit")
	if code != 2 || !strings.Contains(stderr, "gtid-audit needs <group>") {
		t.Fatalf("no group: exit %d %s", code, stderr)
	}
}
