package objectsintegration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Under Recreate a group-wide change rolls every site at once, the active
// one included: no site waits for another's pod to become Ready (none is
// marked Ready here), which an ordered update would.
func TestRecreateRollsEverySiteTogether(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := sample(t)
	g.Spec.Backup = nil
	g.Spec.UpdateStrategy = &v1alpha1.UpdateStrategy{Type: v1alpha1.Recreate}
	g = e.createGroup(g)
	sites := []string{"iad", "pdx", "reader"}
	e.waitPods(g.Name, sites)
	e.setActiveSite(g.Name, "iad")
	e.waitCondition(g.Name, "Updating", metav1.ConditionFalse, v1alpha1.ReasonUpToDate)
	before := e.snapshot(g.Name, sites)

	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) { g.Spec.MySQLConf["max_connections"] = "650" })
	for _, s := range sites {
		e.waitRolled(g.Name, s, before[s])
		cm, err := e.kube.CoreV1().ConfigMaps(e.ns).Get(context.Background(), "orders-"+s+"-mysql-config", metav1.GetOptions{})
		if err != nil || !strings.Contains(cm.Data["bloodraven.cnf"], "max-connections = 650\n") {
			t.Errorf("site %s my.cnf after Recreate (err %v): %s", s, err, cm.Data["bloodraven.cnf"])
		}
	}
	if ph := e.group(g.Name).Status.UpdatePhase; ph != "" {
		t.Errorf("Recreate set updatePhase %q", ph)
	}
}

// A Service the API server refuses (here a site nodePort outside the
// cluster's NodePort range, which the CRD admits) turns ResourcesReady False
// with a message naming the Service, the spec field and the API server's
// reason, and a Warning Event; every other object is still reconciled, and
// fixing the spec clears the condition.
func TestRefusedServiceIsReported(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := sample(t)
	g.Spec.Backup = nil
	g.Spec.Sites[2].ServiceTemplate.NodePort = ptr.To(int32(3306))
	g = e.createGroup(g)

	c := e.waitCondition(g.Name, v1alpha1.ConditionResourcesReady, metav1.ConditionFalse, v1alpha1.ReasonApplyRefused)
	for _, want := range []string{"Service orders-reader", "spec.sites[2].serviceTemplate", "nodePort", "3306"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("ResourcesReady message %q lacks %q", c.Message, want)
		}
	}
	ev := e.waitEvent(v1alpha1.EventObjectRefused, corev1.EventTypeWarning)
	if !strings.Contains(ev.Message, "orders-reader") {
		t.Errorf("Event message %q does not name the Service", ev.Message)
	}
	// Nothing else is held back by the refused Service.
	for _, s := range []string{"iad", "pdx", "reader"} {
		if _, err := e.statefulSet(g.Name, s); err != nil {
			t.Errorf("StatefulSet of %s: %v", s, err)
		}
	}
	for _, name := range []string{"orders-reader-internal", "orders-iad", "orders-primary", "orders-replicas"} {
		if _, err := e.kube.CoreV1().Services(e.ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("Service %s: %v", name, err)
		}
	}

	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) { g.Spec.Sites[2].ServiceTemplate.NodePort = nil })
	e.waitCondition(g.Name, v1alpha1.ConditionResourcesReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled)
	eventually(t, waitFor, "orders-reader created", func() error {
		_, err := e.kube.CoreV1().Services(e.ns).Get(context.Background(), "orders-reader", metav1.GetOptions{})
		return err
	})
}

// wantLabels fails the test unless labels hold every key of want with its
// value. The values are the ones docs/resources.md promises.
func wantLabels(t *testing.T, what string, labels, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := labels[k]; !ok || got != v {
			t.Errorf("%s: label %s = %q (present %v), want %q", what, k, got, ok, v)
		}
	}
}

// checkLabels checks the labels docs/resources.md lists on every object of
// the sample group "orders".
func checkLabels(t *testing.T, e *env, sites []string, dns *unstructured.Unstructured) {
	t.Helper()
	group := map[string]string{
		"app.kubernetes.io/name":                  "mysql",
		"app.kubernetes.io/instance":              "orders",
		"app.kubernetes.io/component":             "database",
		"app.kubernetes.io/managed-by":            "bloodraven",
		"bloodraven.shipstream.io/failover-group": "orders",
	}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range group {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	ctx := context.Background()
	for _, s := range sites {
		site := with(map[string]string{"bloodraven.shipstream.io/site": s})
		sts, err := e.statefulSet("orders", s)
		if err != nil {
			t.Fatal(err)
		}
		wantLabels(t, "StatefulSet "+sts.Name, sts.Labels, site)
		wantLabels(t, "pod template of "+sts.Name, sts.Spec.Template.Labels, site)
		wantLabels(t, "volume claim template of "+sts.Name, sts.Spec.VolumeClaimTemplates[0].Labels, site)
		if n := sts.Spec.VolumeClaimTemplates[0].Name; n != "data" {
			t.Errorf("%s: volume claim template %q, want data", sts.Name, n)
		}
		cm, err := e.kube.CoreV1().ConfigMaps(e.ns).Get(ctx, "orders-"+s+"-mysql-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantLabels(t, "ConfigMap "+cm.Name, cm.Labels, site)
		for name, kind := range map[string]string{"orders-" + s + "-internal": "internal", "orders-" + s: "site"} {
			svc, err := e.kube.CoreV1().Services(e.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wantLabels(t, "Service "+name, svc.Labels, with(map[string]string{"bloodraven.shipstream.io/site": s, "bloodraven.shipstream.io/service": kind}))
		}
	}
	for name, kind := range map[string]string{"orders-primary": "primary", "orders-replicas": "replicas"} {
		svc, err := e.kube.CoreV1().Services(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantLabels(t, "Service "+name, svc.Labels, with(map[string]string{"bloodraven.shipstream.io/service": kind}))
		if _, has := svc.Labels["bloodraven.shipstream.io/site"]; has {
			t.Errorf("Service %s carries a site label", name)
		}
		for _, p := range svc.Spec.Ports {
			if p.Name != "mysql" || p.Port != 3306 {
				t.Errorf("Service %s exposes port %s/%d; client Services carry mysql 3306 only", name, p.Name, p.Port)
			}
		}
	}
	if dns.GetName() != "orders-dns" {
		t.Errorf("DNSEndpoint named %s, want orders-dns", dns.GetName())
	}
	wantLabels(t, "DNSEndpoint", dns.GetLabels(), group)
}

// staysUntainted checks that a node stays without the taint for a while
// (a reader's node: readers never cause taint operations).
func (e *env) staysUntainted(node, key string, d time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if tainted, err := e.nodeTainted(node, key); err != nil || tainted {
			e.t.Errorf("node %s tainted=%v (err %v): a reader's taintNodeSelector must never cause a taint", node, tainted, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// An extra container the CRD admits and the API server refuses in a pod
// template (a port name longer than 15 characters) is reported the same
// way, naming the site; the Services are still reconciled.
func TestRefusedStatefulSetIsReported(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := sample(t)
	g.Spec.Backup = nil
	g.Spec.ExtraContainers = []corev1.Container{{
		Name: "exporter", Image: "prom/mysqld-exporter:v0.17.2",
		Ports: []corev1.ContainerPort{{Name: "metrics-port-name-too-long", ContainerPort: 9104}},
	}}
	g = e.createGroup(g)

	c := e.waitCondition(g.Name, v1alpha1.ConditionResourcesReady, metav1.ConditionFalse, v1alpha1.ReasonApplyRefused)
	for _, want := range []string{"site iad", "site pdx", "site reader", "extraContainers", "metrics-port-name-too-long"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("ResourcesReady message %q lacks %q", c.Message, want)
		}
	}
	eventually(t, waitFor, "Services created", func() error {
		_, err := e.kube.CoreV1().Services(e.ns).Get(context.Background(), "orders-primary", metav1.GetOptions{})
		return err
	})

	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) { g.Spec.ExtraContainers[0].Ports[0].Name = "metrics" })
	e.waitCondition(g.Name, v1alpha1.ConditionResourcesReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled)
	if _, err := e.statefulSet(g.Name, "iad"); err != nil {
		t.Error(err)
	}
}
