package eventrecorder

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

func TestSchemeKnowsBloodravenKinds(t *testing.T) {
	s := Scheme()
	for _, kind := range []string{"MysqlDatabase", "MysqlFailoverGroup", "MysqlBackup"} {
		if !s.Recognizes(v1alpha1.SchemeGroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not know %s", kind)
		}
	}
}

// TestABurstOfOneReasonDoesNotHideAnother records more Events of one
// reason on a group than the spam filter's burst, then one of another
// reason: that one must reach the API (with client-go's default key, by
// object and type only, it was dropped for five minutes).
func TestABurstOfOneReasonDoesNotHideAnother(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	rec, stop := NewRecorder(ctx, client)
	defer stop()
	g := &v1alpha1.MysqlFailoverGroup{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "ns", UID: "u1"}}
	g.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("MysqlFailoverGroup"))
	for i := 0; i < 2*spamBurst; i++ {
		rec.Eventf(g, corev1.EventTypeNormal, v1alpha1.EventFailoverStarted, "failover %d started", i)
	}
	rec.Eventf(g, corev1.EventTypeNormal, v1alpha1.EventPasswordOverlapStarted, "every managed consumer of the app account app uses the new password")
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := client.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Reason == v1alpha1.EventPasswordOverlapStarted {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s Event after %d %s Events: %d Events written", v1alpha1.EventPasswordOverlapStarted,
				2*spamBurst, v1alpha1.EventFailoverStarted, len(evs.Items))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
