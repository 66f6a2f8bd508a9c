package auxiliary

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

func TestActiveSiteIsReadFromRecordedStateOnly(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	g := &v1alpha1.MysqlFailoverGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}}
	g.Status.ActiveSite, g.Status.TopologyGeneration = "iad", 5
	g.Status.LastFailover = &v1alpha1.LastFailover{Time: at, Target: "dfw"}
	a := ActiveSite(g)
	if !a.Confirms("iad") || a.Since != nil || a.TopologyGeneration != 5 {
		t.Errorf("ActiveSite = %+v (a lastFailover to another site says nothing about since when iad is active)", a)
	}
	g.Status.LastFailover.Target = "iad"
	if a := ActiveSite(g); a.Since == nil || !a.Since.Equal(at.Time) {
		t.Errorf("Since = %v, want %v", a.Since, at)
	}
	for _, step := range []v1alpha1.TransitionStep{v1alpha1.StepRecorded, v1alpha1.StepPromoting, v1alpha1.StepRollingBack} {
		g.Status.Transition = &v1alpha1.Transition{ID: "x", SourceSite: "iad", TargetSite: "dfw", Step: step}
		if a := ActiveSite(g); a.Confirms("iad") || a.Confirms("dfw") || a.Transition.Step != string(step) {
			t.Errorf("step %s: %+v confirms a site", step, a)
		}
	}
}
