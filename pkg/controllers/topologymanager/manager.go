package topologymanager

// The topology manager: each reconcile of a group polls its sites
// (package observe), decides (package topology, pure) and executes the
// decision here: status first when it records or completes an intent, then
// the MySQL actions, then the status. Everything the manager keeps in memory
// (poll history, MySQL connection pools, running clones, the last failed
// mutation per site) is a cache; the status is its durable memory.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"

	"k8s.io/client-go/tools/cache"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/observe"
	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// Defaults of Options.
const (
	// DefaultStatementTimeout bounds every MySQL call except CLONE. It must
	// stay below the leader-election safety margin (LeaseDuration −
	// RenewDeadline − RetryPeriod, 3 s with the defaults):
	// operator.LeaderElectionConfig's StatementTimeout() (4/5 of it) is the
	// value to pass.
	DefaultStatementTimeout = 2400 * time.Millisecond
	DefaultCloneRetryDelay  = time.Minute
	DefaultStatusRefresh    = 30 * time.Second
	DefaultProgram          = "bloodraven-operator"
)

// Options configure the topology manager.
type Options struct {
	// Resolver gives each site's mysqld address: siteaddr.Cluster in a
	// cluster, a *devsitemap.Map in the playground and tests.
	Resolver siteaddr.Resolver
	// Credentials reads a group's MySQL accounts; nil reads
	// spec.credentials.operatorSecretName through a Secret informer.
	Credentials CredentialSource
	// StatementTimeout bounds every MySQL call but CLONE (which runs in the
	// background under spec.cloneTimeout). Zero: DefaultStatementTimeout.
	StatementTimeout time.Duration
	// PollTimeout is each poll's deadline; zero: the smaller of
	// StatementTimeout and the group's pollInterval.
	PollTimeout time.Duration
	// CloneRetryDelay: how long after a failed clone the next one may start.
	CloneRetryDelay time.Duration
	// StatusRefresh: how stale lastSeenTime, gtidExecuted and
	// secondsBehindSource may get in status when nothing else changes.
	StatusRefresh time.Duration
	// Program is the MySQL program_name connection attribute.
	Program string
	// Metrics receives the manager's metrics; nil records none.
	Metrics *Metrics
	// AutomaticFailover turns on automatic failover (docs/topology.md). Off,
	// an unreachable active site only degrades the group.
	AutomaticFailover bool
	// FailoverMaxMissing: how many transactions the operator saw committed
	// on the old primary the candidate may lack (neither applied nor
	// received) and still be promoted automatically. Default 0.
	FailoverMaxMissing uint64
	// AfterIntentWrite, if set, is called after every status write that
	// recorded, advanced or completed an intent, before the decision's
	// actions run. Tests use it to stop the operator at a chosen step.
	AfterIntentWrite func(*v1alpha1.MysqlFailoverGroup)
	// Now and NewID replace the clock and the transition id source in tests.
	Now   func() time.Time
	NewID func() string
	// Holds reads a group's deployment failover holds for planned
	// failover; nil reads the Lease records through the controller's
	// Kubernetes client (leasestore.Store).
	Holds HoldsFunc
	// Leadership is checked immediately before every MySQL mutation: nil
	// error while this process leads with a statement's worth of margin
	// (operator.Process.MayMutate). Nil checks nothing (tests without an
	// election).
	Leadership func() error
	// BeforeMutation, if set, is called before each mutation's guard
	// (tests use it to stall a decision, as a slow pass would).
	BeforeMutation func(topology.Action)
	// RotationOverlap: how long both passwords of a rotated account work
	// after every managed consumer moved; zero: accounts.DefaultOverlap
	// (docs/credentials.md). Tests shorten it.
	RotationOverlap time.Duration
	// AfterRotationStep, if set, is called after a password rotation's step
	// took effect on the server and before the store records it. Tests use
	// it to stop the operator there.
	AfterRotationStep func(role, step string)
}

// Sample is one poll of a site.
type Sample struct {
	Observation mysql.Observation
	Replica     *mysql.ReplicaStatus
	// Evidence is the channel's performance_schema evidence (nil without a
	// channel or when it could not be read); ReadAt is the operator's clock
	// when it was read.
	Evidence *mysql.ChannelEvidence
	ReadAt   time.Time
}

// Manager observes, decides and acts for every group of one controller.
type Manager struct {
	opts    Options
	ctrl    *Controller
	tracker *observe.Tracker[Sample]
	log     *slog.Logger

	// admitter runs planned-failover admission (the claim's first phases).
	admitter *PlannedAdmitter

	mu     sync.Mutex
	groups map[string]*groupState
	// seen: per group, when this process first saw its transition (manager_guard.go).
	seen sync.Map
}

// groupState is the manager's in-memory cache of one group.
type groupState struct {
	clients  map[string]*siteClient // by site
	clones   map[string]*topology.CloneState
	mutation map[string]string // last failed repoint/start by site
	// sidecarHealthy: in the site's latest poll mysqld did not answer but
	// its sidecar reported it healthy; pollFailed: that poll failed;
	// sidecarSeen: its sidecar answered in the latest poll that reached the
	// site at all (topology.SiteInput.SidecarSeen).
	sidecarHealthy, pollFailed, sidecarSeen map[string]bool
	// sidecarAnswered: the site's sidecar answered in its latest poll;
	// sidecarExited: and reported that the instance in lastWritable has
	// exited; lastWritable: the instance last seen writable there
	// (manager_fenceproof.go).
	sidecarAnswered, sidecarExited map[string]bool
	lastWritable                   map[string]protocol.Instance
	// announcing: a transition announcement to the site's sidecar is on
	// its way (manager_failover.go).
	announcing map[string]bool
	// evidence is each site's latest replication evidence read in this
	// process, used when a poll's read of it misses the poll deadline (its
	// ReadAt says how old it is; the decision bounds that).
	evidence map[string]Sample
	tls      *groupTLS // manager_tls.go

	// applied is the applied-password store as last written or read
	// (manager_accounts.go).
	applied *storeCopy
	// latest is the group as this process last wrote or read it
	// (Manager.freshest).
	latest *v1alpha1.MysqlFailoverGroup
}

func newGroupState() *groupState {
	s := &groupState{clients: map[string]*siteClient{}, clones: map[string]*topology.CloneState{}, mutation: map[string]string{}}
	s.sidecarHealthy, s.pollFailed, s.sidecarSeen = map[string]bool{}, map[string]bool{}, map[string]bool{}
	s.sidecarAnswered, s.sidecarExited, s.lastWritable = map[string]bool{}, map[string]bool{}, map[string]protocol.Instance{}
	s.announcing = map[string]bool{}
	s.evidence = map[string]Sample{}
	return s
}

type siteClient struct {
	key    string // addr, user and password: a change reopens the pool
	client *mysql.Client
}

func newManager(c *Controller, opts Options) (*Manager, error) {
	if opts.StatementTimeout <= 0 {
		opts.StatementTimeout = DefaultStatementTimeout
	}
	if opts.CloneRetryDelay <= 0 {
		opts.CloneRetryDelay = DefaultCloneRetryDelay
	}
	if opts.StatusRefresh <= 0 {
		opts.StatusRefresh = DefaultStatusRefresh
	}
	if opts.Program == "" {
		opts.Program = DefaultProgram
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewID == nil {
		opts.NewID = newRunID
	}
	if opts.Credentials == nil {
		src, err := newSecretCredentials(c)
		if err != nil {
			return nil, err
		}
		opts.Credentials = src
	}
	if opts.Holds == nil {
		opts.Holds = leasestore.New(c.kube, leasestore.Options{Now: opts.Now}).Holds
	}
	m := &Manager{opts: opts, ctrl: c, log: c.log.With("component", "topology-manager"), groups: map[string]*groupState{}}
	m.admitter = &PlannedAdmitter{Ship: c.ship, Holds: opts.Holds, Recorder: c.recorder, Now: opts.Now, NewRunID: opts.NewID}
	m.tracker = observe.NewTracker[Sample](opts.Metrics.observePoll)
	return m, nil
}

func groupKey(g *v1alpha1.MysqlFailoverGroup) string { return g.Namespace + "/" + g.Name }

func (m *Manager) state(key string) *groupState {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.groups[key]
	if s == nil {
		s = newGroupState()
		m.groups[key] = s
	}
	return s
}

// forget drops a deleted group's cache and closes its connections.
func (m *Manager) forget(key string) {
	m.mu.Lock()
	s := m.groups[key]
	delete(m.groups, key)
	m.mu.Unlock()
	m.seen.Delete(key)
	m.tracker.Forget(key)
	if s != nil {
		for _, c := range s.clients {
			_ = c.client.Close()
		}
	}
	m.opts.Metrics.forget(key)
}

// Reconcile runs one observe → decide → act pass for g. It returns the
// group as stored after its status writes, and when to poll again.
func (m *Manager) Reconcile(ctx context.Context, g *v1alpha1.MysqlFailoverGroup) (*v1alpha1.MysqlFailoverGroup, time.Duration, error) {
	served := g.Status.Transition
	g = m.freshest(g)
	out, poll, err := m.reconcile(ctx, g, served)
	m.remember(out)
	return out, poll, err
}

// freshest is g, or the copy of the group this process last wrote when the
// informer has not delivered that write yet. A pass must not decide on the
// older copy: its actions run before any status write of its own could
// fail on the resourceVersion, and a decision that writes nothing never
// finds out (a clean-clone CI run: a pass read the status from before the
// previous pass's split-brain intent, refused bootstrap and fenced the
// site the intent kept, leaving no writer).
func (m *Manager) freshest(g *v1alpha1.MysqlFailoverGroup) *v1alpha1.MysqlFailoverGroup {
	s := m.state(groupKey(g))
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := s.latest; l != nil && l.UID == g.UID && newerRV(l.ResourceVersion, g.ResourceVersion) {
		return l.DeepCopy()
	}
	s.latest = nil
	return g
}

// remember keeps g as the newest copy of its group this process knows.
func (m *Manager) remember(g *v1alpha1.MysqlFailoverGroup) {
	if g == nil {
		return
	}
	s := m.state(groupKey(g))
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := s.latest; l == nil || l.UID != g.UID || newerRV(g.ResourceVersion, l.ResourceVersion) {
		s.latest = g.DeepCopy()
	}
}

// served is the transition of the informer's copy of g, which /active-site
// answers from (topology.Input.TransitionUnserved).
func (m *Manager) reconcile(ctx context.Context, g *v1alpha1.MysqlFailoverGroup, served *v1alpha1.Transition) (*v1alpha1.MysqlFailoverGroup, time.Duration, error) {
	key := groupKey(g)
	p, err := m.newPass(g)
	if err != nil {
		return g, p.cadence(nil), err
	}
	p.served = served
	proofs := p.askFenceProof(ctx) // manager_fenceproof.go
	results, err := m.tracker.Round(ctx, key, p.probe, observe.RoundOptions{
		Sites: p.siteNames(), Timeout: p.pollTimeout(), Thresholds: p.thresholds(),
		MinInterval: p.pollInterval() / 2, Backoff: p.siteBackoff, SiteTimeout: p.replacedSourceTimeout,
	})
	if err != nil {
		return g, p.cadence(nil), err
	}
	claimBefore := g.Status.PlannedFailover.DeepCopy()
	in := p.input(results)
	if proof := <-proofs; proof != nil {
		si := in.Observed[proof.Proof.Site]
		si.FenceProof = proof
		in.Observed[proof.Proof.Site] = si
	}
	in, admitErr := p.planned(ctx, results, in)
	d := topology.Decide(in)
	g, err = p.execute(ctx, d)
	if err == nil && d.ClearRecloneAnnotation && in.Reclone != nil {
		err = p.clearReclone(ctx, in.Reclone.Value)
		g = p.g
	}
	if err == nil {
		err = p.clearHoldAnnotation(ctx)
		g = p.g
	}
	if err == nil {
		err = p.syncLastFailoverAnnotations(ctx)
		g = p.g
	}
	if err == nil {
		err = admitErr
	}
	if err == nil {
		p.accountsPass(ctx, results)
		g = p.g
	}
	p.plannedProgress(claimBefore)
	m.opts.Metrics.record(g, results)
	if t := g.Status.Transition; t != nil {
		if err == nil && (topology.IsPlannedKind(t.Kind) || t.Kind == v1alpha1.TransitionAutomatic) {
			return g, p.plannedStep(t), nil
		}
		// Any other change in flight moves at the base rate.
		return g, p.pollInterval(), err
	}
	if d := p.corroboratedRepoll(g, results); d > 0 {
		return g, d, err
	}
	return g, p.cadence(results), err
}

// corroboratedRepoll shortens the wait for the active site's next poll when
// its latest one failed and its sidecar reported, in the same poll, that
// the instance last seen writable there has exited: failureThreshold
// failures then follow each other in a tenth of a second or so. Without
// that report failed polls stay a pollInterval apart, so a network blip
// still needs failureThreshold × pollInterval to start a failover
// (docs/topology.md, cadence). Only until the site counts as Unreachable:
// from then on the failover decides, and a site it does not fail over is
// polled at the usual cadence and backoff.
func (p *mpass) corroboratedRepoll(g *v1alpha1.MysqlFailoverGroup, results map[string]observe.Result[Sample]) time.Duration {
	active := g.Status.ActiveSite
	if r, ok := results[active]; !ok || r.Health.Reach == observe.Unreachable {
		return 0
	}
	p.m.mu.Lock()
	exited := p.st.sidecarExited[active]
	p.m.mu.Unlock()
	if !exited {
		return 0
	}
	p.m.tracker.Invalidate(p.key, active)
	return max(PlannedStepDelay, p.pollInterval()/20)
}

// PlannedStepDelay is the shortest pause between the passes of a planned
// handoff (or an ordered update's), and of an automatic failover: its steps
// follow each other as soon as the previous step's effect can be seen, not
// one poll later, because the group takes no writes from the fence to the
// publication.
const PlannedStepDelay = 25 * time.Millisecond

// plannedStep makes the handoff's source and target due at the next pass
// (their fence, drain and promotion are what the next step waits on; other
// sites keep their cadence) and returns the delay until that pass:
// PlannedStepDelay, or a 20th of the pollInterval when that is longer, so a
// handoff that waits long (a slow drain, bounded by
// topology.PlannedDrainTimeout) polls two sites at most twenty times per
// interval.
func (p *mpass) plannedStep(t *v1alpha1.Transition) time.Duration {
	p.m.tracker.Invalidate(p.key, t.SourceSite)
	p.m.tracker.Invalidate(p.key, t.TargetSite)
	return max(PlannedStepDelay, p.pollInterval()/20)
}

// mpass is one Reconcile of one group.
type mpass struct {
	m     *Manager
	g     *v1alpha1.MysqlFailoverGroup
	key   string
	st    *groupState
	creds Credentials
	now   time.Time
	// prevTransition is the stored transition before this pass's writes.
	prevTransition *v1alpha1.Transition
	// served is the transition of the informer's copy of the group.
	served *v1alpha1.Transition
	// log carries the group's namespace and name (docs/development.md).
	log *slog.Logger
}

func (m *Manager) newPass(g *v1alpha1.MysqlFailoverGroup) (*mpass, error) {
	p := &mpass{m: m, g: g, key: groupKey(g), st: m.state(groupKey(g)), now: m.opts.Now(),
		log: m.log.With("namespace", g.Namespace, "group", g.Name)}
	creds, err := m.opts.Credentials.Get(g)
	if err != nil {
		return p, fmt.Errorf("topology manager: %w", err)
	}
	p.creds = creds
	return p, nil
}

func (p *mpass) siteNames() []string {
	out := make([]string, 0, len(p.g.Spec.Sites))
	for _, s := range p.g.Spec.Sites {
		out = append(out, s.Name)
	}
	return out
}

func (p *mpass) pollInterval() time.Duration {
	if d := p.g.Spec.PollInterval; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return v1alpha1.DefaultPollInterval
}

func (p *mpass) pollTimeout() time.Duration {
	if p.m.opts.PollTimeout > 0 {
		return min(p.m.opts.PollTimeout, p.m.opts.StatementTimeout)
	}
	return min(p.pollInterval(), p.m.opts.StatementTimeout)
}

func (p *mpass) thresholds() observe.Thresholds {
	t := observe.Thresholds{}
	if v := p.g.Spec.FailureThreshold; v != nil {
		t.Failure = int(*v)
	}
	if v := p.g.Spec.RecoveryThreshold; v != nil {
		t.Recovery = int(*v)
	}
	return t
}

func (p *mpass) cloneTimeout() time.Duration {
	if d := p.g.Spec.CloneTimeout; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return v1alpha1.DefaultCloneTimeout
}

// cadence is the delay until the next poll round (observe.GroupCadence):
// the pollInterval while any site answers, so a follower that is down for
// long never delays noticing that the active site died.
func (p *mpass) cadence(results map[string]observe.Result[Sample]) time.Duration {
	hs := make([]observe.Health, 0, len(results))
	for _, r := range results {
		hs = append(hs, r.Health)
	}
	return observe.GroupCadence(p.pollInterval(), p.thresholds(), hs...)
}

// siteBackoff: a site that keeps failing beyond failureThreshold is polled
// less and less often (to 30 s); half a pollInterval of slack keeps a due
// site from slipping to the round after. Not while the active site changes:
// then every site is polled every round, because an old primary that comes
// back holding more, or a candidate that overtook the chosen one, must be
// seen before the promotion (the failover is abandoned then), not one
// backed-off interval later.
func (p *mpass) siteBackoff(h observe.Health) time.Duration {
	if p.g.Status.Transition != nil {
		return 0
	}
	base := p.pollInterval()
	return observe.SiteCadence(base, p.thresholds(), h) - base/2
}

// ReplacedSourceTimeout is the poll deadline of an Unreachable site that an
// automatic failover is replacing. The site is only watched for coming
// back (a returning old primary holding more abandons the failover), which
// a reachable mysqld answers within milliseconds; a cut-off site's poll
// would otherwise hold every pass of the failover for a whole deadline.
const ReplacedSourceTimeout = 250 * time.Millisecond

func (p *mpass) replacedSourceTimeout(site string, h observe.Health) time.Duration {
	t := p.g.Status.Transition
	if t == nil || t.Kind != v1alpha1.TransitionAutomatic || site != t.SourceSite || h.Reach != observe.Unreachable {
		return 0
	}
	return ReplacedSourceTimeout
}

// client returns the site's connection pool, reopening it when its address
// or credentials changed.
func (p *mpass) client(site string) (*mysql.Client, error) {
	addr, err := p.m.opts.Resolver.MySQLAddr(siteaddr.SiteKey{Namespace: p.g.Namespace, Group: p.g.Name, Site: site})
	if err != nil {
		return nil, err
	}
	tlsCfg, caPrint, err := p.siteTLS(site) // manager_tls.go: nil without spec.tls, never a fallback to plaintext
	if err != nil {
		return nil, err
	}
	password := p.creds.Password
	if pw, ok := p.creds.Behind[site]; ok { // missed a rotation while unreachable (manager_accounts.go)
		password = pw
	}
	key := addr + "\x00" + p.creds.User + "\x00" + password + "\x00" + caPrint
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	if c := p.st.clients[site]; c != nil {
		if c.key == key {
			return c.client, nil
		}
		_ = c.client.Close()
		delete(p.st.clients, site)
	}
	c, err := mysql.Open(mysql.Options{
		Addr: addr, User: p.creds.User, Password: password, Program: p.m.opts.Program, TLS: tlsCfg,
		DialTimeout: p.m.opts.StatementTimeout, StatementTimeout: p.m.opts.StatementTimeout,
	})
	if err != nil {
		return nil, err
	}
	p.st.clients[site] = &siteClient{key: key, client: c}
	return c, nil
}

// probe polls one site: identity, GTID sets and replication channel. Its
// sidecar is asked for its own view at the same time, under the same
// deadline (a blackholed mysqld port uses the whole of it): while mysqld
// answers, whether the sidecar runs (an old primary is only known to fence
// itself if it did when the operator lost it); when mysqld does not, the
// second source of docs/sidecar.md.
func (p *mpass) probe(ctx context.Context, site string) (Sample, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	side := p.askSidecar(sctx, site)
	s, err := p.probeMySQL(ctx, site)
	p.noteTLS(site, err) // manager_tls.go
	a := <-side
	p.noteSidecar(site, a, err != nil)
	if err == nil {
		p.noteWritable(site, s, a) // manager_fenceproof.go
	}
	return s, err
}

// sidecarAnswer is what a site's sidecar said: answered (any HTTP answer:
// its process runs), whether it reports its local mysqld healthy, and its
// mysqld process as it sees it (nil: not reported).
type sidecarAnswer struct {
	answered, healthy bool
	process           *protocol.MySQLProcess
}

// askSidecar fetches the site's sidecar /status in the background.
func (p *mpass) askSidecar(ctx context.Context, site string) <-chan sidecarAnswer {
	out := make(chan sidecarAnswer, 1)
	addr, err := p.m.opts.Resolver.SidecarAddr(siteKey(p.g, site))
	if err != nil {
		out <- sidecarAnswer{} // no sidecar address known (development map without sidecar=)
		return out
	}
	maxAge := 3 * p.peerCheckInterval()
	go func() {
		st, err := (protocol.Client{}).SiteStatus(ctx, addr)
		var httpErr *protocol.Error
		out <- sidecarAnswer{answered: err == nil || errors.As(err, &httpErr), healthy: err == nil && st.ReportsHealthyMySQL(maxAge), process: st.Process}
	}()
	return out
}

// noteSidecar records the second source's verdict, whether mysqld failed
// this poll, and whether the sidecar runs, when this poll reached the site
// at all (mysqld or the sidecar answered): a site cut off entirely keeps
// what was seen at the last contact.
func (p *mpass) noteSidecar(site string, a sidecarAnswer, failed bool) {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	p.st.sidecarHealthy[site], p.st.pollFailed[site] = a.healthy && failed, failed
	p.st.sidecarAnswered[site] = a.answered
	w := p.st.lastWritable[site]
	p.st.sidecarExited[site] = failed && a.process != nil && a.process.Exited && w.Complete() && a.process.Instance == w
	if !failed || a.answered {
		p.st.sidecarSeen[site] = a.answered
	}
}

func (p *mpass) peerCheckInterval() time.Duration {
	if sc := p.g.Spec.Sidecar; sc != nil && sc.PeerCheckInterval != nil && sc.PeerCheckInterval.Duration > 0 {
		return sc.PeerCheckInterval.Duration
	}
	return v1alpha1.DefaultPeerCheckInterval
}

func (p *mpass) probeMySQL(ctx context.Context, site string) (Sample, error) {
	c, err := p.client(site)
	if err != nil {
		return Sample{}, err
	}
	o, err := c.Observe(ctx)
	if err != nil {
		return Sample{}, err
	}
	r, err := c.ReplicaStatus(ctx)
	if err != nil {
		return Sample{}, err
	}
	s := Sample{Observation: o, Replica: r}
	if r != nil {
		p.readEvidence(ctx, c, site, &s)
	}
	return s, nil
}

// readEvidence adds the failover lag guard's evidence (topology.LagEvidence)
// to a poll. A read that fails (or runs out of its share of the poll's
// deadline) does not fail the poll: the latest one this
// process read of the site is used, with its own read time, which the
// decision refuses once it is older than its staleness bound; with none,
// the lag is unknown.
func (p *mpass) readEvidence(ctx context.Context, c *mysql.Client, site string, s *Sample) {
	// Half of what is left of the poll's deadline: a poll that overruns
	// its deadline counts as failed (observe.Tracker.Round), and the
	// evidence must never make a site look unreachable.
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(dl)/2))
		defer cancel()
	}
	e, err := c.ReplicationEvidence(ctx)
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	if err == nil {
		s.Evidence, s.ReadAt = &e, p.m.opts.Now()
		p.st.evidence[site] = *s
		return
	}
	if prev, ok := p.st.evidence[site]; ok {
		s.Evidence, s.ReadAt = prev.Evidence, prev.ReadAt
	}
}

// input assembles the decision's input from the poll results and the cache.
func (p *mpass) input(results map[string]observe.Result[Sample]) topology.Input {
	g := p.g
	in := topology.Input{
		Now: p.now, Namespace: g.Namespace, Group: g.Name, Generation: g.Generation,
		MaxLagSeconds: int64(v1alpha1.DefaultMaxLagSeconds), CloneRetryDelay: p.m.opts.CloneRetryDelay, StatusRefresh: p.m.opts.StatusRefresh,
		Status: *rehydrate(g).Status.DeepCopy(), Observed: map[string]topology.SiteInput{}, NewTransitionID: p.m.opts.NewID(),
	}
	if r := g.Spec.Replication; r != nil && r.MaxLagSeconds != nil {
		in.MaxLagSeconds = int64(*r.MaxLagSeconds)
	}
	in.Failover = p.failoverSettings()
	in.TransitionSeen = p.transitionSeen(in.Status.Transition)
	if t := in.Status.Transition; t != nil && (p.served == nil || p.served.ID != t.ID) {
		in.TransitionUnserved = true
	}
	in.Reclone = recloneInput(g)
	in.Failover.PollInterval = p.pollInterval()
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	for _, s := range g.Spec.Sites {
		role := s.Role
		if role == "" {
			role = v1alpha1.DefaultSiteRole
		}
		in.Sites = append(in.Sites, topology.SiteSpec{Name: s.Name, Role: role})
		r := results[s.Name]
		si := topology.SiteInput{Reach: r.Health.Reach, Fresh: r.Fresh, MutationError: p.st.mutation[s.Name], SidecarSeen: p.st.sidecarSeen[s.Name],
			LastWritable: p.st.lastWritable[s.Name]}
		if r.Err != nil {
			si.PollError = r.Err.Error()
			si.SidecarHealthy = p.st.sidecarHealthy[s.Name]
		}
		if r.Last != nil {
			si.Last = toObserved(r.Last)
			si.Evidence = toEvidence(r.Last.Value)
		}
		if c := p.st.clones[s.Name]; c != nil {
			si.Clone = *c
		}
		in.Observed[s.Name] = si
	}
	return in
}

// toObserved: fenced means super_read_only=ON, so Writable is its negation;
// read_only=ON alone still lets SUPER and CONNECTION_ADMIN accounts write.
func toObserved(s *observe.Sample[Sample]) *topology.Observed {
	o := s.Value.Observation
	out := &topology.Observed{ServerUUID: o.ServerUUID, Writable: !o.SuperReadOnly, ReadOnly: o.ReadOnly, Executed: o.GTIDExecuted, Purged: o.GTIDPurged, At: s.At}
	if r := s.Value.Replica; r != nil {
		out.Replica = &topology.Replica{
			SourceHost: r.SourceHost, SourcePort: r.SourcePort, IORunning: r.ReplicaIORunning, SQLRunning: r.SQLRunning(),
			LastIOErrno: r.LastIOErrno, LastIOError: r.LastIOError, LastSQLErrno: r.LastSQLErrno, LastSQLError: r.LastSQLError,
			SecondsBehindSource: r.SecondsBehindSource, Retrieved: r.RetrievedGTIDSet, ReadError: sourceReadError(r),
		}
	}
	return out
}

// toEvidence places the replica's performance_schema times on the
// operator's clock: each is moved by the difference between the replica's
// NOW(6) and the operator's clock when the evidence was read (an error of
// one statement's round trip). Original commit timestamps stay on the
// originating source's clock; the decision only subtracts them from each
// other.
func toEvidence(s Sample) *topology.LagEvidence {
	e := s.Evidence
	if e == nil {
		return nil
	}
	local := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return s.ReadAt.Add(t.Sub(e.Now))
	}
	return &topology.LagEvidence{ObservedAt: s.ReadAt, LastHeartbeat: local(e.LastHeartbeat),
		LastQueued: e.LastQueued, LastQueuedAt: local(e.LastQueuedEnd), LastQueuedCommit: e.LastQueuedCommit,
		LastApplied: e.LastApplied, LastAppliedCommit: e.LastAppliedCommit}
}

// enqueue asks for a reconcile of the group now (a clone finished).
func (p *mpass) enqueue() {
	p.m.ctrl.Enqueue(cache.NewObjectName(p.g.Namespace, p.g.Name))
}

func siteKey(g *v1alpha1.MysqlFailoverGroup, site string) siteaddr.SiteKey {
	return siteaddr.SiteKey{Namespace: g.Namespace, Group: g.Name, Site: site}
}

// newRunID is a fresh random (version 4) UUID for a transition or run id.
func newRunID() string { return string(uuid.NewUUID()) }
