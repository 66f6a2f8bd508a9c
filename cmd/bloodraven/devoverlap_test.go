package main

import (
	"testing"
	"time"
)

// TestDevRotationOverlap: a positive Go duration is used; anything else
// keeps the default overlap (0).
func TestDevRotationOverlap(t *testing.T) {
	for v, want := range map[string]time.Duration{"15s": 15 * time.Second, "": 0, "-1s": 0, "0s": 0, "soon": 0} {
		if got := devRotationOverlap(func(k string) string {
			if k == envDevRotationOverlap {
				return v
			}
			return ""
		}); got != want {
			t.Errorf("%q: %s, want %s", v, got, want)
		}
	}
}
