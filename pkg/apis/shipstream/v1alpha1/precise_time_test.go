package v1alpha1_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Status writes are skipped when the new status is semantically equal to
// the cached one (pkg/controller/status.go): a deadline must compare by the
// instant, whatever its location, and never panic on time.Time's
// unexported fields.
func TestPreciseTimeSemanticEquality(t *testing.T) {
	at := time.Date(2026, 12, 4, 4, 0, 20, 123456000, time.UTC)
	status := func(dl time.Time) v1alpha1.MysqlFailoverGroupStatus {
		p := v1alpha1.NewPreciseTime(dl)
		return v1alpha1.MysqlFailoverGroupStatus{Transition: &v1alpha1.Transition{ID: "f", SourceFenceDeadline: &p}}
	}
	if !equality.Semantic.DeepEqual(status(at), status(at.In(time.FixedZone("x", 3600)))) {
		t.Fatal("the same instant in another location compares unequal")
	}
	if equality.Semantic.DeepEqual(status(at), status(at.Add(time.Microsecond))) {
		t.Fatal("deadlines a microsecond apart compare equal")
	}
}
