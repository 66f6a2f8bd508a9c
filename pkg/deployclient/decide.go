package deployclient

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// API constants the client must agree with (docs/deploy-api.md).
const (
	// MaxClockSkew is the operators' clock-skew grace
	// (leasestore.DefaultMaxClockSkew, docs/deploy-api.md#durability-and-fencing):
	// an operator whose clock runs ahead ends holds early by up to this
	// much, so the command must be dead that long before the deadline.
	MaxClockSkew = 5 * time.Second
	// MinTTL and MaxTTL are the API's TTL clamp.
	MinTTL = 5 * time.Second
	MaxTTL = 120 * time.Second
)

// Cause is why a run ended; each has its own process exit code.
type Cause string

// The causes, in the order of their exit codes (docs/deploy-api.md#the-deploy-lease-client-bloodraven-deploy).
const (
	CauseSuccess            Cause = "Success"            // 0: the command exited 0
	CauseCommandFailed      Cause = "CommandFailed"      // 1: it exited non-zero, died, or did not start
	CauseUsage              Cause = "Usage"              // 2: bad flags or configuration
	CauseGrantRefused       Cause = "GrantRefused"       // 3: no lease was granted; nothing ran
	CauseTopologyChanged    Cause = "TopologyChanged"    // 4: 409 revoked TopologyChanged, or another generation
	CauseOperatorRevoked    Cause = "OperatorRevoked"    // 5: 409 revoked OperatorRevoked
	CauseLeaseLost          Cause = "LeaseLost"          // 6: 404, 403 lease_token_mismatch, other 409
	CauseDeadlineReached    Cause = "DeadlineReached"    // 7: no confirmed renewal before the deadline (unreachable, 423, 5xx)
	CauseOutcomeNotRecorded Cause = "OutcomeNotRecorded" // 8: the outcome could not be recorded; the mutex was kept
	CauseInterrupted        Cause = "Interrupted"        // 9: the runner itself was asked to stop
)

var exitCodes = map[Cause]int{
	CauseSuccess: 0, CauseCommandFailed: 1, CauseUsage: 2, CauseGrantRefused: 3,
	CauseTopologyChanged: 4, CauseOperatorRevoked: 5, CauseLeaseLost: 6,
	CauseDeadlineReached: 7, CauseOutcomeNotRecorded: 8, CauseInterrupted: 9,
}

// ExitCode is the process exit code of c.
func (c Cause) ExitCode() int {
	if code, ok := exitCodes[c]; ok {
		return code
	}
	return 1
}

// LostAuthority reports whether c ends the run because the leases' authority
// ended (the command was or must be stopped).
func (c Cause) LostAuthority() bool {
	switch c {
	case CauseTopologyChanged, CauseOperatorRevoked, CauseLeaseLost, CauseDeadlineReached:
		return true
	}
	return false
}

// Effect is what one renewal answer does to the confirmed deadline.
type Effect int

const (
	// Extend: a 200 at the grant's generation; the deadline becomes the
	// request's send time plus the applied TTL.
	Extend Effect = iota
	// Keep: 423, 5xx, 401, 403 forbidden, transport errors: retry, but the
	// deadline stays where it was (client rule 4).
	Keep
	// Lost: authority ended (client rule 3); stop the command now.
	Lost
)

func (e Effect) String() string {
	return [...]string{"extend", "keep", "lost"}[e]
}

// Classify maps a renewal's answer (err nil: a 200 carrying generation got)
// to its effect and, for Lost, the cause.
func Classify(err error, grantGeneration, got int64) (Effect, Cause) {
	if err == nil {
		if got != grantGeneration {
			return Lost, CauseTopologyChanged
		}
		return Extend, ""
	}
	ae, ok := AsAPIError(err)
	if !ok {
		return Keep, ""
	}
	switch {
	case ae.Status == http.StatusConflict && ae.Code == "revoked" && ae.Reason == "OperatorRevoked":
		return Lost, CauseOperatorRevoked
	case ae.Status == http.StatusConflict && ae.Code == "revoked":
		// TopologyChanged, or a reason this client does not know yet:
		// revocations follow generation changes unless an administrator asked.
		return Lost, CauseTopologyChanged
	case ae.Status == http.StatusConflict, ae.Status == http.StatusNotFound:
		return Lost, CauseLeaseLost
	case ae.Status == http.StatusForbidden && ae.Code == "lease_token_mismatch":
		return Lost, CauseLeaseLost
	}
	return Keep, ""
}

// Policy is the timing of a run. Every time is on the client's monotonic
// clock; no operator timestamp is ever compared with it.
type Policy struct {
	// TTL is the lease TTL the operator applied.
	TTL time.Duration
	// KillMargin: the command is dead (SIGKILL sent) no later than
	// deadline - KillMargin. At least MaxClockSkew.
	KillMargin time.Duration
	// TermGrace is how long SIGTERM precedes SIGKILL.
	TermGrace time.Duration
	// RequestTimeout bounds each API request.
	RequestTimeout time.Duration
}

// RenewEvery is ttl/3 (client rule 2).
func (p Policy) RenewEvery() time.Duration { return p.TTL / 3 }

// Validate refuses a policy that could not keep the command inside its
// authority: the margin must cover the skew grace, and a renewal period plus
// one request must fit between a confirmation and the SIGTERM it would
// otherwise lead to, so a healthy API always answers in time.
func (p Policy) Validate() error {
	switch {
	case p.TTL < MinTTL || p.TTL > MaxTTL:
		return fmt.Errorf("ttl %s is outside the API's [%s, %s]", p.TTL, MinTTL, MaxTTL)
	case p.KillMargin < MaxClockSkew:
		return fmt.Errorf("kill margin %s is below the API's clock-skew grace %s", p.KillMargin, MaxClockSkew)
	case p.TermGrace <= 0 || p.RequestTimeout <= 0:
		return errors.New("term grace and request timeout must be positive")
	case p.RequestTimeout > p.RenewEvery():
		return fmt.Errorf("request timeout %s exceeds the renewal period %s", p.RequestTimeout, p.RenewEvery())
	case p.TTL-p.KillMargin-p.TermGrace < p.RenewEvery()+p.RequestTimeout:
		return fmt.Errorf("ttl %s leaves less than one renewal period plus a request timeout (%s) before SIGTERM at deadline - kill margin %s - term grace %s",
			p.TTL, p.RenewEvery()+p.RequestTimeout, p.KillMargin, p.TermGrace)
	}
	return nil
}

// Deadline is the confirmed deadline of an answer to a request sent at sent:
// the operator set expiresAt = its receipt time + ttl, and receipt never
// precedes sending, so sent + ttl never outlasts the operator's lease.
func Deadline(sent time.Time, ttl time.Duration) time.Time { return sent.Add(ttl) }

// Plan is when the command is signalled.
type Plan struct {
	TermAt, KillAt time.Time
}

// StopPlan is the plan while the confirmed deadline is deadline. lostAt is
// zero while authority holds; otherwise SIGTERM is due at once and SIGKILL a
// TermGrace later, never after deadline - KillMargin.
func (p Policy) StopPlan(deadline, lostAt time.Time) Plan {
	killAt := deadline.Add(-p.KillMargin)
	if lostAt.IsZero() {
		return Plan{TermAt: killAt.Add(-p.TermGrace), KillAt: killAt}
	}
	if k := lostAt.Add(p.TermGrace); k.Before(killAt) {
		killAt = k
	}
	return Plan{TermAt: lostAt, KillAt: killAt}
}

// Action is what to do to the command now.
type Action int

const (
	None Action = iota
	Terminate
	Kill
)

func (a Action) String() string { return [...]string{"none", "terminate", "kill"}[a] }

// Decide is the whole stop rule as a pure function: given the last
// confirmed send time, the policy, the moment authority was found lost
// (zero if not), what was already sent, and now, it returns the action
// and the next time the decision can change.
func Decide(lastConfirmedSent time.Time, p Policy, lostAt time.Time, termSent, killSent bool, now time.Time) (Action, time.Time) {
	plan := p.StopPlan(Deadline(lastConfirmedSent, p.TTL), lostAt)
	switch {
	case killSent:
		return None, time.Time{}
	case !now.Before(plan.KillAt):
		return Kill, time.Time{}
	case !termSent && !now.Before(plan.TermAt):
		return Terminate, plan.KillAt
	case termSent:
		return None, plan.KillAt
	}
	return None, plan.TermAt
}
