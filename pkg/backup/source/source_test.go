package source

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

func lag(n int64) *int64 { return &n }

// healthy is a replica that qualifies: read-only, replicating directly from
// the active site, 0 s behind.
func healthy(name string) v1alpha1.SiteStatus {
	return v1alpha1.SiteStatus{Name: name, State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationRunning,
		SourceConvergenceState: converged, SourceConvergenceReason: "DirectSource", SecondsBehindSource: lag(0)}
}

func primary(name string) v1alpha1.SiteStatus {
	return v1alpha1.SiteStatus{Name: name, State: v1alpha1.SiteWritable, Replication: v1alpha1.ReplicationNotReplicating}
}

// group has sites iad (active), pdx, dr, in that order, all healthy.
func group(mutate ...func(*v1alpha1.MysqlFailoverGroup)) *v1alpha1.MysqlFailoverGroup {
	g := &v1alpha1.MysqlFailoverGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "orders"},
		Spec: v1alpha1.MysqlFailoverGroupSpec{Sites: []v1alpha1.SiteSpec{
			{Name: "iad", Role: "PrimaryCandidate"}, {Name: "pdx", Role: "PrimaryCandidate"}, {Name: "dr", Role: "DisasterRecovery"},
		}},
		Status: v1alpha1.MysqlFailoverGroupStatus{ActiveSite: "iad",
			Sites: []v1alpha1.SiteStatus{primary("iad"), healthy("pdx"), healthy("dr")}},
	}
	for _, m := range mutate {
		m(g)
	}
	return g
}

// site changes the status of one site.
func site(name string, f func(*v1alpha1.SiteStatus)) func(*v1alpha1.MysqlFailoverGroup) {
	return func(g *v1alpha1.MysqlFailoverGroup) {
		for i := range g.Status.Sites {
			if g.Status.Sites[i].Name == name {
				f(&g.Status.Sites[i])
			}
		}
	}
}

func maxLag(n int32) func(*v1alpha1.MysqlFailoverGroup) {
	return func(g *v1alpha1.MysqlFailoverGroup) { g.Spec.Backup = &v1alpha1.BackupSpec{MaxLagSecondsForSource: &n} }
}

// Each exclusion of a replica, alone: pdx is passed over for it and dr,
// healthy, is chosen; with dr excluded too the primary is.
var replicaFaults = []struct {
	name    string
	mutate  func(*v1alpha1.SiteStatus)
	cloning bool
	reason  Reason
	detail  string
}{
	{"divergent", func(s *v1alpha1.SiteStatus) {
		s.DivergentGTID = "3e11fa47-71ca-11e1-9e33-c80aa9429562:7-9"
		s.DivergentTransactionCount = 3
		s.DivergenceDetectedBy = v1alpha1.DivergenceByReplicaAudit
	}, false, Divergent, "holds 3 transactions the active site lacks"},
	{"divergent, one transaction", func(s *v1alpha1.SiteStatus) {
		s.DivergentGTID = "3e11fa47-71ca-11e1-9e33-c80aa9429562:7"
		s.DivergentTransactionCount = 1
	}, false, Divergent, "holds 1 transaction the active site lacks"},
	{"divergent, count unknown", func(s *v1alpha1.SiteStatus) { s.DivergentGTID = "3e11fa47-71ca-11e1-9e33-c80aa9429562:7" }, false, Divergent, "holds transactions the active site lacks"},
	{"RecoveryBlocked", func(s *v1alpha1.SiteStatus) { s.RecoveryState = v1alpha1.RecoveryBlocked }, false, RecoveryBlocked, ""},
	{"recovery in progress", func(s *v1alpha1.SiteStatus) { s.RecoveryState = v1alpha1.RecoveryInProgress }, false, RecoveryInProgress, ""},
	{"being cloned", func(s *v1alpha1.SiteStatus) {}, true, Cloning, ""},
	{"unreachable", func(s *v1alpha1.SiteStatus) { s.State = v1alpha1.SiteUnreachable }, false, Unreachable, ""},
	{"state unknown", func(s *v1alpha1.SiteStatus) { s.State = v1alpha1.SiteUnknown }, false, StateUnknown, ""},
	{"state empty", func(s *v1alpha1.SiteStatus) { s.State = "" }, false, StateUnknown, ""},
	{"writable but not active", func(s *v1alpha1.SiteStatus) { s.State = v1alpha1.SiteWritable }, false, WritableNotActive, ""},
	{"replication stopped", func(s *v1alpha1.SiteStatus) { s.Replication = v1alpha1.ReplicationStopped }, false, NotReplicating, "replication Stopped"},
	{"replication error", func(s *v1alpha1.SiteStatus) { s.Replication = v1alpha1.ReplicationError }, false, NotReplicating, "replication Error"},
	{"replication connecting", func(s *v1alpha1.SiteStatus) { s.Replication = v1alpha1.ReplicationConnecting }, false, NotReplicating, "replication Connecting"},
	{"no replication", func(s *v1alpha1.SiteStatus) { s.Replication = v1alpha1.ReplicationNotReplicating }, false, NotReplicating, "replication NotReplicating"},
	{"replication unreported", func(s *v1alpha1.SiteStatus) { s.Replication = "" }, false, NotReplicating, "replication none"},
	{"convergence pending", func(s *v1alpha1.SiteStatus) {
		s.SourceConvergenceState, s.SourceConvergenceReason = "Pending", "SourceMismatch"
	}, false, NotConverged, "convergence Pending, SourceMismatch"},
	{"convergence blocked", func(s *v1alpha1.SiteStatus) {
		s.SourceConvergenceState, s.SourceConvergenceReason = "Blocked", "GTIDDiverged"
	}, false, NotConverged, "convergence Blocked, GTIDDiverged"},
	{"convergence unreported", func(s *v1alpha1.SiteStatus) { s.SourceConvergenceState, s.SourceConvergenceReason = "", "" }, false, NotConverged, "convergence none"},
	{"lag unknown", func(s *v1alpha1.SiteStatus) { s.SecondsBehindSource = nil }, false, LagUnknown, ""},
	{"lag above the default maximum", func(s *v1alpha1.SiteStatus) { s.SecondsBehindSource = lag(301) }, false, LagAboveMax, "301s, maximum 300s"},
}

func TestEachReplicaExclusion(t *testing.T) {
	for _, f := range replicaFaults {
		t.Run(f.name, func(t *testing.T) {
			in := Input{Group: group(site("pdx", f.mutate))}
			if f.cloning {
				in.Cloning = map[string]bool{"pdx": true}
			}
			d := Choose(in)
			want := Exclusion{Site: "pdx", Reason: f.reason, Detail: f.detail}
			if d.Site != "dr" || d.Primary || len(d.Excluded) != 1 || d.Excluded[0] != want {
				t.Fatalf("got %+v; want dr chosen and only %+v excluded", d, want)
			}
			if !strings.Contains(d.Message, "site dr, a replica 0s behind the active site iad") || !strings.Contains(d.Message, want.String()) {
				t.Errorf("message %q does not name the choice and the exclusion %q", d.Message, want)
			}

			// The same fault on both replicas: the primary is the source,
			// and the message says why each replica was passed over.
			in.Group = group(site("pdx", f.mutate), site("dr", f.mutate))
			if f.cloning {
				in.Cloning["dr"] = true
			}
			d = Choose(in)
			if d.Site != "iad" || !d.Primary || len(d.Excluded) != 2 || d.Excluded[0].Reason != f.reason || d.Excluded[1].Reason != f.reason {
				t.Fatalf("both replicas faulty: got %+v; want the primary iad", d)
			}
			if !strings.HasPrefix(d.Message, "site iad, the primary: no replica qualifies; passed over: pdx: ") || !strings.Contains(d.Message, "; dr: ") {
				t.Errorf("message %q", d.Message)
			}

			// Named explicitly, the faulty site is refused (the lag bound
			// excepted: it applies only to the automatic choice).
			in = Input{Group: group(site("pdx", f.mutate)), SourceSite: "pdx", Cloning: in.Cloning}
			d = Choose(in)
			if f.reason == LagUnknown || f.reason == LagAboveMax {
				if d.Site != "pdx" || d.Primary || len(d.Excluded) != 0 {
					t.Fatalf("sourceSite pdx with %s: got %+v; want pdx", f.name, d)
				}
				return
			}
			if d.Site != "" || len(d.Excluded) != 1 || d.Excluded[0] != want {
				t.Fatalf("sourceSite pdx: got %+v; want no source, pdx excluded as %+v", d, want)
			}
			if !strings.HasPrefix(d.Message, "no site qualifies as the backup source: spec.sourceSite pdx does not qualify; passed over: "+want.String()) {
				t.Errorf("message %q", d.Message)
			}
		})
	}
}

func TestPrimaryExclusions(t *testing.T) {
	sick := func(s *v1alpha1.SiteStatus) { s.State = v1alpha1.SiteUnreachable }
	for _, c := range []struct {
		name    string
		mutate  func(*v1alpha1.SiteStatus)
		cloning bool
		reason  Reason
	}{
		{"unreachable", func(s *v1alpha1.SiteStatus) { s.State = v1alpha1.SiteUnreachable }, false, Unreachable},
		{"read-only", func(s *v1alpha1.SiteStatus) { s.State = v1alpha1.SiteReadOnly }, false, PrimaryNotWritable},
		{"unknown", func(s *v1alpha1.SiteStatus) { s.State = v1alpha1.SiteUnknown }, false, PrimaryNotWritable},
		{"being cloned", func(s *v1alpha1.SiteStatus) {}, true, Cloning},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := Input{Group: group(site("iad", c.mutate), site("pdx", sick), site("dr", sick))}
			if c.cloning {
				in.Cloning = map[string]bool{"iad": true}
			}
			d := Choose(in)
			want := Exclusion{Site: "iad (primary)", Reason: c.reason}
			if d.Site != "" || len(d.Excluded) != 3 || d.Excluded[2] != want {
				t.Fatalf("got %+v; want no source with %+v last", d, want)
			}
			if !strings.HasPrefix(d.Message, "no site qualifies as the backup source: no replica qualifies and the primary does not either; passed over: pdx: unreachable; dr: unreachable; "+want.String()) {
				t.Errorf("message %q", d.Message)
			}
			// A healthy replica is still chosen: the primary is only the fallback.
			in.Group = group(site("iad", c.mutate))
			if d := Choose(in); d.Site != "pdx" {
				t.Errorf("with healthy replicas: got %+v; want pdx", d)
			}
			// Named explicitly, the primary is refused.
			in.SourceSite = "iad"
			if d := Choose(in); d.Site != "" || len(d.Excluded) != 1 || d.Excluded[0] != want {
				t.Errorf("sourceSite iad: got %+v; want refused as %+v", d, want)
			}
		})
	}
}

func TestTheLeastBehindReplicaWinsThenSiteOrder(t *testing.T) {
	d := Choose(Input{Group: group(site("pdx", func(s *v1alpha1.SiteStatus) { s.SecondsBehindSource = lag(7) }),
		site("dr", func(s *v1alpha1.SiteStatus) { s.SecondsBehindSource = lag(2) }))})
	if d.Site != "dr" || len(d.Excluded) != 0 || d.Message != "site dr, a replica 2s behind the active site iad (maxLagSecondsForSource 300)" {
		t.Fatalf("got %+v; want dr (2 s) over pdx (7 s)", d)
	}
	if d := Choose(Input{Group: group()}); d.Site != "pdx" {
		t.Fatalf("equal lag: got %+v; want pdx, first in the group's site order", d)
	}
}

func TestMaxLagSecondsForSource(t *testing.T) {
	for _, c := range []struct {
		max      *int32
		lag      int64
		replica  bool
		excluded string
	}{
		{nil, 300, true, ""},
		{nil, 301, false, "pdx: replication lag above maxLagSecondsForSource (301s, maximum 300s)"},
		{ptr(int32(0)), 0, true, ""},
		{ptr(int32(0)), 1, false, "pdx: replication lag above maxLagSecondsForSource (1s, maximum 0s)"},
		{ptr(int32(10)), 10, true, ""},
		{ptr(int32(10)), 11, false, "pdx: replication lag above maxLagSecondsForSource (11s, maximum 10s)"},
	} {
		t.Run(fmt.Sprintf("max=%v lag=%d", deref(c.max), c.lag), func(t *testing.T) {
			g := group(site("pdx", func(s *v1alpha1.SiteStatus) { s.SecondsBehindSource = lag(c.lag) }))
			g.Spec.Sites = g.Spec.Sites[:2]
			g.Status.Sites = g.Status.Sites[:2]
			if c.max != nil {
				maxLag(*c.max)(g)
			}
			d := Choose(Input{Group: g})
			if c.replica {
				if d.Site != "pdx" {
					t.Fatalf("got %+v; want pdx", d)
				}
				return
			}
			if d.Site != "iad" || !d.Primary || len(d.Excluded) != 1 || d.Excluded[0].String() != c.excluded {
				t.Fatalf("got %+v; want the primary with %q", d, c.excluded)
			}
		})
	}
}

func TestNoSourceWhileTheActiveSiteIsUndecided(t *testing.T) {
	d := Choose(Input{Group: group(func(g *v1alpha1.MysqlFailoverGroup) { g.Status.ActiveSite = "" })})
	if d.Site != "" || d.Message != "no site qualifies as the backup source: the group has no active site yet" {
		t.Fatalf("no active site: got %+v", d)
	}
	tr := func(g *v1alpha1.MysqlFailoverGroup) {
		g.Status.Transition = &v1alpha1.Transition{ID: "x", Kind: v1alpha1.TransitionAutomatic, SourceSite: "iad", TargetSite: "pdx", Step: v1alpha1.StepPromoting}
	}
	for _, named := range []string{"", "pdx", "iad"} {
		d = Choose(Input{Group: group(tr), SourceSite: named})
		if d.Site != "" || d.Message != "no site qualifies as the backup source: a change of active site is in flight (Automatic, site iad to site pdx)" {
			t.Fatalf("transition, sourceSite %q: got %+v", named, d)
		}
	}
}

func TestNamedSource(t *testing.T) {
	if d := Choose(Input{Group: group(), SourceSite: "iad"}); d.Site != "iad" || !d.Primary || d.Message != "site iad, the primary, as spec.sourceSite asks" {
		t.Fatalf("sourceSite iad: %+v", d)
	}
	// pdx is chosen over dr's lower lag because it is named.
	g := group(site("pdx", func(s *v1alpha1.SiteStatus) { s.SecondsBehindSource = lag(9) }))
	if d := Choose(Input{Group: g, SourceSite: "pdx"}); d.Site != "pdx" || d.Primary || d.Message != "site pdx, a replica of the active site iad, as spec.sourceSite asks" {
		t.Fatalf("sourceSite pdx: %+v", d)
	}
	d := Choose(Input{Group: group(), SourceSite: "sfo"})
	if d.Site != "" || len(d.Excluded) != 1 || d.Excluded[0].Reason != NotInGroup ||
		d.Message != "no site qualifies as the backup source: spec.sourceSite sfo is not a site of MysqlFailoverGroup orders; passed over: sfo: not a site of the group" {
		t.Fatalf("sourceSite sfo: %+v", d)
	}
	// A site of the spec the topology manager has not reported yet.
	g = group(func(g *v1alpha1.MysqlFailoverGroup) { g.Status.Sites = g.Status.Sites[:2] })
	if d := Choose(Input{Group: g, SourceSite: "dr"}); d.Site != "" || d.Excluded[0] != (Exclusion{Site: "dr", Reason: NotObserved}) {
		t.Fatalf("sourceSite dr unobserved: %+v", d)
	}
	if d := Choose(Input{Group: g}); d.Site != "pdx" || len(d.Excluded) != 1 || d.Excluded[0].Reason != NotObserved {
		t.Fatalf("dr unobserved: %+v", d)
	}
}

func TestAGroupWithoutReplicasBacksUpThePrimary(t *testing.T) {
	g := group(func(g *v1alpha1.MysqlFailoverGroup) {
		g.Spec.Sites = g.Spec.Sites[:1]
		g.Status.Sites = g.Status.Sites[:1]
	})
	if d := Choose(Input{Group: g}); d.Site != "iad" || !d.Primary || d.Message != "site iad, the primary: the group has no replica" {
		t.Fatalf("got %+v", d)
	}
}

// A status site no longer in the spec is never a source.
func TestOnlySitesOfTheSpec(t *testing.T) {
	g := group(func(g *v1alpha1.MysqlFailoverGroup) { g.Spec.Sites = g.Spec.Sites[:1] })
	if d := Choose(Input{Group: g}); d.Site != "iad" {
		t.Fatalf("got %+v; want the primary: pdx and dr are not in the spec", d)
	}
}

// Random groups: whatever Choose picks satisfies the rule, judged here
// from the raw status fields, and whenever some site satisfies it Choose
// picks one; every site not chosen and not fine is named as excluded.
func TestRandomGroupsObeyTheRule(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	states := []v1alpha1.SiteState{v1alpha1.SiteWritable, v1alpha1.SiteReadOnly, v1alpha1.SiteUnreachable, v1alpha1.SiteUnknown}
	repl := []v1alpha1.ReplicationState{v1alpha1.ReplicationRunning, v1alpha1.ReplicationStopped, v1alpha1.ReplicationError, ""}
	conv := []v1alpha1.SourceConvergenceState{converged, "Pending", "Blocked", ""}
	rec := []v1alpha1.RecoveryState{"", "", v1alpha1.RecoveryBlocked, v1alpha1.RecoveryInProgress}
	names := []string{"a", "b", "c", "d"}
	chosen := map[string]int{}
	for i := range 20000 {
		g := &v1alpha1.MysqlFailoverGroup{ObjectMeta: metav1.ObjectMeta{Name: "g"}}
		cloning := map[string]bool{}
		for _, n := range names[:1+r.IntN(4)] {
			g.Spec.Sites = append(g.Spec.Sites, v1alpha1.SiteSpec{Name: n})
			if r.IntN(12) == 0 {
				continue // not observed
			}
			// Mostly healthy fields, so that every verdict is reached often.
			s := healthy(n)
			if r.IntN(3) == 0 {
				s.State = pick(r, states)
			}
			if r.IntN(4) == 0 {
				s.Replication = pick(r, repl)
			}
			if r.IntN(4) == 0 {
				s.SourceConvergenceState = pick(r, conv)
			}
			if r.IntN(4) == 0 {
				s.RecoveryState = pick(r, rec)
			}
			if r.IntN(8) == 0 {
				s.DivergentGTID = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1"
			}
			s.SecondsBehindSource = nil
			if r.IntN(5) > 0 {
				s.SecondsBehindSource = lag(int64(r.IntN(600)))
			}
			cloning[n] = r.IntN(8) == 0
			g.Status.Sites = append(g.Status.Sites, s)
		}
		if r.IntN(8) > 0 {
			g.Status.ActiveSite = g.Spec.Sites[r.IntN(len(g.Spec.Sites))].Name
		}
		if r.IntN(10) == 0 {
			g.Status.Transition = &v1alpha1.Transition{Kind: v1alpha1.TransitionPlanned, TargetSite: "a"}
		}
		var max int64 = 300
		if r.IntN(2) == 0 {
			max = int64(r.IntN(400))
			maxLag(int32(max))(g)
		}
		in := Input{Group: g, Cloning: cloning}
		if r.IntN(5) == 0 {
			in.SourceSite = pick(r, append(names, "z"))
		}
		d := Choose(in)
		fine := func(n string, named bool) bool { return fineByRule(g, cloning, n, max, named) }
		if d.Site != "" {
			chosen[map[bool]string{true: "primary", false: "replica"}[d.Primary]]++
			if !fine(d.Site, in.SourceSite != "") || (in.SourceSite != "" && d.Site != in.SourceSite) || d.Primary != (d.Site == g.Status.ActiveSite) {
				t.Fatalf("case %d: chose %s, which the rule forbids: %+v\ngroup %+v", i, d.Site, d, g.Status)
			}
			if !d.Primary && in.SourceSite == "" {
				// No fine replica is less behind.
				for _, s := range g.Status.Sites {
					if s.Name != g.Status.ActiveSite && fine(s.Name, false) && *s.SecondsBehindSource < lagOf(g, d.Site) {
						t.Fatalf("case %d: chose %s, but %s is less behind", i, d.Site, s.Name)
					}
				}
			}
			if d.Primary && in.SourceSite == "" {
				for _, s := range g.Spec.Sites {
					if s.Name != g.Status.ActiveSite && fine(s.Name, false) {
						t.Fatalf("case %d: chose the primary, but replica %s is fine", i, s.Name)
					}
				}
			}
			continue
		}
		chosen["none"]++
		if g.Status.ActiveSite == "" || g.Status.Transition != nil {
			continue
		}
		if in.SourceSite != "" {
			if fine(in.SourceSite, true) {
				t.Fatalf("case %d: named %s is fine but refused: %+v", i, in.SourceSite, d)
			}
			continue
		}
		for _, s := range g.Spec.Sites {
			if fine(s.Name, false) {
				t.Fatalf("case %d: no source, but %s is fine: %+v\ngroup %+v", i, s.Name, d, g.Status)
			}
			if !strings.Contains(d.Message, s.Name+": ") && !strings.Contains(d.Message, s.Name+" (primary): ") {
				t.Fatalf("case %d: message %q does not say why %s was passed over", i, d.Message, s.Name)
			}
		}
	}
	for _, k := range []string{"primary", "replica", "none"} {
		if chosen[k] < 500 {
			t.Errorf("only %d cases ended %s: the generator does not reach every verdict (%v)", chosen[k], k, chosen)
		}
	}
}

// fineByRule restates the package rule on raw fields.
func fineByRule(g *v1alpha1.MysqlFailoverGroup, cloning map[string]bool, n string, max int64, named bool) bool {
	var st *v1alpha1.SiteStatus
	for i := range g.Status.Sites {
		if g.Status.Sites[i].Name == n {
			st = &g.Status.Sites[i]
		}
	}
	inSpec := false
	for _, s := range g.Spec.Sites {
		inSpec = inSpec || s.Name == n
	}
	if !inSpec || st == nil || cloning[n] || g.Status.ActiveSite == "" || g.Status.Transition != nil {
		return false
	}
	if n == g.Status.ActiveSite {
		return st.State == v1alpha1.SiteWritable
	}
	if st.DivergentGTID != "" || st.RecoveryState != "" || st.State != v1alpha1.SiteReadOnly ||
		st.Replication != v1alpha1.ReplicationRunning || st.SourceConvergenceState != "Converged" {
		return false
	}
	return named || (st.SecondsBehindSource != nil && *st.SecondsBehindSource <= max)
}

func lagOf(g *v1alpha1.MysqlFailoverGroup, n string) int64 {
	for _, s := range g.Status.Sites {
		if s.Name == n {
			return *s.SecondsBehindSource
		}
	}
	return -1
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func ptr[T any](v T) *T { return &v }

func deref(p *int32) any {
	if p == nil {
		return "unset"
	}
	return *p
}
