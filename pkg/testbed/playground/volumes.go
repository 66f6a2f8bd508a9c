package playground

import (
	"context"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/render"
)

// syncClaims gives every Pending claim of the group a PersistentVolume
// pre-bound to it; kube-controller-manager's binder then binds them, and
// the scheduler can place the pod. The volume's host path holds the
// simulated mysqld's data directory (podDataDir).
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
					Path: a.claimDir(pvc.Name)}},
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

// claimDir is the host path of the volume bound to the named claim.
func (a *NodeAgent) claimDir(claim string) string { return filepath.Join(a.dir, "volumes", claim) }

// podDataDir is the data directory of the pod's mysqld: on the volume of
// its data claim (render.DataVolumeName), so it outlives the pod as a
// PersistentVolume does; without one, a directory of the pod's own that
// the next pod does not see, as an emptyDir.
func (a *NodeAgent) podDataDir(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == render.DataVolumeName && v.PersistentVolumeClaim != nil {
			return filepath.Join(a.claimDir(v.PersistentVolumeClaim.ClaimName), "mysql")
		}
	}
	return filepath.Join(a.dir, "pods", string(pod.UID), "mysql")
}
