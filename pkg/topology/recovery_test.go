package topology

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/stability"
)

// The former primary returns holding nothing the new active site lacks: it
// is fenced, repointed, reported RecoveryInProgress (RecoveryPending=True,
// the deployment API unstable) until it replicates, then cleared with an
// Event; a later replication problem of the same site is not a recovery.
func TestReturningOldPrimaryRejoins(t *testing.T) {
	obs := steadyObs()
	obs["pdx"] = site("pdx", true, "I:1-10", nil)
	obs["iad"] = unreachable()
	obs["dr"] = site("dr", false, "I:1-10", replicating(pdxHost))
	obs["reader"] = site("reader", false, "I:1-10", replicating(pdxHost))
	st := active(4, "pdx")
	st.LastFailover = &v1alpha1.LastFailover{Time: metav1.NewTime(t0.Add(-time.Hour)), Target: "pdx", Source: "iad"}
	gone := Decide(failoverInput(obs, st))
	if s := siteStatus(gone, "iad"); s.RecoveryState != "" {
		t.Fatalf("unreachable old primary %+v: nothing is recovering yet", s)
	}

	// Back, writable (it never fenced itself), with a subset of pdx's set.
	obs["iad"] = site("iad", true, "I:1-10", nil)
	back := Decide(failoverInput(obs, gone.Status))
	if got := strings.Join(actions(back), ","); !strings.HasPrefix(got, "Fence iad") || strings.Contains(got, "Repoint iad") {
		t.Fatalf("actions %q: fenced, and repointed only on a later poll that shows it fenced", got)
	}
	if s := siteStatus(back, "iad"); s.RecoveryState != v1alpha1.RecoveryInProgress || s.DivergentGTID != "" {
		t.Fatalf("iad %+v", s)
	}
	if c := cond(back, v1alpha1.ConditionRecoveryPending); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonRecoveryInProgress || !strings.Contains(c.Message, "iad") {
		t.Fatalf("RecoveryPending %+v", c)
	}
	group := &v1alpha1.MysqlFailoverGroup{Status: back.Status}
	for _, s := range fourSites {
		group.Spec.Sites = append(group.Spec.Sites, v1alpha1.SiteSpec{Name: s.Name, Role: s.Role})
	}
	if v := stability.Evaluate(group); v.Stable {
		t.Fatalf("deployment API stable during the recovery: %+v", v)
	}

	// Observed fenced: repointed now.
	obs["iad"] = site("iad", false, "I:1-10", nil)
	fenced := Decide(failoverInput(obs, back.Status))
	if got := strings.Join(actions(fenced), ","); !strings.Contains(got, "Repoint iad") || strings.Contains(got, "Fence iad") {
		t.Fatalf("actions %q once fenced: repoint", got)
	}
	if s := siteStatus(fenced, "iad"); s.RecoveryState != v1alpha1.RecoveryInProgress {
		t.Fatalf("iad fenced, being repointed %+v", s)
	}

	// Repointed, replication not started yet: still in progress.
	obs["iad"] = site("iad", false, "I:1-10", &Replica{SourceHost: pdxHost, SourcePort: 3306, IORunning: "Connecting"})
	mid := Decide(failoverInput(obs, fenced.Status))
	if s := siteStatus(mid, "iad"); s.RecoveryState != v1alpha1.RecoveryInProgress {
		t.Fatalf("iad mid-recovery %+v", s)
	}
	// Replicating: recovery over.
	obs["iad"] = site("iad", false, "I:1-10", replicating(pdxHost))
	done := Decide(failoverInput(obs, mid.Status))
	if s := siteStatus(done, "iad"); s.RecoveryState != "" {
		t.Fatalf("iad after rejoining %+v", s)
	}
	if c := cond(done, v1alpha1.ConditionRecoveryPending); c.Status != metav1.ConditionFalse || !hasEvent(done, v1alpha1.EventOldPrimaryRejoined, false) {
		t.Fatalf("RecoveryPending %+v events %+v", c, done.Events)
	}
	// Later its replication breaks: Degraded, not a recovery.
	r := replicating(pdxHost)
	r.IORunning, r.LastIOErrno, r.LastIOError = "No", 2003, "cannot connect"
	obs["iad"] = site("iad", false, "I:1-10", r)
	later := Decide(failoverInput(obs, done.Status))
	if s := siteStatus(later, "iad"); s.RecoveryState != "" {
		t.Fatalf("a replication problem after the rejoin reported as recovery: %+v", s)
	}
	if c := cond(later, v1alpha1.ConditionRecoveryPending); c.Status != metav1.ConditionFalse {
		t.Fatalf("RecoveryPending %+v", c)
	}
}
