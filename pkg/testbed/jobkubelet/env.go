package jobkubelet

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// resolveEnv is c's environment as a kubelet resolves it, in order: a
// literal value with $(VAR) references to earlier variables expanded, the
// pod's own fields (the downward API) and Secret or ConfigMap keys.
func (k *Kubelet) resolveEnv(ctx context.Context, p *corev1.Pod, c corev1.Container) ([]string, error) {
	vars := map[string]string{}
	var out []string
	for _, e := range c.Env {
		v, err := k.envValue(ctx, p, e, vars)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		vars[e.Name] = v
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

func (k *Kubelet) envValue(ctx context.Context, p *corev1.Pod, e corev1.EnvVar, vars map[string]string) (string, error) {
	switch {
	case e.ValueFrom == nil:
		return Expand(e.Value, vars), nil
	case e.ValueFrom.FieldRef != nil:
		return fieldValue(p, e.ValueFrom.FieldRef.FieldPath)
	case e.ValueFrom.SecretKeyRef != nil:
		ref := e.ValueFrom.SecretKeyRef
		sec, err := k.cfg.Kube.CoreV1().Secrets(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		v, ok := sec.Data[ref.Key]
		if !ok {
			return "", fmt.Errorf("secret %s has no key %s", ref.Name, ref.Key)
		}
		return string(v), nil
	case e.ValueFrom.ConfigMapKeyRef != nil:
		ref := e.ValueFrom.ConfigMapKeyRef
		cm, err := k.cfg.Kube.CoreV1().ConfigMaps(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			return "", fmt.Errorf("configmap %s has no key %s", ref.Name, ref.Key)
		}
		return v, nil
	}
	return "", errors.New("this kind of valueFrom is not supported by the test bed's Job kubelet")
}

// fieldValue is a downward-API field of the pod.
func fieldValue(p *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.annotations": p.Annotations, "metadata.labels": p.Labels} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok && strings.HasSuffix(key, "']") {
			return m[strings.TrimSuffix(key, "']")], nil
		}
	}
	return "", fmt.Errorf("field %s is not supported by the test bed's Job kubelet", path)
}

// Expand replaces $(VAR) in s with vars' VAR as Kubernetes expands a
// container's command, arguments and env values: $$ is a literal $, and a
// reference to an undefined variable is left as written.
func Expand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := vars[name]; ok {
					b.WriteString(v)
				} else {
					b.WriteString(s[i : i+3+end])
				}
				i += 2 + end
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
