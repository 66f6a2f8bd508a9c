package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/sidecar/fencing"
)

// Sidecar is one running sidecar. Create it with New, run its fencing loop
// with Run, and serve Handler.
type Sidecar struct {
	cfg   Config
	log   *slog.Logger
	db    *mysql.Client
	admin *mysql.Client  // the fence's connection (administrative interface)
	proc  *mysqldProcess // nil without a pid file: no process stop
	plan  fencing.Plan
	wake  chan struct{} // a pushed announcement asks for a round now
	start time.Time
	tls   *tlsWatch // tls.go; nil without Config.TLSDir

	mu    sync.Mutex
	st    state
	clock func() time.Time // time.Now; monotonic readings drive every lease
}

// state is everything the sidecar remembers. It is a cache: a restarted
// sidecar starts empty, and the rule treats "never heard" as unconfirmed.
type state struct {
	operator     *operatorAnswer
	operatorErr  string
	activeSince  time.Time // wall clock: when operator.ActiveSite was first heard
	peers        map[string]*peerState
	obs          *observation
	decision     fencing.Decision
	decisionAt   time.Time
	selfFencedAt time.Time
	fenceCount   int64
	lastProgress time.Time // last completed round
	roundStarted time.Time // zero when no round is in progress
	lastFenceErr string
	fences       []FenceReport // the latest runs of the fencing sequence, oldest first
	// instance is the mysqld process last seen running (instance.go);
	// acks, when each transition a proof was asked about was first held
	// (proof.go).
	instance *instanceSeen
	acks     map[string]time.Time
}

// keptFenceReports is how many runs of the fencing sequence Fences returns.
const keptFenceReports = 8

type operatorAnswer struct {
	answer protocol.ActiveSite
	sent   time.Time // the request's send time (or a push's receive time)
	view   fencing.View
}

type peerState struct {
	view      *fencing.PeerView
	reachable bool
	err       string
}

type observation struct {
	at   time.Time
	err  error
	obs  mysql.Observation
	repl *mysql.ReplicaStatus
}

// New validates cfg and opens (lazily) the local mysqld connection.
func New(cfg Config) (*Sidecar, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sidecar configuration: %w", err)
	}
	cfg = cfg.withDefaults()
	tw, err := setupTLS(&cfg) // tls.go
	if err != nil {
		return nil, fmt.Errorf("sidecar configuration: %w", err)
	}
	db, err := mysql.Open(cfg.MySQL)
	if err != nil {
		return nil, fmt.Errorf("sidecar configuration: mysql: %w", err)
	}
	admin, err := openAdmin(cfg)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sidecar configuration: mysql admin address: %w", err)
	}
	s := &Sidecar{
		cfg: cfg, db: db, admin: admin, wake: make(chan struct{}, 1), clock: time.Now, tls: tw,
		plan: fencing.NewPlan(cfg.FenceTimeout, cfg.RequestTimeout),
		log:  cfg.Logger.With("namespace", cfg.Namespace, "group", cfg.Group, "site", cfg.Site),
	}
	if cfg.MySQLPIDFile != "" {
		s.proc = &mysqldProcess{pidFile: cfg.MySQLPIDFile}
	}
	s.start = s.clock()
	s.st.peers = map[string]*peerState{}
	for _, p := range cfg.Peers {
		s.st.peers[p.Site] = &peerState{}
	}
	s.st.lastProgress = s.start
	return s, nil
}

// Close releases the mysqld connections.
func (s *Sidecar) Close() error { return errors.Join(s.db.Close(), s.admin.Close()) }

// Config returns the effective configuration (defaults filled).
func (s *Sidecar) Config() Config { return s.cfg }

// Run runs the fencing loop until ctx ends. Each round observes mysqld, asks
// the operator and the peers (all at once, each bounded by RequestTimeout),
// applies the rule and fences if it says so. Rounds start every
// PeerCheckInterval, and also the moment the current confirmation runs out
// or the operator pushes an announcement.
func (s *Sidecar) Run(ctx context.Context) {
	s.log.Info("sidecar fencing loop started", "leaseTimeout", s.cfg.LeaseTimeout.String(),
		"peerCheckInterval", s.cfg.PeerCheckInterval.String(), "peers", len(s.cfg.Peers),
		"selfFenceBound", protocol.SelfFenceBound(s.cfg.LeaseTimeout, s.cfg.PeerCheckInterval).String())
	if s.tls != nil {
		go s.watchTLS(ctx, s.cfg.PeerCheckInterval) // tls.go: ALTER INSTANCE RELOAD TLS on a renewed Secret
	}
	if s.proc != nil {
		go s.watchProcess(ctx) // instance.go: an exit is pushed to the operator at once
	}
	for {
		started := s.clock()
		d := s.Round(ctx)
		next := started.Add(s.cfg.PeerCheckInterval)
		if !d.Unconfirmed && d.ConfirmedUntil.Before(next) {
			next = d.ConfirmedUntil
		}
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
			s.log.Info("sidecar fencing loop stopped")
			return
		case <-s.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// Round runs one round of the fencing loop and returns its decision.
func (s *Sidecar) Round(ctx context.Context) fencing.Decision {
	s.mu.Lock()
	s.st.roundStarted = s.clock()
	s.mu.Unlock()

	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	var wg sync.WaitGroup
	wg.Add(2 + len(s.cfg.Peers))
	go func() { defer wg.Done(); s.observe(rctx) }()
	go func() { defer wg.Done(); s.pollOperator(rctx) }()
	for _, p := range s.cfg.Peers {
		go func() { defer wg.Done(); s.pollPeer(rctx, p) }()
	}
	wg.Wait()
	cancel()

	s.mu.Lock()
	in := s.inputLocked(s.clock())
	d := fencing.Decide(in)
	prev := s.st.decision
	s.st.decision, s.st.decisionAt = d, time.Now()
	s.mu.Unlock()
	if prev.Reason != d.Reason || prev.Unconfirmed != d.Unconfirmed {
		s.log.Info("fencing decision changed", "reason", d.Reason, "unconfirmed", d.Unconfirmed,
			"confirmedBy", d.ConfirmedBy, "local", in.Local.String(), "previousReason", prev.Reason)
	}
	if d.Fence {
		s.fence(ctx, d, in.Local)
	}
	s.mu.Lock()
	s.st.lastProgress, s.st.roundStarted = s.clock(), time.Time{}
	s.mu.Unlock()
	return d
}

// fence runs the fencing sequence (fencing.Plan, runFence). It never undoes
// a fence: only the operator unfences.
func (s *Sidecar) fence(ctx context.Context, d fencing.Decision, local fencing.Writability) {
	r := s.runFence(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	var prev FenceReport
	if n := len(s.st.fences); n > 0 {
		prev = s.st.fences[n-1]
	}
	if r.ConfirmedBy == ConfirmedProcessGone && prev.ConfirmedBy == ConfirmedProcessGone && prev.PID == r.PID {
		// The same stopped mysqld, found gone again in a later round until
		// it restarts (read-only): nothing new happened.
		return
	}
	s.st.fences = append(s.st.fences, r)
	if len(s.st.fences) > keptFenceReports {
		s.st.fences = s.st.fences[1:]
	}
	if r.ConfirmedBy == "" {
		err := r.Err
		if err == nil {
			err = fmt.Errorf("not confirmed within %s", s.plan.Budget)
		}
		s.st.lastFenceErr = err.Error()
		s.log.Error("self-fence failed", "reason", d.Reason, "local", local.String(), "err", err,
			"took", r.Took.String(), "attempts", r.Attempts, "killedSessions", r.Killed, "mysqldStopped", r.Stopped)
		return
	}
	s.st.lastFenceErr = ""
	s.st.selfFencedAt = time.Now()
	s.st.fenceCount++
	if o := s.st.obs; o != nil && o.err == nil && r.ConfirmedBy == ConfirmedSuperReadOnly {
		o.obs.ReadOnly, o.obs.SuperReadOnly = true, true
	}
	s.log.Warn("mysqld self-fenced: super_read_only=ON", "reason", d.Reason, "local", local.String(),
		"confirmedBy", r.ConfirmedBy, "took", r.Took.String(), "killedSessions", r.Killed, "mysqldStopped", r.Stopped)
}

// Fences reports the latest runs of the fencing sequence, oldest first.
func (s *Sidecar) Fences() []FenceReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]FenceReport(nil), s.st.fences...)
}

// inputLocked assembles the rule's input from what the sidecar holds.
func (s *Sidecar) inputLocked(now time.Time) fencing.Input {
	in := fencing.Input{Now: now, Site: s.cfg.Site, Local: fencing.LocalUnknown}
	if o := s.st.obs; o != nil && o.err == nil {
		// Fenced means super_read_only=ON: with read_only alone, accounts
		// with CONNECTION_ADMIN can still write.
		in.Local = fencing.LocalWritable
		if o.obs.SuperReadOnly {
			in.Local = fencing.LocalReadOnly
		}
	}
	if a := s.st.operator; a != nil {
		v := a.view
		in.Operator = &v
	}
	for _, p := range s.cfg.Peers {
		if ps := s.st.peers[p.Site]; ps.view != nil {
			in.Peers = append(in.Peers, *ps.view)
		}
	}
	return in
}

func (s *Sidecar) observe(ctx context.Context) {
	o := &observation{}
	o.obs, o.err = s.db.Observe(ctx)
	if o.err == nil {
		o.repl, o.err = s.db.ReplicaStatus(ctx)
	}
	o.at = time.Now()
	uuid := ""
	if o.err == nil {
		uuid = o.obs.ServerUUID
	}
	s.lookAtProcess(uuid)
	s.mu.Lock()
	prev := s.st.obs
	s.st.obs = o
	s.mu.Unlock()
	if o.err != nil && (prev == nil || prev.err == nil) {
		s.log.Warn("local mysqld unreachable", "err", o.err)
	} else if o.err == nil && prev != nil && prev.err != nil {
		s.log.Info("local mysqld reachable again")
	}
}

// recordOperator keeps the newer of the held answer and a, by send time, so
// a slow poll answered after a push cannot override the push.
func (s *Sidecar) recordOperator(a protocol.ActiveSite, sent time.Time, polled bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.st.operator; cur != nil && cur.sent.After(sent) {
		return false
	}
	if cur := s.st.operator; cur == nil || cur.answer.ActiveSite != a.ActiveSite {
		s.st.activeSince = time.Now()
	}
	view := fencing.View{ActiveSite: a.ActiveSite, TopologyGeneration: a.TopologyGeneration,
		Transition: a.Transition != nil, ValidUntil: sent.Add(s.cfg.LeaseTimeout)}
	if polled {
		view.PromotedTarget = a.PromotedTarget()
	}
	s.st.operator = &operatorAnswer{answer: a, sent: sent, view: view}
	if s.st.operatorErr != "" {
		s.log.Info("operator reachable again", "activeSite", a.ActiveSite, "topologyGeneration", a.TopologyGeneration)
	}
	s.st.operatorErr = ""
	return true
}

// PeerView is what this sidecar tells its peers on /peer/active-site.
func (s *Sidecar) PeerView() protocol.PeerActiveSite {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peerViewLocked(s.clock())
}

func (s *Sidecar) peerViewLocked(now time.Time) protocol.PeerActiveSite {
	p := protocol.PeerActiveSite{Site: s.cfg.Site}
	a := s.st.operator
	if a == nil {
		return p
	}
	p.ActiveSite, p.TopologyGeneration, p.Transition = a.answer.ActiveSite, a.answer.TopologyGeneration, a.answer.Transition
	since := s.st.activeSince
	p.Since = &since
	age := now.Sub(a.sent).Milliseconds()
	p.OperatorAnswerAgeMillis = &age
	// Only what the operator told this sidecar within its own lease is
	// passed on; the remaining validity is rounded down so a peer never
	// counts a confirmation longer than this sidecar would.
	if left := a.view.ValidUntil.Sub(now); left >= time.Millisecond {
		p.Confirmed = true
		p.ValidForMillis = left.Milliseconds()
	}
	return p
}
