package managerintegration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/render"
)

// A reader whose simulated mysqld applies late leaves its read pool (its
// site Service stops selecting its pod) once its lag passes
// readOnlyMaxLagSeconds, and returns when it has caught up. Judged by what
// the API server holds (the pod's labels against the Service's selector,
// as the EndpointSlice controller matches them) and by the simulated
// servers (the reader really lacked what the active site committed).
func TestLaggingReaderLeavesItsReadPool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, threeSites)
	e.startOperator()
	g := e.group(threeSites)
	g.Spec.Replication = &v1alpha1.ReplicationSpec{ReadOnlyMaxLagSeconds: ptr.To(int32(2))}
	e.create(g)
	e.waitActive("iad", 1)
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.createPodOf("reader") // no StatefulSet controller runs here: the test plays it

	e.waitReadPool("reader", true)

	// Writes every 100ms on iad; the reader applies each one 6s late.
	if err := e.sites["reader"].InjectApplyLag(6 * time.Second); err != nil {
		t.Fatal(err)
	}
	stop := e.writeEvery(100 * time.Millisecond)
	e.waitReadPool("reader", false)
	if lacks := e.sites["iad"].Snapshot().Executed.Subtract(e.sites["reader"].Snapshot().Executed); lacks.IsEmpty() {
		t.Errorf("the reader left its pool while it held everything iad committed")
	}
	if st := site(e.get(), "reader"); st.SecondsBehindSource == nil || *st.SecondsBehindSource <= 2 {
		t.Errorf("reader status %+v: out of the pool without a lag above 2s", st)
	}

	// Caught up: back in.
	if err := e.sites["reader"].InjectApplyLag(0); err != nil {
		t.Fatal(err)
	}
	stop()
	committed := e.sites["iad"].Snapshot().Executed
	e.waitReadPool("reader", true)
	eventually(t, waitFor, "the reader applied everything iad committed", func() error {
		if lacks := committed.Subtract(e.sites["reader"].Snapshot().Executed); !lacks.IsEmpty() {
			return fmt.Errorf("reader lacks %s", lacks.OneLine())
		}
		return nil
	})
}

// createPodOf creates the site's pod from its StatefulSet's template, as the
// StatefulSet controller would.
func (e *env) createPodOf(site string) {
	e.t.Helper()
	var sts *appsv1.StatefulSet
	eventually(e.t, waitFor, "StatefulSet of "+site, func() error {
		var err error
		sts, err = e.kube.AppsV1().StatefulSets(e.ns).Get(context.Background(), render.StatefulSetName(groupName, site), metav1.GetOptions{})
		return err
	})
	pod := &corev1.Pod{ObjectMeta: sts.Spec.Template.ObjectMeta, Spec: sts.Spec.Template.Spec}
	pod.Name, pod.Namespace = render.PodName(groupName, site), e.ns
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
	for _, c := range sts.Spec.VolumeClaimTemplates {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name + "-" + pod.Name}}})
	}
	if _, err := e.kube.CoreV1().Pods(e.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create pod of %s: %v", site, err)
	}
}

// waitReadPool waits until the site's client Service selects its pod (in)
// or not.
func (e *env) waitReadPool(site string, in bool) {
	e.t.Helper()
	eventually(e.t, waitFor, fmt.Sprintf("reader %s in its read pool: %v", site, in), func() error {
		svc, err := e.kube.CoreV1().Services(e.ns).Get(context.Background(), render.SiteServiceName(groupName, site), metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod, err := e.kube.CoreV1().Pods(e.ns).Get(context.Background(), render.PodName(groupName, site), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)); got != in {
			return fmt.Errorf("Service selector %v, pod labels %v, status %+v", svc.Spec.Selector, pod.Labels, site2(e.get(), site))
		}
		return nil
	})
}

func site2(g *v1alpha1.MysqlFailoverGroup, name string) string {
	if s := site(g, name); s != nil {
		lag := "unknown"
		if s.SecondsBehindSource != nil {
			lag = fmt.Sprint(*s.SecondsBehindSource)
		}
		return fmt.Sprintf("%s/%s lag %s", s.State, s.Replication, lag)
	}
	return "none"
}

// writeEvery commits a write on iad every interval until the returned stop.
func (e *env) writeEvery(interval time.Duration) (stop func()) {
	db := adminDB(e.t, e.sites["iad"])
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(interval):
			}
			if _, err := db.Exec(fmt.Sprintf("CREATE DATABASE readpool_%d", i)); err != nil {
				e.t.Errorf("write %d on iad: %v", i, err)
				return
			}
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	e.t.Cleanup(stop)
	return stop
}
