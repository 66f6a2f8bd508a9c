package topology

import (
	"fmt"
	"time"
)

// How far behind a failover candidate is, judged from evidence its own
// server holds (docs/safety.md, rule 3): MySQL 9.7's
// performance_schema.replication_connection_status (the receiver's last
// heartbeat and last queued transaction) and
// replication_applier_status_by_worker (the applier's last applied
// transaction). A new leader reads the same evidence as the one it
// replaces: nothing of it lives in the operator's memory, and nothing of it
// needs a status write on every poll.

// StaleEvidencePolls bounds, in pollIntervals (HeartbeatPeriod when that
// is longer), how long before the source was last known alive a
// candidate's channel may have last heard from it. A connected receiver
// hears from its source at least once per HeartbeatPeriod while there is
// nothing to send, and with every transaction otherwise; the operator's
// own last contact with the source lies at most one pollInterval and one
// poll deadline before the source stopped. Three cover both, one missed
// heartbeat and the rounding of status.sites[].lastSeenTime to the second;
// a channel silent for longer was not receiving while the source still
// committed.
const StaleEvidencePolls = 3

// HeartbeatPeriod is the SOURCE_HEARTBEAT_PERIOD the operator configures on
// every channel (pkg/mysql, StmtChangeSource).
const HeartbeatPeriod = time.Second

// CatchUpPolls is the slack, in pollIntervals, the catch-up bound adds to
// maxLagSeconds (CatchUpTimeout).
const CatchUpPolls = 5

// LagEvidence is what a candidate's server says of its channel, with every
// time on the operator's clock (the I/O layer moves the candidate's
// timestamps by the offset between its NOW() and the operator's clock,
// read in the same statement). Original commit timestamps are the
// originating source's clock and are only compared with each other.
type LagEvidence struct {
	// ObservedAt is when the operator read it.
	ObservedAt time.Time
	// LastHeartbeat is when the receiver last got a heartbeat from its
	// source; zero: none since the channel (or the server) started.
	LastHeartbeat time.Time
	// LastQueued is the last transaction the receiver queued in the relay
	// log ("" none since start), LastQueuedAt when it finished queueing it,
	// LastQueuedCommit its original commit timestamp.
	LastQueued       string
	LastQueuedAt     time.Time
	LastQueuedCommit time.Time
	// LastApplied is the applier's last applied transaction ("" none since
	// start) and LastAppliedCommit its original commit timestamp.
	LastApplied       string
	LastAppliedCommit time.Time
}

// contact is when the channel last heard from its source.
func (e *LagEvidence) contact() time.Time {
	if e.LastQueuedAt.After(e.LastHeartbeat) {
		return e.LastQueuedAt
	}
	return e.LastHeartbeat
}

// judgeLag refuses a candidate whose lag is unknown (no evidence, nothing
// heard from the source since the channel started, or a backlog whose
// applier has applied nothing since start), stale (the evidence was read
// more than StaleAfter before Now, or its channel last heard from the
// source more than StaleAfter before SourceAlive: it was not receiving
// while the source still committed), or far behind: the
// applier's backlog (the last queued transaction's original commit time
// less the last applied one's, on the source's one clock) plus the
// channel's silence before SourceAlive exceeds MaxLagSeconds. It returns
// the refusal cause and why, or "" when the candidate may be promoted.
func judgeLag(c FailoverCandidate, g FailoverGuards) (string, string) {
	e := c.Evidence
	if e == nil || e.contact().IsZero() {
		return RefusalCandidateLagUnknown, "its lag is unknown: its server reports no heartbeat and no transaction received since its replication channel started (restarted, never connected, or the evidence could not be read)"
	}
	if !g.Now.IsZero() && g.Now.Sub(e.ObservedAt) > g.StaleAfter {
		return RefusalCandidateLagStale, fmt.Sprintf("what it knows of the old primary is stale: its replication evidence was last read at %s, more than %s (%d pollIntervals) ago",
			e.ObservedAt.UTC().Format(time.RFC3339), g.StaleAfter, StaleEvidencePolls)
	}
	var silent time.Duration
	if !g.SourceAlive.IsZero() && g.SourceAlive.After(e.contact()) {
		silent = g.SourceAlive.Sub(e.contact())
	}
	if silent > g.StaleAfter {
		return RefusalCandidateLagStale, fmt.Sprintf("what it knows of the old primary is stale: its channel last heard from it at %s, more than %s (%d pollIntervals) before the old primary was last known alive at %s",
			e.contact().UTC().Format(time.RFC3339), g.StaleAfter, StaleEvidencePolls, g.SourceAlive.UTC().Format(time.RFC3339))
	}
	var backlog time.Duration
	if !c.Retrieved.IsSubsetOf(c.Executed) && (e.LastApplied == "" || e.LastApplied != e.LastQueued) {
		if e.LastQueuedCommit.IsZero() || e.LastAppliedCommit.IsZero() {
			return RefusalCandidateLagUnknown, "its lag is unknown: it holds received transactions it has not applied, and its server reports no queued or applied transaction since it started"
		}
		backlog = max(0, e.LastQueuedCommit.Sub(e.LastAppliedCommit))
	}
	if lag := backlog + silent; lag > time.Duration(g.MaxLagSeconds)*time.Second {
		// No figures that change from poll to poll: the message is in the
		// Degraded condition, and a changing one rewrites the status.
		return RefusalCandidateLagging, fmt.Sprintf("it is far behind: its applier's backlog (the original commit time of the last transaction it received less that of the last one it applied) and its channel's silence before the old primary was last known alive add up to more than maxLagSeconds (%ds)",
			g.MaxLagSeconds)
	}
	return "", ""
}
