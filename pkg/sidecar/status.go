package sidecar

import (
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/protocol"
)

// Role classifies an observation. A writable server with a running
// replication thread is Inconsistent: no healthy site both takes client
// writes and applies another site's.
func Role(o mysql.Observation, repl *mysql.ReplicaStatus) string {
	running := repl != nil && (repl.IORunning() || repl.SQLRunning() || repl.ReplicaIORunning == "Connecting")
	switch {
	case o.Writable() && running:
		return protocol.RoleInconsistent
	case o.Writable():
		return protocol.RoleSource
	case repl != nil:
		return protocol.RoleReplica
	default:
		return protocol.RoleReadOnly
	}
}

// ReplicationState maps SHOW REPLICA STATUS onto the CRD's replication
// values.
func ReplicationState(repl *mysql.ReplicaStatus) string {
	switch {
	case repl == nil:
		return protocol.ReplicationNotReplicating
	case repl.IORunning() && repl.SQLRunning():
		return protocol.ReplicationRunning
	case repl.LastIOErrno != 0 && !repl.IORunning() || repl.LastSQLErrno != 0 && !repl.SQLRunning():
		return protocol.ReplicationError
	case repl.ReplicaIORunning == "Connecting":
		return protocol.ReplicationConnecting
	default:
		return protocol.ReplicationStopped
	}
}

func replicationStatus(repl *mysql.ReplicaStatus) *protocol.ReplicationStatus {
	r := &protocol.ReplicationStatus{State: ReplicationState(repl)}
	if repl == nil {
		return r
	}
	r.SourceHost, r.SourcePort = repl.SourceHost, repl.SourcePort
	r.IORunning, r.SQLRunning = repl.ReplicaIORunning, repl.ReplicaSQLRunning
	r.SecondsBehindSource = repl.SecondsBehindSource
	r.RetrievedGTIDSet = repl.RetrievedGTIDSet.OneLine()
	r.LastIOErrno, r.LastIOError = repl.LastIOErrno, repl.LastIOError
	r.LastSQLErrno, r.LastSQLError = repl.LastSQLErrno, repl.LastSQLError
	return r
}

// Readiness is the /health rule: mysqld answered recently, its role is
// consistent, and it is not writable while the fencing rule says this site
// must not be (a fence that has not taken effect).
func Readiness(obsOK bool, obsErr string, role string, unconfirmed bool) protocol.Health {
	switch {
	case !obsOK:
		return protocol.Health{Ready: false, Role: protocol.RoleUnknown, Reason: "local mysqld unreachable: " + obsErr}
	case role == protocol.RoleInconsistent:
		return protocol.Health{Ready: false, Role: role, Reason: "mysqld is writable while replicating"}
	case role == protocol.RoleSource && unconfirmed:
		return protocol.Health{Ready: false, Role: role, Reason: "mysqld is writable but this site is not confirmed active; fencing"}
	default:
		return protocol.Health{Ready: true, Role: role}
	}
}
