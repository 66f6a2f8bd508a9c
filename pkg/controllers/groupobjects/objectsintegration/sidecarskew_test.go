package objectsintegration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/render"
)

// A pin of another release than the operator's gets one SidecarVersionSkew
// Warning (seed 003); a pin of the operator's own release gets none; a new
// skewed pin gets a new one. The pod template runs what the group pins
// either way: the Warning tells, it does not override.
func TestSidecarVersionSkewWarning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const old = "ghcr.io/shipstream/bloodraven-sidecar:v1.6.3"
	g := sample(t)
	g.Spec.Backup = nil
	g.Spec.Sidecar = &v1alpha1.SidecarSpec{Image: old}
	g = e.createGroup(g)

	ev := e.waitEvent(v1alpha1.EventSidecarVersionSkew, corev1.EventTypeWarning)
	if !strings.Contains(ev.Message, old) || !strings.Contains(ev.Message, "1.7.0-test") {
		t.Errorf("Warning %q names neither the pin nor the operator's release", ev.Message)
	}
	e.waitSidecarImage(g.Name, "iad", old)

	// The operator's own release (from a mirror, tag with a leading v): no
	// new Warning once the template carries it.
	own := "registry.example:5000/mirror/bloodraven-sidecar:v1.7.0-test"
	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) { g.Spec.Sidecar.Image = own })
	e.waitSidecarImage(g.Name, "iad", own)
	if n := e.eventCount(v1alpha1.EventSidecarVersionSkew); n != 1 {
		t.Errorf("%d SidecarVersionSkew Events after pinning the operator's release, want still 1", n)
	}

	const newer = "ghcr.io/shipstream/bloodraven-sidecar:v1.8.0"
	e.editGroup(g.Name, func(g *v1alpha1.MysqlFailoverGroup) { g.Spec.Sidecar.Image = newer })
	e.waitSidecarImage(g.Name, "iad", newer)
	eventually(t, waitFor, "a second Warning for the new pin", func() error {
		if n := e.eventCount(v1alpha1.EventSidecarVersionSkew); n != 2 {
			return fmt.Errorf("%d SidecarVersionSkew Events", n)
		}
		return nil
	})
	// The two are for the two skewed pins, none for the operator's own.
	list, err := e.kube.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, ev := range list.Items {
		if ev.Reason == v1alpha1.EventSidecarVersionSkew {
			named = append(named, strings.Fields(ev.Message)[1])
		}
	}
	slices.Sort(named)
	if want := []string{old, newer}; !slices.Equal(named, want) {
		t.Errorf("SidecarVersionSkew Events name %q, want %q", named, want)
	}
}

// waitSidecarImage waits until the site's StatefulSet runs image in its
// sidecar container.
func (e *env) waitSidecarImage(group, site, image string) {
	e.t.Helper()
	eventually(e.t, waitFor, "sidecar image "+image, func() error {
		sts, err := e.statefulSet(group, site)
		if err != nil {
			return err
		}
		for _, c := range sts.Spec.Template.Spec.Containers {
			if c.Name == render.ContainerSidecar {
				if c.Image != image {
					return fmt.Errorf("sidecar image %s", c.Image)
				}
				return nil
			}
		}
		return fmt.Errorf("no sidecar container")
	})
}
