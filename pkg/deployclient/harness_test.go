package deployclient_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/deployapi"
	"github.com/shipstream/bloodraven/pkg/deployclient"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/logschema"
)

var cp *framework.ControlPlane

// helperEnv switches the re-executed test binary into the migration
// command under test (see helperMain).
const helperEnv = "DEPLOYCLIENT_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	flag.Parse()
	if testing.Short() {
		// Unit tests only: no control plane.
		os.Exit(m.Run())
	}
	framework.Main(m, framework.Options{CRDDir: "deploy/crds"}, &cp)
}

func needControlPlane(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the control plane (skipped with -short)")
	}
}

// helperRecord is what the command under test experienced, rewritten
// atomically every few milliseconds while it lives.
type helperRecord struct {
	Env       map[string]string `json:"env"`
	StartedAt time.Time         `json:"startedAt"`
	LastAlive time.Time         `json:"lastAlive"`
	TermAt    time.Time         `json:"termAt"`
	ExitedAt  time.Time         `json:"exitedAt"`
}

// helperMain sleeps HELPER_SLEEP, recording itself in HELPER_RECORD; on
// SIGTERM it records and exits 143 unless HELPER_IGNORE_TERM is set (then
// only SIGKILL ends it). HELPER_WRITE_OUTCOME makes it write its own outcome.
func helperMain() int {
	sleep, _ := time.ParseDuration(os.Getenv("HELPER_SLEEP"))
	path := os.Getenv("HELPER_RECORD")
	rec := helperRecord{Env: map[string]string{}, StartedAt: time.Now()}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "BLOODRAVEN_DEPLOY_") {
			rec.Env[k] = v
		}
	}
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	end := time.After(sleep)
	tick := time.NewTicker(5 * time.Millisecond)
	for {
		rec.LastAlive = time.Now()
		writeJSONFile(path, rec)
		select {
		case <-tick.C:
		case <-terms:
			if rec.TermAt.IsZero() {
				rec.TermAt = time.Now()
			}
			if os.Getenv("HELPER_IGNORE_TERM") == "" {
				rec.ExitedAt = time.Now()
				writeJSONFile(path, rec)
				return 143
			}
		case <-end:
			if f := os.Getenv(deployclient.EnvOutcomeFile); f != "" && os.Getenv("HELPER_WRITE_OUTCOME") != "" {
				writeJSONFile(f, map[string]string{"writtenBy": "command", "schemaVersion": "42"})
			}
			rec.ExitedAt = time.Now()
			writeJSONFile(path, rec)
			return 0
		}
	}
}

func writeJSONFile(path string, v any) {
	raw, _ := json.Marshal(v)
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if os.WriteFile(tmp, raw, 0o600) == nil {
		_ = os.Rename(tmp, path)
	}
}

// env is one test's world: a group "orders" at generation 3 in ns, its
// database "orders-app" declaring appNS/deployer, and one operator
// instance (real handler and store) behind a real TLS server.
type env struct {
	t         *testing.T
	ctx       context.Context
	kube      kubernetes.Interface
	ship      versioned.Interface
	ns, appNS string
	store     *leasestore.Store
	server    *httptest.Server
	serverLog *framework.SyncBuffer
	clientLog *framework.SyncBuffer
	dir       string
	tokenFile string
	secrets   []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	needControlPlane(t)
	ship, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: context.Background(), kube: cp.Client(), ship: ship,
		ns: cp.NewNamespace(t), appNS: cp.NewNamespace(t),
		serverLog: &framework.SyncBuffer{}, clientLog: &framework.SyncBuffer{}, dir: t.TempDir()}
	e.tokenFile = filepath.Join(e.dir, "token")
	e.createGroup(3)
	e.createDatabase()
	e.startOperator()
	t.Cleanup(e.checkClientLog)
	return e
}

func (e *env) startOperator() {
	rc := rest.CopyConfig(cp.Config)
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		e.t.Fatal(err)
	}
	ship, err := versioned.NewForConfig(rc)
	if err != nil {
		e.t.Fatal(err)
	}
	e.store = leasestore.New(kube, leasestore.Options{})
	h, err := deployapi.NewHandler(deployapi.Config{
		Kube: kube, Shipstream: ship, Store: e.store,
		Logger: slog.New(slog.NewJSONHandler(e.serverLog, nil)),
		// A short authentication cache, so a revoked ServiceAccount token
		// stops working within the test.
		TokenCacheTTL: 100 * time.Millisecond,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.server = httptest.NewUnstartedServer(h)
	e.server.StartTLS()
	e.t.Cleanup(e.server.Close)
}

func (e *env) createGroup(gen int64) {
	e.t.Helper()
	g := &v1alpha1.MysqlFailoverGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: e.ns},
		Spec: v1alpha1.MysqlFailoverGroupSpec{
			Image: "mysql:9.7",
			Sites: []v1alpha1.SiteSpec{
				{Name: "iad", Role: v1alpha1.SiteRolePrimaryCandidate, ServerID: 101, Zone: "us-east-1a", LoadBalancerIP: "10.0.1.1", TaintNodeSelector: map[string]string{"site": "iad"}, Storage: v1alpha1.StorageSpec{StorageClassName: "fast", Size: "10Gi"}},
				{Name: "pdx", Role: v1alpha1.SiteRolePrimaryCandidate, ServerID: 102, Zone: "us-west-2a", LoadBalancerIP: "10.0.2.1", TaintNodeSelector: map[string]string{"site": "pdx"}, Storage: v1alpha1.StorageSpec{StorageClassName: "fast", Size: "10Gi"}},
			},
			Credentials: v1alpha1.CredentialsSpec{OperatorSecretName: "ops"},
			DNS:         v1alpha1.DNSSpec{Hostname: "orders.db.example.com"},
		},
	}
	g, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Create(e.ctx, g, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create group: %v", err)
	}
	lag := int64(1)
	g.Status = v1alpha1.MysqlFailoverGroupStatus{
		ActiveSite:         "iad",
		TopologyGeneration: gen,
		Sites: []v1alpha1.SiteStatus{
			{Name: "iad", State: v1alpha1.SiteWritable, Replication: v1alpha1.ReplicationNotReplicating},
			{Name: "pdx", State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationRunning, SecondsBehindSource: &lag},
		},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonHealthy, LastTransitionTime: metav1.Now()}},
	}
	if _, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).UpdateStatus(e.ctx, g, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("set group status: %v", err)
	}
}

// editStatus rereads the group and applies f to its status.
func (e *env) editStatus(f func(*v1alpha1.MysqlFailoverGroupStatus)) {
	e.t.Helper()
	g, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Get(e.ctx, "orders", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	f(&g.Status)
	if _, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).UpdateStatus(e.ctx, g, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("update group status: %v", err)
	}
}

func (e *env) createDatabase() {
	e.t.Helper()
	db := &v1alpha1.MysqlDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: "orders-app", Namespace: e.ns},
		Spec: v1alpha1.MysqlDatabaseSpec{
			FailoverGroupRef:  v1alpha1.FailoverGroupReference{Name: "orders"},
			DatabaseName:      "orders_app",
			DeploymentClients: []v1alpha1.DeploymentClient{{Namespace: e.appNS, ServiceAccount: "deployer"}},
		},
	}
	if _, err := e.ship.ShipstreamV1alpha1().MysqlDatabases(e.ns).Create(e.ctx, db, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create database: %v", err)
	}
}

// mintBound mints a deployer token bound to a new Secret, so that
// deleting the Secret invalidates exactly this token (as the kubelet's
// rotated tokens are bound to their Pod). It returns the token and the
// Secret's name.
func (e *env) mintBound() (string, string) {
	e.t.Helper()
	_, err := e.kube.CoreV1().ServiceAccounts(e.appNS).Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
	sec, err := e.kube.CoreV1().Secrets(e.appNS).Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "binding-"}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	expiry := int64(3600)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences: []string{deployapi.DefaultAudience}, ExpirationSeconds: &expiry,
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: sec.Name, UID: sec.UID},
	}}
	got, err := e.kube.CoreV1().ServiceAccounts(e.appNS).CreateToken(e.ctx, "deployer", req, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.secrets = append(e.secrets, got.Status.Token)
	return got.Status.Token, sec.Name
}

// writeToken replaces the token file atomically, as the kubelet does.
func (e *env) writeToken(tok string) {
	e.t.Helper()
	tmp := e.tokenFile + ".new"
	if err := os.WriteFile(tmp, []byte(tok), 0o600); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Rename(tmp, e.tokenFile); err != nil {
		e.t.Fatal(err)
	}
}

// testPolicy: ttl 12 s (renewals every 4 s), the minimum kill margin of
// 5 s, SIGTERM 1 s before SIGKILL: SIGTERM at the latest 6 s and SIGKILL 7 s
// after the last confirmed send.
var testPolicy = deployclient.Policy{TTL: 12 * time.Second, KillMargin: 5 * time.Second, TermGrace: time.Second, RequestTimeout: time.Second}

// runOpts describe one run of the helper command.
type runOpts struct {
	sleep        time.Duration
	ignoreTerm   bool
	writeOutcome bool
	baseURL      string // default: the server
}

// started is a run in progress.
type started struct {
	op, record, outcome string
	done                chan deployclient.Result
	cancel              context.CancelFunc
}

func (e *env) start(o runOpts) *started {
	e.t.Helper()
	return e.startWith(o, filepath.Join(e.dir, "outcome.json"))
}

// startWith starts a run recording its outcome at outcome.
func (e *env) startWith(o runOpts, outcome string) *started {
	e.t.Helper()
	if o.baseURL == "" {
		o.baseURL = e.server.URL
	}
	s := &started{op: newUUID(), record: filepath.Join(e.dir, "record.json"), outcome: outcome, done: make(chan deployclient.Result, 1)}
	exe, err := os.Executable()
	if err != nil {
		e.t.Fatal(err)
	}
	childEnv := append(os.Environ(), helperEnv+"=1", "HELPER_SLEEP="+o.sleep.String(), "HELPER_RECORD="+s.record)
	if o.ignoreTerm {
		childEnv = append(childEnv, "HELPER_IGNORE_TERM=1")
	}
	if o.writeOutcome {
		childEnv = append(childEnv, "HELPER_WRITE_OUTCOME=1")
	}
	cfg := deployclient.Config{
		Client: &deployclient.Client{BaseURL: o.baseURL, TokenFile: e.tokenFile, HTTP: e.server.Client()},
		Group:  "orders", Instance: "orders-app", OperationID: s.op,
		Policy:  testPolicy,
		Command: []string{exe, "-test.run=^$"}, Env: childEnv,
		OutcomeFile: s.outcome,
		Logger:      slog.New(slog.NewJSONHandler(e.clientLog, nil)),
	}
	ctx, cancel := context.WithCancel(e.ctx)
	s.cancel = cancel
	e.t.Cleanup(cancel)
	go func() { s.done <- deployclient.Run(ctx, cfg) }()
	return s
}

// wait waits for the run; past limit the runner is interrupted (which
// stops the command) and the test fails: the command outlived its bound.
func (e *env) wait(s *started, limit time.Time, what string) deployclient.Result {
	e.t.Helper()
	select {
	case res := <-s.done:
		return res
	case <-time.After(time.Until(limit)):
	}
	s.cancel()
	res := <-s.done
	e.t.Errorf("%s: the run was still going at %s; interrupted, it ended with %s", what, limit.Format(time.RFC3339Nano), res.Cause)
	return res
}

func (e *env) readRecord(s *started) helperRecord {
	e.t.Helper()
	var rec helperRecord
	raw, err := os.ReadFile(s.record)
	if err != nil {
		e.t.Fatalf("the command left no record: %v", err)
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		e.t.Fatal(err)
	}
	return rec
}

// lease reads the operator's record of a lease (its authoritative expiry).
func (e *env) lease(kind leasestore.Kind, op string) leasestore.Record {
	e.t.Helper()
	r, ok, err := e.store.Get(e.ctx, e.ns, "orders", kind, op)
	if err != nil || !ok {
		e.t.Fatalf("lease %s/%s: ok=%v err=%v", kind, op, ok, err)
	}
	return r
}

// waitLog waits until the client logged msg n times.
func (e *env) waitLog(msg string, n int, timeout time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if len(e.clientRecords(msg)) >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("the client did not log %q %d times in %s:\n%s", msg, n, timeout, e.clientLog.String())
}

func (e *env) clientRecords(msg string) []map[string]any {
	var out []map[string]any
	for line := range strings.Lines(e.clientLog.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && (msg == "" || m["msg"] == msg) {
			out = append(out, m)
		}
	}
	return out
}

// checkClientLog: every line is JSON and no token appears.
func (e *env) checkClientLog() {
	out := e.clientLog.String()
	for _, s := range e.secrets {
		if strings.Contains(out, s) {
			e.t.Errorf("the client log contains a token")
		}
	}
	if strings.Contains(strings.ToLower(out), "bearer") {
		e.t.Errorf("the client log mentions a bearer credential")
	}
	for line := range strings.Lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			e.t.Errorf("client log line is not JSON: %q", line)
		}
	}
	// Both sides' records as docs/logs.md lists them.
	schema, err := logschema.Load()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, l := range []struct{ process, text string }{{logschema.DeployClient, out}, {logschema.Operator, e.serverLog.String()}} {
		ps, err := schema.CheckLines(l.process, strings.NewReader(l.text))
		if err != nil {
			e.t.Error(err)
		}
		for _, p := range ps {
			e.t.Errorf("%s log record not in docs/logs.md: %s", l.process, p)
		}
	}
	if e.t.Failed() {
		e.t.Logf("client log:\n%s", out)
	}
}

// status reads a raw answer with tok, to prove a token's fate.
func (e *env) status(tok string) int {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(e.ctx, http.MethodGet, e.server.URL+"/deploy/v1/groups/orders", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := e.server.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
