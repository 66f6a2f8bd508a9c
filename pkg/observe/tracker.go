package observe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ProbeFunc polls one site once. It must honour ctx's deadline.
type ProbeFunc[S any] func(ctx context.Context, site string) (S, error)

// Sample is one successful poll.
type Sample[S any] struct {
	Value S
	// At is when the poll completed.
	At time.Time
	// Latency is how long the poll took.
	Latency time.Duration
}

// Result is what the tracker knows about one site after a round.
type Result[S any] struct {
	Site   string
	Health Health
	// Last is the most recent successful poll in this process, or nil.
	// When Fresh is false it is stale.
	Last *Sample[S]
	// Fresh reports that the latest poll succeeded.
	Fresh bool
	// Err is the latest poll's error; nil when Fresh.
	Err error
	// PolledAt is when the latest poll (successful or not) completed.
	PolledAt time.Time
}

// RoundOptions configure one round of polls of a group.
type RoundOptions struct {
	// Sites are the group's sites; sites the tracker knew that are not
	// listed are forgotten.
	Sites []string
	// Timeout is each poll's deadline. Required.
	Timeout time.Duration
	// Thresholds are the group's failure and recovery thresholds.
	Thresholds Thresholds
	// MinInterval: a site polled less than this long ago is not polled
	// again; its previous result is returned. It keeps reconciles triggered
	// by unrelated events from polling more often than the cadence (which
	// would also make failureThreshold count faster than intended).
	MinInterval time.Duration
	// Backoff, if set, is how long after its previous poll a site is due
	// again given its health (see SiteCadence); MinInterval still applies.
	Backoff func(Health) time.Duration
	// SiteTimeout, if set, may give a site a shorter deadline than
	// Timeout, given the site and its health before this round (a positive
	// value shorter than Timeout counts).
	SiteTimeout func(site string, h Health) time.Duration
}

// Observer receives every poll's outcome (metrics).
type Observer func(group, site string, latency time.Duration, err error)

// Tracker polls the sites of many groups and keeps each site's health and
// last good sample. Rounds of different groups may run concurrently; rounds
// of one group must not (the controller's workqueue guarantees that).
type Tracker[S any] struct {
	mu     sync.Mutex
	groups map[string]map[string]*Result[S]
	now    func() time.Time
	notify Observer
}

// NewTracker returns an empty tracker. notify may be nil.
func NewTracker[S any](notify Observer) *Tracker[S] {
	return &Tracker[S]{groups: map[string]map[string]*Result[S]{}, now: time.Now, notify: notify}
}

// siteTimeout is the deadline of site's poll in this round.
func (t *Tracker[S]) siteTimeout(group, site string, o RoundOptions) time.Duration {
	if o.SiteTimeout == nil {
		return o.Timeout
	}
	t.mu.Lock()
	var h Health
	if r := t.groups[group][site]; r != nil {
		h = r.Health
	}
	t.mu.Unlock()
	if d := o.SiteTimeout(site, h); d > 0 && d < o.Timeout {
		return d
	}
	return o.Timeout
}

// Round polls every site of group that is due, all at once, each under
// o.Timeout, and returns the state of every listed site. It returns when the
// slowest poll has returned or timed out, so one dead or frozen site costs
// the round at most o.Timeout and never delays the other sites.
func (t *Tracker[S]) Round(ctx context.Context, group string, probe ProbeFunc[S], o RoundOptions) (map[string]Result[S], error) {
	if o.Timeout <= 0 {
		return nil, errors.New("observe: RoundOptions.Timeout must be positive")
	}
	due := t.due(group, o)
	type outcome struct {
		site    string
		val     S
		err     error
		latency time.Duration
		at      time.Time
	}
	results := make(chan outcome, len(due))
	for _, site := range due {
		timeout := t.siteTimeout(group, site, o)
		go func() {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := t.now()
			v, err := probe(pctx, site)
			if err == nil && pctx.Err() != nil {
				err = pctx.Err() // a probe that ignored its deadline does not count as an answer
			}
			at := t.now()
			results <- outcome{site: site, val: v, err: err, latency: at.Sub(start), at: at}
		}()
	}
	outs := make([]outcome, 0, len(due))
	for range due {
		outs = append(outs, <-results)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	sites := t.groups[group]
	for _, r := range outs {
		cur := sites[r.site]
		cur.Health = cur.Health.Next(r.err == nil, o.Thresholds)
		cur.PolledAt = r.at
		if r.err == nil {
			cur.Fresh, cur.Err = true, nil
			cur.Last = &Sample[S]{Value: r.val, At: r.at, Latency: r.latency}
		} else {
			cur.Fresh, cur.Err = false, fmt.Errorf("poll site %s: %w", r.site, r.err)
		}
		if t.notify != nil {
			t.notify(group, r.site, r.latency, r.err)
		}
	}
	out := make(map[string]Result[S], len(o.Sites))
	for _, s := range o.Sites {
		out[s] = *sites[s]
	}
	return out, nil
}

// due registers the listed sites (forgetting others) and returns those to
// poll now.
func (t *Tracker[S]) due(group string, o RoundOptions) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	sites := t.groups[group]
	if sites == nil {
		sites = map[string]*Result[S]{}
		t.groups[group] = sites
	}
	listed := make(map[string]bool, len(o.Sites))
	var due []string
	now := t.now()
	for _, s := range o.Sites {
		listed[s] = true
		r, ok := sites[s]
		if !ok {
			r = &Result[S]{Site: s, Health: Health{Reach: Unobserved}}
			sites[s] = r
		}
		interval := o.MinInterval
		if o.Backoff != nil {
			interval = max(interval, o.Backoff(r.Health))
		}
		if r.PolledAt.IsZero() || now.Sub(r.PolledAt) >= interval {
			due = append(due, s)
		}
	}
	for s := range sites {
		if !listed[s] {
			delete(sites, s)
		}
	}
	return due
}

// Health returns the current health of every known site of group.
func (t *Tracker[S]) Health(group string) map[string]Health {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]Health{}
	for s, r := range t.groups[group] {
		out[s] = r.Health
	}
	return out
}

// Invalidate makes a site due at the next round regardless of MinInterval
// and backoff: something was just done to it, and decisions must not run on
// the observation from before.
func (t *Tracker[S]) Invalidate(group, site string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.groups[group][site]; r != nil {
		r.PolledAt = time.Time{}
	}
}

// Forget drops everything known about group (deleted, or no longer led).
func (t *Tracker[S]) Forget(group string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.groups, group)
}
