// Package database is the MysqlDatabase controller. This file holds its pure
// decision: given a MysqlDatabase and what the API server says about its
// group, the status it must carry. The controller (controller.go) reads the
// listers and writes the result.
package database

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Phases of a MysqlDatabase (the CRD's enum).
const (
	PhasePending  v1alpha1.DatabasePhase = "Pending"
	PhaseApplying v1alpha1.DatabasePhase = "Applying"
	PhaseReady    v1alpha1.DatabasePhase = "Ready"
	PhaseFailed   v1alpha1.DatabasePhase = "Failed"
	PhaseDeleting v1alpha1.DatabasePhase = "Deleting"
)

// Decision is the status a MysqlDatabase must carry and the Event, if any,
// that the change deserves.
type Decision struct {
	Status v1alpha1.MysqlDatabaseStatus
	// EventType and EventReason are empty when no Event is due.
	EventType, EventReason, EventMessage string
}

// Decide computes the status of db given its group (nil when the group does
// not exist). It keeps conditions other than Ready and the applied fields,
// which the MySQL side of the controller owns. now stamps a Ready condition
// whose status changes.
func Decide(db *v1alpha1.MysqlDatabase, group *v1alpha1.MysqlFailoverGroup, now metav1.Time) Decision {
	st := *db.Status.DeepCopy()
	st.ObservedGeneration = db.Generation
	phase, reason, msg := readiness(db, group)
	st.Phase = phase
	st.Message = msg
	ready := metav1.Condition{
		Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: reason, Message: msg, ObservedGeneration: db.Generation, LastTransitionTime: now,
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	d := Decision{Status: st}
	d.EventType, d.EventReason, d.EventMessage = groupEvent(db, reason)
	return d
}

func readiness(db *v1alpha1.MysqlDatabase, group *v1alpha1.MysqlFailoverGroup) (v1alpha1.DatabasePhase, string, string) {
	ref := db.Spec.FailoverGroupRef.Name
	switch {
	case db.DeletionTimestamp != nil:
		return PhaseDeleting, v1alpha1.ReasonDeleting, "the MysqlDatabase is being deleted"
	case group == nil:
		return PhasePending, v1alpha1.ReasonGroupNotYetCreated,
			fmt.Sprintf("MysqlFailoverGroup %q does not exist in namespace %q yet; the schema is applied once it does", ref, db.Namespace)
	case group.DeletionTimestamp != nil:
		return PhasePending, v1alpha1.ReasonGroupDeleting, fmt.Sprintf("MysqlFailoverGroup %q is being deleted", ref)
	}
	gr := meta.FindStatusCondition(group.Status.Conditions, v1alpha1.ConditionReady)
	if gr == nil || gr.Status != metav1.ConditionTrue {
		why := "it has not reported Ready yet"
		if gr != nil {
			why = fmt.Sprintf("its Ready condition is %s/%s", gr.Status, gr.Reason)
		}
		return PhasePending, v1alpha1.ReasonGroupNotReady, fmt.Sprintf("waiting for MysqlFailoverGroup %q: %s", ref, why)
	}
	return PhaseApplying, v1alpha1.ReasonApplying, fmt.Sprintf("MysqlFailoverGroup %q is ready; schema %q is not created in MySQL: the operator does not apply schemas yet", ref, db.Spec.DatabaseName)
}

// groupEvent reports the group appearing or disappearing, judged from the
// previous Ready reason: an Event marks the change, not every reconcile.
func groupEvent(db *v1alpha1.MysqlDatabase, newReason string) (string, string, string) {
	prev := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionReady)
	wasMissing := prev == nil || prev.Reason == v1alpha1.ReasonGroupNotYetCreated
	nowMissing := newReason == v1alpha1.ReasonGroupNotYetCreated
	ref := db.Spec.FailoverGroupRef.Name
	switch {
	case newReason == v1alpha1.ReasonDeleting:
		return "", "", ""
	case wasMissing && !nowMissing:
		return "Normal", v1alpha1.EventDatabaseGroupResolved, fmt.Sprintf("MysqlFailoverGroup %q found", ref)
	case prev != nil && !wasMissing && nowMissing:
		return "Warning", v1alpha1.EventDatabaseGroupLost, fmt.Sprintf("MysqlFailoverGroup %q no longer exists", ref)
	}
	return "", "", ""
}
