package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// objectOf unwraps the tombstone a delete event carries when the watch
// missed the deletion.
func objectOf(obj any) (metav1.Object, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, err := meta.Accessor(obj)
	return o, err == nil
}

// KeyOf is the key of an object (or of a delete tombstone).
func KeyOf(obj any) (Key, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		k, err := cache.ParseObjectName(d.Key)
		return k, err == nil
	}
	o, ok := objectOf(obj)
	if !ok {
		return Key{}, false
	}
	return cache.NewObjectName(o.GetNamespace(), o.GetName()), true
}

// MapFunc maps an object to the keys it concerns.
type MapFunc func(obj metav1.Object) []Key

// EnqueueSelf returns handlers that enqueue the object's own key.
func (l *Loop) EnqueueSelf() cache.ResourceEventHandler {
	add := func(obj any) {
		if k, ok := KeyOf(obj); ok {
			l.Enqueue(k)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, obj any) { add(obj) },
		DeleteFunc: add,
	}
}

// EnqueueMapped returns handlers that enqueue every key f returns, for both
// the old and the new object of an update, so a reference that moved from
// one owner to another wakes both.
func (l *Loop) EnqueueMapped(f MapFunc) cache.ResourceEventHandler {
	add := func(obj any) {
		if o, ok := objectOf(obj); ok {
			for _, k := range f(o) {
				l.Enqueue(k)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(old, obj any) { add(old); add(obj) },
		DeleteFunc: add,
	}
}

// OwnerGetter reads an owner by namespace and name (normally from a lister).
type OwnerGetter func(namespace, name string) (metav1.Object, error)

// OwnerMapper maps a child to its controlling owner of kind gk. The owner
// must still exist with the UID the reference names: a child left behind by
// a deleted owner must not be adopted by a new object of the same name.
func OwnerMapper(gk schema.GroupKind, get OwnerGetter) MapFunc {
	return func(child metav1.Object) []Key {
		ref := metav1.GetControllerOfNoCopy(child)
		if ref == nil || ref.Kind != gk.Kind {
			return nil
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != gk.Group {
			return nil
		}
		owner, err := get(child.GetNamespace(), ref.Name)
		if err != nil || owner == nil || owner.GetUID() != ref.UID {
			return nil
		}
		return []Key{cache.NewObjectName(child.GetNamespace(), ref.Name)}
	}
}

// EnqueueOwner returns handlers that enqueue a child's controlling owner.
func (l *Loop) EnqueueOwner(gk schema.GroupKind, get OwnerGetter) cache.ResourceEventHandler {
	return l.EnqueueMapped(OwnerMapper(gk, get))
}
