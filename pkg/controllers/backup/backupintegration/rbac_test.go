package backupintegration

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/backup"
)

// The whole run of an encrypted backup with the controller's clients
// authenticated as the operator's ServiceAccount, bound to nothing but
// deploy/base's ClusterRole: its informers, the key snapshot Secret, the
// Job (with its blocking owner reference), the pods it reads for the
// attempt, the status writes and the Events are all allowed.
func TestTheBackupRunsUnderTheInstalledRBAC(t *testing.T) {
	ctx := context.Background()
	e := newStoppedEnv(t) // the test's own writes stay the admin's
	startAsOperator(t, e)
	e.group([]v1alpha1.BackupProfile{e.profile("nightly", encrypted)})
	b := e.backup("nightly-1", "nightly")
	b = e.wait(b.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	if _, err := e.runPod(b.Name); err != nil {
		t.Fatalf("the upload step failed: %v", err)
	}
	b = e.wait(b.Name, v1alpha1.PhaseSucceeded, "", v1alpha1.ReasonSucceeded, "encrypted with AES-256-GCM")
	e.event(b.Name, v1alpha1.EventBackupSucceeded, corev1.EventTypeNormal)
	if _, err := e.ke.Kube.CoreV1().Secrets(e.ns).Get(ctx, b.Status.Encryption.KeySecretName, metav1.GetOptions{}); err != nil {
		t.Fatalf("the key snapshot: %v", err)
	}
}

// A provisioned PVC profile's backup under the same RBAC: the controller
// reads the claim (get), creates it, and reads the succeeded pod's
// termination message through the pods it lists.
func TestAProvisionedPVCBackupRunsUnderTheInstalledRBAC(t *testing.T) {
	e := newStoppedEnvNoS3(t)
	startAsOperator(t, e)
	k := e.kubelet()
	e.group([]v1alpha1.BackupProfile{provisionedProfile("local")})
	e.backup("b1", "local")
	e.wait("b1", v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	pod := e.runPodOn(k, "b1")
	b := e.wait("b1", v1alpha1.PhaseSucceeded, "", v1alpha1.ReasonSucceeded, "stored at pvc://"+groupName+"-backup-local/")
	e.checkOnClaim(k, b, groupName+"-backup-local", pod)
}

// startAsOperator runs e's controller with clients authenticated as the
// operator's ServiceAccount, bound to nothing but deploy/base's
// ClusterRole.
func startAsOperator(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	if _, err := cp.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bloodraven"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if out, errOut, err := cp.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(framework.RepoRoot(), "deploy/base/rbac.yaml")); err != nil {
		t.Fatalf("apply deploy/base/rbac.yaml: %v\n%s%s", err, out, errOut)
	}
	token, err := cp.MintToken(ctx, "bloodraven", "bloodraven", "https://kubernetes.default.svc.cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(cp.Config)
	cfg.BearerToken = token
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ship, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	asOperator := *e.ke
	asOperator.Kube, asOperator.Ship = kube, ship
	inst := asOperator.NewInstance()
	c, err := backup.New(inst.Deps, backup.Options{Image: uploadImage, Now: e.clock.Now, Resync: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	inst.Start(2, c)
	e.inst = inst
}
