package render

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/protocol"
)

func minimal(t testing.TB) *v1alpha1.MysqlFailoverGroup {
	return loadGroup(t, "testdata/minimal.input.yaml")
}

func TestMyCnfMergeOrderAndNormalization(t *testing.T) {
	g := minimal(t)
	g.Spec.MySQLConf = map[string]string{"max_connections": "500", "innodb_buffer_pool_size": "8G", "super_read_only": "OFF"}
	g.Spec.Sites[1].MySQLConf = map[string]string{"innodb-buffer-pool-size": "4G", "log_bin_trust_function_creators": "0"}
	cnf, ignored, err := MyCnf(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"server-id = 2\n", "gtid-mode = ON\n", "enforce-gtid-consistency = ON\n", "log-replica-updates = ON\n",
		"read-only = ON\n", "replica-preserve-commit-order = ON\n", "plugin-load-add = mysql_clone.so\n",
		"max-connections = 500\n",
		"innodb-buffer-pool-size = 4G\n",        // the site wins over the group
		"log-bin-trust-function-creators = 0\n", // a default the site may override
	} {
		if !strings.Contains(cnf, line) {
			t.Errorf("my.cnf lacks %q:\n%s", line, cnf)
		}
	}
	keys := ""
	for _, l := range strings.Split(cnf, "\n") {
		k, _, _ := strings.Cut(l, "=")
		keys += k
	}
	if strings.Contains(cnf, "8G") || strings.Contains(cnf, "super-read-only") || strings.Contains(keys, "_") {
		t.Errorf("my.cnf keeps an overridden value, an operator-owned override or an underscore:\n%s", cnf)
	}
	if want := []string{"spec.mysqlConf.super-read-only"}; strings.Join(ignored, ",") != strings.Join(want, ",") {
		t.Errorf("ignored = %v, want %v", ignored, want)
	}
	// The other site gets the group's value and the default.
	cnf0, _, _ := MyCnf(g, 0)
	if !strings.Contains(cnf0, "innodb-buffer-pool-size = 8G\n") || !strings.Contains(cnf0, "log-bin-trust-function-creators = 1\n") {
		t.Errorf("site iad my.cnf:\n%s", cnf0)
	}
}

func TestMyCnfRefusesBadEntriesNamingTheField(t *testing.T) {
	cases := []struct {
		group, site map[string]string
		want        string
	}{
		{group: map[string]string{"max_connections": "1\ngtid-mode=OFF"}, want: `spec.mysqlConf["max_connections"]: the value must be a single line`},
		{site: map[string]string{"bad key": "1"}, want: `spec.sites[0].mysqlConf["bad key"]: not a MySQL option name`},
		{site: map[string]string{"max_connections": "1", "max-connections": "2"}, want: `spec.sites[0].mysqlConf: "max-connections" and "max_connections" name the same option max-connections`},
	}
	for _, tc := range cases {
		g := minimal(t)
		g.Spec.MySQLConf, g.Spec.Sites[0].MySQLConf = tc.group, tc.site
		_, _, err := MyCnf(g, 0)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("MyCnf(%v, %v) error = %v, want it to contain %q", tc.group, tc.site, err, tc.want)
		}
		if _, err := RenderSite(g, 0, Config{SidecarImage: testSidecarImage, OperatorEndpoint: testOperatorEndpoint}); err == nil {
			t.Errorf("RenderSite accepted %v %v", tc.group, tc.site)
		}
	}
}

func TestSiteConfChangeChangesOnlyThatSitesHash(t *testing.T) {
	g := minimal(t)
	before := map[string]string{}
	for i, s := range g.Spec.Sites {
		r, err := RenderSite(g, i, Config{SidecarImage: testSidecarImage, OperatorEndpoint: testOperatorEndpoint})
		if err != nil {
			t.Fatal(err)
		}
		before[s.Name] = r.TemplateHash
	}
	g.Spec.Sites[1].MySQLConf = map[string]string{"max_connections": "900"}
	for i, s := range g.Spec.Sites {
		r, _ := RenderSite(g, i, Config{SidecarImage: testSidecarImage, OperatorEndpoint: testOperatorEndpoint})
		if changed := r.TemplateHash != before[s.Name]; changed != (s.Name == "pdx") {
			t.Errorf("site %s: hash changed = %v after editing pdx's mysqlConf", s.Name, changed)
		}
	}
	// A new operator default sidecar image changes every unpinned site.
	r, _ := RenderSite(g, 0, Config{SidecarImage: "ghcr.io/shipstream/bloodraven-sidecar:1.7.1", OperatorEndpoint: testOperatorEndpoint})
	if r.TemplateHash == before["iad"] {
		t.Error("a new default sidecar image left the pod template hash unchanged")
	}
	g.Spec.Sidecar = &v1alpha1.SidecarSpec{Image: "pinned:1"}
	a, _ := RenderSite(g, 0, Config{SidecarImage: "x:1", OperatorEndpoint: testOperatorEndpoint})
	b, _ := RenderSite(g, 0, Config{SidecarImage: "x:2", OperatorEndpoint: testOperatorEndpoint})
	if a.TemplateHash != b.TemplateHash || a.StatefulSet.Spec.Template.Spec.Containers[1].Image != "pinned:1" {
		t.Error("a pinned sidecar image must not follow the operator's default")
	}
}

func TestRenderSiteNeedsASidecarImage(t *testing.T) {
	_, err := RenderSite(minimal(t), 0, Config{})
	if err == nil || !strings.Contains(err.Error(), "spec.sidecar.image") {
		t.Errorf("error = %v, want one naming spec.sidecar.image", err)
	}
}

func TestServicesRefuseNameCollisions(t *testing.T) {
	g := minimal(t)
	g.Spec.Sites[1].Name = "primary"
	_, err := Services(g)
	if err == nil || !strings.Contains(err.Error(), "billing-primary") {
		t.Errorf("error = %v, want a collision on billing-primary", err)
	}
}

func liveService(t corev1.ServiceType, nodePort int32) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "orders-iad", Annotations: map[string]string{"cloud.example.com/lb-id": "lb-1"}},
		Spec: corev1.ServiceSpec{
			Type: t, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
			SessionAffinity: corev1.ServiceAffinityNone,
			Ports:           []corev1.ServicePort{{Name: "mysql", Port: 3306, TargetPort: intstr.FromString("mysql"), Protocol: corev1.ProtocolTCP, NodePort: nodePort}},
		},
	}
	if t != corev1.ServiceTypeClusterIP {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if t == corev1.ServiceTypeLoadBalancer {
		s.Spec.AllocateLoadBalancerNodePorts = ptr.To(true)
	}
	return s
}

func siteSvc(t *testing.T, g *v1alpha1.MysqlFailoverGroup, name string) *corev1.Service {
	t.Helper()
	svcs, err := Services(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no Service %s", name)
	return nil
}

func TestMergeServiceKeepsAllocations(t *testing.T) {
	g := minimal(t)
	g.Name = "orders"
	g.Spec.ServiceTemplate = &v1alpha1.ServiceTemplate{Type: "LoadBalancer", Annotations: map[string]string{"a": "1"}}

	// NodePort -> LoadBalancer keeps the node port and the cluster IP.
	out, changed := MergeService(siteSvc(t, g, "orders-iad"), liveService(corev1.ServiceTypeNodePort, 31234))
	if !changed || out.Spec.Type != corev1.ServiceTypeLoadBalancer || out.Spec.Ports[0].NodePort != 31234 || out.Spec.ClusterIP != "10.96.0.10" {
		t.Errorf("NodePort->LoadBalancer: changed=%v type=%s nodePort=%d clusterIP=%s", changed, out.Spec.Type, out.Spec.Ports[0].NodePort, out.Spec.ClusterIP)
	}
	if out.Annotations["cloud.example.com/lb-id"] != "lb-1" || out.Annotations["a"] != "1" || out.Annotations[AnnotationManagedAnnotations] != "a" {
		t.Errorf("annotations = %v", out.Annotations)
	}
	// Applying the result again changes nothing.
	if _, again := MergeService(siteSvc(t, g, "orders-iad"), out); again {
		t.Error("a second merge of the same desired Service reports a change")
	}
	// A site nodePort wins over the allocated one.
	g.Spec.Sites[0].ServiceTemplate = &v1alpha1.SiteServiceTemplate{NodePort: ptr.To(int32(30001))}
	if out, _ := MergeService(siteSvc(t, g, "orders-iad"), liveService(corev1.ServiceTypeNodePort, 31234)); out.Spec.Ports[0].NodePort != 30001 {
		t.Errorf("requested nodePort not applied: %d", out.Spec.Ports[0].NodePort)
	}
	// Back to ClusterIP clears the external-only fields; removed template
	// annotations go, foreign ones stay.
	g.Spec.Sites[0].ServiceTemplate = nil
	g.Spec.ServiceTemplate = nil
	lb := liveService(corev1.ServiceTypeLoadBalancer, 31234)
	lb.Annotations["a"] = "1"
	lb.Annotations[AnnotationManagedAnnotations] = "a"
	lb.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	lb.Spec.HealthCheckNodePort = 32000
	out, _ = MergeService(siteSvc(t, g, "orders-iad"), lb)
	s := out.Spec
	if s.Type != corev1.ServiceTypeClusterIP || s.Ports[0].NodePort != 0 || s.ExternalTrafficPolicy != "" || s.HealthCheckNodePort != 0 || s.AllocateLoadBalancerNodePorts != nil || s.ClusterIP != "10.96.0.10" {
		t.Errorf("LoadBalancer->ClusterIP left external fields: %+v", s)
	}
	if _, has := out.Annotations["a"]; has || out.Annotations["cloud.example.com/lb-id"] != "lb-1" {
		t.Errorf("annotations after removing the template: %v", out.Annotations)
	}
}

func TestClientServicesNeverExposeTheSidecar(t *testing.T) {
	g := loadGroup(t, "testdata/everything.input.yaml")
	svcs, err := Services(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs {
		internal := s.Labels[LabelService] == ServiceInternal
		hasSidecar := false
		for _, p := range s.Spec.Ports {
			if p.Name == "sidecar" || p.Port == 8089 {
				hasSidecar = true
			}
		}
		if hasSidecar != internal {
			t.Errorf("Service %s (%s): sidecar port exposed = %v", s.Name, s.Labels[LabelService], hasSidecar)
		}
		if internal && (s.Spec.Type != corev1.ServiceTypeClusterIP || !s.Spec.PublishNotReadyAddresses || len(s.Annotations) > 0) {
			t.Errorf("internal Service %s must be ClusterIP, publish not-ready addresses and ignore the template: %+v", s.Name, s.Spec)
		}
	}
}

func node(name string, labels map[string]string, taintKeys ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	for _, k := range taintKeys {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Effect: corev1.TaintEffectNoSchedule})
	}
	return n
}

func TestDesiredTaints(t *testing.T) {
	g := minimal(t)
	key := TaintKey("finance", "billing")
	if key != "finance.db-readonly.bloodraven.shipstream.io/billing" {
		t.Fatalf("TaintKey = %s", key)
	}
	g.Spec.Sites = append(g.Spec.Sites, v1alpha1.SiteSpec{Name: "reader", Role: v1alpha1.SiteRoleReadOnly,
		TaintNodeSelector: map[string]string{"db.example.com/site": "reader"}})
	nodes := []*corev1.Node{
		node("iad-1", map[string]string{"db.example.com/site": "iad"}, key), // active: loses the taint
		node("pdx-1", map[string]string{"db.example.com/site": "pdx"}),      // gains it
		node("pdx-2", map[string]string{"db.example.com/site": "pdx"}, key), // keeps it
		node("reader-1", map[string]string{"db.example.com/site": "reader"}),
		node("other", map[string]string{"x": "y"}, key), // selected by nobody: loses it
		node("other-group", nil, "finance.db-readonly.bloodraven.shipstream.io/other"),
	}
	got := DesiredTaints(g, nodes)
	if strings.Join(got.Add, ",") != "pdx-1" || strings.Join(got.Remove, ",") != "iad-1,other" {
		t.Errorf("active iad: %+v", got)
	}
	g.Status.ActiveSite = ""
	if got := DesiredTaints(g, nodes); !got.Empty() {
		t.Errorf("without an active site nothing may change, got %+v", got)
	}
	// A node selected by both the active site and another is not tainted.
	g.Status.ActiveSite = "pdx"
	g.Spec.Sites[0].TaintNodeSelector = map[string]string{"zone": "shared"}
	g.Spec.Sites[1].TaintNodeSelector = map[string]string{"zone": "shared"}
	if got := DesiredTaints(g, []*corev1.Node{node("shared", map[string]string{"zone": "shared"})}); !got.Empty() {
		t.Errorf("a node of the active site was tainted: %+v", got)
	}
}

func TestDNSEndpoint(t *testing.T) {
	g := minimal(t)
	d := DNSEndpoint(g)
	if d == nil {
		t.Fatal("no DNSEndpoint for an active site with a loadBalancerIP")
	}
	eps := d.Object["spec"].(map[string]any)["endpoints"].([]any)
	ep := eps[0].(map[string]any)
	if ep["dnsName"] != "billing.db.example.com" || ep["recordType"] != "A" || ep["recordTTL"] != int64(60) || ep["targets"].([]any)[0] != "10.1.0.1" {
		t.Errorf("endpoint = %v", ep)
	}
	g.Status.ActiveSite = ""
	if DNSEndpoint(g) != nil {
		t.Error("DNSEndpoint rendered without an active site")
	}
}

// BenchmarkRenderGroup renders everything one reconcile renders for the
// sample group (three sites): my.cnf, ConfigMaps, StatefulSets with their
// template hashes, Services and the DNSEndpoint.
func BenchmarkRenderGroup(b *testing.B) {
	g := loadGroup(b, "../../deploy/samples/mysqlfailovergroup.yaml")
	g.Status.ActiveSite = "iad"
	cfg := Config{SidecarImage: testSidecarImage, OperatorEndpoint: testOperatorEndpoint}
	b.ReportAllocs()
	for b.Loop() {
		for i := range g.Spec.Sites {
			if _, err := RenderSite(g, i, cfg); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := Services(g); err != nil {
			b.Fatal(err)
		}
		_ = DNSEndpoint(g)
	}
}

// The sidecar learns its peers and where the operator is from its
// environment.
func TestSidecarEnvironment(t *testing.T) {
	envOf := func(g *v1alpha1.MysqlFailoverGroup, i int, cfg Config) map[string]string {
		t.Helper()
		r, err := RenderSite(g, i, cfg)
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, c := range r.StatefulSet.Spec.Template.Spec.Containers {
			if c.Name == ContainerSidecar {
				for _, e := range c.Env {
					env[e.Name] = e.Value
				}
			}
		}
		return env
	}
	g := minimal(t)
	cfg := Config{SidecarImage: testSidecarImage, OperatorEndpoint: testOperatorEndpoint}
	var names []string
	for _, s := range g.Spec.Sites {
		names = append(names, s.Name)
	}
	for i, self := range names {
		env := envOf(g, i, cfg)
		var want []string
		for _, n := range names {
			if n != self {
				want = append(want, n)
			}
		}
		if got := env[protocol.EnvPeerSites]; got != strings.Join(want, ",") {
			t.Errorf("site %s: %s = %q, want %q", self, protocol.EnvPeerSites, got, strings.Join(want, ","))
		}
		if got := env[protocol.EnvOperatorEndpoint]; got != testOperatorEndpoint {
			t.Errorf("site %s: %s = %q, want the operator default %q", self, protocol.EnvOperatorEndpoint, got, testOperatorEndpoint)
		}
	}

	g.Spec.Sidecar = &v1alpha1.SidecarSpec{OperatorEndpoint: "aux.example:8082"}
	if got := envOf(g, 0, cfg)[protocol.EnvOperatorEndpoint]; got != "aux.example:8082" {
		t.Errorf("group's own operatorEndpoint not used: got %q", got)
	}

	g.Spec.Sidecar = nil
	if got, set := envOf(g, 0, Config{SidecarImage: testSidecarImage})[protocol.EnvOperatorEndpoint]; set {
		t.Errorf("no endpoint anywhere, yet %s = %q was rendered", protocol.EnvOperatorEndpoint, got)
	}
}

// podLabels and podAnnotations reach the pod template under the operator's
// own: a colliding key keeps the operator's value, and the active label,
// which the operator writes on the pod itself, cannot be set through
// podLabels (it would put every new pod into the primary Service).
func TestPodLabelsAndAnnotationsUnderTheOperators(t *testing.T) {
	g := minimal(t)
	g.Spec.PodLabels = map[string]string{
		"team":                                    "checkout",
		"bloodraven.shipstream.io/site":           "elsewhere",
		"bloodraven.shipstream.io/active":         "true",
		"bloodraven.shipstream.io/failover-group": "other",
	}
	g.Spec.PodAnnotations = map[string]string{
		"prometheus.io/scrape":                       "true",
		"bloodraven.shipstream.io/config-hash":       "forged",
		"bloodraven.shipstream.io/pod-template-hash": "forged",
	}
	s, err := RenderSite(g, 1, Config{SidecarImage: testSidecarImage, OperatorEndpoint: testOperatorEndpoint})
	if err != nil {
		t.Fatal(err)
	}
	tm := s.StatefulSet.Spec.Template
	if l := tm.Labels; l["team"] != "checkout" || l["bloodraven.shipstream.io/site"] != "pdx" || l["bloodraven.shipstream.io/failover-group"] != "billing" {
		t.Errorf("pod template labels %v", l)
	}
	if v, has := tm.Labels["bloodraven.shipstream.io/active"]; has {
		t.Errorf("podLabels set the active label on the template: %q", v)
	}
	a := tm.Annotations
	if a["prometheus.io/scrape"] != "true" || a["bloodraven.shipstream.io/config-hash"] == "forged" || a["bloodraven.shipstream.io/pod-template-hash"] != s.TemplateHash {
		t.Errorf("pod template annotations %v (template hash %s)", a, s.TemplateHash)
	}
	if g.Spec.PodLabels["bloodraven.shipstream.io/active"] != "true" {
		t.Error("rendering modified the group's podLabels")
	}
}
