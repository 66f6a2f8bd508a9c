// Package fencing is the sidecar's self-fencing rule as a pure function: given
// what the operator and the peer sidecars last said and whether the local
// mysqld is writable, decide whether to set super_read_only=ON now.
//
// The rule (docs/sidecar.md explains it and its timing bound):
//
//   - An operator answer younger than the lease timeout decides alone: it
//     either confirms this site as active (never fence) or it does not
//     (another site is active, no site is, or a transition is announced:
//     fence).
//   - Without such an answer, a reachable peer may confirm this site, but
//     only with what the operator told that peer within the peer's own
//     lease. A peer that reports a fresh operator answer naming another site
//     or a transition denies; a denial wins over a confirmation of the same
//     or an older topology generation. No confirmation at all: fence.
//   - Nothing here ever unfences: only the operator makes a site writable.
//
// Every confirmation carries the time it stops counting, computed from when
// the request that obtained it was sent, so a confirmation can never outlive
// the operator's last confirming answer by more than one lease timeout.
package fencing

import "time"

// Writability is what the sidecar last observed of its local mysqld.
type Writability int

const (
	// LocalUnknown: the observation failed or is missing. The rule treats
	// it like writable: the fence statement is harmless on a read-only
	// server, and skipping it could leave a writer.
	LocalUnknown Writability = iota
	// LocalWritable: read_only=OFF and super_read_only=OFF.
	LocalWritable
	// LocalReadOnly: read_only or super_read_only is ON.
	LocalReadOnly
)

func (w Writability) String() string {
	switch w {
	case LocalWritable:
		return "Writable"
	case LocalReadOnly:
		return "ReadOnly"
	default:
		return "Unknown"
	}
}

// View is one statement about the group's active site: an operator answer or
// a peer's report of its own operator answer.
type View struct {
	// ActiveSite named by the operator; empty when it named none.
	ActiveSite string
	// TopologyGeneration of the answer.
	TopologyGeneration int64
	// Transition is true while the operator announces an active-site change.
	Transition bool
	// PromotedTarget is the site such a change is promoting (its step is
	// Promoting or later): the operator vouches for it until it publishes
	// it. Set only from the operator's own polled answer, never from a
	// pushed announcement, and never counted in a peer's report.
	PromotedTarget string
	// ValidUntil is when the statement stops counting, on the sidecar's
	// clock: the request's send time plus the lease timeout (operator), or
	// plus the peer's reported remaining validity (peer).
	ValidUntil time.Time
}

// fresh reports whether the view still counts at now.
func (v View) fresh(now time.Time) bool { return now.Before(v.ValidUntil) }

// confirms reports whether the view names site as active without a
// transition.
func (v View) confirms(site string) bool {
	return site != "" && v.ActiveSite == site && !v.Transition
}

// operatorConfirms is confirms for the operator's own answer, which also
// vouches for the target of a promotion it is finishing.
func (v View) operatorConfirms(site string) bool {
	return v.confirms(site) || (site != "" && v.PromotedTarget == site)
}

// PeerView is a reachable peer's latest report. A peer whose own operator
// answer is older than its lease reports Confirmed=false and is neutral.
type PeerView struct {
	Peer      string
	Confirmed bool
	View
}

// Input is everything the rule looks at.
type Input struct {
	Now time.Time
	// Site is this sidecar's site.
	Site  string
	Local Writability
	// Operator is the latest operator answer (polled or pushed); nil when
	// the operator has never answered.
	Operator *View
	// Peers are the latest reports of the peers that answered.
	Peers []PeerView
}

// Reasons a Decision gives. They appear in logs and in the sidecar's /status.
const (
	ReasonOperatorConfirms        = "OperatorConfirms"
	ReasonOperatorNamesOtherSite  = "OperatorNamesOtherSite"
	ReasonOperatorNamesNoSite     = "OperatorNamesNoSite"
	ReasonOperatorAnnouncedChange = "OperatorAnnouncedTransition"
	ReasonPeerConfirms            = "PeerConfirms"
	ReasonPeerDenies              = "PeerDenies"
	ReasonLeaseExpired            = "LeaseExpired"
)

// Decision is the rule's verdict.
type Decision struct {
	// Unconfirmed: this site must not be writable now.
	Unconfirmed bool
	// Fence: set super_read_only=ON now (Unconfirmed and mysqld is not
	// known to be read-only).
	Fence bool
	// Reason is one of the Reason* constants.
	Reason string
	// ConfirmedBy is "operator" or the confirming peer's site.
	ConfirmedBy string
	// ConfirmedUntil is when the confirmation that keeps this site
	// writable stops counting; zero when Unconfirmed. The loop decides
	// again no later than this.
	ConfirmedUntil time.Time
}

// Decide applies the rule.
func Decide(in Input) Decision {
	d := decideConfirmation(in)
	d.Fence = d.Unconfirmed && in.Local != LocalReadOnly
	return d
}

func decideConfirmation(in Input) Decision {
	if op := in.Operator; op != nil && op.fresh(in.Now) {
		if op.operatorConfirms(in.Site) {
			return Decision{Reason: ReasonOperatorConfirms, ConfirmedBy: "operator", ConfirmedUntil: op.ValidUntil}
		}
		switch {
		case op.Transition:
			return Decision{Unconfirmed: true, Reason: ReasonOperatorAnnouncedChange}
		case op.ActiveSite == "":
			return Decision{Unconfirmed: true, Reason: ReasonOperatorNamesNoSite}
		default:
			return Decision{Unconfirmed: true, Reason: ReasonOperatorNamesOtherSite}
		}
	}
	// The operator's own last word, even stale, sets the floor: a peer
	// repeating an older generation knows less than this sidecar does.
	var floor int64
	if in.Operator != nil {
		floor = in.Operator.TopologyGeneration
	}
	var best *PeerView
	var denial *PeerView
	for i := range in.Peers {
		p := &in.Peers[i]
		if !p.Confirmed || !p.fresh(in.Now) {
			continue // neutral: the peer has no current word from the operator
		}
		if p.confirms(in.Site) {
			if p.TopologyGeneration >= floor && (best == nil || p.ValidUntil.After(best.ValidUntil)) {
				best = p
			}
			continue
		}
		if denial == nil || p.TopologyGeneration > denial.TopologyGeneration {
			denial = p
		}
	}
	if denial != nil && (best == nil || denial.TopologyGeneration >= best.TopologyGeneration) {
		return Decision{Unconfirmed: true, Reason: ReasonPeerDenies}
	}
	if best != nil {
		return Decision{Reason: ReasonPeerConfirms, ConfirmedBy: best.Peer, ConfirmedUntil: best.ValidUntil}
	}
	return Decision{Unconfirmed: true, Reason: ReasonLeaseExpired}
}
