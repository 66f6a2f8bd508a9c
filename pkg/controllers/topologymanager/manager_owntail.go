package topologymanager

import (
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// sourceReadError carries MySQL's word on a receiver's fatal read error
// into the decision: only "purged" may lead to an automatic clone, and
// "replica has more" never does (docs/safety.md).
func sourceReadError(r *mysql.ReplicaStatus) topology.SourceReadError {
	switch r.SourceReadError() {
	case mysql.SourceReadNone:
		return topology.ReadErrorNone
	case mysql.SourceReadPurged:
		return topology.ReadErrorPurged
	case mysql.SourceReadReplicaHasMore:
		return topology.ReadErrorReplicaHasMore
	}
	return topology.ReadErrorOther
}
