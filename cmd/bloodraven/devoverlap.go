package main

import "time"

// envDevRotationOverlap is for development only (the playground and the
// end-to-end suite, docs/credentials.md "Rotation"): how long both
// passwords of a rotated account work, in place of
// accounts.DefaultOverlap, so that a rotation ends within a test's minute.
// It is not a flag and not in the Deployment's manifests: a production
// overlap shorter than the applications' Secret refresh would refuse them.
const envDevRotationOverlap = "BLOODRAVEN_DEV_ROTATION_OVERLAP"

// devRotationOverlap is the variable's duration, or 0 (the default
// overlap) when it is unset or not a positive Go duration.
func devRotationOverlap(getenv func(string) string) time.Duration {
	d, err := time.ParseDuration(getenv(envDevRotationOverlap))
	if err != nil || d <= 0 {
		return 0
	}
	return d
}
