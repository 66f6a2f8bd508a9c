package managerintegration

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// Issue 21, hole 5: the operator dies right after the promotion's
// MakeWritable, before it stopped the other followers' receivers. The
// restarted operator stops them in its next step, before and whether or
// not it manages to repoint them (its repoints are held here, as a slow or
// failing CHANGE REPLICATION SOURCE would be): judged by the reader's
// replication threads on its simulated server.
func TestReceiversFromTheOldPrimaryStopAfterACrashPastMakeWritable(t *testing.T) {
	e := newEnv(t, threeSites)
	var armed atomic.Bool
	died := make(chan struct{})
	var once sync.Once
	var first *operatorRun
	first = e.startOperator(withFailover, func(o *topologymanager.Options) {
		o.BeforeMutation = func(a topology.Action) {
			if armed.Load() && a.Kind == topology.StopReceiver {
				once.Do(func() { first.kill(); close(died) })
			}
		}
	})
	e.create(e.failoverGroup(threeSites))
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.waitContact("iad")
	armed.Store(true)
	e.sites["iad"].Crash()
	select {
	case <-died:
	case <-time.After(waitFor):
		t.Fatal("no StopReceiver after the promotion")
	}
	first.stop()
	if s := e.sites["pdx"].Snapshot(); s.SuperReadOnly {
		t.Fatalf("pdx not made writable before the crash: %s", s)
	}
	if s := e.sites["reader"].Snapshot(); s.IORunning == "No" {
		t.Fatalf("the reader's receiver already stopped: %s", s)
	}

	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	e.startOperator(withFailover, func(o *topologymanager.Options) {
		o.BeforeMutation = func(a topology.Action) {
			if a.Kind == topology.Repoint {
				<-release
			}
		}
	})
	eventually(t, 10*time.Second, "the reader's receiver from iad stopped by the restarted operator", func() error {
		if s := e.sites["reader"].Snapshot(); s.IORunning != "No" {
			return fmt.Errorf("reader %s", s)
		}
		return nil
	})
	close(release)
	e.waitActive("pdx", 2)
}
