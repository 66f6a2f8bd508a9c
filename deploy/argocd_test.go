package deploy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/testbed/argohealth"
)

const (
	argoHealthScript = "deploy/argocd/health-mysqlfailovergroup.lua"
	argoHealthKey    = "resource.customizations.health.shipstream.io_MysqlFailoverGroup"
)

func readArgoHealthScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(repo(argoHealthScript))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func cond(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "m", ObservedGeneration: 3, LastTransitionTime: metav1.Now()}
}

// groupAt is a group at metadata.generation 3 with this status.
func groupAt(st *v1alpha1.MysqlFailoverGroupStatus) *v1alpha1.MysqlFailoverGroup {
	g := &v1alpha1.MysqlFailoverGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: "shipstream.io/v1alpha1", Kind: "MysqlFailoverGroup"},
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "databases", Generation: 3},
	}
	if st != nil {
		g.Status = *st
	}
	return g
}

// healthy is the status of a Ready group at generation 3 (the topology
// manager's conditions after a bootstrap, as docs/topology.md lists them).
func healthy() *v1alpha1.MysqlFailoverGroupStatus {
	return &v1alpha1.MysqlFailoverGroupStatus{
		ObservedGeneration: 3, ActiveSite: "iad", TopologyGeneration: 1,
		Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy),
			cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonNotDegraded),
			cond(v1alpha1.ConditionRecoveryPending, metav1.ConditionFalse, v1alpha1.ReasonNoRecoveryPending),
			cond(v1alpha1.ConditionBootstrapping, metav1.ConditionFalse, v1alpha1.ReasonNotBootstrapping),
		},
	}
}

func with(st *v1alpha1.MysqlFailoverGroupStatus, c metav1.Condition) *v1alpha1.MysqlFailoverGroupStatus {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			st.Conditions[i] = c
			return st
		}
	}
	st.Conditions = append(st.Conditions, c)
	return st
}

// The health script gives the v1.7.0 polarity of every condition the
// operator writes (seed 003): status.observedGeneration behind the spec is
// Progressing whatever the conditions say; Degraded and RecoveryPending are
// abnormal when True; Bootstrapping (a clone) and Updating (also
// OrderedUpdateStalled, still in progress) are Progressing while True;
// Ready True is Healthy, False Degraded once an active site was published.
func TestArgoCDHealthCheck(t *testing.T) {
	script := readArgoHealthScript(t)
	behind := healthy()
	behind.ObservedGeneration = 2
	notBootstrapped := with(healthy(), cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNoWritablePrimary))
	notBootstrapped.ActiveSite = ""
	cases := []struct {
		name   string
		status *v1alpha1.MysqlFailoverGroupStatus
		want   string
		msg    string
	}{
		{"no status yet", nil, "Progressing", "Waiting"},
		{"Ready True/Healthy", healthy(), "Healthy", "Ready=True/Healthy"},
		{"observedGeneration behind", behind, "Progressing", "generation 3"},
		{"observedGeneration behind a Degraded status", func() *v1alpha1.MysqlFailoverGroupStatus {
			s := with(healthy(), cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonSiteUnhealthy))
			s.ObservedGeneration = 2
			return s
		}(), "Progressing", "observed 2"},
		{"Degraded True/SiteUnhealthy", with(healthy(), cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonSiteUnhealthy)), "Degraded", "Degraded=True/SiteUnhealthy"},
		{"Degraded True/CrossSiteAlert", with(healthy(), cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonCrossSiteAlert)), "Degraded", "CrossSiteAlert"},
		{"Degraded True/BootstrapFailed with Bootstrapping False/BootstrapFailed", with(with(healthy(),
			cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonBootstrapFailed)),
			cond(v1alpha1.ConditionBootstrapping, metav1.ConditionFalse, v1alpha1.ReasonBootstrapFailed)), "Degraded", "BootstrapFailed"},
		{"RecoveryPending True/DivergentTransactions", with(healthy(), cond(v1alpha1.ConditionRecoveryPending, metav1.ConditionTrue, v1alpha1.ReasonDivergentTransactions)), "Degraded", "RecoveryPending"},
		{"Bootstrapping True/Cloning", with(healthy(), cond(v1alpha1.ConditionBootstrapping, metav1.ConditionTrue, v1alpha1.ReasonCloning)), "Progressing", "Cloning"},
		{"Bootstrapping False/NotBootstrapping is not progress", with(healthy(), cond(v1alpha1.ConditionBootstrapping, metav1.ConditionFalse, v1alpha1.ReasonNotBootstrapping)), "Healthy", ""},
		{"Updating True/OrderedUpdateStalled", with(healthy(), cond(v1alpha1.ConditionUpdating, metav1.ConditionTrue, v1alpha1.ReasonOrderedUpdateStalled)), "Progressing", "OrderedUpdateStalled"},
		{"Ready False/NoWritablePrimary after a failover", with(healthy(), cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNoWritablePrimary)), "Degraded", "NoWritablePrimary"},
		{"Ready False/ReplicationUnhealthy", with(healthy(), cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonReplicationUnhealthy)), "Degraded", "ReplicationUnhealthy"},
		{"Ready False before the first active site", notBootstrapped, "Progressing", "NoWritablePrimary"},
		{"EncryptionAtRestReady False", with(healthy(), cond(v1alpha1.ConditionEncryptionAtRestReady, metav1.ConditionFalse, v1alpha1.ReasonKeyringNotSealed)), "Degraded", "EncryptionAtRestReady"},
		{"EncryptionAtRestReady True/AllSitesSealed", with(healthy(), cond(v1alpha1.ConditionEncryptionAtRestReady, metav1.ConditionTrue, v1alpha1.ReasonAllSitesSealed)), "Healthy", ""},
		{"TLSReady False/TLSVerificationFailed", with(healthy(), cond(v1alpha1.ConditionTLSReady, metav1.ConditionFalse, v1alpha1.ReasonTLSVerificationFailed)), "Degraded", "TLSReady"},
		{"TLSReady True/Verified", with(healthy(), cond(v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonTLSVerified)), "Healthy", ""},
	}
	for _, c := range cases {
		var obj any = groupAt(c.status)
		if c.status == nil {
			// As the API server serves a new object: no status key at all.
			obj = map[string]any{"apiVersion": "shipstream.io/v1alpha1", "kind": "MysqlFailoverGroup", "metadata": map[string]any{"name": "orders", "generation": 1}}
		}
		got, err := argohealth.Evaluate(script, obj)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got.Status != c.want || !strings.Contains(got.Message, c.msg) {
			t.Errorf("%s: %s %q, want %s with %q", c.name, got.Status, got.Message, c.want, c.msg)
		}
	}
}

// The component puts the script, byte for byte, under Argo CD's key into
// an existing argocd-cm, keeping its other keys.
func TestArgoCDComponentMergesIntoArgoCDConfigMap(t *testing.T) {
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, repo("deploy/argocd"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: argocd\nresources:\n  - argocd-cm.yaml\ncomponents:\n  - " + rel + "\n",
		"argocd-cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  labels:\n    app.kubernetes.io/part-of: argocd\ndata:\n  url: https://argocd.example.com\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, objs := kustomize(t, dir)
	if len(objs) != 1 || objs[0].Kind != "ConfigMap" || objs[0].name() != "argocd-cm" || objs[0].namespace() != "argocd" {
		t.Fatalf("rendered %+v, want the one argocd-cm", objs)
	}
	if got := dig(objs[0].raw, "data", argoHealthKey); got != readArgoHealthScript(t) {
		t.Errorf("argocd-cm %s differs from %s", argoHealthKey, argoHealthScript)
	}
	if dig(objs[0].raw, "data", "url") != "https://argocd.example.com" {
		t.Errorf("the merge dropped argocd-cm's own keys: %v", dig(objs[0].raw, "data"))
	}
}
