package topology

import (
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/observe"
)

const (
	uIAD = "11111111-0000-4000-8000-000000000001"
	uPDX = "22222222-0000-4000-8000-000000000002"
	uDR  = "33333333-0000-4000-8000-000000000003"
	uRD  = "44444444-0000-4000-8000-000000000004"
)

var (
	t0      = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	iadHost = "orders-iad-internal.shop.svc"
)

var uuids = map[string]string{"iad": uIAD, "pdx": uPDX, "dr": uDR, "reader": uRD}

func set(s string) gtid.Set { return gtid.MustParse(s) }

// site builds a trusted observation: executed and purged are GTID sets
// with "I", "P", "D", "R" standing for the sites' UUIDs.
func site(name string, writable bool, executed string, rep *Replica) SiteInput {
	return SiteInput{Reach: observe.Reachable, Fresh: true, Last: &Observed{
		ServerUUID: uuids[name], Writable: writable, Executed: set(expand(executed)), At: t0, Replica: rep,
	}}
}

func purged(si SiteInput, p string) SiteInput {
	si.Last.Purged = set(expand(p))
	return si
}

func expand(s string) string {
	r := strings.NewReplacer("I:", uIAD+":", "P:", uPDX+":", "D:", uDR+":", "R:", uRD+":")
	return r.Replace(s)
}

// unreachable: polls fail; its sidecar was seen running when the operator
// last reached the site.
func unreachable() SiteInput {
	return SiteInput{Reach: observe.Unreachable, PollError: "dial tcp: connection refused", SidecarSeen: true}
}

func replicating(host string) *Replica {
	lag := int64(0)
	return &Replica{SourceHost: host, SourcePort: 3306, IORunning: "Yes", SQLRunning: true, SecondsBehindSource: &lag}
}

var fourSites = []SiteSpec{
	{Name: "iad", Role: v1alpha1.SiteRolePrimaryCandidate},
	{Name: "pdx", Role: v1alpha1.SiteRolePrimaryCandidate},
	{Name: "dr", Role: v1alpha1.SiteRoleDisasterRecovery},
	{Name: "reader", Role: v1alpha1.SiteRoleReadOnly},
}

func newInput(obs map[string]SiteInput, status v1alpha1.MysqlFailoverGroupStatus) Input {
	return Input{
		Now: t0.Add(time.Second), Namespace: "shop", Group: "orders", Generation: 4, Sites: fourSites,
		MaxLagSeconds: 300, CloneRetryDelay: time.Minute, StatusRefresh: 30 * time.Second,
		Status: status, Observed: obs, NewTransitionID: "tid-1",
	}
}

func empty4() map[string]SiteInput {
	return map[string]SiteInput{"iad": site("iad", false, "", nil), "pdx": site("pdx", false, "", nil),
		"dr": site("dr", false, "", nil), "reader": site("reader", false, "", nil)}
}

func active(gen int64, a string) v1alpha1.MysqlFailoverGroupStatus {
	return v1alpha1.MysqlFailoverGroupStatus{ActiveSite: a, TopologyGeneration: gen}
}

func bootstrapping(target string, gen int64) v1alpha1.MysqlFailoverGroupStatus {
	return v1alpha1.MysqlFailoverGroupStatus{TopologyGeneration: gen - 1, Transition: &v1alpha1.Transition{
		ID: "tid-0", Kind: v1alpha1.TransitionBootstrap, TargetSite: target, TopologyGeneration: gen,
		Step: v1alpha1.StepPromoting, StartTime: metav1.NewTime(t0),
	}}
}

func cond(d Decision, typ string) metav1.Condition {
	c := apimeta.FindStatusCondition(d.Status.Conditions, typ)
	if c == nil {
		return metav1.Condition{}
	}
	return *c
}

func actions(d Decision) []string {
	var out []string
	for _, a := range d.Actions {
		out = append(out, string(a.Kind)+" "+a.Site)
	}
	return out
}

func siteStatus(d Decision, name string) v1alpha1.SiteStatus {
	for _, s := range d.Status.Sites {
		if s.Name == name {
			return s
		}
	}
	return v1alpha1.SiteStatus{}
}

func hasEvent(d Decision, reason string, warning bool) bool {
	for _, e := range d.Events {
		if e.Reason == reason && e.Warning == warning {
			return true
		}
	}
	return false
}

func with(m map[string]SiteInput, name string, si SiteInput) map[string]SiteInput {
	m[name] = si
	return m
}

func TestBootstrapChoice(t *testing.T) {
	cases := []struct {
		name       string
		obs        map[string]SiteInput
		status     v1alpha1.MysqlFailoverGroupStatus
		wantTarget string // "" = no transition recorded
		wantReason string // Degraded reason when refused
		wantEvent  string
		wantFence  []string
	}{
		{name: "fresh sites: the first PrimaryCandidate in spec order", obs: empty4(), wantTarget: "iad", wantEvent: v1alpha1.EventBootstrapStarted},
		{name: "fresh sites, first candidate unreachable: the next reachable candidate", obs: with(empty4(), "iad", unreachable()), wantTarget: "pdx"},
		{name: "the site holding every transaction wins over spec order",
			obs: with(with(empty4(), "iad", site("iad", false, "P:1-5", nil)), "pdx", site("pdx", false, "P:1-10", nil)), wantTarget: "pdx"},
		{name: "equal sets: spec order",
			obs: with(with(empty4(), "iad", site("iad", false, "P:1-10", nil)), "pdx", site("pdx", false, "P:1-10", nil)), wantTarget: "iad"},
		{name: "a writable fresh site that is not chosen is fenced",
			obs: with(empty4(), "pdx", site("pdx", true, "", nil)), wantTarget: "iad", wantFence: []string{"pdx"}},
		{name: "a DisasterRecovery site ahead of every candidate: refused",
			obs:        with(with(empty4(), "iad", site("iad", false, "D:1-5", nil)), "dr", site("dr", false, "D:1-10", nil)),
			wantReason: v1alpha1.ReasonNoEligibleCandidate, wantEvent: v1alpha1.EventBootstrapRefusedNoEligibleCandidate},
		{name: "incomparable sets: nothing writable, the writer fenced",
			obs:        with(with(empty4(), "iad", site("iad", true, "I:1-5", nil)), "pdx", site("pdx", false, "P:1-3", nil)),
			wantReason: v1alpha1.ReasonIncomparableGTIDSets, wantEvent: v1alpha1.EventBootstrapRefusedIncomparableGTIDSets, wantFence: []string{"iad"}},
		{name: "an unreachable site's recorded set that the candidate lacks blocks the choice",
			obs:        with(with(empty4(), "iad", site("iad", false, "P:1-5", nil)), "pdx", unreachable()),
			status:     v1alpha1.MysqlFailoverGroupStatus{Sites: []v1alpha1.SiteStatus{{Name: "pdx", GTIDExecuted: expand("P:1-9")}}},
			wantReason: v1alpha1.ReasonNoEligibleCandidate},
		{name: "an unreachable site's recorded set the candidate contains does not block",
			obs:        with(with(empty4(), "iad", site("iad", false, "P:1-9", nil)), "pdx", unreachable()),
			status:     v1alpha1.MysqlFailoverGroupStatus{Sites: []v1alpha1.SiteStatus{{Name: "pdx", GTIDExecuted: expand("P:1-5")}}},
			wantTarget: "iad"},
		{name: "a site not observed yet: wait", obs: with(empty4(), "pdx", SiteInput{Reach: observe.Unobserved})},
		{name: "a suspect site: wait", obs: with(empty4(), "iad", SiteInput{Reach: observe.Suspect, Last: site("iad", false, "", nil).Last})},
		{name: "an unreachable site answering again is not trusted before recoveryThreshold",
			obs: with(empty4(), "iad", SiteInput{Reach: observe.Unreachable, Fresh: true, Last: site("iad", false, "", nil).Last}), wantTarget: "pdx"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(newInput(c.obs, c.status))
			tr := d.Status.Transition
			if c.wantTarget == "" {
				if tr != nil {
					t.Fatalf("transition recorded: %+v", tr)
				}
			} else {
				if tr == nil || tr.TargetSite != c.wantTarget || tr.Kind != v1alpha1.TransitionBootstrap || tr.TopologyGeneration != 1 || tr.ID != "tid-1" {
					t.Fatalf("transition %+v, want a bootstrap of %s to generation 1", tr, c.wantTarget)
				}
				if !d.WriteFirst {
					t.Fatal("a recorded intent is not written first")
				}
				if d.Status.ActiveSite != "" || d.Status.TopologyGeneration != 0 {
					t.Fatalf("active site published before the target is writable: %q gen %d", d.Status.ActiveSite, d.Status.TopologyGeneration)
				}
			}
			for _, a := range d.Actions {
				if a.Kind == MakeWritable {
					t.Fatalf("a site is made writable while the bootstrap is only being recorded: %v", actions(d))
				}
			}
			var fenced []string
			for _, a := range d.Actions {
				if a.Kind == Fence {
					fenced = append(fenced, a.Site)
				}
			}
			if strings.Join(fenced, ",") != strings.Join(c.wantFence, ",") {
				t.Fatalf("fenced %v, want %v", fenced, c.wantFence)
			}
			deg := cond(d, v1alpha1.ConditionDegraded)
			if c.wantReason != "" && (deg.Status != metav1.ConditionTrue || deg.Reason != c.wantReason) {
				t.Fatalf("Degraded %s/%s %q, want True/%s", deg.Status, deg.Reason, deg.Message, c.wantReason)
			}
			if c.wantEvent != "" && !hasEvent(d, c.wantEvent, c.wantReason != "") {
				t.Fatalf("events %+v, want %s", d.Events, c.wantEvent)
			}
			if r := cond(d, v1alpha1.ConditionReady); r.Status != metav1.ConditionFalse || r.Reason != v1alpha1.ReasonNoWritablePrimary {
				t.Fatalf("Ready %s/%s before any active site", r.Status, r.Reason)
			}
		})
	}
}

// The refusal Event is recorded once, not on every poll.
func TestBootstrapRefusalEventOnce(t *testing.T) {
	obs := with(with(empty4(), "iad", site("iad", false, "I:1-5", nil)), "pdx", site("pdx", false, "P:1-3", nil))
	d := Decide(newInput(obs, v1alpha1.MysqlFailoverGroupStatus{}))
	if !hasEvent(d, v1alpha1.EventBootstrapRefusedIncomparableGTIDSets, true) {
		t.Fatalf("no refusal event: %+v", d.Events)
	}
	if msg := cond(d, v1alpha1.ConditionDegraded).Message; !strings.Contains(msg, "iad") || !strings.Contains(msg, "pdx") || !strings.Contains(msg, uIAD+":1-5") {
		t.Fatalf("Degraded message does not say why: %q", msg)
	}
	again := Decide(newInput(obs, d.Status))
	if hasEvent(again, v1alpha1.EventBootstrapRefusedIncomparableGTIDSets, true) {
		t.Fatal("the refusal Event is recorded again on the next poll")
	}
}

func TestContinueBootstrap(t *testing.T) {
	t.Run("all read-only: the target is made writable", func(t *testing.T) {
		d := Decide(newInput(empty4(), bootstrapping("iad", 1)))
		if got := strings.Join(actions(d), ","); got != "MakeWritable iad" {
			t.Fatalf("actions %s", got)
		}
		if d.Status.Transition == nil || d.Status.ActiveSite != "" {
			t.Fatalf("completed before the target is writable: %+v", d.Status)
		}
	})
	t.Run("the target has a replication channel: it is reset", func(t *testing.T) {
		obs := with(empty4(), "iad", site("iad", false, "", replicating("elsewhere")))
		d := Decide(newInput(obs, bootstrapping("iad", 1)))
		if len(d.Actions) != 1 || !d.Actions[0].ResetReplication {
			t.Fatalf("actions %+v", d.Actions)
		}
	})
	t.Run("another site writable: fenced first, target not made writable yet", func(t *testing.T) {
		obs := with(empty4(), "pdx", site("pdx", true, "", nil))
		d := Decide(newInput(obs, bootstrapping("iad", 1)))
		if got := strings.Join(actions(d), ","); got != "Fence pdx" {
			t.Fatalf("actions %s", got)
		}
	})
	t.Run("target writable and alone: completed in one write with the new generation", func(t *testing.T) {
		obs := with(empty4(), "iad", site("iad", true, "I:1-2", nil))
		d := Decide(newInput(obs, bootstrapping("iad", 7)))
		if d.Status.ActiveSite != "iad" || d.Status.TopologyGeneration != 7 || d.Status.Transition != nil || !d.WriteFirst {
			t.Fatalf("status %+v", d.Status)
		}
		if !hasEvent(d, v1alpha1.EventBootstrapSucceeded, false) {
			t.Fatalf("events %+v", d.Events)
		}
		// Followers are pointed at the new active site in the same decision.
		want := "Repoint pdx,Repoint dr,Repoint reader"
		if got := strings.Join(actions(d), ","); got != want {
			t.Fatalf("actions %s, want %s", got, want)
		}
		for _, a := range d.Actions {
			if a.SourceHost != iadHost || a.SourcePort != 3306 {
				t.Fatalf("repoint to %s:%d", a.SourceHost, a.SourcePort)
			}
		}
	})
	t.Run("another site got transactions the target lacks: aborted", func(t *testing.T) {
		obs := with(empty4(), "pdx", site("pdx", false, "P:1", nil))
		d := Decide(newInput(obs, bootstrapping("iad", 1)))
		if d.Status.Transition != nil || !d.WriteFirst || d.Status.ActiveSite != "" || len(d.Actions) != 0 {
			t.Fatalf("status %+v actions %v", d.Status, actions(d))
		}
		if !hasEvent(d, v1alpha1.EventBootstrapAborted, true) {
			t.Fatalf("events %+v", d.Events)
		}
	})
	t.Run("target writable but another site is ahead: target fenced, aborted", func(t *testing.T) {
		obs := with(with(empty4(), "iad", site("iad", true, "I:1", nil)), "pdx", site("pdx", false, "P:1", nil))
		d := Decide(newInput(obs, bootstrapping("iad", 1)))
		if got := strings.Join(actions(d), ","); got != "Fence iad" || d.Status.Transition != nil {
			t.Fatalf("actions %s transition %+v", got, d.Status.Transition)
		}
	})
	// The target may have been made writable by an earlier pass; choosing
	// another site while it cannot be seen could make two writers.
	t.Run("target unreachable: the intent is kept, no other site chosen", func(t *testing.T) {
		d := Decide(newInput(with(empty4(), "iad", unreachable()), bootstrapping("iad", 1)))
		if tr := d.Status.Transition; tr == nil || tr.TargetSite != "iad" || len(d.Actions) != 0 || d.Status.ActiveSite != "" {
			t.Fatalf("status %+v actions %v", d.Status, actions(d))
		}
		if hasEvent(d, v1alpha1.EventBootstrapAborted, true) {
			t.Fatalf("events %+v", d.Events)
		}
	})
	t.Run("target unreachable, another site writable: that one is fenced", func(t *testing.T) {
		obs := with(with(empty4(), "iad", unreachable()), "pdx", site("pdx", true, "", nil))
		d := Decide(newInput(obs, bootstrapping("iad", 1)))
		if got := strings.Join(actions(d), ","); got != "Fence pdx" || d.Status.Transition == nil {
			t.Fatalf("actions %s transition %+v", got, d.Status.Transition)
		}
	})
	t.Run("a site not settled: wait, no action", func(t *testing.T) {
		d := Decide(newInput(with(empty4(), "dr", SiteInput{Reach: observe.Suspect}), bootstrapping("iad", 1)))
		if d.Status.Transition == nil || len(d.Actions) != 0 || d.WriteFirst {
			t.Fatalf("status %+v actions %v", d.Status, actions(d))
		}
	})
}

func steadyObs() map[string]SiteInput {
	return map[string]SiteInput{
		"iad":    site("iad", true, "I:1-10", nil),
		"pdx":    site("pdx", false, "I:1-10", replicating(iadHost)),
		"dr":     site("dr", false, "I:1-10", replicating(iadHost)),
		"reader": site("reader", false, "I:1-10", replicating(iadHost)),
	}
}

func TestSteadyState(t *testing.T) {
	d := Decide(newInput(steadyObs(), active(3, "iad")))
	if len(d.Actions) != 0 || d.WriteFirst || len(d.Events) != 0 {
		t.Fatalf("healthy group: actions %v events %+v", actions(d), d.Events)
	}
	if r := cond(d, v1alpha1.ConditionReady); r.Status != metav1.ConditionTrue || r.Reason != v1alpha1.ReasonHealthy || r.ObservedGeneration != 4 {
		t.Fatalf("Ready %+v", r)
	}
	if g := cond(d, v1alpha1.ConditionDegraded); g.Status != metav1.ConditionFalse || g.Reason != v1alpha1.ReasonNotDegraded {
		t.Fatalf("Degraded %+v", g)
	}
	if b := cond(d, v1alpha1.ConditionBootstrapping); b.Status != metav1.ConditionFalse || b.Reason != v1alpha1.ReasonNotBootstrapping {
		t.Fatalf("Bootstrapping %+v", b)
	}
	if d.Status.ObservedGeneration != 4 || d.Status.TopologyGeneration != 3 {
		t.Fatalf("status %+v", d.Status)
	}
	pdx := siteStatus(d, "pdx")
	if pdx.State != v1alpha1.SiteReadOnly || pdx.Replication != v1alpha1.ReplicationRunning || pdx.SourceConvergenceState != "Converged" ||
		pdx.SourceConvergenceReason != "DirectSource" || pdx.SourceHost != iadHost || pdx.GTIDExecuted != expand("I:1-10") || pdx.LastSeenTime == nil {
		t.Fatalf("pdx %+v", pdx)
	}
	if iad := siteStatus(d, "iad"); iad.State != v1alpha1.SiteWritable || iad.Replication != v1alpha1.ReplicationNotReplicating || iad.SourceConvergenceState != "" {
		t.Fatalf("iad %+v", iad)
	}

	// An idle poll a few seconds later changes nothing in status.
	in := newInput(steadyObs(), d.Status)
	in.Now = t0.Add(5 * time.Second)
	for _, si := range in.Observed {
		si.Last.At = t0.Add(4 * time.Second)
	}
	again := Decide(in)
	if !equalSites(again.Status.Sites, d.Status.Sites) {
		t.Fatalf("an idle poll rewrote the sites:\n%+v\n%+v", again.Status.Sites, d.Status.Sites)
	}
	// Past StatusRefresh, lastSeenTime is refreshed.
	in.Now = t0.Add(40 * time.Second)
	if late := Decide(in); equalSites(late.Status.Sites, d.Status.Sites) {
		t.Fatal("lastSeenTime never refreshed")
	}
}

func equalSites(a, b []v1alpha1.SiteStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].LastSeenTime.String() != b[i].LastSeenTime.String() || a[i].GTIDExecuted != b[i].GTIDExecuted || a[i].State != b[i].State {
			return false
		}
	}
	return true
}

func TestFollowerConvergence(t *testing.T) {
	stopped := replicating(iadHost)
	stopped.IORunning, stopped.SQLRunning = "No", false
	sqlErr := replicating(iadHost)
	sqlErr.SQLRunning, sqlErr.LastSQLErrno, sqlErr.LastSQLError = false, 1007, "Can't create database"
	purgedErr := replicating(iadHost)
	purgedErr.IORunning, purgedErr.LastIOErrno, purgedErr.ReadError = "No", ErrnoSourcePurged, ReadErrorPurged
	lagging := replicating(iadHost)
	lag := int64(900)
	lagging.SecondsBehindSource = &lag

	cases := []struct {
		name      string
		pdx       SiteInput
		iadPurged string
		actions   string
		state     v1alpha1.SourceConvergenceState
		reason    v1alpha1.SourceConvergenceReason
		degraded  string
		event     string
	}{
		{name: "no channel yet: repointed", pdx: site("pdx", false, "", nil), actions: "Repoint pdx", state: "Pending", reason: "SourceMismatch", degraded: v1alpha1.ReasonSiteUnhealthy},
		{name: "replicating from another site: repointed", pdx: site("pdx", false, "I:1-10", replicating("orders-dr-internal.shop.svc")), actions: "Repoint pdx", state: "Pending", reason: "SourceMismatch", degraded: v1alpha1.ReasonSiteUnhealthy},
		{name: "the FQDN with the cluster domain counts as direct", pdx: site("pdx", false, "I:1-10", replicating("Orders-IAD-internal.shop.svc.cluster.local.")), state: "Converged", reason: "DirectSource"},
		{name: "a failed repoint is reported and retried", pdx: func() SiteInput {
			s := site("pdx", false, "", nil)
			s.MutationError = "access denied"
			return s
		}(), actions: "Repoint pdx", state: "Pending", reason: "MutationFailed", degraded: v1alpha1.ReasonSiteUnhealthy},
		{name: "stopped without error: started", pdx: site("pdx", false, "I:1-10", stopped), actions: "StartReplica pdx", state: "Converged", reason: "DirectSource", degraded: v1alpha1.ReasonSiteUnhealthy},
		{name: "applier error: left for a human", pdx: site("pdx", false, "I:1-10", sqlErr), state: "Converged", reason: "DirectSource", degraded: v1alpha1.ReasonSiteUnhealthy},
		{name: "lag beyond maxLagSeconds degrades", pdx: site("pdx", false, "I:1-10", lagging), state: "Converged", reason: "DirectSource", degraded: v1alpha1.ReasonSiteUnhealthy},
		{name: "writable follower: fenced, judged on the next poll", pdx: site("pdx", true, "I:1-10", replicating(iadHost)), actions: "Fence pdx", state: "Pending", reason: "SourceMismatch", degraded: v1alpha1.ReasonSplitBrain},
		{name: "far behind a purged source: cloned", pdx: site("pdx", false, "I:1-3", replicating(iadHost)), iadPurged: "I:1-8", actions: "Clone pdx", state: "Converged", reason: "DirectSource"},
		{name: "empty follower, source purged: cloned", pdx: site("pdx", false, "", nil), iadPurged: "I:1-8", actions: "Clone pdx", state: "Pending", reason: "SourceMismatch", degraded: v1alpha1.ReasonSiteUnhealthy},
		{name: "purged error reported by the receiver: cloned", pdx: site("pdx", false, "I:1-10", purgedErr), actions: "Clone pdx", state: "Converged", reason: "DirectSource", degraded: v1alpha1.ReasonSiteUnhealthy},
		{name: "behind but the binlogs are there: not cloned", pdx: site("pdx", false, "I:1-3", replicating(iadHost)), iadPurged: "I:1-3", state: "Converged", reason: "DirectSource"},
		{name: "received but not applied counts as present", pdx: func() SiteInput {
			r := replicating(iadHost)
			r.Retrieved = set(expand("I:1-10"))
			return site("pdx", false, "I:1-3", r)
		}(), iadPurged: "I:1-8", state: "Converged", reason: "DirectSource"},
		{name: "far behind and holding transactions the donor lacks: not cloned", pdx: site("pdx", false, "I:1-3,P:1-2", replicating(iadHost)), iadPurged: "I:1-8",
			state: "Blocked", reason: "GTIDDiverged", degraded: v1alpha1.ReasonDivergentTransactions, event: v1alpha1.EventCloneRefusedDivergentTransactions},
		{name: "diverged and pointing elsewhere: not repointed", pdx: site("pdx", false, "I:1-10,P:1", replicating("elsewhere")),
			state: "Blocked", reason: "GTIDDiverged", degraded: v1alpha1.ReasonDivergentTransactions},
		{name: "diverged but replicating directly: audit report only", pdx: site("pdx", false, "I:1-10,P:1", replicating(iadHost)),
			state: "Converged", reason: "DirectSource", degraded: v1alpha1.ReasonDivergentTransactions, event: v1alpha1.EventDivergentTransactionsDetected},
		{name: "the active site's newer own GTIDs are not divergence", pdx: site("pdx", false, "I:1-12", replicating(iadHost)), state: "Converged", reason: "DirectSource"},
		{name: "unreachable follower: probe failed, degraded", pdx: unreachable(), state: "Pending", reason: "ProbeFailed", degraded: v1alpha1.ReasonSiteUnhealthy},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs := steadyObs()
			obs["pdx"] = c.pdx
			if c.iadPurged != "" {
				obs["iad"] = purged(obs["iad"], c.iadPurged)
			}
			d := Decide(newInput(obs, active(1, "iad")))
			if got := strings.Join(actions(d), ","); got != c.actions {
				t.Fatalf("actions %q, want %q", got, c.actions)
			}
			pdx := siteStatus(d, "pdx")
			if pdx.SourceConvergenceState != c.state || pdx.SourceConvergenceReason != c.reason {
				t.Fatalf("pdx convergence %s/%s, want %s/%s (%s)", pdx.SourceConvergenceState, pdx.SourceConvergenceReason, c.state, c.reason, pdx.Message)
			}
			deg := cond(d, v1alpha1.ConditionDegraded)
			if c.degraded == "" && deg.Status != metav1.ConditionFalse {
				t.Fatalf("Degraded %s/%s: %s", deg.Status, deg.Reason, deg.Message)
			}
			if c.degraded != "" && (deg.Status != metav1.ConditionTrue || deg.Reason != c.degraded) {
				t.Fatalf("Degraded %s/%s %q, want True/%s", deg.Status, deg.Reason, deg.Message, c.degraded)
			}
			if c.event != "" && !hasEvent(d, c.event, true) {
				t.Fatalf("events %+v, want %s", d.Events, c.event)
			}
			for _, a := range d.Actions {
				if a.Kind == Clone && (a.Donor != "iad" || a.SourceHost != iadHost) {
					t.Fatalf("clone %+v", a)
				}
			}
		})
	}
}

func TestDivergenceRecord(t *testing.T) {
	obs := steadyObs()
	obs["pdx"] = purged(site("pdx", false, "I:1-3,P:1-2", replicating(iadHost)), "")
	obs["iad"] = purged(obs["iad"], "I:1-8")
	d := Decide(newInput(obs, active(1, "iad")))
	pdx := siteStatus(d, "pdx")
	if pdx.DivergentGTID != expand("P:1-2") || pdx.DivergentTransactionCount != 2 || pdx.DivergenceDetectedBy != v1alpha1.DivergenceByReplicaAudit || pdx.DivergenceComparedTo != "iad" {
		t.Fatalf("pdx %+v", pdx)
	}
	if !strings.Contains(pdx.Message, "not cloned") {
		t.Fatalf("message %q", pdx.Message)
	}
	if msg := cond(d, v1alpha1.ConditionDegraded).Message; !strings.Contains(msg, "holds 2 transactions site iad lacks") || !strings.Contains(msg, "not cloned") {
		t.Fatalf("Degraded message %q", msg)
	}
	// The next poll does not record the Events again.
	again := Decide(newInput(obs, d.Status))
	if len(again.Events) != 0 {
		t.Fatalf("events again: %+v", again.Events)
	}
	// Once the follower no longer holds them (recloned by a human), the record clears.
	obs["pdx"] = site("pdx", false, "I:1-10", replicating(iadHost))
	cleared := Decide(newInput(obs, again.Status))
	if p := siteStatus(cleared, "pdx"); p.DivergentGTID != "" || p.DivergenceDetectedBy != "" {
		t.Fatalf("record kept: %+v", p)
	}
}

func TestClonesAndBootstrapping(t *testing.T) {
	base := func() map[string]SiteInput {
		obs := steadyObs()
		obs["iad"] = purged(obs["iad"], "I:1-8")
		obs["pdx"] = site("pdx", false, "", nil)
		return obs
	}
	t.Run("running: Bootstrapping True, no second clone", func(t *testing.T) {
		obs := base()
		si := obs["pdx"]
		si.Clone = CloneState{Running: true, Donor: "iad", Started: t0}
		obs["pdx"] = si
		d := Decide(newInput(obs, active(1, "iad")))
		if len(d.Actions) != 0 {
			t.Fatalf("actions %v", actions(d))
		}
		if b := cond(d, v1alpha1.ConditionBootstrapping); b.Status != metav1.ConditionTrue || b.Reason != v1alpha1.ReasonCloning || !strings.Contains(b.Message, "pdx") {
			t.Fatalf("Bootstrapping %+v", b)
		}
	})
	t.Run("failed recently: BootstrapFailed on both conditions, no retry yet", func(t *testing.T) {
		obs := base()
		si := obs["pdx"]
		si.Clone = CloneState{FailedAt: t0, Error: "donor refused"}
		obs["pdx"] = si
		d := Decide(newInput(obs, active(1, "iad")))
		if len(d.Actions) != 0 {
			t.Fatalf("actions %v", actions(d))
		}
		b, g := cond(d, v1alpha1.ConditionBootstrapping), cond(d, v1alpha1.ConditionDegraded)
		if b.Status != metav1.ConditionFalse || b.Reason != v1alpha1.ReasonBootstrapFailed || g.Status != metav1.ConditionTrue || g.Reason != v1alpha1.ReasonBootstrapFailed {
			t.Fatalf("Bootstrapping %+v Degraded %+v", b, g)
		}
		// After the retry delay, cloned again.
		in := newInput(obs, d.Status)
		in.Now = t0.Add(2 * time.Minute)
		if got := strings.Join(actions(Decide(in)), ","); got != "Clone pdx" {
			t.Fatalf("after the retry delay: %s", got)
		}
		// After a restart (no memory) the stored failure stays until pdx replicates.
		obs["pdx"] = site("pdx", false, "", nil)
		restarted := Decide(newInput(obs, d.Status))
		if b := cond(restarted, v1alpha1.ConditionBootstrapping); b.Reason != v1alpha1.ReasonBootstrapFailed {
			t.Fatalf("after restart: %+v", b)
		}
		obs = steadyObs()
		healed := Decide(newInput(obs, restarted.Status))
		if b := cond(healed, v1alpha1.ConditionBootstrapping); b.Reason != v1alpha1.ReasonNotBootstrapping {
			t.Fatalf("after pdx replicates: %+v", b)
		}
	})
	t.Run("a clone that failed before the site came back divergent: DivergentTransactions, not BootstrapFailed", func(t *testing.T) {
		// Planned on a poll from just before pdx restarted holding
		// transactions of its own; the executor found them and refused.
		obs := steadyObs()
		obs["iad"] = purged(obs["iad"], "I:1-8")
		// Its receiver stopped on the purged binary logs: not replicating.
		r := replicating(iadHost)
		r.IORunning, r.LastIOErrno, r.ReadError = "No", ErrnoSourcePurged, ReadErrorPurged
		si := purged(site("pdx", false, "I:1-3,P:1-2", r), "")
		si.Clone = CloneState{FailedAt: t0, Error: "site pdx holds transactions the donor iad lacks: not cloned"}
		obs["pdx"] = si
		d := Decide(newInput(obs, active(1, "iad")))
		b, g := cond(d, v1alpha1.ConditionBootstrapping), cond(d, v1alpha1.ConditionDegraded)
		if b.Reason != v1alpha1.ReasonNotBootstrapping || g.Reason != v1alpha1.ReasonDivergentTransactions || !strings.Contains(g.Message, "not cloned") {
			t.Fatalf("Bootstrapping %+v Degraded %+v", b, g)
		}
		// Nor after a restart that found BootstrapFailed stored.
		st := d.Status.DeepCopy()
		for i := range st.Conditions {
			if st.Conditions[i].Type == v1alpha1.ConditionBootstrapping {
				st.Conditions[i].Reason, st.Conditions[i].Message = v1alpha1.ReasonBootstrapFailed, "clone of site pdx failed: earlier"
			}
		}
		si.Clone = CloneState{}
		obs["pdx"] = si
		if g := cond(Decide(newInput(obs, *st)), v1alpha1.ConditionDegraded); g.Reason != v1alpha1.ReasonDivergentTransactions {
			t.Fatalf("after restart: Degraded %+v", g)
		}
	})
}

func TestReassertActive(t *testing.T) {
	t.Run("read-only active holding everything: made writable", func(t *testing.T) {
		obs := steadyObs()
		obs["iad"] = site("iad", false, "I:1-10", nil)
		d := Decide(newInput(obs, active(2, "iad")))
		if got := strings.Join(actions(d), ","); got != "MakeWritable iad" {
			t.Fatalf("actions %s", got)
		}
		if d.Status.TopologyGeneration != 2 || d.WriteFirst {
			t.Fatalf("a reassertion is not a topology change: %+v", d.Status)
		}
	})
	t.Run("a follower holds transactions the active lacks: stays read-only", func(t *testing.T) {
		obs := steadyObs()
		obs["iad"] = site("iad", false, "I:1-10", nil)
		obs["dr"] = site("dr", false, "I:1-10,D:1", replicating(iadHost))
		d := Decide(newInput(obs, active(2, "iad")))
		for _, a := range d.Actions {
			if a.Kind == MakeWritable {
				t.Fatalf("made writable: %v", actions(d))
			}
		}
		if g := cond(d, v1alpha1.ConditionDegraded); g.Reason != v1alpha1.ReasonIncomparableGTIDSets {
			t.Fatalf("Degraded %+v", g)
		}
		if !hasEvent(d, v1alpha1.EventActiveSiteReassertRefused, true) {
			t.Fatalf("events %+v", d.Events)
		}
		// Once the divergence is on record (a replica audit), the active is reasserted.
		again := Decide(newInput(obs, d.Status))
		if got := strings.Join(actions(again), ","); got != "MakeWritable iad" {
			t.Fatalf("with the divergence recorded: %s", got)
		}
	})
	t.Run("the active recovering from unreachable is not trusted yet", func(t *testing.T) {
		obs := steadyObs()
		obs["iad"] = SiteInput{Reach: observe.Unreachable, Fresh: true, Last: site("iad", false, "I:1-10", nil).Last}
		d := Decide(newInput(obs, active(2, "iad")))
		if len(d.Actions) != 0 {
			t.Fatalf("actions %v", actions(d))
		}
		if r := cond(d, v1alpha1.ConditionReady); r.Reason != v1alpha1.ReasonNoWritablePrimary {
			t.Fatalf("Ready %+v", r)
		}
	})
}

func TestOtherTransitionOwnsMutations(t *testing.T) {
	st := active(2, "iad")
	st.Transition = &v1alpha1.Transition{ID: "x", Kind: v1alpha1.TransitionRestoreInPlace, SourceSite: "iad", TargetSite: "pdx", TopologyGeneration: 3, Step: v1alpha1.StepFencingSource}
	obs := steadyObs()
	obs["dr"] = site("dr", false, "", nil)
	d := Decide(newInput(obs, st))
	if len(d.Actions) != 0 || d.Status.Transition == nil || d.Status.TopologyGeneration != 2 {
		t.Fatalf("actions %v status %+v", actions(d), d.Status)
	}
}

func TestReadersNeverChangeGroupConditions(t *testing.T) {
	obs := steadyObs()
	obs["reader"] = unreachable()
	d := Decide(newInput(obs, active(1, "iad")))
	if r := cond(d, v1alpha1.ConditionReady); r.Status != metav1.ConditionTrue {
		t.Fatalf("Ready %+v", r)
	}
	if g := cond(d, v1alpha1.ConditionDegraded); g.Status != metav1.ConditionFalse {
		t.Fatalf("Degraded %+v", g)
	}
	if siteStatus(d, "reader").State != v1alpha1.SiteUnreachable {
		t.Fatal("the reader's own entry does not say it is unreachable")
	}
	obs["reader"] = site("reader", false, "I:1-10", nil)
	obs["dr"] = unreachable()
	d = Decide(newInput(obs, active(1, "iad")))
	if g := cond(d, v1alpha1.ConditionDegraded); g.Status != metav1.ConditionTrue || g.Reason != v1alpha1.ReasonSiteUnhealthy || !strings.Contains(g.Message, "site dr is unreachable") {
		t.Fatalf("Degraded %+v", g)
	}
}

// A stored site state is kept while a site is not settled (after a restart).
func TestStoredStateKeptUntilSettled(t *testing.T) {
	prev := Decide(newInput(steadyObs(), active(1, "iad"))).Status
	obs := steadyObs()
	obs["pdx"] = SiteInput{Reach: observe.Unobserved, PollError: "i/o timeout"}
	d := Decide(newInput(obs, prev))
	if st := siteStatus(d, "pdx"); st.State != v1alpha1.SiteReadOnly || st.GTIDExecuted != expand("I:1-10") {
		t.Fatalf("pdx %+v", st)
	}
}

func TestRules(t *testing.T) {
	t.Run("CloneEligible", func(t *testing.T) {
		for _, c := range []struct {
			site, donor string
			ok          bool
			extra       string
		}{
			{"", "I:1-10", true, ""},
			{"I:1-5", "I:1-10", true, ""},
			{"I:1-10", "I:1-10", true, ""},
			{"I:1-11", "I:1-10", false, "I:11"},
			{"P:1", "I:1-10", false, "P:1"},
			{"I:1-5,P:3", "I:1-10,P:1-2", false, "P:3"},
		} {
			ok, extra := CloneEligible(set(expand(c.site)), set(expand(c.donor)))
			if ok != c.ok || !extra.Equal(set(expand(c.extra))) {
				t.Errorf("CloneEligible(%s, %s) = %v %s", c.site, c.donor, ok, extra.OneLine())
			}
		}
	})
	t.Run("NeedsClone", func(t *testing.T) {
		for _, c := range []struct {
			exec, retrieved, srcExec, srcPurged string
			want                                bool
		}{
			{"", "", "I:1-10", "", false},
			{"", "", "I:1-10", "I:1", true},
			{"I:1-5", "", "I:1-10", "I:1-5", false},
			{"I:1-5", "", "I:1-10", "I:1-6", true},
			{"I:1-5", "I:6-10", "I:1-10", "I:1-10", false},
			{"I:1-10", "", "I:1-10", "I:1-10", false},
		} {
			if got := NeedsClone(set(expand(c.exec)), set(expand(c.retrieved)), set(expand(c.srcExec)), set(expand(c.srcPurged))); got != c.want {
				t.Errorf("NeedsClone(%+v) = %v", c, got)
			}
		}
	})
	t.Run("Divergent ignores the active site's own GTIDs", func(t *testing.T) {
		got := Divergent(set(expand("I:1-20,P:1-3,D:1")), set(expand("I:1-10,D:1")), uIAD)
		if !got.Equal(set(expand("P:1-3"))) {
			t.Fatalf("Divergent = %s", got.OneLine())
		}
		tagged := Divergent(set(uIAD+":t:1-4"), set(""), uIAD)
		if !tagged.IsEmpty() {
			t.Fatalf("tagged own GTIDs: %s", tagged.OneLine())
		}
	})
	t.Run("ReplicationState", func(t *testing.T) {
		for _, c := range []struct {
			r    *Replica
			want v1alpha1.ReplicationState
		}{
			{nil, v1alpha1.ReplicationNotReplicating},
			{&Replica{IORunning: "Yes", SQLRunning: true}, v1alpha1.ReplicationRunning},
			{&Replica{IORunning: "Connecting", SQLRunning: true, LastIOErrno: 2003}, v1alpha1.ReplicationConnecting},
			{&Replica{IORunning: "No", SQLRunning: true, LastIOErrno: 13114}, v1alpha1.ReplicationError},
			{&Replica{IORunning: "Yes", SQLRunning: false, LastSQLErrno: 1007}, v1alpha1.ReplicationError},
			{&Replica{IORunning: "No", SQLRunning: false}, v1alpha1.ReplicationStopped},
		} {
			if got := ReplicationState(c.r); got != c.want {
				t.Errorf("ReplicationState(%+v) = %s, want %s", c.r, got, c.want)
			}
		}
	})
}

// A follower polled a moment after the active site may hold transactions
// the active site's poll does not show yet. Under the active's own UUID they
// never count; under another UUID (a client setting gtid_next, replicated
// history) they do not count when the follower received them over its
// channel from the active site. Anything else is divergence.
func TestDivergenceIgnoresWhatTheActiveSiteSent(t *testing.T) {
	const writer = "55555555-0000-4000-8000-000000000005"
	fromActive := replicating(iadHost)
	fromActive.Retrieved = set(expand("I:1-10") + "," + writer + ":1-6")
	cases := []struct {
		name string
		pdx  SiteInput
		want string
	}{
		{"received from the active site", site("pdx", false, "I:1-10,"+writer+":1-6", fromActive), ""},
		{"not received: divergent", site("pdx", false, "I:1-10,"+writer+":1-6", replicating(iadHost)), writer + ":6"},
		{"received from another source: divergent", site("pdx", false, "I:1-10,"+writer+":1-6", func() *Replica {
			r := replicating("orders-dr-internal.shop.svc")
			r.Retrieved = fromActive.Retrieved
			return r
		}()), writer + ":6"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs := steadyObs()
			obs["iad"] = site("iad", true, "I:1-10,"+writer+":1-5", nil)
			obs["pdx"] = c.pdx
			d := Decide(newInput(obs, active(2, "iad")))
			got := siteStatus(d, "pdx").DivergentGTID
			if got != c.want {
				t.Fatalf("divergentGtid %q, want %q", got, c.want)
			}
			if hasEvent(d, v1alpha1.EventDivergentTransactionsDetected, true) != (c.want != "") {
				t.Fatalf("events %+v", d.Events)
			}
		})
	}
}
