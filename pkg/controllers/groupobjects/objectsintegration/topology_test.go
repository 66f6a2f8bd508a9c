package objectsintegration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/render"
)

// The sample group gets every object, with the expected spec; once a site
// is active its peers' nodes are tainted, its pod is labelled active and DNS
// points at it; deleting the group removes taints and DNS record first, and
// the garbage collector removes the children only after that.
func TestSampleGroupLifecycle(t *testing.T) {
	installDNSCRD(t)
	e := newEnv(t)
	iadNode := e.createNode("iad", map[string]string{"bloodraven.shipstream.io/site": "iad"})
	pdxNode := e.createNode("pdx", map[string]string{"bloodraven.shipstream.io/site": "pdx"})
	// A reader's legacy taintNodeSelector is accepted and ignored: its node
	// is never tainted.
	readerNode := e.createNode("reader", map[string]string{"bloodraven.shipstream.io/site": "reader"})
	g := sample(t)
	g.Spec.Sites[2].TaintNodeSelector = map[string]string{"bloodraven.shipstream.io/site": "reader"}
	g = e.createGroup(g)
	sites := []string{"iad", "pdx", "reader"}

	// Every StatefulSet, ConfigMap and Service exists.
	eventually(t, waitFor, "every object created", func() error {
		for _, s := range sites {
			if _, err := e.statefulSet(g.Name, s); err != nil {
				return err
			}
			if _, err := e.kube.CoreV1().ConfigMaps(e.ns).Get(context.Background(), render.ConfigMapName(g.Name, s), metav1.GetOptions{}); err != nil {
				return err
			}
		}
		svcs, err := e.kube.CoreV1().Services(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: render.LabelGroup + "=" + g.Name})
		if err != nil {
			return err
		}
		if len(svcs.Items) != 8 {
			return fmt.Errorf("%d Services, want 8 (internal and site per site, primary, replicas)", len(svcs.Items))
		}
		return nil
	})
	g = e.group(g.Name)
	if !hasString(g.Finalizers, "bloodraven.shipstream.io/failover-group") {
		t.Errorf("finalizers = %v", g.Finalizers)
	}

	for i, s := range sites {
		sts, _ := e.statefulSet(g.Name, s)
		checkStatefulSet(t, g, sts, i)
		cm, _ := e.kube.CoreV1().ConfigMaps(e.ns).Get(context.Background(), render.ConfigMapName(g.Name, s), metav1.GetOptions{})
		checkOwned(t, g, cm.ObjectMeta)
		cnf := cm.Data["bloodraven.cnf"]
		for _, want := range []string{fmt.Sprintf("server-id = %d\n", 101+i), "gtid-mode = ON\n", "read-only = ON\n", "plugin-load-add = mysql_clone.so\n",
			"replica-preserve-commit-order = ON\n", "log-bin-trust-function-creators = 1\n", "max-connections = 500\n"} {
			if !strings.Contains(cnf, want) {
				t.Errorf("site %s my.cnf lacks %q", s, want)
			}
		}
		if got := strings.Contains(cnf, "innodb-buffer-pool-size = 4G\n"); got != (s == "reader") {
			t.Errorf("site %s my.cnf has the reader's buffer pool size: %v", s, got)
		}
	}
	checkServices(t, e, g)
	e.waitCondition(g.Name, v1alpha1.ConditionResourcesReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled)
	// Once settled, nothing is rewritten: what the API server defaulted is
	// not mistaken for drift.
	settled := e.versions()
	time.Sleep(2 * time.Second)
	if now := e.versions(); fmt.Sprint(now) != fmt.Sprint(settled) {
		t.Errorf("objects rewritten after settling:\n before %v\n after  %v", settled, now)
	}
	e.waitCondition(g.Name, v1alpha1.ConditionDNSReady, metav1.ConditionFalse, v1alpha1.ReasonNoDNSTarget)
	taintKey := render.TaintKey(e.ns, g.Name)
	for _, n := range []string{iadNode, pdxNode} {
		if tainted, err := e.nodeTainted(n, taintKey); err != nil || tainted {
			t.Errorf("node %s tainted before any site is active (err %v)", n, err)
		}
	}

	// iad becomes active.
	e.setActiveSite(g.Name, "iad")
	eventually(t, waitFor, "pdx's node tainted, iad's not", func() error {
		pdx, err := e.nodeTainted(pdxNode, taintKey)
		if err != nil {
			return err
		}
		iad, err := e.nodeTainted(iadNode, taintKey)
		if err != nil {
			return err
		}
		if !pdx || iad {
			return fmt.Errorf("pdx tainted=%v, iad tainted=%v", pdx, iad)
		}
		return nil
	})
	e.staysUntainted(readerNode, taintKey, time.Second)
	eventually(t, waitFor, "pods labelled by activity", func() error {
		for _, s := range sites {
			p, err := e.pod(g.Name, s)
			if err != nil {
				return err
			}
			if want := fmt.Sprint(s == "iad"); p.Labels[render.LabelActive] != want {
				return fmt.Errorf("pod %s: %s=%q, want %q", p.Name, render.LabelActive, p.Labels[render.LabelActive], want)
			}
		}
		return nil
	})
	dns := e.waitDNSTarget(g.Name, "10.0.1.1")
	checkOwned(t, g, metav1.ObjectMeta{OwnerReferences: dns.GetOwnerReferences()})
	eps, _, _ := unstructured.NestedSlice(dns.Object, "spec", "endpoints")
	if ep := eps[0].(map[string]any); ep["dnsName"] != "orders.db.example.com" || ep["recordType"] != "A" || ep["recordTTL"] != int64(60) {
		t.Errorf("DNSEndpoint endpoint = %v", ep)
	}
	e.waitCondition(g.Name, v1alpha1.ConditionDNSReady, metav1.ConditionTrue, v1alpha1.ReasonDNSEndpointCurrent)
	checkLabels(t, e, sites, dns)

	// A failover (the topology manager rewriting activeSite) moves taints and DNS.
	e.setActiveSite(g.Name, "pdx")
	dnsVersion := e.waitDNSTarget(g.Name, "10.0.2.1").GetResourceVersion()
	eventually(t, waitFor, "taint moved to iad's node", func() error {
		iad, _ := e.nodeTainted(iadNode, taintKey)
		pdx, _ := e.nodeTainted(pdxNode, taintKey)
		if !iad || pdx {
			return fmt.Errorf("iad tainted=%v, pdx tainted=%v", iad, pdx)
		}
		return nil
	})
	e.staysUntainted(readerNode, taintKey, time.Second)
	// Passes since (node watches wake the group) did not rewrite the record.
	if d, err := e.dnsEndpoint(g.Name); err != nil {
		t.Error(err)
	} else if d.GetResourceVersion() != dnsVersion {
		t.Errorf("DNSEndpoint rewritten without a change: resourceVersion %s -> %s", dnsVersion, d.GetResourceVersion())
	}

	// Deletion: hold the group with a finalizer of the test's own, so what
	// the operator does before the group is gone can be observed.
	const hold = "test.bloodraven.shipstream.io/hold"
	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) { g.Finalizers = append(g.Finalizers, hold) })
	if err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Delete(context.Background(), g.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "taints and DNSEndpoint removed, operator finalizer released", func() error {
		for _, n := range []string{iadNode, pdxNode} {
			if tainted, err := e.nodeTainted(n, taintKey); err != nil || tainted {
				return fmt.Errorf("node %s still tainted (err %v)", n, err)
			}
		}
		if _, err := e.dnsEndpoint(g.Name); !apierrors.IsNotFound(err) {
			return fmt.Errorf("DNSEndpoint still there (err %v)", err)
		}
		if f := e.group(g.Name).Finalizers; hasString(f, render.Finalizer) {
			return fmt.Errorf("finalizers %v", f)
		}
		return nil
	})
	// The children are still there: the group is not gone yet.
	for _, s := range sites {
		if _, err := e.statefulSet(g.Name, s); err != nil {
			t.Errorf("StatefulSet of %s removed before the group was: %v", s, err)
		}
	}
	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) { g.Finalizers = removeString(g.Finalizers, hold) })
	eventually(t, waitFor, "children garbage-collected", func() error {
		sts, err := e.kube.AppsV1().StatefulSets(e.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		svcs, err := e.kube.CoreV1().Services(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: render.LabelGroup})
		if err != nil {
			return err
		}
		cms, err := e.kube.CoreV1().ConfigMaps(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: render.LabelGroup})
		if err != nil {
			return err
		}
		if n := len(sts.Items) + len(svcs.Items) + len(cms.Items); n > 0 {
			return fmt.Errorf("%d StatefulSets, %d Services, %d ConfigMaps left", len(sts.Items), len(svcs.Items), len(cms.Items))
		}
		return nil
	})
}

func checkOwned(t *testing.T, g *v1alpha1.MysqlFailoverGroup, m metav1.ObjectMeta) {
	t.Helper()
	ref := metav1.GetControllerOfNoCopy(&m)
	if ref == nil || ref.UID != g.UID || ref.Kind != "MysqlFailoverGroup" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("%s: controller reference %+v, want the group %s", m.Name, ref, g.UID)
	}
}

func checkStatefulSet(t *testing.T, g *v1alpha1.MysqlFailoverGroup, sts *appsv1.StatefulSet, i int) {
	t.Helper()
	site := g.Spec.Sites[i]
	checkOwned(t, g, sts.ObjectMeta)
	s := sts.Spec
	if s.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType || *s.Replicas != 1 {
		t.Errorf("%s: updateStrategy %s replicas %d", sts.Name, s.UpdateStrategy.Type, *s.Replicas)
	}
	h := sts.Annotations[render.AnnotationPodTemplateHash]
	if h == "" || s.Template.Annotations[render.AnnotationPodTemplateHash] != h {
		t.Errorf("%s: pod-template-hash %q on the StatefulSet, %q on its template", sts.Name, h, s.Template.Annotations[render.AnnotationPodTemplateHash])
	}
	if s.ServiceName != site.Name && s.ServiceName != render.InternalServiceName(g.Name, site.Name) {
		t.Errorf("%s: serviceName %s", sts.Name, s.ServiceName)
	}
	pvc := s.VolumeClaimTemplates[0]
	if *pvc.Spec.StorageClassName != "fast-ssd" || pvc.Spec.Resources.Requests.Storage().String() != "100Gi" {
		t.Errorf("%s: PVC template %+v", sts.Name, pvc.Spec)
	}
	pod := s.Template
	if pod.Labels["cost-center"] != "platform" || pod.Labels[render.LabelSite] != site.Name || pod.Labels[render.LabelGroup] != g.Name {
		t.Errorf("%s: pod labels %v", sts.Name, pod.Labels)
	}
	c := map[string]corev1.Container{}
	for _, ct := range pod.Spec.Containers {
		c[ct.Name] = ct
	}
	if c["mysql"].Image != "mysql:9.7" || c["bloodraven-sidecar"].Image != sidecarImage {
		t.Errorf("%s: images mysql=%s sidecar=%s", sts.Name, c["mysql"].Image, c["bloodraven-sidecar"].Image)
	}
	if site.Resources != nil {
		gotMem, wantMem := c["mysql"].Resources.Limits[corev1.ResourceMemory], site.Resources.Limits[corev1.ResourceMemory]
		if gotMem.Cmp(wantMem) != 0 {
			t.Errorf("%s: mysql resources %v", sts.Name, c["mysql"].Resources)
		}
	}
	sc := c["bloodraven-sidecar"]
	if sc.LivenessProbe == nil || sc.LivenessProbe.HTTPGet.Path != "/peer/ping" || sc.ReadinessProbe == nil || sc.ReadinessProbe.HTTPGet.Path != "/health" {
		t.Errorf("%s: sidecar probes liveness %+v readiness %+v", sts.Name, sc.LivenessProbe, sc.ReadinessProbe)
	}
	if c["mysql"].LivenessProbe != nil || c["mysql"].ReadinessProbe != nil {
		t.Errorf("%s: mysqld must not carry probes (the sidecar's are the contract)", sts.Name)
	}
	if *pod.Spec.TerminationGracePeriodSeconds != 60 {
		t.Errorf("%s: terminationGracePeriodSeconds %d", sts.Name, *pod.Spec.TerminationGracePeriodSeconds)
	}
	tol := pod.Spec.Tolerations
	if len(tol) != 1 || tol[0].Key != g.Namespace+".db-readonly.bloodraven.shipstream.io/"+g.Name || tol[0].Operator != corev1.TolerationOpExists {
		t.Errorf("%s: tolerations %+v", sts.Name, tol)
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if r := terms[0].MatchExpressions[0]; r.Key != "topology.kubernetes.io/zone" || r.Values[0] != site.Zone {
		t.Errorf("%s: zone affinity %+v", sts.Name, r)
	}
}

func checkServices(t *testing.T, e *env, g *v1alpha1.MysqlFailoverGroup) {
	t.Helper()
	get := func(name string) *corev1.Service {
		s, err := e.kube.CoreV1().Services(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Service %s: %v", name, err)
		}
		checkOwned(t, g, s.ObjectMeta)
		return s
	}
	in := get("orders-iad-internal")
	if in.Spec.Type != corev1.ServiceTypeClusterIP || !in.Spec.PublishNotReadyAddresses || len(in.Spec.Ports) != 2 || in.Spec.Ports[1].Name != "sidecar" {
		t.Errorf("internal Service: %+v", in.Spec)
	}
	reader := get("orders-reader")
	if reader.Spec.Type != corev1.ServiceTypeLoadBalancer || reader.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal ||
		reader.Annotations["service.beta.kubernetes.io/aws-load-balancer-internal"] != "true" || len(reader.Spec.Ports) != 1 || reader.Spec.Ports[0].NodePort == 0 {
		t.Errorf("reader site Service: %+v %v", reader.Spec, reader.Annotations)
	}
	iad := get("orders-iad")
	if iad.Spec.Type != corev1.ServiceTypeClusterIP || iad.Spec.PublishNotReadyAddresses || len(iad.Spec.Ports) != 1 {
		t.Errorf("iad site Service: %+v", iad.Spec)
	}
	primary, replicas := get("orders-primary"), get("orders-replicas")
	if primary.Spec.Selector[render.LabelActive] != "true" || replicas.Spec.Selector[render.LabelActive] != "false" {
		t.Errorf("selectors: primary %v replicas %v", primary.Spec.Selector, replicas.Spec.Selector)
	}
}

func (e *env) dnsEndpoint(group string) (*unstructured.Unstructured, error) {
	return e.dyn.Resource(render.DNSEndpointGVR).Namespace(e.ns).Get(context.Background(), render.DNSEndpointName(group), metav1.GetOptions{})
}

func (e *env) waitDNSTarget(group, ip string) *unstructured.Unstructured {
	e.t.Helper()
	var got *unstructured.Unstructured
	eventually(e.t, waitFor, "DNSEndpoint points at "+ip, func() error {
		d, err := e.dnsEndpoint(group)
		if err != nil {
			return err
		}
		eps, _, _ := unstructured.NestedSlice(d.Object, "spec", "endpoints")
		if len(eps) != 1 || fmt.Sprint(eps[0].(map[string]any)["targets"]) != "["+ip+"]" {
			return fmt.Errorf("endpoints %v", eps)
		}
		got = d
		return nil
	})
	return got
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func removeString(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// snapshot records each site's StatefulSet generation, template hash and pod
// UID.
type snapshot struct {
	generation int64
	hash       string
	podUID     types.UID
	cmVersion  string
}

func (e *env) snapshot(group string, sites []string) map[string]snapshot {
	e.t.Helper()
	out := map[string]snapshot{}
	for _, s := range sites {
		sts, err := e.statefulSet(group, s)
		if err != nil {
			e.t.Fatal(err)
		}
		pod, err := e.pod(group, s)
		if err != nil {
			e.t.Fatal(err)
		}
		cm, err := e.kube.CoreV1().ConfigMaps(e.ns).Get(context.Background(), render.ConfigMapName(group, s), metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		out[s] = snapshot{generation: sts.Generation, hash: sts.Annotations[render.AnnotationPodTemplateHash], podUID: pod.UID, cmVersion: cm.ResourceVersion}
	}
	return out
}

// waitPods waits until every site's pod exists (the StatefulSet controller
// creates them) and returns the snapshot.
func (e *env) waitPods(group string, sites []string) map[string]snapshot {
	e.t.Helper()
	eventually(e.t, waitFor, "every site's pod created", func() error {
		for _, s := range sites {
			if _, err := e.pod(group, s); err != nil {
				return err
			}
		}
		return nil
	})
	return e.snapshot(group, sites)
}

// waitRolled waits until the site's pod was recreated (new UID) from a
// template other than before and equal to the StatefulSet's.
func (e *env) waitRolled(group, site string, before snapshot) {
	e.t.Helper()
	eventually(e.t, waitFor, "site "+site+" rolled", func() error {
		sts, err := e.statefulSet(group, site)
		if err != nil {
			return err
		}
		h := sts.Annotations[render.AnnotationPodTemplateHash]
		if h == before.hash {
			return fmt.Errorf("StatefulSet still at template %s", h)
		}
		pod, err := e.pod(group, site)
		if err != nil {
			return err
		}
		if pod.UID == before.podUID || pod.Annotations[render.AnnotationPodTemplateHash] != h {
			return fmt.Errorf("pod %s (uid %s) at template %s, StatefulSet at %s", pod.Name, pod.UID, pod.Annotations[render.AnnotationPodTemplateHash], h)
		}
		return nil
	})
}

func unchanged(t *testing.T, e *env, group string, before map[string]snapshot, sites ...string) {
	t.Helper()
	now := e.snapshot(group, sites)
	for _, s := range sites {
		if now[s] != before[s] {
			t.Errorf("site %s changed: before %+v, now %+v", s, before[s], now[s])
		}
	}
}

// Editing one site's mysqlConf rolls that site only: its ConfigMap and
// StatefulSet template change and its pod is recreated; the other sites'
// StatefulSets, ConfigMaps and pods are untouched.
func TestSiteMySQLConfRollsOnlyThatSite(t *testing.T) {
	e := newEnv(t)
	g := sample(t)
	g.Spec.Backup = nil
	g = e.createGroup(g)
	sites := []string{"iad", "pdx", "reader"}
	before := e.waitPods(g.Name, sites)

	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) {
		g.Spec.Sites[1].MySQLConf = map[string]string{"max_connections": "900"}
	})
	e.waitRolled(g.Name, "pdx", before["pdx"])
	cm, err := e.kube.CoreV1().ConfigMaps(e.ns).Get(context.Background(), render.ConfigMapName(g.Name, "pdx"), metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data["bloodraven.cnf"], "max-connections = 900\n") {
		t.Errorf("pdx my.cnf not updated (err %v): %s", err, cm.Data["bloodraven.cnf"])
	}
	// Let the controller settle, then check nothing else moved.
	e.waitCondition(g.Name, "Updating", metav1.ConditionFalse, v1alpha1.ReasonUpToDate)
	unchanged(t, e, g.Name, before, "iad", "reader")
	e.waitEvent(v1alpha1.EventSiteRolled, corev1.EventTypeNormal)
}

// Under OrderedUpdate a group-wide change rolls the followers one at a time
// (the next once the previous has been Ready for 30 s) and is not applied
// to the active site before the handoff; switching to Recreate rolls it.
func TestRecreateRollsTheActiveSiteOrderedUpdateHeld(t *testing.T) {
	e := newEnv(t)
	g := sample(t)
	g.Spec.Backup = nil
	g = e.createGroup(g)
	sites := []string{"iad", "pdx", "reader"}
	e.waitPods(g.Name, sites)
	e.setActiveSite(g.Name, "iad")
	for _, s := range sites {
		e.markReadySince(g.Name, s, time.Now().Add(-time.Minute))
	}
	e.waitCondition(g.Name, "Updating", metav1.ConditionFalse, v1alpha1.ReasonUpToDate)
	before := e.snapshot(g.Name, sites)

	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) { g.Spec.MySQLConf["max_connections"] = "700" })
	rolling := e.waitCondition(g.Name, "Updating", metav1.ConditionTrue, v1alpha1.ReasonRolling)
	if !strings.Contains(rolling.Message, "site iad (active) is rolled after the primary role is handed") {
		t.Errorf("Updating message %q does not say the active site waits", rolling.Message)
	}
	e.waitRolled(g.Name, "pdx", before["pdx"])
	// pdx's new pod is not Ready: the reader waits, iad is held.
	time.Sleep(2 * time.Second)
	unchanged(t, e, g.Name, before, "iad", "reader")

	e.markReadySince(g.Name, "pdx", time.Now().Add(-31*time.Second))
	e.waitRolled(g.Name, "reader", before["reader"])
	unchanged(t, e, g.Name, before, "iad")

	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) {
		g.Spec.UpdateStrategy = &v1alpha1.UpdateStrategy{Type: v1alpha1.Recreate}
	})
	e.waitRolled(g.Name, "iad", before["iad"])
	cm, _ := e.kube.CoreV1().ConfigMaps(e.ns).Get(context.Background(), render.ConfigMapName(g.Name, "iad"), metav1.GetOptions{})
	if !strings.Contains(cm.Data["bloodraven.cnf"], "max-connections = 700\n") {
		t.Errorf("iad my.cnf after Recreate: %s", cm.Data["bloodraven.cnf"])
	}
	e.waitPhase(g.Name, "")
}

// Switching a client Service between NodePort and LoadBalancer keeps the
// node port Kubernetes allocated and the cluster IP; ClusterIP clears it.
func TestServiceTypeSwitchKeepsNodePort(t *testing.T) {
	e := newEnv(t)
	g := sample(t)
	g.Spec.Backup = nil
	g.Spec.ServiceTemplate = &v1alpha1.ServiceTemplate{Type: "NodePort"}
	g = e.createGroup(g)
	svc := func(name string) *corev1.Service {
		s, err := e.kube.CoreV1().Services(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var first *corev1.Service
	eventually(t, waitFor, "NodePort Services allocated", func() error {
		for _, n := range []string{"orders-iad", "orders-primary"} {
			s, err := e.kube.CoreV1().Services(e.ns).Get(context.Background(), n, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s.Spec.Type != corev1.ServiceTypeNodePort || s.Spec.Ports[0].NodePort == 0 {
				return fmt.Errorf("%s: %s nodePort %d", n, s.Spec.Type, s.Spec.Ports[0].NodePort)
			}
		}
		return nil
	})
	first = svc("orders-iad")
	primary := svc("orders-primary")

	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) { g.Spec.ServiceTemplate.Type = "LoadBalancer" })
	eventually(t, waitFor, "Services switched to LoadBalancer", func() error {
		for _, before := range []*corev1.Service{first, primary} {
			s := svc(before.Name)
			if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
				return fmt.Errorf("%s still %s", s.Name, s.Spec.Type)
			}
			if s.Spec.Ports[0].NodePort != before.Spec.Ports[0].NodePort || s.Spec.ClusterIP != before.Spec.ClusterIP {
				t.Fatalf("%s: nodePort %d -> %d, clusterIP %s -> %s", s.Name, before.Spec.Ports[0].NodePort, s.Spec.Ports[0].NodePort, before.Spec.ClusterIP, s.Spec.ClusterIP)
			}
		}
		return nil
	})

	// Settled: the controller does not keep rewriting the Service (a merge
	// that lost the allocated port would fight the API server forever).
	settled := svc(first.Name).ResourceVersion
	time.Sleep(2 * time.Second)
	if rv := svc(first.Name).ResourceVersion; rv != settled {
		t.Errorf("Service %s rewritten after settling: resourceVersion %s -> %s", first.Name, settled, rv)
	}

	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) { g.Spec.ServiceTemplate.Type = "NodePort" })
	eventually(t, waitFor, "back to NodePort with the same port", func() error {
		s := svc(first.Name)
		if s.Spec.Type != corev1.ServiceTypeNodePort {
			return fmt.Errorf("still %s", s.Spec.Type)
		}
		if s.Spec.Ports[0].NodePort != first.Spec.Ports[0].NodePort {
			t.Fatalf("nodePort %d -> %d", first.Spec.Ports[0].NodePort, s.Spec.Ports[0].NodePort)
		}
		return nil
	})

	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) { g.Spec.ServiceTemplate = nil })
	eventually(t, waitFor, "ClusterIP without node ports", func() error {
		s := svc(first.Name)
		if s.Spec.Type != corev1.ServiceTypeClusterIP || s.Spec.Ports[0].NodePort != 0 || s.Spec.ExternalTrafficPolicy != "" {
			return fmt.Errorf("%s nodePort %d etp %q", s.Spec.Type, s.Spec.Ports[0].NodePort, s.Spec.ExternalTrafficPolicy)
		}
		if s.Spec.ClusterIP != first.Spec.ClusterIP {
			t.Fatalf("clusterIP %s -> %s", first.Spec.ClusterIP, s.Spec.ClusterIP)
		}
		return nil
	})
}

// Without external-dns's CRD the group still gets its StatefulSets,
// Services and taints; DNSReady and a Warning Event say why DNS is not
// managed, and installing the CRD later is picked up.
func TestDNSEndpointCRDMissing(t *testing.T) {
	removeDNSCRD(t)
	e := newEnv(t)
	pdxNode := e.createNode("pdx", map[string]string{"bloodraven.shipstream.io/site": "pdx"})
	g := sample(t)
	g.Spec.Backup = nil
	g = e.createGroup(g)
	e.setActiveSite(g.Name, "iad")

	c := e.waitCondition(g.Name, v1alpha1.ConditionDNSReady, metav1.ConditionFalse, v1alpha1.ReasonDNSEndpointCRDMissing)
	if !strings.Contains(c.Message, "dnsendpoints.externaldns.k8s.io") {
		t.Errorf("DNSReady message %q does not name the CRD", c.Message)
	}
	e.waitEvent(v1alpha1.EventDNSEndpointSkippedCRDMissing, corev1.EventTypeWarning)
	e.waitCondition(g.Name, v1alpha1.ConditionResourcesReady, metav1.ConditionTrue, v1alpha1.ReasonReconciled)
	eventually(t, waitFor, "pdx's node tainted", func() error {
		if tainted, err := e.nodeTainted(pdxNode, render.TaintKey(e.ns, g.Name)); err != nil || !tainted {
			return fmt.Errorf("tainted=%v err=%v", tainted, err)
		}
		return nil
	})
	if _, err := e.statefulSet(g.Name, "reader"); err != nil {
		t.Error(err)
	}

	installDNSCRD(t)
	e.waitDNSTarget(g.Name, "10.0.1.1")
	e.waitCondition(g.Name, v1alpha1.ConditionDNSReady, metav1.ConditionTrue, v1alpha1.ReasonDNSEndpointCurrent)
}

// versions maps every StatefulSet, ConfigMap and Service of the namespace
// to its resourceVersion.
func (e *env) versions() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	sts, err := e.kube.AppsV1().StatefulSets(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, o := range sts.Items {
		out["statefulset/"+o.Name] = o.ResourceVersion
	}
	cms, err := e.kube.CoreV1().ConfigMaps(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: render.LabelGroup})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, o := range cms.Items {
		out["configmap/"+o.Name] = o.ResourceVersion
	}
	svcs, err := e.kube.CoreV1().Services(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, o := range svcs.Items {
		out["service/"+o.Name] = o.ResourceVersion
	}
	return out
}

// A StatefulSet whose image was pinned by hand is rolled back to the
// group's image (the site is rolled like any other change).
func TestOutOfBandImageEditIsReverted(t *testing.T) {
	e := newEnv(t)
	g := sample(t)
	g.Spec.Backup = nil
	g = e.createGroup(g)
	before := e.waitPods(g.Name, []string{"iad", "pdx", "reader"})
	err := retryUpdate(func() error {
		sts, err := e.statefulSet(g.Name, "pdx")
		if err != nil {
			return err
		}
		sts.Spec.Template.Spec.Containers[0].Image = "mysql:9.6"
		_, err = e.kube.AppsV1().StatefulSets(e.ns).Update(context.Background(), sts, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "pdx back on mysql:9.7", func() error {
		sts, err := e.statefulSet(g.Name, "pdx")
		if err != nil {
			return err
		}
		if img := sts.Spec.Template.Spec.Containers[0].Image; img != "mysql:9.7" {
			return fmt.Errorf("image %s", img)
		}
		pod, err := e.pod(g.Name, "pdx")
		if err != nil {
			return err
		}
		if pod.Spec.Containers[0].Image != "mysql:9.7" {
			return fmt.Errorf("pod image %s", pod.Spec.Containers[0].Image)
		}
		return nil
	})
	unchanged(t, e, g.Name, before, "iad", "reader")
}

func retryUpdate(f func() error) error {
	var err error
	for range 10 {
		if err = f(); err == nil || !apierrors.IsConflict(err) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}
