package topologymanager

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/observe"
	"github.com/shipstream/bloodraven/pkg/protocol"
)

// A failed poll of the active site is repeated at once only when its
// sidecar, in the same poll, reported that the very instance last seen
// writable exited, and only until the site counts as Unreachable.
func TestCorroboratedRepoll(t *testing.T) {
	inst := protocol.Instance{PodUID: "pod-1", ContainerID: "process:42:7", ServerUUID: "3e11fa47-71ca-11e1-9e33-c80aa9429562"}
	g := &v1alpha1.MysqlFailoverGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}}
	g.Spec.PollInterval = &metav1.Duration{Duration: 2 * time.Second}
	g.Status.ActiveSite = "iad"
	exited := func(i protocol.Instance) sidecarAnswer {
		return sidecarAnswer{answered: true, process: &protocol.MySQLProcess{Instance: i, Exited: true}}
	}
	other := inst
	other.PodUID = "pod-2"
	cases := []struct {
		name   string
		answer sidecarAnswer
		failed bool
		reach  observe.Reachability
		want   time.Duration
	}{
		{"the instance last seen writable exited", exited(inst), true, observe.Suspect, 100 * time.Millisecond},
		{"already Unreachable: the failover decides", exited(inst), true, observe.Unreachable, 0},
		{"the poll succeeded", exited(inst), false, observe.Reachable, 0},
		{"another pod's instance exited", exited(other), true, observe.Suspect, 0},
		{"the process runs", sidecarAnswer{answered: true, process: &protocol.MySQLProcess{Instance: inst}}, true, observe.Suspect, 0},
		{"no process reported (an older sidecar)", sidecarAnswer{answered: true}, true, observe.Suspect, 0},
		{"the sidecar did not answer", sidecarAnswer{}, true, observe.Suspect, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &mpass{m: &Manager{tracker: observe.NewTracker[Sample](nil)}, g: g, key: "shop/orders", st: newGroupState()}
			p.st.lastWritable["iad"] = inst
			p.noteSidecar("iad", c.answer, c.failed)
			results := map[string]observe.Result[Sample]{"iad": {Health: observe.Health{Reach: c.reach}}}
			if got := p.corroboratedRepoll(g, results); got != c.want {
				t.Fatalf("next poll in %s, want %s", got, c.want)
			}
		})
	}
}
