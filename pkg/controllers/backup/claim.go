package backup

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// LabelProfile on a provisioned claim names the backup profile it serves.
const LabelProfile = "bloodraven.shipstream.io/backup-profile"

// ProvisionedClaimName is the claim the operator creates for a profile's
// pvc.provisioned: <group>-backup-<profile>. Admission bounds both names to
// 63 characters (the group's a DNS-1035 label, the profile's a DNS label),
// so the name is at most 134 characters, a valid DNS subdomain well inside
// a claim name's 253, and each name fits a label value's 63.
func ProvisionedClaimName(group, profile string) string { return group + "-backup-" + profile }

// ClaimName is the claim a PVC profile of group stores on: its claimName,
// or the provisioned claim's name; "" for any other profile.
func ClaimName(p *v1alpha1.BackupProfile, group string) string {
	switch {
	case p.Storage.Type != v1alpha1.BackupStoragePVC || p.Storage.PVC == nil:
		return ""
	case p.Storage.PVC.Provisioned != nil:
		return ProvisionedClaimName(group, p.Name)
	}
	return p.Storage.PVC.ClaimName
}

func provisioned(p *v1alpha1.BackupProfile) bool {
	return p.Storage.Type == v1alpha1.BackupStoragePVC && p.Storage.PVC != nil && p.Storage.PVC.Provisioned != nil
}

// claimProblem says why the provisioned claim of p cannot be used, or "":
// a claim of that name that the group does not control is someone else's,
// and the operator neither adopts it nor writes backups onto it.
func claimProblem(in Input, p *v1alpha1.BackupProfile) string {
	if !provisioned(p) || in.Claim == nil {
		return ""
	}
	if ownedBy(in.Claim, in.Group) {
		return ""
	}
	owner := "no controller"
	if ref := metav1.GetControllerOfNoCopy(in.Claim); ref != nil {
		owner = fmt.Sprintf("controller %s %s", ref.Kind, ref.Name)
	}
	return fmt.Sprintf("PersistentVolumeClaim %s (the provisioned claim of profile %s) already exists with %s, not MysqlFailoverGroup %s; "+
		"the operator never adopts or writes to a claim it did not create: delete or rename that claim, or back up to it through a profile with storage.pvc.claimName; nothing was started",
		in.Claim.Name, p.Name, owner, in.Group.Name)
}

func ownedBy(o metav1.Object, g *v1alpha1.MysqlFailoverGroup) bool {
	ref := metav1.GetControllerOfNoCopy(o)
	return ref != nil && ref.UID == g.UID && ref.Kind == "MysqlFailoverGroup"
}

// RenderClaim is the provisioned claim of profile p: owned by the group as
// its controller, so deleting the group deletes the claim and the backups
// on it (docs/backups.md says so), labelled with the group and profile.
func RenderClaim(g *v1alpha1.MysqlFailoverGroup, p *v1alpha1.BackupProfile) (*corev1.PersistentVolumeClaim, error) {
	prov := p.Storage.PVC.Provisioned
	size, err := resource.ParseQuantity(prov.Size)
	if err != nil {
		return nil, fmt.Errorf("profile %s: pvc.provisioned.size %q: %w", p.Name, prov.Size, err)
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: ProvisionedClaimName(g.Name, p.Name), Namespace: g.Namespace,
			Labels:          map[string]string{LabelGroup: g.Name, LabelProfile: p.Name, labelManagedBy: "bloodraven", labelComponent: "backup"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(g, v1alpha1.SchemeGroupVersion.WithKind("MysqlFailoverGroup"))},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &prov.StorageClassName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}, nil
}
