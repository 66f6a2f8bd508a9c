package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// The plugin's tests run its commands in-process against a real
// kube-apiserver with the CRDs installed, connecting through the control
// plane's kubeconfig exactly as a user's kubectl would. No operator runs:
// the tests stage status with UpdateStatus and check the annotations the
// commands leave for the operator.

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	framework.Main(m, framework.Options{CRDDir: "deploy/crds"}, &cp)
}

const (
	uuidIAD = "aaaaaaaa-1111-1111-1111-111111111111"
	uuidPDX = "bbbbbbbb-2222-2222-2222-222222222222"
)

// env is one test's namespace with the sample group "orders" in it.
type env struct {
	t    *testing.T
	ns   string
	ship versioned.Interface
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if cp == nil {
		t.Skip("integration test: needs the control plane (not run with -short)")
	}
	ship, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ns: cp.NewNamespace(t), ship: ship}
	e.createSample()
	return e
}

func (e *env) createSample() {
	b, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "deploy", "samples", "mysqlfailovergroup.yaml"))
	if err != nil {
		e.t.Fatal(err)
	}
	var g v1alpha1.MysqlFailoverGroup
	if err := yaml.UnmarshalStrict(b, &g); err != nil {
		e.t.Fatal(err)
	}
	g.Namespace = e.ns
	if _, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Create(context.Background(), &g, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create group: %v", err)
	}
}

func (e *env) group() *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	g, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Get(context.Background(), "orders", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return g
}

// stage writes status as the operator would, through the status
// subresource.
func (e *env) stage(mutate func(st *v1alpha1.MysqlFailoverGroupStatus)) {
	e.t.Helper()
	api := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g, err := api.Get(context.Background(), "orders", metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(&g.Status)
		_, err = api.UpdateStatus(context.Background(), g, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("stage status: %v", err)
	}
}

// stageDiverged is iad active; pdx holds two transactions of its own the
// operator recorded as divergent; reader is three behind.
func (e *env) stageDiverged() {
	at := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	e.stage(func(st *v1alpha1.MysqlFailoverGroupStatus) {
		st.ActiveSite, st.TopologyGeneration = "iad", 4
		lag := int64(2)
		st.Sites = []v1alpha1.SiteStatus{
			{Name: "iad", Role: v1alpha1.SiteRolePrimaryCandidate, State: v1alpha1.SiteWritable, Replication: v1alpha1.ReplicationNotReplicating, GTIDExecuted: uuidIAD + ":1-50"},
			{Name: "pdx", Role: v1alpha1.SiteRolePrimaryCandidate, State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationStopped,
				GTIDExecuted: uuidIAD + ":1-50," + uuidPDX + ":1-2", DivergentGTID: uuidPDX + ":1-2", DivergentTransactionCount: 2,
				DivergenceDetectedBy: v1alpha1.DivergenceByReplicaAudit, DivergenceComparedTo: "iad"},
			{Name: "reader", Role: v1alpha1.SiteRoleReadOnly, State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationRunning, SecondsBehindSource: &lag, GTIDExecuted: uuidIAD + ":1-47"},
		}
		st.Conditions = []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonHealthy, Message: "iad serves", LastTransitionTime: at},
			{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonDivergentTransactions, Message: "site pdx holds 2 transactions iad lacks", LastTransitionTime: at},
		}
	})
}

// run runs the plugin with the control plane's kubeconfig, the flags after
// the positional arguments as users type them, and no terminal.
func (e *env) run(stdin string, interactive bool, args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	var out, errOut bytes.Buffer
	a := &app{in: strings.NewReader(stdin), out: &out, errOut: &errOut, interactive: interactive}
	code = a.run(append(args, "--kubeconfig", cp.KubeconfigPath, "-n", e.ns))
	return out.String(), errOut.String(), code
}

func (e *env) mustRun(args ...string) string {
	e.t.Helper()
	out, errOut, code := e.run("", false, args...)
	if code != 0 {
		e.t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func (e *env) annotation(key string) (string, bool) {
	v, ok := e.group().Annotations[key]
	return v, ok
}

// kubeconfigWithNamespace writes a copy of the control plane's kubeconfig
// whose current context defaults to ns, as `kubectl config set-context
// --current --namespace` would.
func kubeconfigWithNamespace(t *testing.T, ns string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = ns
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
