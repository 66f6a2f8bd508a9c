package mysql

import "strings"

// ErServerSourceFatalReadingBinlog is Last_IO_Errno when the receiver
// stopped on the source's ER_SOURCE_FATAL_ERROR_READING_BINLOG (1236):
// Last_IO_Error then carries the source's message ("Got fatal error 1236
// from source when reading data from binary log: '<message>'").
const ErServerSourceFatalReadingBinlog = 13114

// SourceReadError is what a receiver's fatal binary-log read error says the
// source refused. Both refusals below come as the same error number, and
// they call for opposite things: after "purged" the replica can only be
// provisioned again (a clone of the source); after "replica has more" the
// replica holds transactions of the source's own server UUID that the
// source lost, for example the tail of its binary log after a crash with
// sync_binlog != 1, and may hold the only copy of them (docs/safety.md).
type SourceReadError string

const (
	// SourceReadNone: no fatal read error (Last_IO_Errno is not 13114).
	SourceReadNone SourceReadError = ""
	// SourceReadPurged: the source purged binary logs holding transactions
	// the replica lacks (ER_SOURCE_HAS_PURGED_REQUIRED_GTIDS).
	SourceReadPurged SourceReadError = "SourcePurged"
	// SourceReadReplicaHasMore: the replica holds GTIDs of the source's
	// server UUID the source does not (ER_REPLICA_HAS_MORE_GTIDS_THAN_SOURCE).
	SourceReadReplicaHasMore SourceReadError = "ReplicaHasMore"
	// SourceReadOther: any other fatal read error (a corrupt or missing
	// file, a closed binary log): neither refusal above.
	SourceReadOther SourceReadError = "Other"
)

// The parts of MySQL 9.7's two messages that name the refusal (the whole
// texts are in the simulator's dump.go, errSourcePurgedGTIDs and
// errReplicaHasMoreGTIDs, as the manual gives them). The rest of each
// message varies (the GTID sets, the positions), so only these are matched.
const (
	purgedText      = "the source purged required binary logs"
	replicaMoreText = "replica has more gtids than the source has, using the source's server_uuid"
)

// ClassifySourceReadError reads a receiver's Last_IO_Errno and
// Last_IO_Error. Only error 13114 is classified; a message that names
// neither refusal is SourceReadOther, never "purged": a replica is cloned
// automatically only on MySQL's own word that the source purged what it
// needs.
func ClassifySourceReadError(errno int, message string) SourceReadError {
	if errno != ErServerSourceFatalReadingBinlog {
		return SourceReadNone
	}
	m := strings.ToLower(message)
	switch {
	case strings.Contains(m, replicaMoreText):
		return SourceReadReplicaHasMore
	case strings.Contains(m, purgedText):
		return SourceReadPurged
	}
	return SourceReadOther
}

// SourceReadError classifies the channel's receiver error.
func (r *ReplicaStatus) SourceReadError() SourceReadError {
	return ClassifySourceReadError(r.LastIOErrno, r.LastIOError)
}
