package playground

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/render"
)

// The mysqld container's filesystem, as the kubelet and the image give it,
// under a directory per pod (<dir>/pods/<pod UID>/root): the image's
// /etc/my.cnf, each ConfigMap and Secret volume the container mounts at
// its mount path (in the kubelet's layout: a ..<timestamp> directory, the
// ..data link to it, and a link per key), the data volume as a link to
// the claim's directory, and the container's environment in a file. The
// simulator runs with -root on that directory, so the paths the pod spec
// and the rendered my.cnf name are the ones it reads.

// imageMyCnf is the official mysql image's /etc/my.cnf (the parts the
// simulator reads): the data directory, and the directory whose *.cnf
// files the ConfigMap provides.
const imageMyCnf = `# /etc/my.cnf of the mysql image (playground copy)
[mysqld]
skip-name-resolve
datadir=/var/lib/mysql
socket=/var/run/mysqld/mysqld.sock
secure-file-priv=/var/lib/mysql-files
user=mysql
pid-file=/var/run/mysqld/mysqld.pid
[client]
socket=/var/run/mysqld/mysqld.sock

!includedir /etc/mysql/conf.d/
`

// podFS is one pod's mysqld filesystem.
type podFS struct {
	root    string // the container's "/"
	envFile string
	// volumes are the ConfigMap and Secret mounts, refreshed as the
	// kubelet refreshes them.
	volumes []projectedVolume
}

type projectedVolume struct {
	mountPath string
	configMap string // name, or
	secret    string
	items     []corev1.KeyToPath
	// optional: a missing Secret is an empty volume, filled when it is
	// created (the kubelet's optional Secret volume).
	optional bool
	hash     string // of what was projected last
}

// mysqlContainer is the pod's mysqld container.
func mysqlContainer(pod *corev1.Pod) (*corev1.Container, error) {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == render.ContainerMySQL {
			return &pod.Spec.Containers[i], nil
		}
	}
	return nil, fmt.Errorf("no %s container", render.ContainerMySQL)
}

// preparePodFS lays out the container's filesystem and environment for
// pod, whose data volume is dataDir on the host.
func (a *NodeAgent) preparePodFS(ctx context.Context, pod *corev1.Pod, dataDir string) (*podFS, error) {
	c, err := mysqlContainer(pod)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(a.dir, "pods", string(pod.UID))
	fs := &podFS{root: filepath.Join(base, "root"), envFile: filepath.Join(base, "mysqld.env")}
	if err := os.RemoveAll(base); err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Join(fs.root, "etc/my.cnf"), []byte(imageMyCnf), 0o644); err != nil {
		return nil, err
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		v, ok := vols[m.Name]
		if !ok {
			return nil, fmt.Errorf("volume mount %s: no such volume", m.Name)
		}
		target := filepath.Join(fs.root, m.MountPath)
		switch {
		case v.PersistentVolumeClaim != nil:
			if err := os.MkdirAll(dataDir, 0o750); err != nil {
				return nil, err
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return nil, err
			}
			if err := os.Symlink(dataDir, target); err != nil {
				return nil, err
			}
		case v.ConfigMap != nil:
			fs.volumes = append(fs.volumes, projectedVolume{mountPath: target, configMap: v.ConfigMap.Name, items: v.ConfigMap.Items})
		case v.Secret != nil:
			fs.volumes = append(fs.volumes, secretVolume(target, v.Secret))
		}
	}
	fs.volumes = append(fs.volumes, sidecarSecretVolumes(pod, vols, fs.root, c.VolumeMounts)...)
	if err := a.refreshPodFS(ctx, pod.Namespace, fs); err != nil {
		return nil, err
	}
	env, err := a.containerEnv(ctx, pod, c)
	if err != nil {
		return nil, err
	}
	if err := writeFile(fs.envFile, []byte(strings.Join(env, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	return fs, nil
}

// refreshPodFS projects every ConfigMap and Secret volume whose content
// changed, as the kubelet's periodic sync does: a new ..<timestamp>
// directory, then the ..data link swapped to it atomically, so a reader
// sees the old files or the new ones, never a mix.
func (a *NodeAgent) refreshPodFS(ctx context.Context, namespace string, fs *podFS) error {
	for i := range fs.volumes {
		v := &fs.volumes[i]
		data, err := a.volumeData(ctx, namespace, v)
		if err != nil {
			return err
		}
		h := hashData(data)
		if h == v.hash {
			continue
		}
		if err := projectAtomically(v.mountPath, data); err != nil {
			return fmt.Errorf("project %s: %w", v.mountPath, err)
		}
		v.hash = h
	}
	return nil
}

func (a *NodeAgent) volumeData(ctx context.Context, namespace string, v *projectedVolume) (map[string][]byte, error) {
	var data map[string][]byte
	if v.configMap != "" {
		cm, err := a.kube.CoreV1().ConfigMaps(namespace).Get(ctx, v.configMap, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("ConfigMap volume %s: %w", v.configMap, err)
		}
		data = map[string][]byte{}
		for k, s := range cm.Data {
			data[k] = []byte(s)
		}
		for k, b := range cm.BinaryData {
			data[k] = b
		}
	} else {
		sec, err := a.kube.CoreV1().Secrets(namespace).Get(ctx, v.secret, metav1.GetOptions{})
		if v.optional && apierrors.IsNotFound(err) {
			return map[string][]byte{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("Secret volume %s: %w", v.secret, err)
		}
		data = sec.Data
	}
	if len(v.items) == 0 {
		return data, nil
	}
	out := map[string][]byte{}
	for _, it := range v.items {
		if b, ok := data[it.Key]; ok {
			out[it.Path] = b
		}
	}
	return out, nil
}

func secretVolume(target string, v *corev1.SecretVolumeSource) projectedVolume {
	return projectedVolume{mountPath: target, secret: v.SecretName, items: v.Items,
		optional: v.Optional != nil && *v.Optional}
}

// sidecarSecretVolumes are the Secret volumes only the sidecar container
// mounts (the sidecars' password Secret, docs/credentials.md), projected
// under the same root at their mount paths: the sidecar process reads
// them there (startSidecarLocked rewrites the paths its environment
// names).
func sidecarSecretVolumes(pod *corev1.Pod, vols map[string]corev1.Volume, root string, mysqld []corev1.VolumeMount) []projectedVolume {
	shared := map[string]bool{}
	for _, m := range mysqld {
		shared[m.Name] = true
	}
	var out []projectedVolume
	for _, c := range pod.Spec.Containers {
		if c.Name != render.ContainerSidecar {
			continue
		}
		for _, m := range c.VolumeMounts {
			if v, ok := vols[m.Name]; ok && v.Secret != nil && !shared[m.Name] {
				out = append(out, secretVolume(filepath.Join(root, m.MountPath), v.Secret))
			}
		}
	}
	return out
}

func hashData(data map[string][]byte) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s\x00%d\x00", k, len(data[k]))
		h.Write(data[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// projectAtomically is the kubelet's atomic writer: the files in
// dir/..<timestamp>/, dir/..data linking to that directory (replaced by a
// rename), and dir/<key> linking to ..data/<key>.
func projectAtomically(dir string, data map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	ts := ".." + time.Now().UTC().Format("2006_01_02_15_04_05.000000000")
	tsDir := filepath.Join(dir, ts)
	for k, b := range data {
		if err := writeFile(filepath.Join(tsDir, k), b, 0o600); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(tsDir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(ts, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	for k := range data {
		link := filepath.Join(dir, k)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", k), link); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries { // keys gone from the object lose their link
		if n := e.Name(); !strings.HasPrefix(n, "..") {
			if _, ok := data[n]; !ok {
				_ = os.Remove(filepath.Join(dir, n))
			}
		}
	}
	if old != "" && old != ts {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

func writeFile(path string, b []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, mode)
}
