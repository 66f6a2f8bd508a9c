package topologymanager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controller"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// managerConditions are the condition types the manager owns.
var managerConditions = []string{v1alpha1.ConditionReady, v1alpha1.ConditionDegraded, v1alpha1.ConditionBootstrapping, v1alpha1.ConditionRecoveryPending}

// execute carries out a decision: an intent is written first and, if that
// write fails, nothing else happens; then the actions; then the status.
// Decision Events are recorded only once the status they describe is stored.
func (p *mpass) execute(ctx context.Context, d topology.Decision) (*v1alpha1.MysqlFailoverGroup, error) {
	p.prevTransition = p.g.Status.Transition
	if err := p.leading(); err != nil {
		return p.g, err // manager_guard.go: a deposed leader stores nothing
	}
	if d.WriteFirst {
		g, err := p.writeStatus(ctx, d.Status)
		if err != nil {
			return p.g, fmt.Errorf("record topology intent: %w", err)
		}
		p.logStateChanges(p.g, g)
		p.g = g
		p.events(d.Events)
		p.m.opts.Metrics.transitionWritten(p.prevTransition, d.Status, p.m.opts.Now())
		if hook := p.m.opts.AfterIntentWrite; hook != nil {
			hook(g)
		}
		if t := d.Status.Transition; t != nil {
			p.log.Info("transition recorded", "transitionID", t.ID, "kind", string(t.Kind), "targetSite", t.TargetSite, "topologyGeneration", t.TopologyGeneration)
		} else {
			p.log.Info("topology published", "activeSite", d.Status.ActiveSite, "topologyGeneration", d.Status.TopologyGeneration)
		}
	}
	if ctx.Err() != nil {
		return p.g, ctx.Err() // stopped (leadership lost): act on nothing more
	}
	p.run(ctx, d.Actions)
	if d.WriteFirst {
		return p.g, nil
	}
	if err := p.leading(); err != nil {
		return p.g, err
	}
	g, err := p.writeStatus(ctx, d.Status)
	if err != nil {
		return p.g, fmt.Errorf("update status: %w", err)
	}
	p.logStateChanges(p.g, g)
	p.g = g
	p.events(d.Events)
	return g, nil
}

// writeStatus stores the manager's part of the status. The write carries the
// resourceVersion the decision was based on: if the group changed since (a
// newer status, another operator instance), it fails with a Conflict and
// nothing is overwritten.
func (p *mpass) writeStatus(ctx context.Context, st v1alpha1.MysqlFailoverGroupStatus) (*v1alpha1.MysqlFailoverGroup, error) {
	update := p.m.ctrl.ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.g.Namespace).UpdateStatus
	g, _, err := controller.UpdateStatusIfChanged(ctx, p.g,
		func(o *v1alpha1.MysqlFailoverGroup) any { return o.Status },
		func(o *v1alpha1.MysqlFailoverGroup) {
			o.Status.ActiveSite = st.ActiveSite
			o.Status.TopologyGeneration = st.TopologyGeneration
			o.Status.Transition = st.Transition
			o.Status.Sites = st.Sites
			o.Status.ObservedGeneration = st.ObservedGeneration
			o.Status.LastFailover = st.LastFailover
			o.Status.RecloneHistory = st.RecloneHistory
			o.Status.PlannedFailover = st.PlannedFailover
			o.Status.AutomaticFailoverHold = st.AutomaticFailoverHold
			for _, t := range managerConditions {
				if c := apimeta.FindStatusCondition(st.Conditions, t); c != nil {
					apimeta.SetStatusCondition(&o.Status.Conditions, *c)
				}
			}
			p.setTLSCondition(o) // manager_tls.go
		}, update)
	return g, err
}

func (p *mpass) events(evs []topology.Event) {
	for _, e := range evs {
		typ := corev1.EventTypeNormal
		if e.Warning {
			typ = corev1.EventTypeWarning
		}
		p.m.ctrl.recorder.Event(p.g, typ, e.Reason, e.Message)
		if e.Reason == v1alpha1.EventFailoverRefused {
			p.m.opts.Metrics.failoverRefused()
		}
	}
}

// run performs the actions in order. A site is made writable only if every
// fence before it succeeded: a failed fence could leave two writers.
func (p *mpass) run(ctx context.Context, actions []topology.Action) {
	fenceFailed := false
	for _, a := range actions {
		if a.Kind == topology.MakeWritable && fenceFailed {
			p.log.Warn("not making a site writable: a fence before it failed", "site", a.Site)
			continue
		}
		if err := p.guard(ctx, a); err != nil {
			// manager_guard.go: nothing more of this decision runs.
			p.log.Warn("decision's remaining actions not run", "site", a.Site, "action", string(a.Kind), "err", err.Error())
			return
		}
		err := p.do(ctx, a)
		if err != nil && a.Kind == topology.Fence {
			fenceFailed = true
		}
		p.m.tracker.Invalidate(p.key, a.Site)
		if a.Site != "" {
			p.noteMutation(a, err)
		}
	}
}

func (p *mpass) do(ctx context.Context, a topology.Action) error {
	switch a.Kind {
	case topology.Clone:
		return p.startClone(ctx, a)
	case topology.CatchUp:
		return p.catchUp(ctx, a.Site)
	case topology.EvictSessions:
		return p.evictSessions(ctx, a.Site)
	case topology.NotifySidecars:
		return p.notifySidecars(ctx)
	}
	c, err := p.client(a.Site)
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, p.m.opts.StatementTimeout)
	defer cancel()
	log := p.log.With("site", a.Site, "action", string(a.Kind))
	switch a.Kind {
	case topology.Fence:
		if err := p.fence(actx, c, a.Site); err != nil {
			log.Error("fence failed", "role", siteRole(p.g, a.Site), "err", err.Error())
			return err
		}
		log.Info("site fenced", "role", siteRole(p.g, a.Site), "why", a.Why)
		p.recordf(corev1.EventTypeWarning, v1alpha1.EventSiteFenced, "site %s fenced (super_read_only=ON): %s", a.Site, a.Why)
	case topology.MakeWritable:
		f := c.Unfence
		if a.ResetReplication {
			f = c.Promote
		}
		if err := f(actx); err != nil {
			log.Error("make writable failed", "err", err.Error())
			return err
		}
		log.Info("site made writable", "why", a.Why)
		if p.g.Status.Transition == nil && p.g.Status.ActiveSite == a.Site {
			p.recordf(corev1.EventTypeNormal, v1alpha1.EventActiveSiteReasserted, "site %s made writable again: %s", a.Site, a.Why)
		}
	case topology.Repoint:
		src := mysql.Source{Host: a.SourceHost, Port: a.SourcePort, User: p.creds.ReplicationUser,
			Password: p.creds.ReplicationPassword, SSL: p.g.Spec.TLS != nil, SSLCA: p.replicationCA()}
		if err := c.Repoint(actx, src); err != nil {
			log.Error("repoint failed", "err", err.Error())
			p.recordf(corev1.EventTypeWarning, v1alpha1.EventFollowerRepointFailed, "site %s could not be pointed at %s: %v", a.Site, a.SourceHost, err)
			return err
		}
		p.recordf(corev1.EventTypeNormal, v1alpha1.EventFollowerRepointed, "site %s now replicates from %s:%d: %s", a.Site, a.SourceHost, a.SourcePort, a.Why)
	case topology.StartApplier:
		if err := c.StartReplicaSQLThread(actx); err != nil {
			log.Error("start applier failed", "err", err.Error())
			return err
		}
		log.Info("applier started", "why", a.Why)
	case topology.StopReceiver:
		if err := c.StopReplicaIOThread(actx); err != nil {
			log.Error("stop receiver failed", "err", err.Error())
			return err
		}
		log.Info("receiver stopped", "why", a.Why)
	case topology.StartReplica:
		if err := c.StartReplica(actx); err != nil {
			log.Error("start replica failed", "err", err.Error())
			p.recordf(corev1.EventTypeWarning, v1alpha1.EventFollowerRepointFailed, "site %s replication could not be started: %v", a.Site, err)
			return err
		}
		log.Info("replication started", "why", a.Why)
	default:
		return fmt.Errorf("unknown action %s", a.Kind)
	}
	return nil
}

func (p *mpass) recordf(typ, reason, format string, args ...any) {
	p.m.ctrl.recorder.Eventf(p.g, typ, reason, format, args...)
}

// noteMutation remembers the last failed repoint or replica start of a
// site until one succeeds (sourceConvergenceReason MutationFailed).
func (p *mpass) noteMutation(a topology.Action, err error) {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	if a.Kind == topology.Clone {
		// A clone that could not even start counts as a failed clone: it is
		// retried after CloneRetryDelay and reported as BootstrapFailed.
		if err != nil {
			p.st.clones[a.Site] = &topology.CloneState{Donor: a.Donor, FailedAt: p.m.opts.Now(), Error: err.Error()}
			p.log.Error("clone not started", "site", a.Site, "donor", a.Donor, "err", err.Error())
		}
		return
	}
	if a.Kind != topology.Repoint && a.Kind != topology.StartReplica {
		return
	}
	if err != nil {
		p.st.mutation[a.Site] = err.Error()
	} else {
		delete(p.st.mutation, a.Site)
	}
}

// startClone re-checks, on fresh reads, that the recipient holds nothing
// the donor lacks, and runs CLONE INSTANCE in the background under
// spec.cloneTimeout: a clone outlives a reconcile (and the leader-election
// safety margin), but it only ever replaces a follower's data with a
// superset of it.
func (p *mpass) startClone(ctx context.Context, a topology.Action) error {
	recipient, err := p.client(a.Site)
	if err != nil {
		return err
	}
	donor, err := p.client(a.Donor)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, p.m.opts.StatementTimeout)
	defer cancel()
	// Recipient first, donor second: the donor's set then includes anything
	// the recipient received from it in between.
	ro, err := recipient.Observe(cctx)
	if err != nil {
		return err
	}
	do, err := donor.Observe(cctx)
	if err != nil {
		return err
	}
	// Only transactions a reclone request accepted (and status recorded)
	// may be destroyed; anything else the recipient holds beyond the donor
	// refuses the clone.
	if ok, extra := topology.CloneEligible(ro.GTIDExecuted, do.GTIDExecuted); !ok && !extra.IsSubsetOf(a.Discard) {
		unrecorded := extra.Subtract(a.Discard)
		p.recordf(corev1.EventTypeWarning, v1alpha1.EventCloneRefusedDivergentTransactions,
			"site %s not cloned from %s: it holds %s that %s lacks and no reclone request recorded", a.Site, a.Donor, topology.GTIDPhrase(unrecorded.OneLine()), a.Donor)
		return fmt.Errorf("site %s holds transactions the donor %s lacks: not cloned", a.Site, a.Donor)
	}
	donorAddr := net.JoinHostPort(a.SourceHost, strconv.Itoa(a.SourcePort))
	if err := recipient.SetCloneDonorList(cctx, donorAddr); err != nil {
		return err
	}
	timeout := p.cloneTimeout()
	// A pool of its own: the driver's read timeout must outlast the clone.
	addr, err := p.m.opts.Resolver.MySQLAddr(siteKey(p.g, a.Site))
	if err != nil {
		return err
	}
	tlsCfg, _, err := p.siteTLS(a.Site) // manager_tls.go
	if err != nil {
		return err
	}
	cc, err := mysql.Open(mysql.Options{Addr: addr, User: p.creds.User, Password: p.creds.Password, Program: p.m.opts.Program, TLS: tlsCfg,
		DialTimeout: p.m.opts.StatementTimeout, StatementTimeout: p.m.opts.StatementTimeout, ReadTimeout: timeout + 30*time.Second})
	if err != nil {
		return err
	}
	d := mysql.Donor{Host: a.SourceHost, Port: a.SourcePort, User: p.creds.ReplicationUser, Password: p.creds.ReplicationPassword, RequireSSL: p.g.Spec.TLS != nil}
	rec := &topology.CloneState{Running: true, Donor: a.Donor, Started: p.m.opts.Now()}
	p.m.mu.Lock()
	p.st.clones[a.Site] = rec
	p.m.mu.Unlock()
	p.recordf(corev1.EventTypeNormal, v1alpha1.EventCloneStarted, "cloning site %s from site %s (%s): %s", a.Site, a.Donor, donorAddr, a.Why)
	p.log.Info("clone started", "site", a.Site, "donor", a.Donor, "cloneTimeout", timeout.String())
	g := p.g
	go func() {
		defer func() { _ = cc.Close() }()
		err := cc.Clone(ctx, d, timeout)
		if errors.Is(err, mysql.ErrCloneRestarting) {
			err = nil // a clone ends with the recipient restarting
		}
		p.m.mu.Lock()
		done := topology.CloneState{Donor: a.Donor, Started: rec.Started}
		if err != nil {
			done.FailedAt, done.Error = p.m.opts.Now(), err.Error()
		}
		p.st.clones[a.Site] = &done
		p.m.mu.Unlock()
		if err != nil {
			p.log.Error("clone failed", "site", a.Site, "donor", a.Donor, "err", err.Error())
			p.m.ctrl.recorder.Eventf(g, corev1.EventTypeWarning, v1alpha1.EventCloneFailed, "clone of site %s from site %s failed: %v", a.Site, a.Donor, err)
		} else {
			p.log.Info("clone finished", "site", a.Site, "donor", a.Donor)
			p.m.ctrl.recorder.Eventf(g, corev1.EventTypeNormal, v1alpha1.EventCloneSucceeded, "site %s was cloned from site %s", a.Site, a.Donor)
		}
		p.enqueue()
	}()
	return nil
}

// fence sets super_read_only=ON. MySQL turns read_only on only once no
// other session holds an open write transaction, so one idle client
// transaction would hold every fence off until it ended. The first half of
// the deadline is spent waiting the way MySQL does; if the server gives up
// (1205) or that half runs out, the client sessions are killed (their
// uncommitted work is rolled back: nothing a client was told is committed
// is lost) and the fence is tried once more with the rest.
func (p *mpass) fence(ctx context.Context, c *mysql.Client, site string) error {
	first := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		first, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(dl)/2))
		defer cancel()
	}
	err := c.Fence(first)
	blocked := mysql.IsNumber(err, mysql.ErLockWaitTimeout) || (errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil)
	if !blocked {
		return err
	}
	killed, kerr := c.EvictClientSessions(ctx, p.creds.User, p.creds.ReplicationUser)
	if len(killed) > 0 {
		p.recordf(corev1.EventTypeWarning, v1alpha1.EventClientSessionsEvicted,
			"killed %d client sessions on site %s: their open transactions kept it from being fenced", len(killed), site)
	}
	if kerr != nil {
		return fmt.Errorf("fence waited for open transactions, and killing the client sessions failed: %w", kerr)
	}
	return c.Fence(ctx)
}
