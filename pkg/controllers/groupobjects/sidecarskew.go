package groupobjects

import (
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// SidecarSkew reports whether a group's pinned spec.sidecar.image is of
// another release than the running operator (seed 003, "Sidecar ↔ operator
// skew": the supported configuration is matching versions, and a pin with
// another release tag gets a SidecarVersionSkew Warning). The operator's
// release is the tag of the sidecar image it ships (BLOODRAVEN_SIDECAR_IMAGE,
// whose tag is the release's version). Tags compare without a leading "v"
// (v1.7.0 and 1.7.0 are one release); the repository may differ (a mirror).
// A pin by digest alone names no release, and an untagged shipped image
// no release to compare with: neither is reported. An untagged pin without
// a digest means "latest", which is not a release tag.
func SidecarSkew(pinned, shipped string) (skew bool, pinnedTag, release string) {
	if pinned == "" {
		return false, "", ""
	}
	release, ok := imageTag(shipped)
	if !ok || release == "" {
		return false, "", ""
	}
	pinnedTag, ok = imageTag(pinned)
	if !ok {
		return false, "", release // digest only
	}
	if pinnedTag == "" {
		pinnedTag = "latest"
	}
	return normTag(pinnedTag) != normTag(release), pinnedTag, release
}

// imageTag returns ref's tag ("" when it has none) and whether the tag
// identifies it: false for a reference by digest without a tag.
func imageTag(ref string) (string, bool) {
	name, _, digest := strings.Cut(ref, "@")
	slash := strings.LastIndex(name, "/")
	if i := strings.LastIndex(name, ":"); i > slash {
		return name[i+1:], true
	}
	return "", !digest
}

func normTag(t string) string { return strings.TrimPrefix(t, "v") }

// skewWarnings remembers, per group, the pin last warned about, so the
// Warning is recorded when a skewed pin appears or changes, not on every
// pass. It is only a cache: after a restart the Warning is recorded again.
type skewWarnings struct {
	mu     sync.Mutex
	warned map[types.UID]string
}

// sidecarSkew records the SidecarVersionSkew Warning for g's pin when it
// is skewed and not yet reported.
func (c *Controller) sidecarSkew(g *v1alpha1.MysqlFailoverGroup) {
	pinned := ""
	if g.Spec.Sidecar != nil {
		pinned = g.Spec.Sidecar.Image
	}
	skew, tag, release := SidecarSkew(pinned, c.render.SidecarImage)
	c.skew.mu.Lock()
	defer c.skew.mu.Unlock()
	if !skew {
		delete(c.skew.warned, g.UID)
		return
	}
	if c.skew.warned[g.UID] == pinned {
		return
	}
	if c.skew.warned == nil {
		c.skew.warned = map[types.UID]string{}
	}
	c.skew.warned[g.UID] = pinned
	c.recorder.Event(g, corev1.EventTypeWarning, v1alpha1.EventSidecarVersionSkew, fmt.Sprintf(
		"spec.sidecar.image %s is release %s, the operator is release %s: pin %s's sidecar image (or unset spec.sidecar.image to follow the operator)",
		pinned, tag, release, release))
}

// forgetSkew drops a deleted group's entry.
func (c *Controller) forgetSkew(uid types.UID) {
	c.skew.mu.Lock()
	delete(c.skew.warned, uid)
	c.skew.mu.Unlock()
}
