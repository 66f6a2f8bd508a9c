package deployapiintegration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/deployapi"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/logschema"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{CRDDir: "deploy/crds"}, &cp)
}

// clock is the operator clock of a test: real time plus an offset the test
// advances, shared by every store and handler of the test.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// Set makes the clock read t now (and run on from there).
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.offset = time.Until(t)
	c.mu.Unlock()
}

// env is one test's world: its namespaces, clients, an operator instance
// (store + handler) behind a real TLS server, and the secrets it saw, which
// must never appear in the captured logs.
type env struct {
	t     testing.TB
	ctx   context.Context
	kube  kubernetes.Interface
	ship  versioned.Interface
	clock *clock
	logs  *framework.SyncBuffer

	mu      sync.Mutex
	secrets []string
	// requests counts requests sent, to check one log record per request.
	requests int
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ship, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: context.Background(), kube: cp.Client(), ship: ship, clock: &clock{}, logs: &framework.SyncBuffer{}}
	t.Cleanup(e.checkLogs)
	return e
}

// instance is one operator process's deploy API: its own clients (no
// shared client state), its own store, its own TLS server.
type instance struct {
	store  *leasestore.Store
	server *httptest.Server
	client *http.Client
}

func (e *env) newInstance(opts ...func(*deployapi.Config)) *instance {
	e.t.Helper()
	return e.newInstanceOn(e.clock, opts...)
}

// newInstanceOn is newInstance on its own operator clock (another node's).
func (e *env) newInstanceOn(clk *clock, opts ...func(*deployapi.Config)) *instance {
	e.t.Helper()
	// Each instance has its own clients, as separate processes would; the
	// client-side rate limit is raised so the benchmark measures the API
	// server, not client throttling.
	rc := rest.CopyConfig(cp.Config)
	rc.QPS, rc.Burst = 2000, 4000
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		e.t.Fatal(err)
	}
	ship, err := versioned.NewForConfig(rc)
	if err != nil {
		e.t.Fatal(err)
	}
	store := leasestore.New(kube, leasestore.Options{Now: clk.Now, MaxClockSkew: 2 * time.Second})
	cfg := deployapi.Config{
		Kube: kube, Shipstream: ship, Store: store,
		Logger: slog.New(slog.NewJSONHandler(e.logs, nil)),
		Now:    clk.Now,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h, err := deployapi.NewHandler(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.StartTLS()
	e.t.Cleanup(srv.Close)
	return &instance{store: store, server: srv, client: srv.Client()}
}

// token mints a real ServiceAccount token for audience.
func (e *env) mint(ns, sa, audience string) string {
	e.t.Helper()
	tok, err := cp.MintToken(e.ctx, ns, sa, audience)
	if err != nil {
		e.t.Fatal(err)
	}
	e.remember(tok)
	return tok
}

func (e *env) remember(secret string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.secrets = append(e.secrets, secret, leasestore.HashToken(secret))
	e.secrets = append(e.secrets, strings.TrimPrefix(leasestore.HashToken(secret), "sha256:"))
}

// checkLogs: every line is one "deploy api" record with the contract's
// fields, and no bearer token, lease token or hash of either appears.
func (e *env) checkLogs() {
	out := e.logs.String()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.secrets {
		if strings.Contains(out, s) {
			e.t.Errorf("captured logs contain a secret or its hash (%d chars)", len(s))
		}
	}
	if strings.Contains(strings.ToLower(out), "bearer") {
		e.t.Errorf("captured logs mention a bearer credential")
	}
	if n := strings.Count(out, "\n"); n != e.requests {
		e.t.Errorf("%d log records for %d requests, want exactly one each", n, e.requests)
	}
	for line := range strings.Lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			e.t.Errorf("log line is not JSON: %v", err)
			continue
		}
		if m["msg"] != "deploy api" {
			e.t.Errorf("unexpected log record %v", m["msg"])
		}
		for _, k := range []string{"handler", "group", "instance", "namespace", "operationId", "status", "duration_ms"} {
			if _, ok := m[k]; !ok {
				e.t.Errorf("log record lacks %q: %s", k, line)
			}
		}
	}
	// And each record as docs/logs.md lists it (fields, their types).
	schema, err := logschema.Load()
	if err != nil {
		e.t.Fatal(err)
	}
	ps, err := schema.CheckLines(logschema.Operator, strings.NewReader(out))
	if err != nil {
		e.t.Error(err)
	}
	for _, p := range ps {
		e.t.Errorf("log record not in docs/logs.md: %s", p)
	}
}

// logRecords returns the decoded log records.
func (e *env) logRecords() []map[string]any {
	var out []map[string]any
	for line := range strings.Lines(e.logs.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// group creates a MysqlFailoverGroup with a healthy status at generation gen.
func (e *env) group(ns, name string, gen int64) *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	g := &v1alpha1.MysqlFailoverGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.MysqlFailoverGroupSpec{
			Image: "mysql:9.7",
			Sites: []v1alpha1.SiteSpec{
				{Name: "iad", Role: v1alpha1.SiteRolePrimaryCandidate, ServerID: 101, Zone: "us-east-1a", LoadBalancerIP: "10.0.1.1", TaintNodeSelector: map[string]string{"site": "iad"}, Storage: v1alpha1.StorageSpec{StorageClassName: "fast", Size: "10Gi"}},
				{Name: "pdx", Role: v1alpha1.SiteRolePrimaryCandidate, ServerID: 102, Zone: "us-west-2a", LoadBalancerIP: "10.0.2.1", TaintNodeSelector: map[string]string{"site": "pdx"}, Storage: v1alpha1.StorageSpec{StorageClassName: "fast", Size: "10Gi"}},
			},
			Credentials: v1alpha1.CredentialsSpec{OperatorSecretName: "ops"},
			DNS:         v1alpha1.DNSSpec{Hostname: name + ".db.example.com"},
		},
	}
	g, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(ns).Create(e.ctx, g, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create group: %v", err)
	}
	lag := int64(1)
	now := metav1.Now()
	g.Status = v1alpha1.MysqlFailoverGroupStatus{
		ActiveSite:         "iad",
		TopologyGeneration: gen,
		Sites: []v1alpha1.SiteStatus{
			{Name: "iad", State: v1alpha1.SiteWritable, Replication: v1alpha1.ReplicationNotReplicating},
			{Name: "pdx", State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationRunning, SecondsBehindSource: &lag},
		},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonHealthy, LastTransitionTime: now}},
	}
	g, err = e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(ns).UpdateStatus(e.ctx, g, metav1.UpdateOptions{})
	if err != nil {
		e.t.Fatalf("set group status: %v", err)
	}
	return g
}

// editStatus rereads the group and applies f to its status.
func (e *env) editStatus(ns, name string, f func(*v1alpha1.MysqlFailoverGroupStatus)) {
	e.t.Helper()
	g, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	f(&g.Status)
	if _, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(ns).UpdateStatus(e.ctx, g, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("update group status: %v", err)
	}
}

// database declares a MysqlDatabase on group with deployment clients.
func (e *env) database(ns, name, group string, clients ...v1alpha1.DeploymentClient) {
	e.t.Helper()
	db := &v1alpha1.MysqlDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.MysqlDatabaseSpec{
			FailoverGroupRef:  v1alpha1.FailoverGroupReference{Name: group},
			DatabaseName:      strings.ReplaceAll(name, "-", "_"),
			DeploymentClients: clients,
		},
	}
	if _, err := e.ship.ShipstreamV1alpha1().MysqlDatabases(ns).Create(e.ctx, db, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create database: %v", err)
	}
}

// response is a decoded answer.
type response struct {
	status int
	body   map[string]any
	raw    string
}

func (r response) str(k string) string {
	s, _ := r.body[k].(string)
	return s
}

// do sends one request; bearer "" sends no Authorization header.
func (e *env) do(in *instance, method, path, bearer string, body any, header map[string]string) response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			rd = strings.NewReader(b)
		default:
			raw, _ := json.Marshal(b)
			rd = bytes.NewReader(raw)
		}
	}
	req, err := http.NewRequestWithContext(e.ctx, method, in.server.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	e.mu.Lock()
	e.requests++
	e.mu.Unlock()
	resp, err := in.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if resp.TLS == nil {
		e.t.Fatalf("%s %s was not served over TLS", method, path)
	}
	raw, _ := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode, raw: string(raw)}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.body); err != nil {
			e.t.Fatalf("%s %s: body is not JSON: %q", method, path, raw)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			e.t.Errorf("%s %s: Content-Type %q", method, path, ct)
		}
	}
	if tok := out.str("token"); tok != "" {
		e.remember(tok)
	}
	return out
}

func (e *env) expect(r response, status int, code string) {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d (body %s)", r.status, status, r.raw)
	}
	if code != "" && r.str("error") != code {
		e.t.Fatalf("error %q, want %q (body %s)", r.str("error"), code, r.raw)
	}
}

func grantBody(kind, op, instance string, ttl int) map[string]any {
	return map[string]any{"kind": kind, "operationId": op, "instance": instance, "ttlSeconds": ttl}
}

func leasePath(group, kind, op string) string {
	return "/deploy/v1/groups/" + group + "/leases/" + kind + "/" + op
}

func client(ns, sa string) v1alpha1.DeploymentClient {
	return v1alpha1.DeploymentClient{Namespace: ns, ServiceAccount: sa}
}

// fixture is the usual world: a group "orders" in ns with database
// "orders-app" declaring app-ns/deployer, and a token for it.
type fixture struct {
	*env
	ns, appNS string
	op        *instance
	token     string
}

func newFixture(t testing.TB) *fixture {
	e := newEnv(t)
	f := &fixture{env: e, ns: cp.NewNamespace(t), appNS: cp.NewNamespace(t)}
	e.group(f.ns, "orders", 3)
	e.database(f.ns, "orders-app", "orders", client(f.appNS, "deployer"))
	f.op = e.newInstance()
	f.token = e.mint(f.appNS, "deployer", deployapi.DefaultAudience)
	return f
}
