// Package render turns a MysqlFailoverGroup (and, where Kubernetes has
// allocated something, the live object) into the Kubernetes objects the
// operator keeps: per site a StatefulSet and its my.cnf ConfigMap, the
// internal, site, primary and replicas Services, and the external-dns
// DNSEndpoint. Every function here is pure; the group-objects controller
// (pkg/controllers/groupobjects) applies the results.
package render

import (
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// Keys of the labels, annotations and finalizer the operator writes. All are
// under bloodraven.shipstream.io/ except the app.kubernetes.io/ set.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"

	// LabelGroup names the MysqlFailoverGroup an object belongs to.
	LabelGroup = "bloodraven.shipstream.io/failover-group"
	// LabelSite names the site an object belongs to.
	LabelSite = "bloodraven.shipstream.io/site"
	// LabelService says which of the group's Services an object is:
	// internal, site, primary or replicas.
	LabelService = "bloodraven.shipstream.io/service"
	// LabelActive is "true" on the active site's MySQL pod and "false" on the
	// others. The operator sets it on the pods themselves (not the pod
	// template, so a failover rolls nothing); the primary and replicas
	// Services select on it.
	LabelActive = "bloodraven.shipstream.io/active"
	// LabelReadPool is "true" on a reader's pod while it is in its read pool
	// (its lag within spec.replication.readOnlyMaxLagSeconds) and "false"
	// otherwise; the operator sets it on the pod, and the reader's site
	// Service selects on it.
	LabelReadPool = "bloodraven.shipstream.io/read-pool"

	// AnnotationPodTemplateHash is the hash of the rendered pod template, on
	// the StatefulSet and on its pod template (so every pod carries the hash
	// of the template it was created from).
	AnnotationPodTemplateHash = "bloodraven.shipstream.io/pod-template-hash"
	// AnnotationConfigHash is the hash of the site's my.cnf, on the pod
	// template: a my.cnf change is a pod template change.
	AnnotationConfigHash = "bloodraven.shipstream.io/config-hash"
	// AnnotationManagedAnnotations lists (comma-separated) the annotation keys
	// the operator put on a Service from serviceTemplate, so a key removed
	// from the template is removed from the Service while annotations written
	// by others (cloud controllers, users) are kept.
	AnnotationManagedAnnotations = "bloodraven.shipstream.io/managed-annotations"

	// Finalizer holds a deleted group until its node taints and DNS records
	// are removed.
	Finalizer = "bloodraven.shipstream.io/failover-group"
)

// Fixed values of the operator's labels.
const (
	NameMySQL      = "mysql"
	ManagedBy      = "bloodraven"
	ComponentMySQL = "database"
)

// Values of LabelService.
const (
	ServiceInternal = "internal"
	ServiceSite     = "site"
	ServicePrimary  = "primary"
	ServiceReplicas = "replicas"
)

// StatefulSetName is the name of a site's StatefulSet; its one pod is
// StatefulSetName + "-0".
func StatefulSetName(group, site string) string { return group + "-" + site }

// PodName is the name of the one pod of a site's StatefulSet.
func PodName(group, site string) string { return StatefulSetName(group, site) + "-0" }

// ConfigMapName is the name of a site's my.cnf ConfigMap.
func ConfigMapName(group, site string) string { return group + "-" + site + "-mysql-config" }

// InternalServiceName is the site's internal Service, the address followers
// and the operator use (the development site-address map implies it too).
func InternalServiceName(group, site string) string { return siteaddr.InternalServiceName(group, site) }

// SiteServiceName is the site's client-facing Service.
func SiteServiceName(group, site string) string { return group + "-" + site }

// PrimaryServiceName is the Service that follows the active site.
func PrimaryServiceName(group string) string { return group + "-primary" }

// ReplicasServiceName is the Service over every site but the active one.
func ReplicasServiceName(group string) string { return group + "-replicas" }

// DNSEndpointName is the name of the group's external-dns DNSEndpoint.
func DNSEndpointName(group string) string { return group + "-dns" }

// DataVolumeName is the volumeClaimTemplate of each StatefulSet; the
// site's PVC is DataVolumeName-StatefulSetName-0.
const DataVolumeName = "data"

// TaintKey is the node taint of a group's non-active sites:
// <namespace>.db-readonly.bloodraven.shipstream.io/<group>.
func TaintKey(namespace, group string) string {
	return namespace + ".db-readonly.bloodraven.shipstream.io/" + group
}

// GroupLabels are the labels on every object of a group.
func GroupLabels(g *v1alpha1.MysqlFailoverGroup) map[string]string {
	return map[string]string{
		LabelName:      NameMySQL,
		LabelInstance:  g.Name,
		LabelComponent: ComponentMySQL,
		LabelManagedBy: ManagedBy,
		LabelGroup:     g.Name,
	}
}

// SiteLabels are GroupLabels plus the site.
func SiteLabels(g *v1alpha1.MysqlFailoverGroup, site string) map[string]string {
	l := GroupLabels(g)
	l[LabelSite] = site
	return l
}

// SiteSelector selects a site's MySQL pod. It is the StatefulSet's
// (immutable) selector, so it never changes.
func SiteSelector(group, site string) map[string]string {
	return map[string]string{LabelName: NameMySQL, LabelGroup: group, LabelSite: site}
}
