package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// UpdateFunc is a typed client's UpdateStatus method.
type UpdateFunc[T runtime.Object] func(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)

// UpdateStatusIfChanged copies current, applies mutate to the copy and writes
// it with update only if status(copy) differs semantically from
// status(current). It returns the object as stored and whether it wrote.
//
// The copy keeps current's resourceVersion, so the write is conditional on
// the object not having changed since it was read: a status write that
// records an intent, or one sent by a deposed leader, fails with a Conflict
// instead of overwriting a newer state.
func UpdateStatusIfChanged[T runtime.Object](ctx context.Context, current T, status func(T) any, mutate func(T), update UpdateFunc[T]) (T, bool, error) {
	desired := current.DeepCopyObject().(T)
	mutate(desired)
	if equality.Semantic.DeepEqual(status(current), status(desired)) {
		return current, false, nil
	}
	out, err := update(ctx, desired, metav1.UpdateOptions{})
	if err != nil {
		return current, false, err
	}
	return out, true, nil
}
