package leaserevocation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/leasestore"
)

// The controller's behaviour against the API server (revocation, Events,
// metric, annotation clearing, expiry) is tested in
// pkg/deployapi/deployapiintegration; this covers the event mapping.
func TestGroupOfLease(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{leasestore.LabelGroup: "orders"}, "db/orders"},
		{map[string]string{leasestore.LabelMutexGroup: "orders"}, "db/orders"},
		{map[string]string{"app": "leader-election"}, ""},
		{nil, ""},
	} {
		keys := groupOfLease(&metav1.ObjectMeta{Namespace: "db", Name: "x", Labels: tc.labels})
		got := ""
		if len(keys) == 1 {
			got = keys[0].String()
		}
		if got != tc.want || len(keys) > 1 {
			t.Errorf("labels %v: keys %v, want %q", tc.labels, keys, tc.want)
		}
	}
}
