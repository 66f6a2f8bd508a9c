// Package objectsintegration runs the group objects controller against a real
// kube-apiserver and kube-controller-manager (the StatefulSet controller
// creates the pods, the garbage collector deletes the children of a deleted
// group). No kubelet runs: pods stay Pending unless a test marks them Ready
// through the status subresource, as a kubelet would.
package objectsintegration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/groupobjects"
	"github.com/shipstream/bloodraven/pkg/render"
	"github.com/shipstream/bloodraven/pkg/testbed/kubeenv"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{ControllerManager: true, CRDDir: "deploy/crds"}, &cp)
}

const sidecarImage = "ghcr.io/shipstream/bloodraven-sidecar:1.7.0-test"

// env is one test's namespace, clients and running controller.
type env struct {
	t       *testing.T
	kubeenv *kubeenv.Env
	ns      string
	kube    kubernetes.Interface
	ship    versioned.Interface
	dyn     dynamic.Interface
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newEnv creates a namespace and runs the group objects controller on
// informers limited to it (nodes are cluster-wide). Cleanups run in reverse:
// groups a test created are deleted (and finalized by the still-running
// controller) before the controller stops.
func newEnv(t *testing.T) *env {
	t.Helper()
	ke := kubeenv.New(t, cp)
	e := &env{t: t, kubeenv: ke, ns: ke.Namespace, kube: ke.Kube, ship: ke.Ship, dyn: ke.Dyn}
	op := ke.NewInstance()
	c, err := groupobjects.New(op.Deps, groupobjects.Options{SidecarImage: sidecarImage, DNSCRDRecheck: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	op.Start(2, c)
	return e
}

// eventually polls f until it returns nil, failing the test with f's last
// error after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			if d := time.Since(start); d > 5*time.Second {
				t.Logf("%s: took %s", what, d.Round(100*time.Millisecond))
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: still not true after %s: %v", what, timeout, err)
}

const waitFor = 60 * time.Second

// sample reads deploy/samples/mysqlfailovergroup.yaml.
func sample(t *testing.T) *v1alpha1.MysqlFailoverGroup {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "deploy", "samples", "mysqlfailovergroup.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var g v1alpha1.MysqlFailoverGroup
	if err := yaml.UnmarshalStrict(b, &g); err != nil {
		t.Fatal(err)
	}
	return &g
}

// createGroup creates g in the test namespace and deletes it at cleanup
// (while the controller still runs, so its finalizer is honoured).
func (e *env) createGroup(g *v1alpha1.MysqlFailoverGroup) *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	g.Namespace = e.ns
	e.createCredentials(g)
	out, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Create(ctxFor(e.t, 10*time.Second), g, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create group: %v", err)
	}
	e.t.Cleanup(func() {
		e.kubeenv.CheckMessages()
		api := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns)
		_ = api.Delete(context.Background(), g.Name, metav1.DeleteOptions{})
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := api.Get(context.Background(), g.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	return out
}

func (e *env) group(name string) *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	g, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Get(ctxFor(e.t, 10*time.Second), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return g
}

// editGroup applies mutate to the stored group, retrying on conflicts (the
// controller writes it too).
func (e *env) editGroup(name string, mutate func(*v1alpha1.MysqlFailoverGroup)) {
	e.t.Helper()
	api := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g, err := api.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(g)
		_, err = api.Update(context.Background(), g, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("edit group %s: %v", name, err)
	}
}

// setActiveSite writes status.activeSite as the topology manager will.
func (e *env) setActiveSite(name, site string) {
	e.t.Helper()
	api := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g, err := api.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		g.Status.ActiveSite = site
		_, err = api.UpdateStatus(context.Background(), g, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("set status.activeSite of %s: %v", name, err)
	}
}

func (e *env) statefulSet(group, site string) (*appsv1.StatefulSet, error) {
	return e.kube.AppsV1().StatefulSets(e.ns).Get(context.Background(), render.StatefulSetName(group, site), metav1.GetOptions{})
}

func (e *env) pod(group, site string) (*corev1.Pod, error) {
	return e.kube.CoreV1().Pods(e.ns).Get(context.Background(), render.PodName(group, site), metav1.GetOptions{})
}

// markReady sets the pod's Ready condition, as a kubelet whose probes
// passed would.
func (e *env) markReady(pod *corev1.Pod) {
	e.t.Helper()
	e.setPodReady(pod.Name, time.Now())
}

// setPodReady marks the pod Running and Ready since the given time.
func (e *env) setPodReady(name string, since time.Time) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := e.kube.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		at := metav1.NewTime(since)
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: at},
		}
		_, err = e.kube.CoreV1().Pods(e.ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("mark pod %s Ready: %v", name, err)
	}
}

// createNode creates a node with labels and deletes it at cleanup. Its name
// is unique to the test namespace.
func (e *env) createNode(suffix string, labels map[string]string) string {
	e.t.Helper()
	name := e.ns + "-" + suffix
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := e.kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create node %s: %v", name, err)
	}
	e.t.Cleanup(func() { _ = e.kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

func (e *env) nodeTainted(name, key string) (bool, error) {
	n, err := e.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			if t.Effect != render.TaintEffect {
				return true, fmt.Errorf("node %s: taint %s has effect %s, want %s", name, key, t.Effect, render.TaintEffect)
			}
			return true, nil
		}
	}
	return false, nil
}

// condition returns the group's condition of type typ.
func condition(g *v1alpha1.MysqlFailoverGroup, typ string) *metav1.Condition {
	for i := range g.Status.Conditions {
		if g.Status.Conditions[i].Type == typ {
			return &g.Status.Conditions[i]
		}
	}
	return nil
}

func (e *env) waitCondition(name, typ string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	e.t.Helper()
	var got *metav1.Condition
	eventually(e.t, waitFor, fmt.Sprintf("condition %s=%s/%s", typ, status, reason), func() error {
		got = condition(e.group(name), typ)
		if got == nil || got.Status != status || got.Reason != reason {
			return fmt.Errorf("condition %s is %+v", typ, got)
		}
		return nil
	})
	return got
}

// waitEvent waits for an Event with reason and type on the group.
func (e *env) waitEvent(reason, typ string) *corev1.Event {
	e.t.Helper()
	var got *corev1.Event
	eventually(e.t, waitFor, "Event "+reason, func() error {
		list, err := e.kube.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var seen []string
		for i := range list.Items {
			ev := &list.Items[i]
			seen = append(seen, ev.Reason)
			if ev.Reason == reason && ev.Type == typ && ev.InvolvedObject.Kind == "MysqlFailoverGroup" {
				got = ev
				return nil
			}
		}
		return fmt.Errorf("events so far: %s", strings.Join(seen, ", "))
	})
	return got
}

// installDNSCRD installs the minimal DNSEndpoint CRD (idempotent).
func installDNSCRD(t *testing.T) {
	t.Helper()
	if err := cp.InstallCRDs(ctxFor(t, time.Minute), filepath.Join(framework.RepoRoot(), "deploy", "crds-external")); err != nil && !apierrors.IsAlreadyExists(err) && !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("install DNSEndpoint CRD: %v", err)
	}
}

// removeDNSCRD deletes the DNSEndpoint CRD and waits until discovery no
// longer serves it.
func removeDNSCRD(t *testing.T) {
	t.Helper()
	ext, err := apiextensionsclient.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	const name = "dnsendpoints.externaldns.k8s.io"
	err = ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, waitFor, "DNSEndpoint CRD removed", func() error {
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("CRD still present (err=%v)", err)
		}
		if _, err := cp.Client().Discovery().ServerResourcesForGroupVersion(render.DNSEndpointGVR.GroupVersion().String()); !apierrors.IsNotFound(err) {
			return fmt.Errorf("discovery still serves it (err=%v)", err)
		}
		return nil
	})
}

// createCredentials creates the credential Secrets g names, unless they
// exist: the first-boot init script is rendered from them.
func (e *env) createCredentials(g *v1alpha1.MysqlFailoverGroup) {
	e.t.Helper()
	for _, sec := range []struct{ name, user string }{
		{g.Spec.Credentials.OperatorSecretName, "bloodraven"}, {g.Spec.Credentials.AppSecretName, "app"},
		{g.Spec.Credentials.ReadOnlySecretName, "reader"}, {g.Spec.Credentials.MonitorSecretName, "monitor"},
		{g.Spec.Credentials.BackupSecretName, "backup"},
	} {
		if sec.name == "" {
			continue
		}
		obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sec.name, Namespace: e.ns}, StringData: map[string]string{
			"username": sec.user, "password": sec.user + "-pw", "MYSQL_ROOT_PASSWORD": "root-pw",
		}}
		if _, err := e.kube.CoreV1().Secrets(e.ns).Create(ctxFor(e.t, 10*time.Second), obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			e.t.Fatalf("create Secret %s: %v", sec.name, err)
		}
	}
}
