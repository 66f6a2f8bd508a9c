package protocol

import "time"

// Timing of the sidecar's self-fencing, shared so the operator computes the
// same deadline the sidecar keeps (docs/sidecar.md derives it).

// The sidecar's timers when spec.sidecar leaves them out (the CRD's
// defaults, and the sidecar binary's when its environment has none). A copy
// of v1alpha1.DefaultLeaseTimeout and DefaultPeerCheckInterval, so the
// sidecar does not link the API types; a v1alpha1 test keeps them equal.
const (
	DefaultLeaseTimeout      = 15 * time.Second
	DefaultPeerCheckInterval = 2 * time.Second
)

// SelfFenceStatementTimeout is the budget of the sidecar's whole fencing
// sequence, from the rule's decision to a confirmed fence: SET GLOBAL
// super_read_only = ON over the administrative interface, killing the client
// sessions that hold it off, and stopping mysqld's process if it still has
// not taken effect (docs/sidecar.md, "The fencing sequence"; the step
// offsets are fencing.NewPlan's).
//
// Nothing in mysqld can hold the sequence past its process stop, so the
// budget is what the steps need, not a wait for mysqld's goodwill: an
// unheld fence takes one statement (milliseconds), an idle open
// transaction one eviction pass, anything else the SIGKILL at three
// fifths of the budget (1.8 s) plus the kernel ending the process, for
// which two fifths (1.2 s) are left. It was 5 s while the sequence's worst
// case measured 3.0 s, its own stop point (docs/sidecar.md, "Measured").
const SelfFenceStatementTimeout = 3 * time.Second

// MySQLAdminPort is the port of mysqld's administrative connection interface
// (admin_port, MySQL's default), on admin_address 127.0.0.1 in the pod: the
// rendered my.cnf opens it and the sidecar fences through it, so neither
// max_connections nor the client load can keep the fence out.
const MySQLAdminPort = 33062

// SelfFenceClockMargin covers clock-rate differences between the operator's
// and the sidecars' hosts and scheduling delays; leases are measured with
// monotonic clocks, whose rates differ by far less than this over a lease.
const SelfFenceClockMargin = time.Second

// SidecarRequestTimeout is how long a sidecar waits for the operator or a
// peer in one round: half the peer check interval, at least 250ms and at
// most 5s.
func SidecarRequestTimeout(peerCheckInterval time.Duration) time.Duration {
	d := peerCheckInterval / 2
	if d < 250*time.Millisecond {
		d = 250 * time.Millisecond
	}
	if d > 5*time.Second {
		d = 5 * time.Second
	}
	return d
}

// SelfFenceBound is the longest time after the operator stops confirming a
// site (its /active-site answers and pushes stop naming it) until that site's
// sidecar has fenced it: mysqld answered super_read_only=ON, or its process
// was stopped (the fencing sequence ends confirmed within
// SelfFenceStatementTimeout of the decision, and the decision comes within
// leaseTimeout plus the request timeout). It holds if the sidecar runs and
// the pod gives the fence what it needs (docs/sidecar.md). The operator waits this long before promoting another site while
// the old one is unreachable (status.transition.sourceFenceDeadline).
func SelfFenceBound(leaseTimeout, peerCheckInterval time.Duration) time.Duration {
	return leaseTimeout + SidecarRequestTimeout(peerCheckInterval) + SelfFenceStatementTimeout + SelfFenceClockMargin
}
