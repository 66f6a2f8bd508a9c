package groupobjects

import "testing"

func TestSidecarSkew(t *testing.T) {
	const shipped = "ghcr.io/shipstream/bloodraven-sidecar:v1.7.0"
	for _, c := range []struct {
		pinned, shipped string
		skew            bool
		tag, release    string
	}{
		{"", shipped, false, "", ""}, // not pinned: follows the operator
		{"ghcr.io/shipstream/bloodraven-sidecar:v1.7.0", shipped, false, "v1.7.0", "v1.7.0"}, // the operator's own
		{"registry.example:5000/mirror/bloodraven-sidecar:1.7.0", shipped, false, "1.7.0", "v1.7.0"},
		{"ghcr.io/shipstream/bloodraven-sidecar:v1.6.3", shipped, true, "v1.6.3", "v1.7.0"},
		{"ghcr.io/shipstream/bloodraven-sidecar:v1.7.1", shipped, true, "v1.7.1", "v1.7.0"},
		{"ghcr.io/shipstream/bloodraven-sidecar:v1.7.0-rc.1", shipped, true, "v1.7.0-rc.1", "v1.7.0"},
		{"ghcr.io/shipstream/bloodraven-sidecar", shipped, true, "latest", "v1.7.0"},
		{"registry.example:5000/bloodraven-sidecar", shipped, true, "latest", "v1.7.0"}, // a port is not a tag
		{"ghcr.io/shipstream/bloodraven-sidecar:v1.6.3@sha256:0123", shipped, true, "v1.6.3", "v1.7.0"},
		{"ghcr.io/shipstream/bloodraven-sidecar@sha256:0123", shipped, false, "", "v1.7.0"},   // a digest names no release
		{"ghcr.io/shipstream/bloodraven-sidecar:v1.6.3", "bloodraven-sidecar", false, "", ""}, // no release to compare with
		{"ghcr.io/shipstream/bloodraven-sidecar:v1.6.3", "registry.example:5000/bloodraven-sidecar@sha256:ab", false, "", ""},
	} {
		skew, tag, release := SidecarSkew(c.pinned, c.shipped)
		if skew != c.skew || tag != c.tag || release != c.release {
			t.Errorf("SidecarSkew(%q, %q) = %v, %q, %q; want %v, %q, %q", c.pinned, c.shipped, skew, tag, release, c.skew, c.tag, c.release)
		}
	}
}
