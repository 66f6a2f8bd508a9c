package backup

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/shipstream/bloodraven/generated/clientset/versioned/fake"
	shipinformers "github.com/shipstream/bloodraven/generated/informers/externalversions"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/operator"
)

// The group's slot is held by the backup this process saw claim it even
// while the cache still shows that backup unclaimed (its status write not
// seen yet): the claim was the write, the cache only lags it. The cache is
// filled by hand here, as an informer would fill it, so the lag is certain.
func TestTheSlotHolderBlocksWhileTheCacheLags(t *testing.T) {
	f := shipinformers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	inf := f.Shipstream().V1alpha1().MysqlBackups().Informer()
	if err := inf.AddIndexers(cache.Indexers{byGroupIndex: indexByGroup}); err != nil {
		t.Fatal(err)
	}
	c := &Controller{informers: &operator.Informers{Shipstream: map[string]shipinformers.SharedInformerFactory{operator.AllNamespaces: f}}}
	mk := func(name, uid, job string, phase v1alpha1.ResourcePhase) *v1alpha1.MysqlBackup {
		b := testBackup()
		b.Name, b.UID, b.Status.JobName, b.Status.Phase = name, types.UID(uid), job, phase
		return b
	}
	first := mk("first", "u1", "", v1alpha1.PhasePending) // claimed, the cache does not show it yet
	second := mk("second", "u2", "", "")
	for _, b := range []*v1alpha1.MysqlBackup{first, second} {
		if err := inf.GetIndexer().Add(b); err != nil {
			t.Fatal(err)
		}
	}
	slot := &groupSlot{holder: first.UID, holderName: first.Name}
	if got, err := c.blocker(second, slot); err != nil || got != "first" {
		t.Fatalf("blocker %q, %v; want first, which this process saw claim the slot", got, err)
	}
	// The holder itself is never blocked by its own claim.
	if got, _ := c.blocker(first, slot); got != "" {
		t.Fatalf("the holder is blocked by %q", got)
	}
	// Once the cache shows the holder finished, the slot is free.
	done := first.DeepCopy()
	done.Status.Phase, done.Status.JobName = v1alpha1.PhaseSucceeded, "j"
	if err := inf.GetIndexer().Update(done); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.blocker(second, slot); got != "" || slot.holder != "" {
		t.Fatalf("blocker %q, holder %q after the holder finished", got, slot.holder)
	}
	// A claimed, unfinished backup in the cache blocks, oldest first.
	older := mk("older", "u3", "job-older", v1alpha1.PhaseRunning)
	older.CreationTimestamp = metav1.NewTime(t0.Add(-1))
	newer := mk("newer", "u4", "job-newer", v1alpha1.PhaseRunning)
	for _, b := range []*v1alpha1.MysqlBackup{older, newer} {
		if err := inf.GetIndexer().Add(b); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := c.blocker(second, slot); got != "older" {
		t.Fatalf("blocker %q, want older", got)
	}
}
