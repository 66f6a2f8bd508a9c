// Package smoke proves the test control plane is a real Kubernetes API
// server: the things Bloodraven's controllers rely on work against it.
package smoke

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/e2e/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{ControllerManager: true}, &cp)
}

func TestNamespaceAndLease(t *testing.T) {
	ctx := context.Background()
	ns := cp.NewNamespace(t)
	leases := cp.Client().CoordinationV1().Leases(ns)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), LeaseDurationSeconds: ptr.To[int32](15)},
	}
	created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create lease: %v", err)
	}
	got, err := leases.Get(ctx, "smoke", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get lease: %v", err)
	}
	if got.Spec.HolderIdentity == nil || *got.Spec.HolderIdentity != "a" {
		t.Fatalf("holder = %v, want a", got.Spec.HolderIdentity)
	}

	// A write carrying a stale resourceVersion must be refused: the
	// operator's intent writes depend on this precondition.
	got.Spec.HolderIdentity = ptr.To("b")
	if _, err := leases.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update lease: %v", err)
	}
	created.Spec.HolderIdentity = ptr.To("c")
	_, err = leases.Update(ctx, created, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("update with stale resourceVersion: err = %v, want a Conflict", err)
	}
}

func TestTokenReviewAudience(t *testing.T) {
	ctx := context.Background()
	ns := cp.NewNamespace(t)
	token, err := cp.MintToken(ctx, ns, "deployer", framework.Audience)
	if err != nil {
		t.Fatal(err)
	}
	review := func(audience string) *authenticationv1.TokenReviewStatus {
		t.Helper()
		tr, err := cp.Client().AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{audience}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("TokenReview for %q: %v", audience, err)
		}
		return &tr.Status
	}

	ok := review(framework.Audience)
	if !ok.Authenticated {
		t.Fatalf("token for %q not authenticated for that audience: %q", framework.Audience, ok.Error)
	}
	if want := "system:serviceaccount:" + ns + ":deployer"; ok.User.Username != want {
		t.Fatalf("username = %q, want %q", ok.User.Username, want)
	}
	if len(ok.Audiences) != 1 || ok.Audiences[0] != framework.Audience {
		t.Fatalf("audiences = %v, want [%s]", ok.Audiences, framework.Audience)
	}

	if other := review("some-other-audience"); other.Authenticated {
		t.Fatalf("token for %q was accepted for another audience", framework.Audience)
	}
}

func TestControllerManagerCreatesDefaultServiceAccount(t *testing.T) {
	ctx := context.Background()
	ns := cp.NewNamespace(t)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Client().CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("namespace %s got no default ServiceAccount from kube-controller-manager: %v", ns, err)
	}
}

func TestKubectlTalksToTheServer(t *testing.T) {
	ns := cp.NewNamespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "via-client"}}
	if _, err := cp.Client().CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := cp.Kubectl(context.Background(), "get", "configmap", "via-client", "-n", ns, "-o", "name")
	if err != nil {
		t.Fatalf("kubectl: %v: %s", err, stderr)
	}
	if out != "configmap/via-client\n" {
		t.Fatalf("kubectl output = %q", out)
	}
}
