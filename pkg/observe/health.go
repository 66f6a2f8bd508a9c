// Package observe polls the sites of a failover group: every site of a group
// concurrently, each poll under its own deadline, and turns the stream of
// poll results into a per-site reachability with the group's
// failureThreshold and recoveryThreshold, and into the group's poll cadence
// (pollInterval, backing off to a 30 s cap while a site keeps failing).
//
// Everything this package remembers (consecutive failures and successes, the
// last good sample) is a cache: an operator restart starts from nothing, and
// the decisions built on top must be safe with an empty cache. The rules
// (Health.Next, Cadence) are pure functions; Tracker does the I/O.
package observe

import (
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Reachability is what the polls say about a site.
type Reachability string

const (
	// Unobserved: this process has not polled the site successfully yet, and
	// it has not failed failureThreshold times in a row either.
	Unobserved Reachability = "Unobserved"
	// Reachable: the latest poll succeeded and the site is trusted.
	Reachable Reachability = "Reachable"
	// Suspect: the site was reachable and its latest polls failed, fewer
	// than failureThreshold in a row. It is not declared unreachable yet, but
	// nothing should be decided on its stale observation.
	Suspect Reachability = "Suspect"
	// Unreachable: failureThreshold polls in a row failed. The site stays
	// Unreachable until recoveryThreshold polls in a row succeed.
	Unreachable Reachability = "Unreachable"
)

// Thresholds are a group's spec.failureThreshold and spec.recoveryThreshold.
type Thresholds struct {
	Failure  int
	Recovery int
}

// normalized replaces values below 1 with the CRD defaults, so a zero
// Thresholds behaves like an unset spec.
func (t Thresholds) normalized() Thresholds {
	if t.Failure < 1 {
		t.Failure = int(v1alpha1.DefaultFailureThreshold)
	}
	if t.Recovery < 1 {
		t.Recovery = int(v1alpha1.DefaultRecoveryThreshold)
	}
	return t
}

// Health is one site's poll history, as far as the rules need it.
type Health struct {
	Reach Reachability
	// Failures is the number of consecutive failed polls (0 after a success).
	Failures int
	// Successes is the number of consecutive successful polls (0 after a failure).
	Successes int
}

// Next is the health after one more poll that succeeded (ok) or failed.
func (h Health) Next(ok bool, t Thresholds) Health {
	t = t.normalized()
	if h.Reach == "" {
		h.Reach = Unobserved
	}
	if ok {
		h.Failures = 0
		h.Successes++
		if h.Reach != Unreachable || h.Successes >= t.Recovery {
			h.Reach = Reachable
		}
		return h
	}
	h.Successes = 0
	h.Failures++
	switch {
	case h.Failures >= t.Failure:
		h.Reach = Unreachable
	case h.Reach == Reachable:
		h.Reach = Suspect
	}
	return h
}

// BackoffCap is the longest interval between two polls of a group while one
// of its sites keeps failing (docs/topology.md, Observation: cadence).
const BackoffCap = 30 * time.Second

// SiteCadence is how often one site is polled: base while it answers or
// has failed fewer than failureThreshold times in a row, then doubling with
// each further failure up to BackoffCap.
func SiteCadence(base time.Duration, t Thresholds, h Health) time.Duration {
	return Cadence(base, t, h)
}

// GroupCadence is the delay until the group's next poll round: the soonest
// any of its sites is due. While one site answers that is base, so a dead
// follower never delays noticing that the primary died; when every site
// keeps failing the whole group backs off.
func GroupCadence(base time.Duration, t Thresholds, sites ...Health) time.Duration {
	if len(sites) == 0 {
		return Cadence(base, t)
	}
	d := BackoffCap + base
	for _, h := range sites {
		d = min(d, SiteCadence(base, t, h))
	}
	return d
}

// Cadence is the delay until the group's next poll round: base
// (spec.pollInterval) while every site answers or has failed fewer than
// failureThreshold times in a row; after a site reached the threshold, each
// further consecutive failure doubles the interval, up to BackoffCap (or
// base, if base is longer).
func Cadence(base time.Duration, t Thresholds, sites ...Health) time.Duration {
	t = t.normalized()
	if base <= 0 {
		base = v1alpha1.DefaultPollInterval
	}
	limit := max(BackoffCap, base)
	beyond := 0
	for _, h := range sites {
		beyond = max(beyond, h.Failures-t.Failure)
	}
	d := base
	for range beyond {
		if d >= limit {
			break
		}
		d *= 2
	}
	return min(d, limit)
}
