// Package eventrecorder builds the operator's Kubernetes Event recorder.
// The reasons it records are defined in package v1alpha1 (events.go) and
// listed in docs/events.md; messages never carry secrets.
package eventrecorder

import (
	"context"
	"strings"

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
	b := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(correlatorOptions()))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return b.NewRecorder(Scheme(), corev1.EventSource{Component: Component}), b.Shutdown
}

// Spam filtering: client-go's default keys its token bucket (25 Events,
// then one every 5 minutes) by involved object and Event type only, so a
// group that went through a few failovers in one operator process had its
// later Normal Events, a rotation's or a transition's, dropped for minutes
// without a trace. Keyed by reason as well, a burst of one reason is still
// throttled while every other reason keeps its own budget; the reasons are
// a fixed list (docs/events.md), which bounds what a group can write.
const (
	spamBurst = 25
	spamQPS   = 1. / 60.
)

func correlatorOptions() record.CorrelatorOptions {
	return record.CorrelatorOptions{BurstSize: spamBurst, QPS: spamQPS, SpamKeyFunc: spamKey}
}

// spamKey is client-go's default spam key (source, involved object, type)
// and the reason.
func spamKey(e *corev1.Event) string {
	o := e.InvolvedObject
	return strings.Join([]string{e.Source.Component, e.Source.Host, o.Kind, o.Namespace, o.Name,
		string(o.UID), o.APIVersion, e.Type, e.Reason}, "\x00")
}
