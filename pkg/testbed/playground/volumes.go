package playground

import (
	"context"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// syncClaims gives every Pending claim of the group a PersistentVolume
// pre-bound to it; kube-controller-manager's binder then binds them, and
// the scheduler can place the pod. The volume is never used for data: the
// simulator keeps its data in memory.
func (a *NodeAgent) syncClaims(ctx context.Context) error {
	pvcs, err := a.kube.CoreV1().PersistentVolumeClaims(a.namespace).List(ctx, metav1.ListOptions{LabelSelector: a.selector()})
	if err != nil {
		return err
	}
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		if pvc.Status.Phase != corev1.ClaimPending || pvc.Spec.VolumeName != "" {
			continue
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "playground-" + pvc.Namespace + "-" + pvc.Name,
				Labels: map[string]string{"bloodraven.shipstream.io/playground": "true"}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
				AccessModes:                   pvc.Spec.AccessModes,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				VolumeMode:                    pvc.Spec.VolumeMode,
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: filepath.Join(a.dir, "volumes", pvc.Name)}},
				ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
					Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			},
		}
		if pvc.Spec.StorageClassName != nil {
			pv.Spec.StorageClassName = *pvc.Spec.StorageClassName
		}
		if _, err := a.kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}
