package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Leadership knows, on this process's monotonic clock, when the last
// successful acquire or renewal of the Lease was sent, and so until when
// this process may still start a MySQL mutation: another process takes the
// Lease no earlier than LeaseDuration after it observed that renewal, which
// it observed no earlier than it was sent (docs/safety.md, The leadership
// margin).
type Leadership struct {
	cfg LeaderElectionConfig
	now func() time.Time

	mu       sync.Mutex
	lastSent time.Time // zero: never acquired
}

// NewLeadership tracks renewals for cfg; now is the clock (time.Now).
func NewLeadership(cfg LeaderElectionConfig, now func() time.Time) *Leadership {
	if now == nil {
		now = time.Now
	}
	return &Leadership{cfg: cfg, now: now}
}

// Renewed records a successful acquire or renewal sent at sent.
func (l *Leadership) Renewed(sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if sent.After(l.lastSent) {
		l.lastSent = sent
	}
}

// MayMutate is nil while a statement started now ends (StatementTimeout)
// before any other process can hold the Lease.
func (l *Leadership) MayMutate() error {
	l.mu.Lock()
	last := l.lastSent
	l.mu.Unlock()
	return MutationAllowed(l.cfg, last, l.now())
}

// MutationAllowed is MayMutate's rule: a mutation started at now, bounded
// by StatementTimeout, must end before lastSent + LeaseDuration.
func MutationAllowed(cfg LeaderElectionConfig, lastSent, now time.Time) error {
	if lastSent.IsZero() {
		return fmt.Errorf("not leading: the Lease was never acquired by this process")
	}
	if until := lastSent.Add(cfg.LeaseDuration - cfg.StatementTimeout()); now.After(until) {
		return fmt.Errorf("leadership not assured: the last renewal of the Lease was sent %s ago; another process may take it %s after that, and a statement bounded by %s would outlast it",
			now.Sub(lastSent).Round(time.Millisecond), cfg.LeaseDuration, cfg.StatementTimeout())
	}
	return nil
}

// renewalLock records in a Leadership the send time of every successful
// Create and Update of the Lease that names this process (client-go's
// acquire and renew).
type renewalLock struct {
	resourcelock.Interface
	l *Leadership
}

func (r renewalLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := r.l.now()
	err := r.Interface.Create(ctx, rec)
	if err == nil && rec.HolderIdentity == r.Identity() {
		r.l.Renewed(sent)
	}
	return err
}

func (r renewalLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := r.l.now()
	err := r.Interface.Update(ctx, rec)
	// A release (ReleaseOnCancel) writes an empty holder: not a renewal.
	if err == nil && rec.HolderIdentity == r.Identity() {
		r.l.Renewed(sent)
	}
	return err
}
