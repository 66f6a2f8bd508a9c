package topologymanager

import (
	"testing"

	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/observe"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// TestSourceReadErrorReachesTheDecision: MySQL's two refusals under 13114
// arrive in the decision as what they are; any other fatal read error is
// never "purged".
func TestSourceReadErrorReachesTheDecision(t *testing.T) {
	for _, c := range []struct {
		errno int
		msg   string
		want  topology.SourceReadError
	}{
		{0, "", topology.ReadErrorNone},
		{2003, "Error connecting to source", topology.ReadErrorNone},
		{13114, "Got fatal error 1236 from source when reading data from binary log: 'Cannot replicate because the source purged required binary logs. Replicate the missing transactions from elsewhere'", topology.ReadErrorPurged},
		{13114, "Got fatal error 1236 from source when reading data from binary log: 'Replica has more GTIDs than the source has, using the source's SERVER_UUID. This may indicate'", topology.ReadErrorReplicaHasMore},
		{13114, "Got fatal error 1236 from source when reading data from binary log: 'Binary log is not open'", topology.ReadErrorOther},
	} {
		r := mysql.ReplicaStatus{LastIOErrno: c.errno, LastIOError: c.msg}
		o := toObserved(&observe.Sample[Sample]{Value: Sample{Replica: &r}})
		if got := o.Replica.ReadError; got != c.want {
			t.Errorf("%d %q: ReadError %q, want %q", c.errno, c.msg, got, c.want)
		}
	}
}
