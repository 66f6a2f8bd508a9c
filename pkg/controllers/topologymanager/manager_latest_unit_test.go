package topologymanager

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

func groupAt(uid types.UID, rv string, gen int64) *v1alpha1.MysqlFailoverGroup {
	g := &v1alpha1.MysqlFailoverGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orders", UID: uid, ResourceVersion: rv}}
	g.Status.TopologyGeneration = gen
	return g
}

// A pass that starts before the informer delivered the previous pass's
// write decides on that write, not on the older cached copy; a newer
// cached copy, or another object of the same name, wins over it.
func TestAPassDecidesOnTheNewestCopyItKnows(t *testing.T) {
	m := &Manager{groups: map[string]*groupState{}}
	m.remember(groupAt("u1", "10", 1))
	if got := m.freshest(groupAt("u1", "9", 0)); got.ResourceVersion != "10" || got.Status.TopologyGeneration != 1 {
		t.Fatalf("a stale cached copy was used: rv %s generation %d", got.ResourceVersion, got.Status.TopologyGeneration)
	}
	if got := m.freshest(groupAt("u1", "10", 1)); got.ResourceVersion != "10" {
		t.Fatalf("the cache's copy of the same write: rv %s", got.ResourceVersion)
	}
	if got := m.freshest(groupAt("u1", "11", 2)); got.ResourceVersion != "11" || got.Status.TopologyGeneration != 2 {
		t.Fatalf("a newer cached copy was not used: rv %s", got.ResourceVersion)
	}
	m.remember(groupAt("u1", "20", 3))
	if got := m.freshest(groupAt("u2", "5", 0)); got.UID != "u2" {
		t.Fatalf("a re-created group (another UID) got the old object's copy: %s", got.UID)
	}
	// The remembered copy is a copy: a pass changing its object does not
	// change what the next pass starts from.
	m.remember(groupAt("u3", "30", 4))
	g := m.freshest(groupAt("u3", "29", 0))
	g.Status.TopologyGeneration = 99
	if again := m.freshest(groupAt("u3", "29", 0)); again.Status.TopologyGeneration != 4 {
		t.Fatalf("the remembered copy was changed through a pass's object: generation %d", again.Status.TopologyGeneration)
	}
	m.remember(nil) // a pass that returned no object changes nothing
}
