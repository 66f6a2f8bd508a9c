package groupobjects

import (
	"fmt"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Every combination of readOnlyMaxLagSeconds and maxLagSeconds omitted, 0
// and N, against lags around the limit: omitted inherits maxLagSeconds,
// itself 300 when omitted; an explicit 0 admits only zero lag.
func TestReaderLagLimitAndPool(t *testing.T) {
	values := map[string]*int32{"omitted": nil, "0": ptr.To(int32(0)), "30": ptr.To(int32(30)), "600": ptr.To(int32(600))}
	for roName, ro := range values {
		for maxName, maxLag := range values {
			var spec *v1alpha1.ReplicationSpec
			if ro != nil || maxLag != nil {
				spec = &v1alpha1.ReplicationSpec{ReadOnlyMaxLagSeconds: ro, MaxLagSeconds: maxLag}
			}
			want := int64(300)
			switch {
			case ro != nil:
				want = int64(*ro)
			case maxLag != nil:
				want = int64(*maxLag)
			}
			name := fmt.Sprintf("readOnlyMaxLagSeconds=%s maxLagSeconds=%s", roName, maxName)
			limit := ReaderLagLimit(spec)
			if limit != want {
				t.Errorf("%s: limit %d, want %d", name, limit, want)
			}
			for _, lag := range []int64{0, 1, 29, 30, 31, 299, 300, 301, 600, 601} {
				st := &v1alpha1.SiteStatus{Name: "reader", State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationRunning, SecondsBehindSource: ptr.To(lag)}
				if got := InReadPool(st, limit); got != (lag <= want) {
					t.Errorf("%s, lag %d: in pool %v", name, lag, got)
				}
			}
		}
	}
	if ReaderLagLimit(nil) != 300 || ReaderLagLimit(&v1alpha1.ReplicationSpec{}) != 300 {
		t.Errorf("no replication spec: limit %d / %d, want 300", ReaderLagLimit(nil), ReaderLagLimit(&v1alpha1.ReplicationSpec{}))
	}
}

// A reader with no known lag, or not healthy, is out of the pool whatever
// the limit.
func TestReadPoolIsHealthGated(t *testing.T) {
	zero := ptr.To(int64(0))
	for name, st := range map[string]*v1alpha1.SiteStatus{
		"no status":       nil,
		"lag unknown":     {State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationRunning},
		"unreachable":     {State: v1alpha1.SiteUnreachable, Replication: v1alpha1.ReplicationRunning, SecondsBehindSource: zero},
		"state unknown":   {State: v1alpha1.SiteUnknown, Replication: v1alpha1.ReplicationRunning, SecondsBehindSource: zero},
		"writable":        {State: v1alpha1.SiteWritable, Replication: v1alpha1.ReplicationRunning, SecondsBehindSource: zero},
		"not replicating": {State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationStopped, SecondsBehindSource: zero},
	} {
		if InReadPool(st, 86400) {
			t.Errorf("%s: in the pool", name)
		}
	}
}
