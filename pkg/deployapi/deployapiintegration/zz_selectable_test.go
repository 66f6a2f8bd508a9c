package deployapiintegration_test

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shipstream/bloodraven/pkg/deployapi"
)

// enableSelectableGroupRef declares spec.failoverGroupRef.name a selectable
// field of the installed MysqlDatabase CRD, so the authorizer's field
// selector is served. (This file sorts last: the tests before it exercise
// the CRD as shipped, where the authorizer falls back to a full list.)
func enableSelectableGroupRef(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	client, err := apiextensionsclient.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(ctx, "mysqldatabases.shipstream.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".spec.failoverGroupRef.name"}}
	}
	if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("declare the selectable field: %v", err)
	}
	ship := newEnv(t).ship
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := ship.ShipstreamV1alpha1().MysqlDatabases("").List(ctx, metav1.ListOptions{FieldSelector: "spec.failoverGroupRef.name=x"})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the field selector is not served: %v", err)
	}
}

func TestAuthorizationThroughFieldSelector(t *testing.T) {
	enableSelectableGroupRef(t)
	e := newEnv(t)
	nsA, nsB, appNS := cp.NewNamespace(t), cp.NewNamespace(t), cp.NewNamespace(t)
	e.group(nsA, "orders", 1)
	e.group(nsB, "orders", 2)
	e.database(nsA, "orders-east", "orders", client(appNS, "deployer"))
	e.database(nsB, "orders-west", "orders", client(appNS, "deployer"))
	e.database(nsA, "billing-app", "billing", client(appNS, "deployer"))
	in := e.newInstance()
	tok := e.mint(appNS, "deployer", deployapi.DefaultAudience)
	stranger := e.mint(appNS, "stranger", deployapi.DefaultAudience)

	e.expect(e.do(in, "GET", "/deploy/v1/groups/orders", tok, nil, nil), 403, "forbidden") // ambiguous
	e.expect(e.do(in, "GET", "/deploy/v1/groups/orders?instance=orders-west", tok, nil, nil), 200, "")
	e.expect(e.do(in, "GET", "/deploy/v1/groups/orders?instance=billing-app", tok, nil, nil), 403, "forbidden")
	e.expect(e.do(in, "GET", "/deploy/v1/groups/billing", stranger, nil, nil), 403, "forbidden")
	r := e.do(in, "POST", "/deploy/v1/groups/orders/leases", tok, grantBody("migration", opA, "orders-east", 30), nil)
	e.expect(r, 201, "")
	if r.str("namespace") != nsA {
		t.Fatalf("grant in %s, want %s", r.str("namespace"), nsA)
	}
}
