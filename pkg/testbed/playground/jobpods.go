package playground

import (
	"context"
	"net"
	"path/filepath"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/render"
	"github.com/shipstream/bloodraven/pkg/testbed/jobkubelet"
)

// BackupUploadImage is the Bloodraven image the playground's operator
// gives backup Jobs for their upload step (--backup-upload-image); the
// node agent runs it as bin/bloodraven.
const BackupUploadImage = "ghcr.io/shipstream/bloodraven:playground"

// labelComponent marks a backup Job's pods (pkg/controllers/backup).
const labelComponent = "app.kubernetes.io/component"

// jobKubelet is the kubelet for the group's backup Job pods bound to the
// agent's nodes (pkg/testbed/jobkubelet): the dump container's
// `/bin/sh -c <script> mysqlsh ...` runs in a real shell with
// bin/bloodraven-mysqlsh as mysqlsh on its PATH, the Bloodraven image is
// bin/bloodraven, and the site's internal Service name is the site's
// mysqld address from the development address map, as the pod's network
// would lead there.
func (a *NodeAgent) jobKubelet() *jobkubelet.Kubelet {
	if a.jobs != nil {
		return a.jobs
	}
	m, err := devsitemap.Load(a.mapPath)
	if err != nil {
		a.log.Warn("node agent: address map for Job pods", "err", err.Error())
	}
	a.jobs = jobkubelet.New(jobkubelet.Config{
		Kube: a.kube,
		Root: filepath.Join(a.dir, "jobpods"),
		Images: map[string]string{
			imageRepo(BackupUploadImage): filepath.Join(framework.BinDir(), "bloodraven"),
		},
		Programs: map[string]string{
			"/bin/sh": "/bin/sh",
			"mysqlsh": filepath.Join(framework.BinDir(), "bloodraven-mysqlsh"),
		},
		Network: func(host string, port int) (string, int, bool) {
			if m == nil {
				return "", 0, false
			}
			e, ok := m.LookupHost(host)
			if !ok || port != 3306 {
				return "", 0, false
			}
			h, p, err := net.SplitHostPort(e.MySQL)
			if err != nil {
				return "", 0, false
			}
			n, err := strconv.Atoi(p)
			return h, n, err == nil
		},
	})
	return a.jobs
}

func imageRepo(ref string) string {
	for i := len(ref) - 1; i >= 0 && ref[i] != '/'; i-- {
		if ref[i] == ':' {
			return ref[:i]
		}
	}
	return ref
}

// syncJobPods hands the group's backup pods on the agent's nodes to the
// Job kubelet, which runs each once and reports it.
func (a *NodeAgent) syncJobPods(ctx context.Context) error {
	pods, err := a.kube.CoreV1().Pods(a.namespace).List(ctx, metav1.ListOptions{
		LabelSelector: render.LabelGroup + "=" + a.group + "," + labelComponent + "=backup",
	})
	if err != nil {
		return err
	}
	nodes := map[string]bool{}
	for _, s := range a.sites {
		nodes["kwok-"+s.plan.Name] = true
	}
	items := pods.Items[:0]
	for _, p := range pods.Items {
		if nodes[p.Spec.NodeName] {
			items = append(items, p)
		}
	}
	a.jobKubelet().Sync(ctx, items)
	return nil
}

// waitJobPods waits for the Job pods' processes, killed once Run's
// context ended.
func (a *NodeAgent) waitJobPods() {
	if a.jobs != nil {
		a.jobs.Wait()
	}
}
