package leasestore

import (
	"encoding/json"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Object names and metadata keys. A group name is a DNS-1035 label (no
// dots), so "bloodraven-deploy-mutex.<group>" and
// "bloodraven-deploy.<group>.<kind>.<operationId>" can never collide, with
// each other or across groups.
const (
	mutexPrefix  = "bloodraven-deploy-mutex."
	recordPrefix = "bloodraven-deploy."

	// LabelGroup marks a deployment lease record with its group.
	LabelGroup = "bloodraven.shipstream.io/deploy-group"
	// LabelMutexGroup marks a group's mutex (a different key, so listing a
	// group's records never returns the mutex).
	LabelMutexGroup = "bloodraven.shipstream.io/deploy-mutex-group"
	labelKind       = "bloodraven.shipstream.io/deploy-kind"
	labelManagedBy  = "app.kubernetes.io/managed-by"

	// annotationRecord and annotationMutex hold the JSON state.
	annotationRecord = "bloodraven.shipstream.io/deploy-lease"
	annotationMutex  = "bloodraven.shipstream.io/deploy-mutex"
)

// GroupRef identifies the group a lease belongs to; UID makes the group the
// owner of its Lease objects, so they are deleted with it.
type GroupRef struct {
	Namespace string
	Name      string
	UID       types.UID
}

func mutexName(group string) string { return mutexPrefix + group }

func recordName(group string, kind Kind, op string) string {
	return recordPrefix + group + "." + string(kind) + "." + op
}

func ownerRefs(g GroupRef) []metav1.OwnerReference {
	if g.UID == "" {
		return nil
	}
	return []metav1.OwnerReference{{
		APIVersion: "shipstream.io/v1alpha1",
		Kind:       "MysqlFailoverGroup",
		Name:       g.Name,
		UID:        g.UID,
	}}
}

func microTime(t time.Time) *metav1.MicroTime {
	m := metav1.NewMicroTime(t)
	return &m
}

// recordToLease renders r into l (a new object when l is nil). The spec
// fields are a projection for humans and tools; the annotation is the truth.
func recordToLease(l *coordinationv1.Lease, g GroupRef, r Record, now time.Time) *coordinationv1.Lease {
	if l == nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name:            recordName(r.Group, r.Kind, r.OperationID),
			Namespace:       g.Namespace,
			OwnerReferences: ownerRefs(g),
		}}
	}
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[LabelGroup] = r.Group
	l.Labels[labelKind] = string(r.Kind)
	l.Labels[labelManagedBy] = "bloodraven"
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[annotationRecord] = encode(r)
	holder := r.Instance + "/" + r.OperationID
	l.Spec.HolderIdentity = &holder
	end := r.ExpiresAt
	if r.Terminal() {
		end = now // terminal records project the minimum, 1 s
	}
	d := durationProjection(now, end)
	l.Spec.LeaseDurationSeconds = &d
	l.Spec.AcquireTime = microTime(r.GrantTime)
	l.Spec.RenewTime = microTime(now)
	return l
}

func leaseToRecord(l *coordinationv1.Lease) (Record, error) {
	var r Record
	raw, ok := l.Annotations[annotationRecord]
	if !ok {
		return r, fmt.Errorf("Lease %s/%s has no %s annotation", l.Namespace, l.Name, annotationRecord)
	}
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return r, fmt.Errorf("Lease %s/%s: annotation %s: %w", l.Namespace, l.Name, annotationRecord, err)
	}
	r.Namespace = l.Namespace
	r.resourceVersion = l.ResourceVersion
	r.obj = l
	return r, nil
}

func mutexToLease(l *coordinationv1.Lease, g GroupRef, m mutexState, now time.Time) *coordinationv1.Lease {
	if l == nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name:            mutexName(g.Name),
			Namespace:       g.Namespace,
			OwnerReferences: ownerRefs(g),
			Labels:          map[string]string{LabelMutexGroup: g.Name, labelManagedBy: "bloodraven"},
		}}
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[annotationMutex] = encode(m)
	end := m.ExpiresAt
	if m.OperationID == "" {
		l.Spec.HolderIdentity = nil
		end = now
	} else {
		h := m.OperationID
		l.Spec.HolderIdentity = &h
	}
	d := durationProjection(now, end)
	l.Spec.LeaseDurationSeconds = &d
	l.Spec.RenewTime = microTime(now)
	return l
}

func leaseToMutex(l *coordinationv1.Lease) (mutexState, error) {
	var m mutexState
	if raw, ok := l.Annotations[annotationMutex]; ok {
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return m, fmt.Errorf("Lease %s/%s: annotation %s: %w", l.Namespace, l.Name, annotationMutex, err)
		}
	}
	m.resourceVersion = l.ResourceVersion
	m.exists = true
	return m, nil
}
