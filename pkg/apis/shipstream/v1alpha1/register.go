package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream"
)

// SchemeGroupVersion is the group and version of every type in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: shipstream.GroupName, Version: "v1alpha1"}

// Kind returns the group-qualified kind for an unqualified kind name.
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}

// Resource returns the group-qualified resource for an unqualified resource name.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder collects the functions that add this version's types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this version's types to a scheme (used by the generated clientset).
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&MysqlFailoverGroup{}, &MysqlFailoverGroupList{},
		&MysqlBackup{}, &MysqlBackupList{},
		&MysqlBackupVerification{}, &MysqlBackupVerificationList{},
		&MysqlStandbyCluster{}, &MysqlStandbyClusterList{},
		&MysqlDatabase{}, &MysqlDatabaseList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
