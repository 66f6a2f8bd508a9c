//go:build e2e

package scenarios

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Deleting a follower's pod: the StatefulSet controller recreates it, the
// scheduler places it on its zone's node, the node agent restarts the
// site's mysqld and sidecar, and the pod and then the group are Ready again.
func TestFollowerPodRecreated(t *testing.T) {
	requireReady(t)
	g := group(t)
	var site string
	for _, s := range g.Spec.Sites {
		if s.Name != g.Status.ActiveSite {
			site = s.Name
			break
		}
	}
	ctx := context.Background()
	pods := pg.CP.Client().CoreV1().Pods(pg.Namespace)
	name := pg.Group + "-" + site + "-0"
	old, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	starts := pg.Agent().Starts(site)
	if out, errOut, err := pg.CP.Kubectl(ctx, "delete", "pod", "-n", pg.Namespace, name, "--wait=true"); err != nil {
		t.Fatalf("kubectl delete pod: %v %s%s", err, out, errOut)
	}
	eventually(t, 60*time.Second, func() string {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		switch {
		case err != nil:
			return err.Error()
		case p.UID == old.UID:
			return "the old pod is still there"
		case p.Spec.NodeName != old.Spec.NodeName:
			return "recreated pod on node " + p.Spec.NodeName + ", want " + old.Spec.NodeName
		case !podReady(p):
			return "recreated pod is not Ready"
		}
		return ""
	})
	if now := pg.Agent().Starts(site); now != starts+1 {
		t.Fatalf("site %s data plane started %d times after the recreate, want %d", site, now, starts+1)
	}
	requireReady(t)
}
