package render

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// DNSEndpointGVR is external-dns's DNSEndpoint resource.
var DNSEndpointGVR = schema.GroupVersionResource{Group: "externaldns.k8s.io", Version: "v1alpha1", Resource: "dnsendpoints"}

// DNSEndpoint renders the group's external-dns DNSEndpoint: an A record of
// spec.dns.hostname pointing at the active site's loadBalancerIP with
// spec.dns.ttlSeconds. It returns nil when there is no active site, or the
// active site has no loadBalancerIP (a reader is never a DNS target): the
// operator then leaves the record as it is.
func DNSEndpoint(g *v1alpha1.MysqlFailoverGroup) *unstructured.Unstructured {
	i := siteIndex(g, g.Status.ActiveSite)
	if i < 0 || g.Spec.Sites[i].LoadBalancerIP == "" || g.Spec.Sites[i].Role == v1alpha1.SiteRoleReadOnly {
		return nil
	}
	ttl := v1alpha1.DefaultDNSTTLSeconds
	if g.Spec.DNS.TTLSeconds != nil {
		ttl = *g.Spec.DNS.TTLSeconds
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": DNSEndpointGVR.GroupVersion().String(),
		"kind":       "DNSEndpoint",
		"spec": map[string]any{
			"endpoints": []any{map[string]any{
				"dnsName":    g.Spec.DNS.Hostname,
				"recordType": "A",
				"recordTTL":  int64(ttl),
				"targets":    []any{g.Spec.Sites[i].LoadBalancerIP},
			}},
		},
	}}
	u.SetName(DNSEndpointName(g.Name))
	u.SetNamespace(g.Namespace)
	u.SetLabels(GroupLabels(g))
	ref := OwnerReference(g)
	u.SetOwnerReferences([]metav1.OwnerReference{ref})
	return u
}
