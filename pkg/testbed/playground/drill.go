package playground

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
)

// DrillKind names a failover drill (drill_faults.go, drill_planned.go).
type DrillKind string

// The drills: three faults of the active site that the operator must fail
// over from on its own, and a planned failover asked for as a user would.
const (
	DrillCrash    DrillKind = "crash"    // mysqld killed, its sidecar alive
	DrillFrozen   DrillKind = "frozen"   // mysqld answers nothing, its sidecar alive
	DrillIsolated DrillKind = "isolated" // the whole site cut off from the operator and its peers
	DrillPlanned  DrillKind = "planned"  // the planned-failover annotation, to the next site
)

// DrillKinds lists every drill, in the order the benchmark runs them.
var DrillKinds = []DrillKind{DrillCrash, DrillFrozen, DrillIsolated, DrillPlanned}

// DrillResult is one failover drill.
type DrillResult struct {
	Kind     DrillKind
	From, To string
	// At is when the fault was injected (or the request made).
	At time.Time
	// Gap is the time from the last write acknowledged before the fault (or
	// the request) to the first acknowledged after it by the new primary:
	// for a planned failover, the write pause.
	Gap time.Duration
	// Published is the time from the fault (or the request) to the new
	// active site in status: activeSite, topologyGeneration and
	// lastFailover are published, and the transition cleared, in one write
	// (docs/planned-failover.md, Publishing); DNS follows from it.
	Published time.Duration
	// Kept: the failover was abandoned before promotion and From stays
	// the active site (an old primary that answers again, holding
	// transactions the candidate lacks: docs/topology.md). To is then From,
	// Published the time until status showed it so, and PossiblyLost zero.
	Kept bool
	// Detected is the time from the fault to the first read of status
	// that holds the transition (reads every 50 ms): for an automatic
	// drill, the detection. Zero when no read caught the transition
	// before it was published.
	Detected time.Duration
	Acked    int
	// Missing counts acknowledged writes absent from the new primary.
	Missing uint64
	// PossiblyLost counts the GTIDs of status.lastFailover.possiblyLostGtid:
	// what the operator saw committed on the old primary that the new one
	// lacks.
	PossiblyLost uint64
	// Divergent counts the transactions the returning old primary held that
	// the new primary lacked (acknowledged-but-lost and in-flight writes);
	// they were applied to the new primary so the old one could rejoin.
	Divergent int
}

// drill is what differs between drills; runDrill does the rest.
type drill struct {
	kind DrillKind
	// anyCooldown: the drill waits out failoverCooldown after the last
	// failover of any kind, as planned-failover admission counts it; an
	// automatic failover waits only after one that starts the cooldown.
	anyCooldown bool
	// inject starts the drill against g's active site.
	inject func(ctx context.Context, p *Playground, g *v1alpha1.MysqlFailoverGroup) error
	// failed, when set, reports a run started at at that will never
	// publish.
	failed func(g *v1alpha1.MysqlFailoverGroup, at time.Time) error
	// undo returns the old primary from to service (nil: nothing to undo).
	undo func(ctx context.Context, p *Playground, from string) error
}

// Fault posts to a site's simulator fault API.
func (p *Playground) Fault(site, what string) error {
	s, ok := p.Site(site)
	if !ok {
		return fmt.Errorf("no site %s", site)
	}
	resp, err := http.Post(s.ControlURL()+"/"+what, "", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s", what, site, resp.Status)
	}
	return nil
}

func (p *Playground) group(ctx context.Context) (*v1alpha1.MysqlFailoverGroup, error) {
	return p.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.Namespace).Get(ctx, p.Group, metav1.GetOptions{})
}

// CrashDrill is Drill(ctx, DrillCrash, timeout).
func (p *Playground) CrashDrill(ctx context.Context, timeout time.Duration) (DrillResult, error) {
	return p.Drill(ctx, DrillCrash, timeout)
}

// Drill waits out the failover cooldown, runs a DNS-following writer,
// injects the drill's fault into the active site (or asks for a planned
// failover), measures until the new primary is published and acknowledges
// a write, returns the old site (applying what it held that the new primary
// lacks, as the runbook does) and waits until the group is Ready again.
func (p *Playground) Drill(ctx context.Context, kind DrillKind, timeout time.Duration) (DrillResult, error) {
	d, err := drillOf(kind)
	if err != nil {
		return DrillResult{Kind: kind}, err
	}
	return p.runDrill(ctx, d, timeout)
}

func drillOf(kind DrillKind) (drill, error) {
	switch kind {
	case DrillCrash:
		return crashDrill, nil
	case DrillFrozen:
		return frozenDrill, nil
	case DrillIsolated:
		return isolatedDrill, nil
	case DrillPlanned:
		return plannedDrill, nil
	}
	return drill{}, fmt.Errorf("no drill %q (one of %v)", kind, DrillKinds)
}

func (p *Playground) runDrill(ctx context.Context, d drill, timeout time.Duration) (DrillResult, error) {
	r := DrillResult{Kind: d.kind}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	g, err := p.group(ctx)
	if err != nil {
		return r, err
	}
	if err := sleepCtx(ctx, time.Until(cooldownEnd(g, d.anyCooldown))); err != nil {
		return r, fmt.Errorf("waiting out failoverCooldown: %w", err)
	}
	r.From = g.Status.ActiveSite
	w, err := p.NewWriter(ctx, 10*time.Millisecond)
	if err != nil {
		return r, err
	}
	wctx, stopWriter := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(wctx) }()
	defer func() { stopWriter(); <-done }()
	if err := until(ctx, func() bool { return len(w.Acks()) >= 20 }); err != nil {
		return r, fmt.Errorf("writer never reached %s: %w", r.From, err)
	}
	if err := followersCaughtUp(ctx, w, g); err != nil {
		return r, err
	}
	at := time.Now()
	r.At = at
	if err := d.inject(ctx, p, g); err != nil {
		return r, err
	}
	undone := d.undo == nil
	undo := func() error {
		if undone {
			return nil
		}
		undone = true
		return d.undo(ctx, p, r.From)
	}
	// A failed drill still returns the site, so a playground reused by
	// its caller is not left cut off.
	defer func() { _ = undo() }()
	var lastFailover *v1alpha1.LastFailover
	var back time.Time // when status first showed the outcome
	var failed error
	err = until(ctx, func() bool {
		g, err := p.group(ctx)
		if err != nil {
			return false
		}
		if d.failed != nil {
			if failed = d.failed(g, at); failed != nil {
				return true
			}
		}
		if r.Detected == 0 && r.To == "" && g.Status.Transition != nil {
			r.Detected = time.Since(at)
		}
		if r.To == "" {
			r.To, r.Kept = outcome(g, r.From, r.Detected > 0)
			if r.To != "" {
				r.Published, lastFailover, back = time.Since(at), g.Status.LastFailover, time.Now()
			}
		}
		if r.To == "" {
			return false
		}
		var ok bool
		if r.Kept {
			r.Gap, ok = GapUntilBack(w.Acks(), back, r.To)
		} else {
			r.Gap, ok = Gap(w.Acks(), at, r.To)
		}
		return ok
	})
	switch {
	case failed != nil:
		return r, failed
	case err != nil && r.To == "":
		return r, fmt.Errorf("no new primary published: %w", err)
	case err != nil:
		return r, fmt.Errorf("%s published but acknowledged no write: %w", r.To, err)
	}
	if !r.Kept {
		if r.PossiblyLost, err = possiblyLost(lastFailover, r.To); err != nil {
			return r, err
		}
	}
	if err := undo(); err != nil {
		return r, fmt.Errorf("returning %s: %w", r.From, err)
	}
	// Count what was lost before anything is applied.
	missing, err := w.Missing(ctx, r.To)
	if err != nil {
		return r, err
	}
	r.Missing = missing.Count()
	if r.Divergent, err = p.rejoin(ctx, w, r.From, r.To); err != nil {
		return r, err
	}
	r.Acked = len(w.Acks())
	return r, nil
}

// followersCaughtUp waits until every other site holds what the active
// site had committed when it was read. A drill measures a failover of a
// group in steady state: Ready is set once a returning old primary is
// repointed, while it may still be applying the minutes of writes it
// missed, and a failover to it then waits for that backlog (the catch-up,
// which no failover may skip) on top of what the drill measures. The first
// runs of the benchmark started crash drills 0.7 s after such a rejoin and
// took 2.7-7.7 s instead of under 1 s.
func followersCaughtUp(ctx context.Context, w *Writer, g *v1alpha1.MysqlFailoverGroup) error {
	active := g.Status.ActiveSite
	primary, err := w.Executed(ctx, active)
	if err != nil {
		return fmt.Errorf("reading %s before the drill: %w", active, err)
	}
	for _, s := range g.Spec.Sites {
		if s.Name == active {
			continue
		}
		var held gtid.Set
		if waited := until(ctx, func() bool {
			held, err = w.Executed(ctx, s.Name)
			return err == nil && primary.Subtract(held).IsEmpty()
		}); waited != nil {
			return fmt.Errorf("%s never caught up with %s before the drill (lacks %s, last read error: %v): %w",
				s.Name, active, primary.Subtract(held), err, waited)
		}
	}
	return nil
}

// published reports the failover away from from published: the active site
// changed and the transition cleared (the same status write).
func published(g *v1alpha1.MysqlFailoverGroup, from string) bool {
	return g.Status.ActiveSite != "" && g.Status.ActiveSite != from && g.Status.Transition == nil
}

// outcome is the site a drill away from from ended on, once status shows
// one: the published new active site, or from itself (kept) when a
// transition was seen since the fault and cleared with from still active,
// a failover abandoned before promotion. Empty while neither holds.
func outcome(g *v1alpha1.MysqlFailoverGroup, from string, sawTransition bool) (site string, kept bool) {
	switch {
	case published(g, from):
		return g.Status.ActiveSite, false
	case sawTransition && g.Status.Transition == nil && g.Status.ActiveSite == from:
		return from, true
	}
	return "", false
}

// cooldownEnd is when a drill may start without the operator refusing it
// for failoverCooldown (2 s of margin for the operator's poll). The cooldown
// is the minimum time between automatic failovers; planned and
// ordered-update handoffs do not start it, but a planned failover is
// admitted only a cooldown after the last failover of any kind
// (docs/safety.md, The cooldown).
func cooldownEnd(g *v1alpha1.MysqlFailoverGroup, anyKind bool) time.Time {
	lf := g.Status.LastFailover
	if lf == nil || g.Spec.FailoverCooldown == nil {
		return time.Time{}
	}
	if !anyKind && (lf.Kind == v1alpha1.TransitionPlanned || lf.Kind == v1alpha1.TransitionOrderedUpdate) {
		return time.Time{}
	}
	return lf.Time.Add(g.Spec.FailoverCooldown.Duration + 2*time.Second)
}

// possiblyLost counts lastFailover.possiblyLostGtid of the failover to to.
func possiblyLost(lf *v1alpha1.LastFailover, to string) (uint64, error) {
	if lf == nil || lf.Target != to {
		return 0, fmt.Errorf("status.lastFailover does not record the failover to %s", to)
	}
	set, err := gtid.Parse(lf.PossiblyLostGTID)
	if err != nil {
		return 0, fmt.Errorf("lastFailover.possiblyLostGtid %q: %w", lf.PossiblyLostGTID, err)
	}
	return set.Count(), nil
}

// rejoin waits until the old primary from follows to and the group is
// Ready; an old primary that reports transactions to lacks has them applied
// to to first, and their number is returned.
func (p *Playground) rejoin(ctx context.Context, w *Writer, from, to string) (int, error) {
	var divergent string
	if err := until(ctx, func() bool {
		g, err := p.group(ctx)
		if err != nil {
			return false
		}
		for _, s := range g.Status.Sites {
			if s.Name == from && s.DivergentGTID != "" {
				divergent = s.DivergentGTID
				return true
			}
		}
		return ready(g)
	}); err != nil {
		return 0, fmt.Errorf("%s neither rejoined nor reported divergence: %w", from, err)
	}
	if divergent == "" {
		return 0, nil
	}
	n, err := w.ApplyDivergent(ctx, to, divergent)
	if err != nil {
		return n, err
	}
	if err := until(ctx, func() bool {
		g, err := p.group(ctx)
		return err == nil && ready(g)
	}); err != nil {
		return n, fmt.Errorf("group not Ready again after %s returned: %w", from, err)
	}
	return n, nil
}

func ready(g *v1alpha1.MysqlFailoverGroup) bool {
	c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func until(ctx context.Context, f func() bool) error {
	for !f() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}
