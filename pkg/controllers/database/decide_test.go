package database

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

func db(gen int64, prevReason string) *v1alpha1.MysqlDatabase {
	d := &v1alpha1.MysqlDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", Generation: gen}}
	d.Spec.FailoverGroupRef.Name = "orders"
	d.Spec.DatabaseName = "orders"
	if prevReason != "" {
		d.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: prevReason, LastTransitionTime: metav1.NewTime(time.Unix(100, 0))}}
	}
	return d
}

func group(ready metav1.ConditionStatus, deleting bool) *v1alpha1.MysqlFailoverGroup {
	g := &v1alpha1.MysqlFailoverGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}}
	if ready != "" {
		g.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: ready, Reason: "X"}}
	}
	if deleting {
		now := metav1.Now()
		g.DeletionTimestamp = &now
	}
	return g
}

func TestDecide(t *testing.T) {
	now := metav1.NewTime(time.Unix(200, 0))
	deleting := db(3, v1alpha1.ReasonGroupNotYetCreated)
	deleting.DeletionTimestamp = &now
	cases := []struct {
		name       string
		db         *v1alpha1.MysqlDatabase
		group      *v1alpha1.MysqlFailoverGroup
		phase      v1alpha1.DatabasePhase
		reason     string
		eventType  string
		eventReasn string
	}{
		{"first look, no group", db(1, ""), nil, PhasePending, v1alpha1.ReasonGroupNotYetCreated, "", ""},
		{"still no group", db(1, v1alpha1.ReasonGroupNotYetCreated), nil, PhasePending, v1alpha1.ReasonGroupNotYetCreated, "", ""},
		{"group appears, not ready", db(1, v1alpha1.ReasonGroupNotYetCreated), group("", false), PhasePending, v1alpha1.ReasonGroupNotReady, "Normal", v1alpha1.EventDatabaseGroupResolved},
		{"group found at first look", db(1, ""), group(metav1.ConditionFalse, false), PhasePending, v1alpha1.ReasonGroupNotReady, "Normal", v1alpha1.EventDatabaseGroupResolved},
		{"group ready", db(2, v1alpha1.ReasonGroupNotReady), group(metav1.ConditionTrue, false), PhaseApplying, v1alpha1.ReasonApplying, "", ""},
		{"group unknown", db(2, v1alpha1.ReasonApplying), group(metav1.ConditionUnknown, false), PhasePending, v1alpha1.ReasonGroupNotReady, "", ""},
		{"group deleting", db(2, v1alpha1.ReasonApplying), group(metav1.ConditionTrue, true), PhasePending, v1alpha1.ReasonGroupDeleting, "", ""},
		{"group gone", db(2, v1alpha1.ReasonApplying), nil, PhasePending, v1alpha1.ReasonGroupNotYetCreated, "Warning", v1alpha1.EventDatabaseGroupLost},
		{"database deleting", deleting, nil, PhaseDeleting, v1alpha1.ReasonDeleting, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.db, c.group, now)
			if d.Status.Phase != c.phase {
				t.Errorf("phase = %s, want %s", d.Status.Phase, c.phase)
			}
			r := meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionReady)
			if r == nil || r.Reason != c.reason || r.Status != metav1.ConditionFalse {
				t.Fatalf("Ready = %+v, want False/%s", r, c.reason)
			}
			if r.ObservedGeneration != c.db.Generation || d.Status.ObservedGeneration != c.db.Generation {
				t.Errorf("observedGeneration = %d/%d, want %d", d.Status.ObservedGeneration, r.ObservedGeneration, c.db.Generation)
			}
			if r.Message == "" || r.Message != d.Status.Message {
				t.Errorf("message %q / status message %q", r.Message, d.Status.Message)
			}
			if d.EventType != c.eventType || d.EventReason != c.eventReasn {
				t.Errorf("event = %s/%s, want %s/%s", d.EventType, d.EventReason, c.eventType, c.eventReasn)
			}
			// The Ready status stays False in every case, so an existing
			// condition keeps its transition time.
			if len(c.db.Status.Conditions) > 0 && !r.LastTransitionTime.Equal(&c.db.Status.Conditions[0].LastTransitionTime) {
				t.Errorf("lastTransitionTime moved to %v without a status change", r.LastTransitionTime)
			}
		})
	}
}

func TestDecideKeepsOtherConditionsAndDoesNotMutateInput(t *testing.T) {
	d := db(1, "")
	d.Status.Conditions = append(d.Status.Conditions, metav1.Condition{Type: "SchemaApplied", Status: metav1.ConditionTrue, Reason: "Applied"})
	d.Status.AppliedCollation = "utf8mb4_bin"
	out := Decide(d, nil, metav1.Now())
	if meta.FindStatusCondition(out.Status.Conditions, "SchemaApplied") == nil || out.Status.AppliedCollation != "utf8mb4_bin" {
		t.Fatalf("Decide dropped fields it does not own: %+v", out.Status)
	}
	if d.Status.Phase != "" || len(d.Status.Conditions) != 1 {
		t.Fatalf("input mutated: %+v", d.Status)
	}
}
