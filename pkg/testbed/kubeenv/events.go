package kubeenv

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// EventsOn are the Events on the object named name in namespace ns, the
// latest by reason, as the API server stores them.
func EventsOn(t testing.TB, kube kubernetes.Interface, ns, name string) map[string]corev1.Event {
	t.Helper()
	list, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Event{}
	for _, ev := range list.Items {
		out[ev.Reason] = ev
	}
	return out
}
