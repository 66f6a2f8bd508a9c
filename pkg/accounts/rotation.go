package accounts

import "time"

// Rotation is where one account's password change stands, as the
// operator's applied-password store keeps it (a Secret the operator owns:
// the operator must know, also after its own restart, which password the
// server accepts, and a password never goes to status, logs or Events).
//
// A change runs, one at a time per account:
//
//	Steady   --Secret differs-->  Altering  (written before the ALTER)
//	Altering --ALTER ... RETAIN CURRENT PASSWORD applied--> Retained
//	Retained --every reachable site has it, every managed consumer moved--> Overlap
//	Overlap  --overlap elapsed: ALTER ... DISCARD OLD PASSWORD--> Steady
//
// While Retained and Overlap the server accepts both passwords, so a
// consumer that has not moved yet still authenticates. A Secret changed
// again before Steady waits: a second RETAIN would drop the password the
// slow consumers still use.
type Rotation struct {
	Phase Phase
	// Current is the password the server has as its primary password in
	// Steady and Altering, and keeps as the retained one in Retained and
	// Overlap.
	Current string
	// Next is the password being rotated to (empty in Steady).
	Next string
	// AuthBefore is a fingerprint of the account's
	// mysql.user.authentication_string on the active site read before the
	// ALTER (every ALTER ... IDENTIFIED BY writes a new salted hash): after
	// a restart in Altering, a different one says the ALTER was applied
	// (repeating it would retain Next and drop Current).
	AuthBefore string
	// Since is when Overlap began (every managed consumer had moved).
	Since time.Time
}

// Phase is a rotation's stage.
type Phase string

// The phases of a rotation (see Rotation).
const (
	PhaseSteady   Phase = ""
	PhaseAltering Phase = "Altering"
	PhaseRetained Phase = "Retained"
	PhaseOverlap  Phase = "Overlap"
)

// DefaultOverlap is how long both passwords work after every managed
// consumer moved (docs/credentials.md, "Rotation"): long enough for
// applications that re-read their Secret (a kubelet refreshes a mounted
// Secret within about a minute and a half of its change) and for
// connection pools to recycle.
const DefaultOverlap = 10 * time.Minute

// Use is the password a managed consumer connects with: the new one as
// soon as the server has it, else the only one.
func (r Rotation) Use() string {
	if r.Phase == PhaseRetained || r.Phase == PhaseOverlap {
		return r.Next
	}
	return r.Current
}

// Fallback is the other password the server still accepts, or "".
func (r Rotation) Fallback() string {
	if r.Phase == PhaseRetained || r.Phase == PhaseOverlap {
		return r.Current
	}
	return ""
}

// Step is the next action of a rotation.
type Step string

// The steps Plan returns.
const (
	// StepNone: nothing to do.
	StepNone Step = "None"
	// StepBegin: record Altering (with AuthBefore) in the store before
	// anything is sent.
	StepBegin Step = "Begin"
	// StepAlter: send AlterRetain on the active site, then record Retained.
	StepAlter Step = "Alter"
	// StepMarkRetained: the ALTER was applied before a restart; record
	// Retained without sending it again.
	StepMarkRetained Step = "MarkRetained"
	// StepAwaitReplicas: wait until every reachable site has the ALTER.
	StepAwaitReplicas Step = "AwaitReplicas"
	// StepMoveConsumers: move every managed consumer to Next; when all
	// have moved, record Overlap with Since.
	StepMoveConsumers Step = "MoveConsumers"
	// StepAwaitOverlap: both passwords stay until the overlap elapsed.
	StepAwaitOverlap Step = "AwaitOverlap"
	// StepDiscard: send Discard on the active site, then record Steady with
	// Current = Next.
	StepDiscard Step = "Discard"
)

// Observed is what the manager read for Plan.
type Observed struct {
	// Desired is the password in the role's Secret now.
	Desired string
	// AuthNow is the fingerprint of the account's authentication_string
	// on the active site now (read in Altering only).
	AuthNow string
	// Replicated: every reachable site has the active site's ALTER.
	Replicated bool
	// ConsumersMoved: every managed consumer uses Next.
	ConsumersMoved bool
	Now            time.Time
	Overlap        time.Duration
}

// Plan is the next step of r given o.
func Plan(r Rotation, o Observed) Step {
	switch r.Phase {
	case PhaseSteady:
		if o.Desired != "" && o.Desired != r.Current {
			return StepBegin
		}
		return StepNone
	case PhaseAltering:
		if o.AuthNow != r.AuthBefore {
			return StepMarkRetained
		}
		return StepAlter
	case PhaseRetained:
		if !o.Replicated {
			return StepAwaitReplicas
		}
		return StepMoveConsumers
	case PhaseOverlap:
		if o.Now.Sub(r.Since) < o.Overlap {
			return StepAwaitOverlap
		}
		return StepDiscard
	}
	return StepNone
}

// Begin is r once StepBegin recorded it.
func (r Rotation) Begin(desired, authBefore string) Rotation {
	return Rotation{Phase: PhaseAltering, Current: r.Current, Next: desired, AuthBefore: authBefore}
}

// Retained is r once the ALTER was applied.
func (r Rotation) Retained() Rotation {
	r.Phase, r.AuthBefore = PhaseRetained, ""
	return r
}

// Moved is r once every managed consumer uses Next, at now.
func (r Rotation) Moved(now time.Time) Rotation {
	r.Phase, r.Since = PhaseOverlap, now
	return r
}

// Discarded is r once the old password was discarded.
func (r Rotation) Discarded() Rotation { return Rotation{Current: r.Next} }

// AlterRetain changes user's password to next and keeps the current one
// working (MySQL's dual passwords: both authenticate until DISCARD).
func AlterRetain(user, next string) string {
	return "ALTER USER " + Name(user) + " IDENTIFIED BY " + Quote(next) + " RETAIN CURRENT PASSWORD"
}

// Discard drops user's retained password.
func Discard(user string) string { return "ALTER USER " + Name(user) + " DISCARD OLD PASSWORD" }
