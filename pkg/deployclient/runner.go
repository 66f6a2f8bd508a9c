package deployclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Clock is the runner's monotonic clock: every deadline is computed and
// compared on it (time.Time values from Now carry the monotonic reading).
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// grantAttempts bounds a grant's retries after a transport error or a 5xx
// (a lost answer: POST again with the same operation id, docs/deploy-api.md).
const (
	grantAttempts   = 3
	grantRetryDelay = time.Second
)

// Config is one run.
type Config struct {
	Client      *Client
	Group       string
	Instance    string
	OperationID string
	Policy      Policy
	// Command is argv of the migration command.
	Command []string
	// Env is the command's base environment; nil means os.Environ().
	Env []string
	// OutcomeFile, if set, is where the outcome is recorded (the command
	// may write it itself; its path is in BLOODRAVEN_DEPLOY_OUTCOME_FILE).
	// Unset, the outcome is recorded by its log line.
	OutcomeFile    string
	Stdout, Stderr io.Writer
	// Logger receives one JSON record per event; nil means JSON on stdout.
	Logger *slog.Logger
	// Clock nil means the real monotonic clock.
	Clock Clock
}

// Result is how a run ended.
type Result struct {
	Cause Cause
	// Command is the command's outcome (Started false if it never ran).
	Command CommandOutcome
	// Deadline is the last confirmed deadline (earliest of both leases).
	Deadline        time.Time
	HoldReleased    bool
	MutexReleased   bool
	OutcomeRecorded bool
}

// ExitCode is the process exit code of the result.
func (r Result) ExitCode() int { return r.Cause.ExitCode() }

type grantState struct {
	migration, hold Lease
}

type run struct {
	cfg Config
	pol Policy
	clk Clock
	log *slog.Logger
	g   grantState
	// confirmed is the send time of each lease's last confirmed grant or
	// renewal; the authority deadline is the earliest plus the TTL.
	confirmed          map[string]time.Time
	lost               Cause
	lostAt             time.Time
	termSent, killSent bool
}

// Run grants the leases, runs the command under them, and releases them.
func Run(ctx context.Context, cfg Config) Result {
	r, err := newRun(cfg)
	if err != nil {
		r.log.Error("invalid configuration", "error", err.Error())
		return r.finish(Result{Cause: CauseUsage})
	}
	if cause := r.grantAll(ctx); cause != "" {
		return r.finish(Result{Cause: cause, Deadline: r.deadline()})
	}
	return r.runCommand(ctx)
}

// uuidPattern is the API's operation id (docs/deploy-api.md#grant-a-lease-post-groupsgroupleases).
var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func newRun(cfg Config) (*run, error) {
	// The API stores operation ids in lower case; so do the logs and env.
	cfg.OperationID = strings.ToLower(cfg.OperationID)
	r := &run{cfg: cfg, pol: cfg.Policy, clk: cfg.Clock, confirmed: map[string]time.Time{}}
	if r.clk == nil {
		r.clk = realClock{}
	}
	base := cfg.Logger
	if base == nil {
		base = slog.New(slog.NewJSONHandler(os.Stdout, nil))
	}
	r.log = base.With("group", cfg.Group, "instance", cfg.Instance, "operationId", cfg.OperationID)
	switch {
	case cfg.Client == nil || cfg.Client.HTTP == nil:
		return r, errors.New("a client is required")
	case cfg.Group == "" || cfg.Instance == "" || cfg.OperationID == "":
		return r, errors.New("group, instance and operation id are required")
	case !uuidPattern.MatchString(cfg.OperationID):
		return r, fmt.Errorf("operation id %q is not a UUID", cfg.OperationID)
	case len(cfg.Command) == 0:
		return r, errors.New("a command is required")
	case cfg.Policy.TTL%time.Second != 0:
		return r, fmt.Errorf("ttl %s is not a whole number of seconds", cfg.Policy.TTL)
	}
	if err := cfg.Policy.Validate(); err != nil {
		return r, err
	}
	return r, checkOutcomePath(cfg.OutcomeFile)
}

func (r *run) finish(res Result) Result {
	r.log.Info("run finished", "cause", string(res.Cause), "exitCode", res.ExitCode())
	return res
}

// deadline is the confirmed authority deadline (zero before any grant).
func (r *run) deadline() time.Time {
	s := r.lastConfirmed()
	if s.IsZero() {
		return time.Time{}
	}
	return Deadline(s, r.pol.TTL)
}

func (r *run) lastConfirmed() time.Time {
	var first time.Time
	for _, t := range r.confirmed {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first
}

// untilDeadline is the time left on the confirmed deadline, for logs.
func (r *run) untilDeadline(now time.Time) int64 {
	return r.deadline().Sub(now).Milliseconds()
}

// grantAll takes the migration lease, then the hold; "" means both are held.
func (r *run) grantAll(ctx context.Context) Cause {
	mig, err := r.grantOne(ctx, KindMigration)
	if err != nil {
		return refusal(ctx)
	}
	r.g.migration = mig
	hold, err := r.grantOne(ctx, KindFailoverHold)
	if err != nil {
		r.release(KindMigration, mig.Token)
		return refusal(ctx)
	}
	r.g.hold = hold
	if hold.TopologyGeneration != mig.TopologyGeneration {
		r.log.Warn("authority lost", "cause", string(CauseTopologyChanged), "migrationGeneration", mig.TopologyGeneration, "holdGeneration", hold.TopologyGeneration)
		r.release(KindFailoverHold, hold.Token)
		r.release(KindMigration, mig.Token)
		return CauseTopologyChanged
	}
	return ""
}

// refusal is the cause of a failed grant: nothing ran.
func refusal(ctx context.Context) Cause {
	if ctx.Err() != nil {
		return CauseInterrupted
	}
	return CauseGrantRefused
}

func (r *run) grantOne(ctx context.Context, kind string) (Lease, error) {
	for attempt := 1; ; attempt++ {
		sent := r.clk.Now()
		rctx, cancel := context.WithTimeout(ctx, r.pol.RequestTimeout)
		l, err := r.cfg.Client.Grant(rctx, r.cfg.Group, kind, r.cfg.OperationID, r.cfg.Instance, r.pol.TTL)
		cancel()
		if err == nil {
			r.confirmed[kind] = sent
			if l.TTL() < r.pol.TTL {
				r.pol.TTL = l.TTL()
			}
			r.log.Info("lease granted", "kind", kind, "namespace", l.Namespace, "expiresAt", l.ExpiresAt,
				"ttlSeconds", l.TTLSeconds, "topologyGeneration", l.TopologyGeneration, "deadline", r.deadline())
			return l, nil
		}
		r.log.Warn("grant failed", append(errAttrs(err), "kind", kind, "attempt", attempt)...)
		if !retryableGrant(err) || attempt >= grantAttempts || ctx.Err() != nil {
			return Lease{}, err
		}
		select {
		case <-r.clk.After(grantRetryDelay):
		case <-ctx.Done():
			return Lease{}, ctx.Err()
		}
	}
}

func retryableGrant(err error) bool {
	ae, ok := AsAPIError(err)
	return !ok || ae.Status == http.StatusInternalServerError || ae.Status == http.StatusServiceUnavailable
}

// errAttrs describes err for a log record: the status and stable code of
// an API answer, or the transport error (which never carries a token).
func errAttrs(err error) []any {
	if ae, ok := AsAPIError(err); ok {
		return []any{"status", ae.Status, "error", ae.Code, "reason", ae.Reason, "unstableReason", ae.UnstableReason}
	}
	return []any{"status", 0, "error", err.Error()}
}

func (r *run) tokenOf(kind string) string {
	if kind == KindMigration {
		return r.g.migration.Token
	}
	return r.g.hold.Token
}

// release ends one lease; releasing is idempotent, so it is always tried.
func (r *run) release(kind, token string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), r.pol.RequestTimeout)
	defer cancel()
	if err := r.cfg.Client.Release(ctx, r.cfg.Group, kind, r.cfg.OperationID, r.cfg.Instance, token); err != nil {
		r.log.Warn("release failed", append(errAttrs(err), "kind", kind)...)
		return false
	}
	r.log.Info("lease released", "kind", kind)
	return true
}

func (r *run) runCommand(ctx context.Context) Result {
	env := commandEnv(r.cfg.Env, r.g, r.cfg.OutcomeFile)
	p, err := startProcess(r.cfg.Command, env, orStd(r.cfg.Stdout, os.Stdout), orStd(r.cfg.Stderr, os.Stderr), r.clk.Now)
	var out CommandOutcome
	if err != nil {
		out = CommandOutcome{StartError: err.Error(), ExitCode: -1, FinishedAt: r.clk.Now()}
		r.log.Error("command did not start", "error", err.Error())
	} else {
		r.log.Info("command started", "pid", p.pid(), "deadline", r.deadline())
		out = r.supervise(ctx, p)
	}
	return r.conclude(out)
}

func orStd(w, std io.Writer) io.Writer {
	if w == nil {
		return std
	}
	return w
}

// conclude follows client rule 6: release the hold, record the outcome,
// and only then release the mutex.
func (r *run) conclude(out CommandOutcome) Result {
	res := Result{Command: out, Deadline: r.deadline(), Cause: r.causeOf(out)}
	r.log.Info("command exited", "exitCode", out.ExitCode, "signal", out.Signal, "started", out.Started,
		"deadline", res.Deadline, "deadlineMarginMs", res.Deadline.Sub(out.FinishedAt).Milliseconds())
	res.HoldReleased = r.release(KindFailoverHold, r.g.hold.Token)
	res.OutcomeRecorded = r.record(res.Cause, out)
	if res.OutcomeRecorded {
		res.MutexReleased = r.release(KindMigration, r.g.migration.Token)
	} else if !res.Cause.LostAuthority() {
		res.Cause = CauseOutcomeNotRecorded
	}
	return r.finish(res)
}

func (r *run) causeOf(out CommandOutcome) Cause {
	switch {
	case r.lost != "":
		return r.lost
	case out.OK():
		return CauseSuccess
	}
	return CauseCommandFailed
}

// record makes the outcome durable; without an outcome file its log line
// is the record, so a failed write of that line counts as not recorded.
func (r *run) record(cause Cause, out CommandOutcome) bool {
	rec := OutcomeRecord{Group: r.cfg.Group, Namespace: r.g.migration.Namespace, OperationID: r.cfg.OperationID,
		Instance: r.cfg.Instance, Cause: cause, Command: out, RecordedAt: time.Now().UTC()}
	if r.cfg.OutcomeFile == "" {
		return r.log.Handler().Handle(context.Background(), outcomeLogRecord(rec)) == nil
	}
	source, err := recordOutcome(r.cfg.OutcomeFile, rec)
	if err != nil {
		r.log.Error("outcome not recorded; the migration lease is kept until it expires", "path", r.cfg.OutcomeFile, "error", err.Error())
		return false
	}
	r.log.Info("outcome recorded", "path", r.cfg.OutcomeFile, "source", source, "cause", string(cause), "exitCode", out.ExitCode)
	return true
}

func outcomeLogRecord(rec OutcomeRecord) slog.Record {
	lr := slog.NewRecord(time.Now(), slog.LevelInfo, "outcome recorded", 0)
	lr.AddAttrs(slog.String("source", "log"), slog.String("cause", string(rec.Cause)),
		slog.Int("exitCode", rec.Command.ExitCode), slog.String("signal", rec.Command.Signal))
	return lr
}

// renewal is one renewal's answer.
type renewal struct {
	kind  string
	sent  time.Time
	lease Lease
	err   error
}

// supervise renews both leases every ttl/3 while the command runs and
// signals it by the plan of Decide. Renewals run beside the loop, so a
// hanging request never delays a signal.
func (r *run) supervise(ctx context.Context, p *process) CommandOutcome {
	answers := make(chan renewal, 2)
	rctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inflight := map[string]bool{}
	interrupted := ctx.Done()
	// The period runs from the grant, so the first renewal is due ttl/3
	// after the send time the deadline counts from.
	nextRenew := r.lastConfirmed().Add(r.pol.RenewEvery())
	for {
		now := r.clk.Now()
		if r.lost == "" && !now.Before(nextRenew) {
			r.startRenewals(rctx, inflight, answers)
			nextRenew = now.Add(r.pol.RenewEvery())
		}
		wake := r.step(p, now)
		if r.lost == "" && (wake.IsZero() || nextRenew.Before(wake)) {
			wake = nextRenew
		}
		var timer <-chan time.Time
		if !wake.IsZero() {
			timer = r.clk.After(wake.Sub(now))
		}
		select {
		case out := <-p.done:
			return out
		case a := <-answers:
			inflight[a.kind] = false
			if r.apply(a) == Keep {
				nextRenew = earliest(nextRenew, r.clk.Now().Add(r.retryDelay()))
			}
		case <-interrupted:
			interrupted = nil
			r.lose(CauseInterrupted, r.clk.Now(), "the runner was asked to stop")
		case <-timer:
		}
	}
}

func (r *run) startRenewals(ctx context.Context, inflight map[string]bool, answers chan<- renewal) {
	for _, kind := range []string{KindMigration, KindFailoverHold} {
		if inflight[kind] {
			continue
		}
		inflight[kind] = true
		go func() {
			sent := r.clk.Now()
			rctx, cancel := context.WithTimeout(ctx, r.pol.RequestTimeout)
			defer cancel()
			l, err := r.cfg.Client.Renew(rctx, r.cfg.Group, kind, r.cfg.OperationID, r.cfg.Instance, r.tokenOf(kind), r.pol.TTL)
			answers <- renewal{kind: kind, sent: sent, lease: l, err: err}
		}()
	}
}

// retryDelay is how soon an unconfirmed renewal is tried again: within
// the deadline every attempt counts (client rule 4), but never faster than
// one request timeout, so a 423 or a dead link is not hammered.
func (r *run) retryDelay() time.Duration { return min(r.pol.RequestTimeout, r.pol.RenewEvery()) }

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// apply folds a renewal answer into the state: only Extend moves the
// deadline (client rules 2 to 4).
func (r *run) apply(a renewal) Effect {
	now := r.clk.Now()
	if r.lost != "" {
		return Lost
	}
	eff, cause := Classify(a.err, r.g.migration.TopologyGeneration, a.lease.TopologyGeneration)
	switch eff {
	case Extend:
		r.confirmed[a.kind] = a.sent
		r.log.Info("lease renewed", "kind", a.kind, "expiresAt", a.lease.ExpiresAt, "deadline", r.deadline(), "deadlineInMs", r.untilDeadline(now))
	case Keep:
		r.log.Warn("renewal not confirmed", append(errAttrs(a.err), "kind", a.kind, "effect", eff.String(), "deadlineInMs", r.untilDeadline(now))...)
	case Lost:
		attrs := []any{"kind", a.kind, "topologyGeneration", a.lease.TopologyGeneration}
		if a.err != nil {
			attrs = errAttrs(a.err)
			attrs = append(attrs, "kind", a.kind)
		}
		r.lose(cause, now, "renewal answer", attrs...)
	}
	return eff
}

func (r *run) lose(cause Cause, now time.Time, why string, attrs ...any) {
	if r.lost != "" {
		return
	}
	r.lost, r.lostAt = cause, now
	r.log.Warn("authority lost", append(attrs, "cause", string(cause), "why", why, "deadlineInMs", r.untilDeadline(now))...)
}

// step applies Decide's action now and returns when to decide again.
func (r *run) step(p *process, now time.Time) time.Time {
	act, wake := Decide(r.lastConfirmed(), r.pol, r.lostAt, r.termSent, r.killSent, now)
	switch act {
	case Terminate:
		// A SIGTERM cannot be taken back: once sent for the deadline, the
		// run has lost its authority whatever a later answer says.
		r.lose(CauseDeadlineReached, now, "no confirmed renewal before the deadline")
		r.termSent = true
		r.signal(p, syscall.SIGTERM, now)
	case Kill:
		r.lose(CauseDeadlineReached, now, "no confirmed renewal before the deadline")
		r.termSent, r.killSent = true, true
		r.signal(p, syscall.SIGKILL, now)
	}
	return wake
}

func (r *run) signal(p *process, sig syscall.Signal, now time.Time) {
	err := p.signal(sig)
	attrs := []any{"signal", sig.String(), "pid", p.pid(), "deadlineInMs", r.untilDeadline(now)}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	r.log.Warn("signal sent", attrs...)
}
