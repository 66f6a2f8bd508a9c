package operator

import (
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	shipfake "github.com/shipstream/bloodraven/generated/clientset/versioned/fake"
)

func TestInformersCoverTheWatchedNamespaces(t *testing.T) {
	some := newInformers(fake.NewClientset(), shipfake.NewSimpleClientset(), []string{"shop", "billing"})
	if len(some.Shipstream) != 2 || len(some.Kube) != 2 {
		t.Fatalf("factories = %d/%d, want one pair per namespace", len(some.Shipstream), len(some.Kube))
	}
	if some.ShipstreamFor("shop") == nil || some.KubeFor("billing") == nil {
		t.Error("a watched namespace has no factory")
	}
	if some.ShipstreamFor("shop") == some.ShipstreamFor("billing") {
		t.Error("two namespaces share one namespaced factory")
	}
	if some.ShipstreamFor("other") != nil || some.KubeFor("other") != nil {
		t.Error("an unwatched namespace got a factory")
	}

	all := newInformers(fake.NewClientset(), shipfake.NewSimpleClientset(), nil)
	if len(all.Shipstream) != 1 || all.ShipstreamFor("anything") == nil || all.ShipstreamFor("anything") != all.ShipstreamFor("else") {
		t.Error("watching all namespaces must use one factory for every namespace")
	}
}
