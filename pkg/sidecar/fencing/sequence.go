package fencing

import "time"

// The fencing sequence: what the sidecar does, and when, once the rule says
// fence (docs/sidecar.md, "The fencing sequence"). All offsets count from
// the decision. The sequence must end confirmed within its budget, and no
// step may depend on mysqld's cooperation past StopAt:
//
//  1. At 0, SET GLOBAL super_read_only = ON over the administrative
//     interface, with lock_wait_timeout covering the whole budget, so the
//     statement keeps holding new writes behind it (MySQL's global read
//     lock) until it takes effect or the process is stopped, rather than
//     giving up and letting them commit. A failed attempt is retried every
//     RetryEvery.
//  2. From EvictAfter, every EvictEvery while the fence has not taken
//     effect: kill the client sessions, which hold it off with open
//     transactions (an idle one looks like any pooled connection, so all
//     client sessions go) and queue writes behind it.
//  3. At StopAt, if still unconfirmed: SIGKILL mysqld's process (a killed
//     large transaction holds the lock through its whole rollback; a
//     frozen mysqld answers nothing). A stopped mysqld takes no writes, and
//     it restarts read-only (the rendered my.cnf).
//  4. Confirmed when mysqld reports super_read_only=ON after the
//     statement, or when the process named by the pid file is gone.
type Plan struct {
	Budget      time.Duration
	EvictAfter  time.Duration
	EvictEvery  time.Duration
	StopAt      time.Duration
	RetryEvery  time.Duration
	PollEvery   time.Duration // how often a stopped process is checked
	StepTimeout time.Duration // bound of one eviction (list and kills) or check
}

// NewPlan spreads the sequence over budget (protocol.SelfFenceStatementTimeout
// in production, 3 s): evictions from a fifth of it (600 ms), every tenth
// (300 ms), the process stop at three fifths (1.8 s), leaving two fifths
// (1.2 s) for the kernel to end the process and for the check that it did.
// A request timeout shorter than an eviction interval bounds each step.
func NewPlan(budget, requestTimeout time.Duration) Plan {
	p := Plan{
		Budget: budget, EvictAfter: budget / 5, EvictEvery: budget / 10, StopAt: budget * 3 / 5,
		RetryEvery: budget / 20, PollEvery: 10 * time.Millisecond, StepTimeout: budget / 10,
	}
	if requestTimeout > 0 && requestTimeout < p.StepTimeout {
		p.StepTimeout = requestTimeout
	}
	return p
}

// Action is the sequence's next step.
type Action int

const (
	// ActWait: nothing to start; wait for a running statement or the
	// returned offset, whichever comes first.
	ActWait Action = iota
	// ActAttempt: start a fence statement.
	ActAttempt
	// ActEvict: kill the client sessions.
	ActEvict
	// ActStop: stop mysqld's process.
	ActStop
	// ActDone: the fence is confirmed.
	ActDone
	// ActGiveUp: the budget is spent without a confirmation; the next round
	// starts over.
	ActGiveUp
)

func (a Action) String() string {
	return [...]string{"wait", "attempt", "evict", "stop", "done", "give-up"}[a]
}

// Progress is what the sequence has done so far; offsets are from the
// decision, negative for "never".
type Progress struct {
	Elapsed     time.Duration
	Confirmed   bool
	Attempting  bool          // a fence statement is running
	LastAttempt time.Duration // when the last attempt ended
	LastEvict   time.Duration // when the last eviction started
	Stopped     bool          // the process stop was sent
	CanStop     bool          // a pid file is configured
}

// Fresh is the progress at the decision.
func Fresh(canStop bool) Progress {
	return Progress{LastAttempt: -1, LastEvict: -1, CanStop: canStop}
}

// Next returns the next action and, for ActWait, the offset to wake at.
func (p Plan) Next(pr Progress) (Action, time.Duration) {
	switch {
	case pr.Confirmed:
		return ActDone, 0
	case pr.Elapsed >= p.Budget:
		return ActGiveUp, 0
	case pr.CanStop && !pr.Stopped && pr.Elapsed >= p.StopAt:
		return ActStop, 0
	case pr.Stopped:
		// Only the process's end confirms now; it takes no writes meanwhile.
		return ActWait, min(pr.Elapsed+p.PollEvery, p.Budget)
	}
	retryAt := pr.LastAttempt + p.RetryEvery
	if pr.LastAttempt < 0 {
		retryAt = 0
	}
	if !pr.Attempting && pr.Elapsed >= retryAt {
		return ActAttempt, 0
	}
	evictAt := p.EvictAfter
	if pr.LastEvict >= 0 {
		evictAt = max(evictAt, pr.LastEvict+p.EvictEvery)
	}
	if pr.Elapsed >= evictAt {
		return ActEvict, 0
	}
	wake := min(evictAt, p.Budget)
	if pr.CanStop {
		wake = min(wake, p.StopAt)
	}
	if !pr.Attempting {
		wake = min(wake, retryAt)
	}
	return ActWait, wake
}
