package render

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/protocol"
)

func TestSidecarTimersReadsWhatThePodTemplateSet(t *testing.T) {
	g := minimal(t)
	cfg := Config{SidecarImage: testSidecarImage, OperatorEndpoint: testOperatorEndpoint}
	podOf := func() *corev1.Pod {
		t.Helper()
		r, err := RenderSite(g, 0, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return &corev1.Pod{Spec: r.StatefulSet.Spec.Template.Spec}
	}
	g.Spec.Sidecar = &v1alpha1.SidecarSpec{LeaseTimeout: &metav1.Duration{Duration: 40 * time.Second},
		PeerCheckInterval: &metav1.Duration{Duration: 3 * time.Second}}
	if l, pc, ok := SidecarTimers(podOf()); !ok || l != 40*time.Second || pc != 3*time.Second {
		t.Fatalf("rendered pod: %v %v %v", l, pc, ok)
	}

	g.Spec.Sidecar = nil
	if l, pc, ok := SidecarTimers(podOf()); !ok || l != protocol.DefaultLeaseTimeout || pc != protocol.DefaultPeerCheckInterval {
		t.Fatalf("no spec.sidecar: %v %v %v, want the sidecar's defaults", l, pc, ok)
	}

	if _, _, ok := SidecarTimers(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: ContainerMySQL}}}}); ok {
		t.Fatal("a pod without the sidecar container reported timers")
	}
}
