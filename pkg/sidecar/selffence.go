package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/sidecar/fencing"
)

// Ways a fence is confirmed (FenceReport.ConfirmedBy).
const (
	// ConfirmedSuperReadOnly: mysqld answered super_read_only=ON.
	ConfirmedSuperReadOnly = "super_read_only"
	// ConfirmedProcessGone: the process the pid file names is not running
	// (stopped by the sequence, or already down); the next mysqld starts
	// read-only.
	ConfirmedProcessGone = "process-gone"
)

// FenceReport is what one run of the fencing sequence did.
type FenceReport struct {
	Started     time.Time
	Took        time.Duration // until confirmed, or until it gave up
	ConfirmedBy string        // empty when it gave up
	Attempts    int
	Evictions   int // eviction passes
	Killed      int // client sessions killed
	Stopped     bool
	PID         int   // the mysqld process stopped, or found gone
	Err         error // the last failure seen
}

// runFence drives fencing.Plan: the fence statement over the administrative
// interface, evictions, the process stop, and the confirmation.
func (s *Sidecar) runFence(ctx context.Context) FenceReport {
	plan := s.plan
	r := FenceReport{Started: s.clock()}
	ctx, cancel := context.WithTimeout(ctx, plan.Budget)
	defer cancel()
	pr := fencing.Fresh(s.proc != nil)
	attempt := make(chan error, 1)
	elapsed := func() time.Duration { return s.clock().Sub(r.Started) }
	for {
		pr.Elapsed = elapsed()
		act, wake := plan.Next(pr)
		switch act {
		case fencing.ActDone, fencing.ActGiveUp:
			r.Took = elapsed()
			return r
		case fencing.ActAttempt:
			pr.Attempting = true
			r.Attempts++
			go func() { attempt <- s.attemptFence(ctx) }()
		case fencing.ActEvict:
			pr.LastEvict = pr.Elapsed
			r.Evictions++
			r.Killed += s.evict(ctx, plan.StepTimeout, &r)
		case fencing.ActStop:
			s.stopMySQLD(&pr, &r)
		case fencing.ActWait:
			s.waitFence(ctx, wake-pr.Elapsed, attempt, &pr, &r)
			if ctx.Err() != nil && !pr.Confirmed {
				r.Took = elapsed()
				return r
			}
		}
		if !pr.Confirmed && s.proc != nil && (pr.Stopped || (r.Err != nil && !pr.Attempting)) {
			s.checkProcess(&pr, &r)
		}
	}
}

// attemptFence sets super_read_only=ON and confirms it with mysqld's own
// answer. Fence sets lock_wait_timeout to the time left before ctx's
// deadline, the end of the budget.
func (s *Sidecar) attemptFence(ctx context.Context) error {
	return s.viaAdmin(func(c *mysql.Client) error {
		if err := c.Fence(ctx); err != nil {
			return err
		}
		o, err := c.Observe(ctx)
		if err != nil {
			return err
		}
		if !o.SuperReadOnly {
			return errors.New("super_read_only is still OFF after the fence statement")
		}
		return nil
	})
}

// viaAdmin runs f on the administrative interface, and on the ordinary one
// when nothing listens there: a pod rendered by an operator older than the
// sidecar opens no administrative interface.
func (s *Sidecar) viaAdmin(f func(*mysql.Client) error) error {
	err := f(s.admin)
	var op *net.OpError
	if err != nil && s.cfg.MySQLAdminAddr != "" && errors.As(err, &op) && op.Op == "dial" && errors.Is(err, syscall.ECONNREFUSED) {
		return f(s.db)
	}
	return err
}

func (s *Sidecar) waitFence(ctx context.Context, d time.Duration, attempt <-chan error, pr *fencing.Progress, r *FenceReport) {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case err := <-attempt:
		pr.Attempting, pr.LastAttempt = false, s.clock().Sub(r.Started)
		if err == nil {
			pr.Confirmed, r.ConfirmedBy = true, ConfirmedSuperReadOnly
			return
		}
		r.Err = err
	case <-t.C:
	case <-ctx.Done():
	}
}

// evict kills every client session but the sidecar's own account's (its
// fence statement among them) and the replication threads: a session idle
// in an open transaction cannot be told from an idle pooled connection, and
// every write queued behind the fence must end without committing.
func (s *Sidecar) evict(ctx context.Context, timeout time.Duration, r *FenceReport) int {
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var killed []mysql.Session
	err := s.viaAdmin(func(c *mysql.Client) error {
		var err error
		killed, err = c.EvictClientSessions(ectx, s.cfg.MySQL.User)
		return err
	})
	if err != nil {
		r.Err = err
	}
	if len(killed) > 0 {
		s.log.Warn("self-fence evicted client sessions", "sessions", len(killed))
	}
	return len(killed)
}

// stopMySQLD sends SIGKILL to the process the pid file names. Without a
// readable pid file there is nothing to stop; the sequence goes on with
// attempts and evictions until its budget ends.
func (s *Sidecar) stopMySQLD(pr *fencing.Progress, r *FenceReport) {
	pid, err := s.proc.pid()
	if err == nil {
		err = s.proc.stop(pid)
	}
	if err != nil {
		r.Err, pr.CanStop = err, false
		s.log.Error("self-fence cannot stop mysqld", "err", err)
		return
	}
	pr.Stopped, r.Stopped, r.PID = true, true, pid
	s.log.Warn("self-fence stopped mysqld", "pid", pid, "after", pr.Elapsed.String())
}

// checkProcess confirms the fence when mysqld's process is gone.
func (s *Sidecar) checkProcess(pr *fencing.Progress, r *FenceReport) {
	pid := r.PID
	if !pr.Stopped {
		var err error
		if pid, err = s.proc.pid(); err != nil {
			return
		}
	}
	done, err := gone(pid)
	if err != nil {
		r.Err = fmt.Errorf("check mysqld process %d: %w", pid, err)
		return
	}
	if done {
		pr.Confirmed, r.ConfirmedBy, r.PID = true, ConfirmedProcessGone, pid
	}
}

// openAdmin opens the connection the fence uses: the administrative
// interface when configured, else the ordinary one.
func openAdmin(cfg Config) (*mysql.Client, error) {
	o := cfg.MySQL
	if cfg.MySQLAdminAddr != "" {
		o.Addr = cfg.MySQLAdminAddr
	}
	return mysql.Open(o)
}
