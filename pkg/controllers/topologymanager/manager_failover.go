package topologymanager

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/render"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// AnnotationFailoverOverride lets a human promote a candidate the lag and
// loss guards refused: "<site>:confirm=<group name>". It never overrides
// incomparable candidates or a site that is not a reachable PrimaryCandidate.
const AnnotationFailoverOverride = "bloodraven.shipstream.io/failover-override"

// failoverOverride returns the site named by a well-formed override
// annotation, or "" (a malformed value is ignored and logged).
func failoverOverride(g *v1alpha1.MysqlFailoverGroup) (string, error) {
	v, ok := g.Annotations[AnnotationFailoverOverride]
	if !ok {
		return "", nil
	}
	site, confirm, found := strings.Cut(v, ":confirm=")
	if !found || site == "" || confirm != g.Name {
		return "", fmt.Errorf("annotation %s=%q: want <site>:confirm=%s", AnnotationFailoverOverride, v, g.Name)
	}
	for _, s := range g.Spec.Sites {
		if s.Name == site {
			return site, nil
		}
	}
	return "", fmt.Errorf("annotation %s names site %q, which is not in spec.sites", AnnotationFailoverOverride, site)
}

// failoverSettings reads the group's failover timers.
func (p *mpass) failoverSettings() topology.FailoverSettings {
	g := p.g
	s := topology.FailoverSettings{Enabled: p.m.opts.AutomaticFailover, Cooldown: v1alpha1.DefaultFailoverCooldown, MaxMissing: p.m.opts.FailoverMaxMissing}
	if d := g.Spec.FailoverCooldown; d != nil {
		s.Cooldown = d.Duration
	}
	// The sidecar protocol's bound (lease, its request timeout, the fence
	// statement's timeout and a clock margin), counted from when the intent
	// is served: the old primary has fenced itself by then.
	s.SelfFenceBound = protocol.SelfFenceBound(p.sidecarTimers())
	// A deadline another operator process wrote is compared on this one's
	// clock (topology's deadline.go): the skew operator clocks keep.
	s.MaxClockSkew = leasestore.DefaultMaxClockSkew
	s.DrainTimeout = v1alpha1.DefaultConnectionDrainTimeout
	if d := g.Spec.ConnectionDrainTimeout; d != nil {
		s.DrainTimeout = d.Duration
	}
	if sb := g.Spec.SplitBrainPolicy; sb != nil {
		s.Priorities = sb.SitePriorities
	}
	site, err := failoverOverride(g)
	if err != nil {
		p.log.Warn("failover override ignored", "err", err.Error())
	}
	s.Override = site
	return s
}

// sidecarTimers are the leaseTimeout and peerCheckInterval the self-fence
// bound must assume: the spec's, or a site pod's where larger. While a change
// of spec.sidecar rolls out, pods created before it still run their sidecars
// with the old values, and a confirmation passed on by any of them lasts as
// long as its own lease.
func (p *mpass) sidecarTimers() (lease, peerCheck time.Duration) {
	lease, peerCheck = v1alpha1.DefaultLeaseTimeout, v1alpha1.DefaultPeerCheckInterval
	if sc := p.g.Spec.Sidecar; sc != nil {
		if sc.LeaseTimeout != nil {
			lease = sc.LeaseTimeout.Duration
		}
		if sc.PeerCheckInterval != nil {
			peerCheck = sc.PeerCheckInterval.Duration
		}
	}
	kf := p.m.ctrl.informers.KubeFor(p.g.Namespace)
	if kf == nil {
		return lease, peerCheck
	}
	pods := kf.Core().V1().Pods().Lister().Pods(p.g.Namespace)
	for _, s := range p.g.Spec.Sites {
		pod, err := pods.Get(render.PodName(p.g.Name, s.Name))
		if err != nil {
			continue
		}
		if l, pc, ok := render.SidecarTimers(pod); ok {
			lease, peerCheck = max(lease, l), max(peerCheck, pc)
		}
	}
	return lease, peerCheck
}

// catchUp stops the candidate's receiver and waits, bounded, until its
// applier executed everything received. A timeout is not an error: the
// next decision sees the candidate still behind and waits again; nothing is
// reset meanwhile.
func (p *mpass) catchUp(ctx context.Context, site string) error {
	c, err := p.client(site)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.m.opts.StatementTimeout)
	defer cancel()
	if err := c.StopReplicaIOThread(ctx); err != nil {
		return err
	}
	rs, err := c.ReplicaStatus(ctx)
	if err != nil || rs == nil {
		return err
	}
	reached, err := c.WaitForGTIDSet(ctx, rs.RetrievedGTIDSet, p.m.opts.StatementTimeout/2)
	if err != nil {
		return err
	}
	p.log.Info("failover candidate catch-up", "site", site, "applied", reached)
	return nil
}

// evictSessions kills client sessions on the fenced former primary, keeping
// the operator's and the replication account's.
func (p *mpass) evictSessions(ctx context.Context, site string) error {
	c, err := p.client(site)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.m.opts.StatementTimeout)
	defer cancel()
	killed, err := c.EvictClientSessions(ctx, p.creds.User, p.creds.ReplicationUser)
	if len(killed) > 0 {
		p.recordf(corev1.EventTypeNormal, v1alpha1.EventClientSessionsEvicted, "evicted %d client sessions from the former primary %s", len(killed), site)
	}
	return err
}

// notifySidecars announces the transition in flight to every site's
// sidecar at once (protocol.Client.Announce), each under the statement
// timeout. Best effort by design: a sidecar that cannot be reached is
// covered by the self-fence deadline the promotion waits for.
// announcement is the ActiveSite document of the group's stored status, as
// it is pushed to the sidecars.
func (p *mpass) announcement() protocol.ActiveSite {
	doc := protocol.ActiveSite{Namespace: p.g.Namespace, Group: p.g.Name, ActiveSite: p.g.Status.ActiveSite,
		TopologyGeneration: p.g.Status.TopologyGeneration}
	if t := p.g.Status.Transition; t != nil {
		doc.Transition = &protocol.TransitionNotice{
			ID: t.ID, Kind: string(t.Kind), SourceSite: t.SourceSite, TargetSite: t.TargetSite,
			TopologyGeneration: t.TopologyGeneration, Step: string(t.Step), StartTime: t.StartTime.Time,
		}
	}
	return doc
}

// announceWait is how long a pass waits for its announcements. One to a
// sidecar that does not answer (a site cut off) goes on in the background
// for up to the statement timeout, and the pass moves on: the announcement
// is best effort, repeated every pass, and nothing waits for it (the
// self-fence bound assumes no sidecar hears it).
const announceWait = 200 * time.Millisecond

func (p *mpass) notifySidecars(ctx context.Context) error {
	// Without a transition (a planned failover rolled back) the document
	// tells the peers at once that the change is over, so they confirm the
	// active site again; the active site's own sidecar refuses a pushed
	// confirmation by design (409) and learns it from its next poll.
	doc := p.announcement()
	var wg sync.WaitGroup
	for _, s := range p.g.Spec.Sites {
		addr, err := p.m.opts.Resolver.SidecarAddr(siteKey(p.g, s.Name))
		if err != nil || !p.startAnnouncing(s.Name) {
			continue // no sidecar address known (development map without sidecar=), or one still on its way
		}
		wg.Go(func() {
			defer p.doneAnnouncing(s.Name)
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.m.opts.StatementTimeout)
			defer cancel()
			if _, err := (protocol.Client{}).Announce(actx, addr, doc); err != nil {
				p.log.Debug("transition not announced to a sidecar", "site", s.Name, "err", err.Error())
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(announceWait):
	case <-ctx.Done():
	}
	return nil
}

// startAnnouncing claims the site's announcement slot; false while the
// previous announcement to it is still on its way.
func (p *mpass) startAnnouncing(site string) bool {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	if p.st.announcing[site] {
		return false
	}
	p.st.announcing[site] = true
	return true
}

func (p *mpass) doneAnnouncing(site string) {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	delete(p.st.announcing, site)
}
