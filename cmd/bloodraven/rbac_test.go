package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/leaserevocation"
)

// apiAudience is the API server's own token audience (its issuer).
const apiAudience = "https://kubernetes.default.svc.cluster.local"

// serviceAccountKubeconfig writes a kubeconfig that authenticates as ns/sa.
func serviceAccountKubeconfig(t *testing.T, ns, sa string) string {
	t.Helper()
	token, err := cp.MintToken(context.Background(), ns, sa, apiAudience)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: cp.Config.Host, CertificateAuthorityData: cp.Config.CAData, CertificateAuthority: cp.Config.CAFile}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "sa"}
	cfg.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// The operator runs with nothing but the RBAC of deploy/base: it leads,
// reconciles MysqlDatabases and failover groups, writes their status,
// records Events, serves the deploy API (TokenReview, MysqlDatabase list,
// deployment Leases), clears the revoke-deployment-leases annotation with a
// patch, and logs no authorization failure.
func TestOperatorRunsWithTheInstalledRBAC(t *testing.T) {
	needControlPlane(t)
	ctx := context.Background()
	if out, errOut, err := cp.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(framework.RepoRoot(), "deploy/base")); err != nil {
		t.Fatalf("apply deploy/base: %v\n%s%s", err, out, errOut)
	}
	bin := buildOperator(t)
	ns := cp.NewNamespace(t)
	kubeconfig := serviceAccountKubeconfig(t, "bloodraven", "bloodraven")
	o := startOperator(t, bin, ns, "op-rbac", writeCert(t), "--kubeconfig="+kubeconfig, "--leader-elect-namespace=bloodraven", "--leader-elect-name=rbac-test-leader", "--backup-upload-image=ghcr.io/shipstream/bloodraven:test")
	waitUntil(t, "the operator to lead", 30*time.Second, o.leading)

	ship, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	db := &v1alpha1.MysqlDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	db.Spec.FailoverGroupRef.Name = "orders"
	db.Spec.DatabaseName = "app"
	db.Spec.DeploymentClients = []v1alpha1.DeploymentClient{{Namespace: ns, ServiceAccount: "deployer"}}
	if _, err := ship.ShipstreamV1alpha1().MysqlDatabases(ns).Create(ctx, db, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the database's status", 30*time.Second, func() bool {
		got, err := ship.ShipstreamV1alpha1().MysqlDatabases(ns).Get(ctx, "app", metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionFalse(got.Status.Conditions, v1alpha1.ConditionReady) &&
			meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady).Reason == v1alpha1.ReasonGroupNotYetCreated
	})
	// Deleting the resolved group records a Warning Event: Events are allowed.
	if _, err := ship.ShipstreamV1alpha1().MysqlFailoverGroups(ns).Create(ctx, twoSiteGroup(ns, "orders"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a DatabaseGroupResolved Event", 30*time.Second, func() bool {
		list, err := cp.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", v1alpha1.EventDatabaseGroupResolved).String()})
		return err == nil && len(list.Items) > 0
	})
	// The group-objects controller added its finalizer (update) and created each
	// site's StatefulSet, my.cnf ConfigMap and Services (create).
	waitUntil(t, "the group's finalizer and children", 30*time.Second, func() bool {
		g, err := ship.ShipstreamV1alpha1().MysqlFailoverGroups(ns).Get(ctx, "orders", metav1.GetOptions{})
		if err != nil || len(g.Finalizers) == 0 {
			return false
		}
		sel := metav1.ListOptions{LabelSelector: "bloodraven.shipstream.io/failover-group=orders"}
		sts, err1 := cp.Client().AppsV1().StatefulSets(ns).List(ctx, sel)
		cms, err2 := cp.Client().CoreV1().ConfigMaps(ns).List(ctx, sel)
		svcs, err3 := cp.Client().CoreV1().Services(ns).List(ctx, sel)
		return err1 == nil && err2 == nil && err3 == nil && len(sts.Items) == 2 && len(cms.Items) == 2 && len(svcs.Items) > 2
	})
	backupWaitsForItsProfile(t, ship, ns, "orders")
	exerciseDeployAPI(t, o, ns)
	revokeByAnnotation(t, ship, ns, "orders")
	for _, line := range strings.Split(o.stdout.String(), "\n") {
		if strings.Contains(strings.ToLower(line), "forbidden") {
			t.Errorf("authorization failure in the operator's log: %s", line)
		}
	}
	assertJSONLogs(t, o)
}

// The backup controller runs under the same RBAC: it watches MysqlBackups,
// writes their status and records the Warning Event of a profile the group
// does not have.
func backupWaitsForItsProfile(t *testing.T, ship versioned.Interface, ns, group string) {
	t.Helper()
	ctx := context.Background()
	b := &v1alpha1.MysqlBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "adhoc"}}
	b.Spec.FailoverGroupRef.Name = group
	b.Spec.ProfileName = "nightly"
	if _, err := ship.ShipstreamV1alpha1().MysqlBackups(ns).Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the backup's WaitingForProfile status", 30*time.Second, func() bool {
		got, err := ship.ShipstreamV1alpha1().MysqlBackups(ns).Get(ctx, b.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == v1alpha1.PhasePending && got.Status.PendingReason == "WaitingForProfile"
	})
	waitUntil(t, "a BackupDeferredProfileNotFound Event", 30*time.Second, func() bool {
		list, err := cp.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", v1alpha1.EventBackupDeferredProfileNotFound).String()})
		return err == nil && len(list.Items) > 0
	})
}

func twoSiteGroup(ns, name string) *v1alpha1.MysqlFailoverGroup {
	site := func(n string, id int64, ip string) v1alpha1.SiteSpec {
		return v1alpha1.SiteSpec{
			Name: n, Role: "PrimaryCandidate", ServerID: id, Zone: "zone-" + n, LoadBalancerIP: ip,
			TaintNodeSelector: map[string]string{"bloodraven.shipstream.io/site": n},
			Storage:           v1alpha1.StorageSpec{StorageClassName: "fast", Size: "10Gi"},
		}
	}
	return &v1alpha1.MysqlFailoverGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MysqlFailoverGroupSpec{
			Sites:       []v1alpha1.SiteSpec{site("iad", 101, "10.0.1.1"), site("pdx", 102, "10.0.2.1")},
			Credentials: v1alpha1.CredentialsSpec{OperatorSecretName: name + "-operator"},
			DNS:         v1alpha1.DNSSpec{Hostname: name + ".db.example.com"},
		},
	}
}

// exerciseDeployAPI reads the group document and takes a migration lease as a
// declared deployment client: TokenReview create, MysqlDatabase list,
// MysqlFailoverGroup get, Lease list/get/create. A Forbidden from any of
// them is a 500, not the answers wanted here.
func exerciseDeployAPI(t *testing.T, o *operatorProc, ns string) {
	t.Helper()
	ctx := context.Background()
	token, err := cp.MintToken(ctx, ns, "deployer", "bloodraven-deploy")
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, method, "https://"+o.tl+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := insecureTLS.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call(http.MethodGet, "/deploy/v1/groups/orders", ""); code != http.StatusOK {
		t.Fatalf("GET group document = %d %s, want 200", code, body)
	}
	code, body := call(http.MethodPost, "/deploy/v1/groups/orders/leases", `{"kind":"migration","operationId":"5d6f8a51-7c1e-4b2a-9e3d-0a1b2c3d4e5f","instance":"app","ttlSeconds":120}`)
	if code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("POST migration lease = %d %s, want it granted", code, body)
	}
}

// revokeByAnnotation sets the revoke-deployment-leases annotation and waits
// for the deploy-lease controller to revoke the lease (a DeploymentLeaseRevoked
// Event) and clear the annotation with its patch.
func revokeByAnnotation(t *testing.T, ship versioned.Interface, ns, group string) {
	t.Helper()
	ctx := context.Background()
	groups := ship.ShipstreamV1alpha1().MysqlFailoverGroups(ns)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"rbac-check"}}}`, leaserevocation.RevokeAnnotation)
	if _, err := groups.Patch(ctx, group, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a DeploymentLeaseRevoked Event", 30*time.Second, func() bool {
		list, err := cp.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", v1alpha1.EventDeploymentLeaseRevoked).String()})
		return err == nil && len(list.Items) > 0
	})
	waitUntil(t, "the revoke annotation to be cleared", 30*time.Second, func() bool {
		g, err := groups.Get(ctx, group, metav1.GetOptions{})
		if err != nil {
			return false
		}
		_, present := g.Annotations[leaserevocation.RevokeAnnotation]
		return !present
	})
}
