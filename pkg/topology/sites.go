package topology

import (
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// observeSites starts each site's status entry from the stored one and
// overwrites what the latest poll observed.
func (d *decider) observeSites() {
	for _, spec := range d.in.Sites {
		st := v1alpha1.SiteStatus{}
		if p := d.prevSite(spec.Name); p != nil {
			st = *p.DeepCopy()
		}
		st.Name, st.Role = spec.Name, spec.Role
		in := d.in.Observed[spec.Name]
		switch in.Reach {
		case observe.Unreachable:
			st.State = v1alpha1.SiteUnreachable
		case observe.Reachable:
			if in.Last != nil && in.Last.Writable {
				st.State = v1alpha1.SiteWritable
			} else if in.Last != nil {
				st.State = v1alpha1.SiteReadOnly
			}
		}
		if st.State == "" {
			// Not observed yet in this process and no stored state. A stored
			// state is kept until the thresholds settle, so a restart or
			// one failed poll does not flap the group.
			st.State = v1alpha1.SiteUnknown
		}
		st.Message = ""
		if in.Fresh && in.Last != nil {
			fill(&st, in.Last)
		} else if in.PollError != "" {
			st.Message = "latest poll failed: " + in.PollError
			if in.SidecarHealthy {
				st.Message += "; its sidecar answers and reports mysqld healthy: a network problem between the operator and the site"
			}
		}
		d.sites[spec.Name] = &st
	}
}

// fill copies a successful poll into a status entry.
func fill(st *v1alpha1.SiteStatus, o *Observed) {
	at := metav1.NewTime(o.At)
	st.LastSeenTime = &at
	st.ServerUUID = o.ServerUUID
	st.GTIDExecuted = o.Executed.OneLine()
	st.Replication = ReplicationState(o.Replica)
	st.SourceHost, st.SecondsBehindSource = "", nil
	if r := o.Replica; r != nil {
		st.SourceHost = r.SourceHost
		if r.SecondsBehindSource != nil {
			v := *r.SecondsBehindSource
			st.SecondsBehindSource = &v
		}
		switch {
		case r.LastSQLErrno != 0:
			st.Message = "replication applier error: " + r.LastSQLError
		case r.LastIOErrno != 0:
			st.Message = "replication receiver error: " + r.LastIOError
		}
	}
}

// finishSites writes the entries into the status in spec order. The active
// site has no convergence state. Fast-changing fields keep their stored
// values when nothing else changed and the stored ones are recent enough,
// so an idle poll does not rewrite the object.
func (d *decider) finishSites() {
	active := d.out.Status.ActiveSite
	out := make([]v1alpha1.SiteStatus, 0, len(d.in.Sites))
	for _, spec := range d.in.Sites {
		st := d.sites[spec.Name]
		if spec.Name == active {
			st.SourceConvergenceState, st.SourceConvergenceReason = "", ""
			if st.DivergenceDetectedBy == v1alpha1.DivergenceByReplicaAudit {
				st.DivergentGTID, st.DivergentTransactionCount, st.DivergenceDetectedBy, st.DivergenceComparedTo = "", 0, "", ""
			}
		}
		if p := d.prevSite(spec.Name); p != nil {
			*st = d.keepVolatile(*st, *p)
		}
		out = append(out, *st)
	}
	d.out.Status.Sites = out
}

func (d *decider) keepVolatile(cur, prev v1alpha1.SiteStatus) v1alpha1.SiteStatus {
	if prev.LastSeenTime == nil || cur.LastSeenTime == nil || d.in.Now.Sub(prev.LastSeenTime.Time) >= d.in.StatusRefresh {
		return cur
	}
	cand := cur
	cand.LastSeenTime, cand.GTIDExecuted, cand.SecondsBehindSource = prev.LastSeenTime, prev.GTIDExecuted, prev.SecondsBehindSource
	if equality.Semantic.DeepEqual(cand, prev) {
		return cand
	}
	return cur
}
