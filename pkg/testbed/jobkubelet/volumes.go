package jobkubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// layout makes one directory per volume of the pod under dir and returns
// them by volume name: an emptyDir is an empty directory, a Secret volume
// holds its keys (or its items) as files in the kubelet's atomic-writer
// layout (a timestamped ..<time> directory, the ..data link to it, and a
// link per file), and a persistentVolumeClaim volume's directory is the
// empty mount point its claim's data is bind-mounted onto, in the private
// mount namespace of each container that mounts it (claimMounts). Other
// kinds of volume are refused, as a kubelet refuses a pod whose volume it
// cannot set up.
func (k *Kubelet) layout(ctx context.Context, p *corev1.Pod, dir string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range p.Spec.Volumes {
		d := filepath.Join(dir, "volumes", v.Name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		out[v.Name] = d
		switch {
		case v.EmptyDir != nil:
		case v.Secret != nil:
			if err := k.projectSecret(ctx, p.Namespace, v.Secret, d); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
		case v.PersistentVolumeClaim != nil:
			if err := k.claimData(ctx, p.Namespace, v.PersistentVolumeClaim.ClaimName); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
		default:
			return nil, fmt.Errorf("volume %s: only emptyDir, Secret and persistentVolumeClaim volumes are supported by the test bed's Job kubelet", v.Name)
		}
	}
	return out, nil
}

func (k *Kubelet) projectSecret(ctx context.Context, ns string, src *corev1.SecretVolumeSource, dir string) error {
	sec, err := k.cfg.Kube.CoreV1().Secrets(ns).Get(ctx, src.SecretName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("secret %q: %w", src.SecretName, err)
	}
	files := map[string][]byte{}
	if len(src.Items) == 0 {
		for key, v := range sec.Data {
			files[key] = v
		}
	}
	for _, it := range src.Items {
		v, ok := sec.Data[it.Key]
		if !ok {
			return fmt.Errorf("secret %q has no key %q", src.SecretName, it.Key)
		}
		files[it.Path] = v
	}
	ts := "..data-" + time.Now().UTC().Format("2006_01_02_15_04_05.000000000")
	if err := os.MkdirAll(filepath.Join(dir, ts), 0o700); err != nil {
		return err
	}
	for name, v := range files {
		path := filepath.Join(dir, ts, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(path, v, 0o400); err != nil {
			return err
		}
	}
	if err := os.Symlink(ts, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	for name := range files {
		top := firstElem(name)
		link := filepath.Join(dir, top)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", top), link); err != nil {
			return err
		}
	}
	return nil
}

func firstElem(p string) string {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return p
}

// ClaimDir is where the data of claim in namespace lives: one directory per
// claim under the kubelet's root, kept across pods (the same claim is the
// same directory for every pod that mounts it) and after them, so that a
// test can read what a pod stored on its claim.
func (k *Kubelet) ClaimDir(namespace, claim string) string {
	return filepath.Join(k.cfg.Root, "claims", namespace, claim)
}

// claimData makes the claim's data directory. The claim must exist in the
// API server: a kubelet does not start a pod whose claim is missing
// (whether it is bound is not checked: the test bed has no volumes to bind).
func (k *Kubelet) claimData(ctx context.Context, ns, claim string) error {
	if _, err := k.cfg.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("persistentvolumeclaim %q not found", claim)
		}
		return fmt.Errorf("persistentvolumeclaim %q: %w", claim, err)
	}
	return os.MkdirAll(k.ClaimDir(ns, claim), 0o755)
}

// bindMount is one claim directory to bind onto a container's volume
// directory.
type bindMount struct{ source, target string }

// claimMounts are the bind mounts container c needs: for each of its
// mounts of a persistentVolumeClaim volume, the claim's data (below the
// mount's subPath) onto the volume's directory (the same subPath below it).
func (k *Kubelet) claimMounts(p *corev1.Pod, c corev1.Container, vols map[string]string) ([]bindMount, error) {
	claims := map[string]string{}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims[v.Name] = k.ClaimDir(p.Namespace, v.PersistentVolumeClaim.ClaimName)
		}
	}
	var out []bindMount
	for _, m := range c.VolumeMounts {
		src, ok := claims[m.Name]
		if !ok {
			continue
		}
		b := bindMount{source: filepath.Join(src, m.SubPath), target: filepath.Join(vols[m.Name], m.SubPath)}
		for _, d := range []string{b.source, b.target} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
		}
		out = append(out, b)
	}
	return out, nil
}
