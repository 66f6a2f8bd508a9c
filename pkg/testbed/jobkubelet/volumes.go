package jobkubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// layout makes one directory per volume of the pod under dir and returns
// them by volume name: an emptyDir is an empty directory, a Secret volume
// holds its keys (or its items) as files in the kubelet's atomic-writer
// layout (a timestamped ..<time> directory, the ..data link to it, and a
// link per file). Other kinds of volume are refused, as a kubelet refuses a
// pod whose volume it cannot set up.
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
		default:
			return nil, fmt.Errorf("volume %s: only emptyDir and Secret volumes are supported by the test bed's Job kubelet", v.Name)
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
