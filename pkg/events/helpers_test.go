package events

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

func schemaGVK(kind string) schema.GroupVersionKind {
	return v1alpha1.SchemeGroupVersion.WithKind(kind)
}
