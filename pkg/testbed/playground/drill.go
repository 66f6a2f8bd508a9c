package playground

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// DrillResult is one crash-failover drill.
type DrillResult struct {
	From, To string
	// Gap is the time from the last write acknowledged before the crash to
	// the first acknowledged after it (by the new primary).
	Gap time.Duration
	// Published is the time from the crash to the new active site in status.
	Published time.Duration
	Acked     int
	// Missing counts acknowledged writes absent from the new primary.
	Missing uint64
	// Divergent counts the transactions the returning old primary held that
	// the new primary lacked (acknowledged-but-lost and in-flight writes);
	// they were applied to the new primary so the old one could rejoin.
	Divergent int
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

// CrashDrill waits out the failover cooldown, runs a DNS-following writer,
// crashes the active site's mysqld, measures until the new primary
// acknowledges a write, restarts the old site and waits until the group is
// Ready again.
func (p *Playground) CrashDrill(ctx context.Context, timeout time.Duration) (DrillResult, error) {
	var r DrillResult
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	g, err := p.group(ctx)
	if err != nil {
		return r, err
	}
	if g.Status.LastFailover != nil && g.Spec.FailoverCooldown != nil {
		if d := time.Until(g.Status.LastFailover.Time.Add(g.Spec.FailoverCooldown.Duration + 2*time.Second)); d > 0 {
			time.Sleep(d)
		}
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
	crashAt := time.Now()
	if err := p.Fault(r.From, "crash"); err != nil {
		return r, err
	}
	err = until(ctx, func() bool {
		g, err := p.group(ctx)
		if err == nil && g.Status.ActiveSite != r.From && r.Published == 0 {
			r.To, r.Published = g.Status.ActiveSite, time.Since(crashAt)
		}
		if r.To == "" {
			return false
		}
		gap, ok := Gap(w.Acks(), crashAt, r.To)
		r.Gap = gap
		return ok
	})
	if err != nil {
		return r, fmt.Errorf("no write acknowledged by a new primary: %w", err)
	}
	if err := p.Fault(r.From, "restart"); err != nil {
		return r, err
	}
	// Count what was lost before anything is applied.
	missing, err := w.Missing(ctx, r.To)
	if err != nil {
		return r, err
	}
	r.Missing = missing.Count()
	var divergent string
	if err := until(ctx, func() bool {
		g, err := p.group(ctx)
		if err != nil {
			return false
		}
		for _, s := range g.Status.Sites {
			if s.Name == r.From && s.DivergentGTID != "" {
				divergent = s.DivergentGTID
				return true
			}
		}
		c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue
	}); err != nil {
		return r, fmt.Errorf("%s neither rejoined nor reported divergence: %w", r.From, err)
	}
	if divergent != "" {
		if r.Divergent, err = w.ApplyDivergent(ctx, r.To, divergent); err != nil {
			return r, err
		}
	}
	if err := until(ctx, func() bool {
		g, err := p.group(ctx)
		if err != nil {
			return false
		}
		c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue
	}); err != nil {
		return r, fmt.Errorf("group not Ready again after %s returned: %w", r.From, err)
	}
	r.Acked = len(w.Acks())
	return r, nil
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
