// Package eventrecorder builds the operator's Kubernetes Event recorder.
// The reasons it records are defined in package v1alpha1 (events.go) and
// listed in docs/events.md; messages never carry secrets.
package eventrecorder

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	shipstreamscheme "github.com/shipstream/bloodraven/generated/clientset/versioned/scheme"
)

// Scheme knows the core and Bloodraven types, so Events can reference both.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(shipstreamscheme.AddToScheme(s))
	return s
}

// Component is the Event source of the operator.
const Component = "bloodraven"

// NewRecorder returns a recorder that writes Events through client until ctx
// ends, and a function that flushes and stops it.
func NewRecorder(ctx context.Context, client kubernetes.Interface) (record.EventRecorder, func()) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return b.NewRecorder(Scheme(), corev1.EventSource{Component: Component}), b.Shutdown
}
