package render

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// Services renders every Service of g, sorted by name: per site the internal
// Service and the client-facing site Service, then the primary and replicas
// Services. Two Services with one name (a site named "primary", say) are an
// error naming the sites.
func Services(g *v1alpha1.MysqlFailoverGroup) ([]*corev1.Service, error) {
	var out []*corev1.Service
	for i := range g.Spec.Sites {
		out = append(out, internalService(g, i), siteService(g, i))
	}
	out = append(out, roleService(g, ServicePrimary), roleService(g, ServiceReplicas))
	seen := map[string]*corev1.Service{}
	for _, s := range out {
		if prev, dup := seen[s.Name]; dup {
			return nil, fmt.Errorf("spec.sites[].name: the %s Service of %s and the %s Service of %s would both be named %s; rename a site",
				prev.Labels[LabelService], describe(prev), s.Labels[LabelService], describe(s), s.Name)
		}
		seen[s.Name] = s
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

func describe(s *corev1.Service) string {
	if site := s.Labels[LabelSite]; site != "" {
		return "site " + site
	}
	return "the group"
}

func mysqlPort() corev1.ServicePort {
	return corev1.ServicePort{Name: MySQLPortName, Port: siteaddr.MySQLPort, TargetPort: intstr.FromString(MySQLPortName), Protocol: corev1.ProtocolTCP}
}

func serviceMeta(g *v1alpha1.MysqlFailoverGroup, name, kind, site string) metav1.ObjectMeta {
	labels := GroupLabels(g)
	if site != "" {
		labels[LabelSite] = site
	}
	labels[LabelService] = kind
	m := objectMeta(g, name, labels)
	return m
}

// internalService is what the operator and peer sidecars dial: always
// ClusterIP, both ports, and not-ready addresses published so a site whose
// readiness fails stays reachable for diagnosis and fencing.
func internalService(g *v1alpha1.MysqlFailoverGroup, i int) *corev1.Service {
	site := g.Spec.Sites[i].Name
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: serviceMeta(g, InternalServiceName(g.Name, site), ServiceInternal, site),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: SiteSelector(g.Name, site),
			Ports: []corev1.ServicePort{
				mysqlPort(),
				{Name: protocol.SidecarPortName, Port: protocol.SidecarPort, TargetPort: intstr.FromString(protocol.SidecarPortName), Protocol: corev1.ProtocolTCP},
			},
			PublishNotReadyAddresses: true,
		},
	}
}

// external reports whether a Service type exposes node ports.
func external(t corev1.ServiceType) bool {
	return t == corev1.ServiceTypeNodePort || t == corev1.ServiceTypeLoadBalancer
}

func groupType(g *v1alpha1.MysqlFailoverGroup) corev1.ServiceType {
	if g.Spec.ServiceTemplate != nil && g.Spec.ServiceTemplate.Type != "" {
		return corev1.ServiceType(g.Spec.ServiceTemplate.Type)
	}
	return corev1.ServiceTypeClusterIP
}

// clientSpec applies type, externalTrafficPolicy and annotations to a
// client-facing Service. An externalTrafficPolicy left unset on an external
// type is written as Cluster (the API default), so a rendered Service equals
// the stored one.
func clientSpec(svc *corev1.Service, t corev1.ServiceType, etp v1alpha1.ExternalTrafficPolicy, annotations map[string]string) {
	svc.Spec.Type = t
	if external(t) {
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		if etp != "" {
			svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicy(etp)
		}
	}
	if len(annotations) > 0 {
		svc.Annotations = annotations
	}
}

// siteService is the site's client-facing Service: the group's
// serviceTemplate with the site's overrides (site annotation keys win), the
// mysql port only.
func siteService(g *v1alpha1.MysqlFailoverGroup, i int) *corev1.Service {
	site := g.Spec.Sites[i]
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: serviceMeta(g, SiteServiceName(g.Name, site.Name), ServiceSite, site.Name),
		Spec: corev1.ServiceSpec{
			Selector: SiteSelector(g.Name, site.Name),
			Ports:    []corev1.ServicePort{mysqlPort()},
		},
	}
	if site.Role == v1alpha1.SiteRoleReadOnly {
		// A reader serves only while its lag allows (the read pool).
		svc.Spec.Selector[LabelReadPool] = "true"
	}
	t := groupType(g)
	var etp v1alpha1.ExternalTrafficPolicy
	var annotations map[string]string
	if st := g.Spec.ServiceTemplate; st != nil {
		annotations = mergeUnder(nil, st.Annotations)
	}
	sst := site.ServiceTemplate
	if sst != nil && sst.Type != "" {
		t = corev1.ServiceType(sst.Type)
	}
	if external(t) {
		// The group's policy applies only where the site's effective type
		// supports it.
		if st := g.Spec.ServiceTemplate; st != nil {
			etp = st.ExternalTrafficPolicy
		}
		if sst != nil && sst.ExternalTrafficPolicy != "" {
			etp = sst.ExternalTrafficPolicy
		}
		if sst != nil && sst.NodePort != nil {
			svc.Spec.Ports[0].NodePort = *sst.NodePort
		}
	}
	if sst != nil {
		annotations = mergeUnder(annotations, sst.Annotations)
	}
	clientSpec(svc, t, etp, annotations)
	return svc
}

// roleService is the primary Service (the active site's pod) or the
// replicas Service (every other site's pod), selected through LabelActive.
func roleService(g *v1alpha1.MysqlFailoverGroup, kind string) *corev1.Service {
	name, active := PrimaryServiceName(g.Name), "true"
	if kind == ServiceReplicas {
		name, active = ReplicasServiceName(g.Name), "false"
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: serviceMeta(g, name, kind, ""),
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{LabelName: NameMySQL, LabelGroup: g.Name, LabelActive: active},
			Ports:    []corev1.ServicePort{mysqlPort()},
		},
	}
	var etp v1alpha1.ExternalTrafficPolicy
	var annotations map[string]string
	if st := g.Spec.ServiceTemplate; st != nil {
		etp = st.ExternalTrafficPolicy
		annotations = mergeUnder(nil, st.Annotations)
	}
	clientSpec(svc, groupType(g), etp, annotations)
	return svc
}

// MergeService returns the object to write so that live matches desired:
// live with the operator's labels, annotations, owner reference, type,
// selector, ports and policies set, and what Kubernetes allocated kept — the
// cluster IPs and IP families always, node ports while the type stays
// external (NodePort or LoadBalancer, either way), the health-check node port
// while it is a LoadBalancer with policy Local. Moving to ClusterIP clears
// the external-only fields. changed is false when nothing needs writing.
func MergeService(desired, live *corev1.Service) (out *corev1.Service, changed bool) {
	out = live.DeepCopy()
	MergeMeta(&out.ObjectMeta, desired.ObjectMeta)
	setManagedAnnotations(&out.ObjectMeta, desired.Annotations)

	s, d, l := &out.Spec, desired.Spec, live.Spec
	s.Type = d.Type
	s.Selector = d.Selector
	s.PublishNotReadyAddresses = d.PublishNotReadyAddresses
	s.Ports = make([]corev1.ServicePort, len(d.Ports))
	for i, p := range d.Ports {
		if external(d.Type) && p.NodePort == 0 {
			p.NodePort = allocatedNodePort(l, p)
		}
		if !external(d.Type) {
			p.NodePort = 0
		}
		s.Ports[i] = p
	}
	s.ExternalTrafficPolicy = d.ExternalTrafficPolicy
	if d.Type == corev1.ServiceTypeLoadBalancer && d.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal &&
		l.Type == corev1.ServiceTypeLoadBalancer && l.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		s.HealthCheckNodePort = l.HealthCheckNodePort
	} else {
		s.HealthCheckNodePort = 0
	}
	if d.Type != corev1.ServiceTypeLoadBalancer {
		s.AllocateLoadBalancerNodePorts = nil
		s.LoadBalancerClass = nil
		s.LoadBalancerSourceRanges = nil
		s.LoadBalancerIP = ""
	}
	if !external(d.Type) {
		s.ExternalTrafficPolicy = ""
	}
	return out, !equalService(out, live)
}

// allocatedNodePort finds the node port live already has for p (same name,
// else same port number and protocol), or 0.
func allocatedNodePort(live corev1.ServiceSpec, p corev1.ServicePort) int32 {
	if !external(live.Type) {
		return 0
	}
	for _, lp := range live.Ports {
		if lp.Name == p.Name && lp.NodePort != 0 {
			return lp.NodePort
		}
	}
	for _, lp := range live.Ports {
		if lp.Port == p.Port && lp.Protocol == p.Protocol && lp.NodePort != 0 {
			return lp.NodePort
		}
	}
	return 0
}

// MergeMeta sets the operator's labels and owner reference on an object,
// keeping labels and owners others added.
func MergeMeta(out *metav1.ObjectMeta, desired metav1.ObjectMeta) {
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range desired.Labels {
		out.Labels[k] = v
	}
	for _, ref := range desired.OwnerReferences {
		found := false
		for i, have := range out.OwnerReferences {
			if have.UID == ref.UID {
				out.OwnerReferences[i] = ref
				found = true
			}
		}
		if !found {
			out.OwnerReferences = append(out.OwnerReferences, ref)
		}
	}
}

// setManagedAnnotations writes want onto meta and removes the keys the
// operator wrote before (listed in AnnotationManagedAnnotations) that want no
// longer has; annotations written by others are left alone.
func setManagedAnnotations(meta *metav1.ObjectMeta, want map[string]string) {
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	if prev, ok := meta.Annotations[AnnotationManagedAnnotations]; ok && prev != "" {
		for _, k := range strings.Split(prev, ",") {
			if _, keep := want[k]; !keep {
				delete(meta.Annotations, k)
			}
		}
	}
	keys := make([]string, 0, len(want))
	for k, v := range want {
		meta.Annotations[k] = v
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		meta.Annotations[AnnotationManagedAnnotations] = joinKeys(keys)
	} else {
		delete(meta.Annotations, AnnotationManagedAnnotations)
	}
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
}

// NewService is desired prepared for creation: the managed-annotations list
// set.
func NewService(desired *corev1.Service) *corev1.Service {
	out := desired.DeepCopy()
	setManagedAnnotations(&out.ObjectMeta, desired.Annotations)
	return out
}

func equalService(a, b *corev1.Service) bool {
	// Semantic equality treats nil and empty maps and lists alike.
	eq := equality.Semantic.DeepEqual
	return eq(a.Labels, b.Labels) && eq(a.Annotations, b.Annotations) &&
		eq(a.OwnerReferences, b.OwnerReferences) && eq(a.Spec, b.Spec)
}
