package playground

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
)

func TestPossiblyLostCountsTheGTIDsOfTheFailoverToTheNewPrimary(t *testing.T) {
	lf := &v1alpha1.LastFailover{Target: "pdx",
		PossiblyLostGTID: "3e11fa47-71ca-11e1-9e33-c80aa9429562:5-7:9,4e11fa47-71ca-11e1-9e33-c80aa9429562:1"}
	if n, err := possiblyLost(lf, "pdx"); err != nil || n != 5 {
		t.Errorf("possiblyLost = %d, %v; want 5", n, err)
	}
	if n, err := possiblyLost(&v1alpha1.LastFailover{Target: "pdx"}, "pdx"); err != nil || n != 0 {
		t.Errorf("an empty possiblyLostGtid (nothing known lost) = %d, %v; want 0", n, err)
	}
	// A record of another failover says nothing about this one.
	for _, lf := range []*v1alpha1.LastFailover{nil, {Target: "iad"}} {
		if _, err := possiblyLost(lf, "pdx"); err == nil || !strings.Contains(err.Error(), "pdx") {
			t.Errorf("possiblyLost(%+v) = %v, want an error naming pdx", lf, err)
		}
	}
	if _, err := possiblyLost(&v1alpha1.LastFailover{Target: "pdx", PossiblyLostGTID: "not-a-set"}, "pdx"); err == nil || !strings.Contains(err.Error(), "not-a-set") {
		t.Errorf("an unparsable set: %v, want an error quoting it", err)
	}
}

func TestCooldownEndCountsPlannedHandoffsOnlyForPlannedDrills(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	group := func(kind v1alpha1.TransitionKind) *v1alpha1.MysqlFailoverGroup {
		g := &v1alpha1.MysqlFailoverGroup{}
		g.Spec.FailoverCooldown = &metav1.Duration{Duration: 30 * time.Second}
		g.Status.LastFailover = &v1alpha1.LastFailover{Time: metav1.NewTime(at), Kind: kind}
		return g
	}
	end := at.Add(32 * time.Second)
	for _, tc := range []struct {
		kind    v1alpha1.TransitionKind
		anyKind bool
		want    time.Time
	}{
		{v1alpha1.TransitionAutomatic, false, end},
		{"", false, end}, // a record without a kind counts
		{v1alpha1.TransitionPlanned, false, time.Time{}},
		{v1alpha1.TransitionOrderedUpdate, false, time.Time{}},
		{v1alpha1.TransitionPlanned, true, end},
		{v1alpha1.TransitionAutomatic, true, end},
	} {
		if got := cooldownEnd(group(tc.kind), tc.anyKind); !got.Equal(tc.want) {
			t.Errorf("cooldownEnd(last %q, anyKind %v) = %v, want %v", tc.kind, tc.anyKind, got, tc.want)
		}
	}
	if got := cooldownEnd(&v1alpha1.MysqlFailoverGroup{}, true); !got.IsZero() {
		t.Errorf("no failover yet: %v, want no wait", got)
	}
}

func TestNextCandidateMovesTheRoleRoundPrimaryCandidates(t *testing.T) {
	g := &v1alpha1.MysqlFailoverGroup{}
	g.Spec.Sites = []v1alpha1.SiteSpec{{Name: "iad"}, {Name: "reader", Role: v1alpha1.SiteRoleDisasterRecovery},
		{Name: "pdx", Role: v1alpha1.SiteRolePrimaryCandidate}}
	for active, want := range map[string]string{"iad": "pdx", "pdx": "iad"} {
		g.Status.ActiveSite = active
		if got, err := nextCandidate(g); err != nil || got != want {
			t.Errorf("nextCandidate from %s = %q, %v; want %s", active, got, err, want)
		}
	}
	g.Spec.Sites = g.Spec.Sites[:2]
	g.Status.ActiveSite = "iad"
	if _, err := nextCandidate(g); err == nil {
		t.Error("no other PrimaryCandidate: want an error")
	}
}

func TestPlannedFailedOnlyForTheRunJustRequested(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 500_000_000, time.UTC)
	run := func(phase v1alpha1.PlannedFailoverPhase, requested time.Time) *v1alpha1.MysqlFailoverGroup {
		g := &v1alpha1.MysqlFailoverGroup{}
		rt := metav1.NewTime(requested)
		g.Status.PlannedFailover = &v1alpha1.PlannedFailoverStatus{TargetSite: "pdx", Phase: phase, RequestTime: &rt,
			Result: &v1alpha1.PlannedFailoverResult{Outcome: "NotStarted", Reason: "CooldownActive", Message: "inside the cooldown"}}
		return g
	}
	// requestTime is stored to the second: the same second still counts.
	if err := plannedFailed(run(v1alpha1.PlannedFailoverFailed, at.Truncate(time.Second)), at); err == nil || !strings.Contains(err.Error(), "CooldownActive") {
		t.Errorf("this run refused: %v, want an error with the reason", err)
	}
	if err := plannedFailed(run(v1alpha1.PlannedFailoverFailed, at.Add(-40*time.Second)), at); err != nil {
		t.Errorf("an earlier run's failure: %v, want none", err)
	}
	if err := plannedFailed(run(v1alpha1.PlannedFailoverFencing, at), at); err != nil {
		t.Errorf("a run in progress: %v, want none", err)
	}
	if err := plannedFailed(&v1alpha1.MysqlFailoverGroup{}, at); err != nil {
		t.Errorf("no run yet: %v, want none", err)
	}
}

func TestPublishedNeedsANewActiveSiteAndNoTransition(t *testing.T) {
	g := &v1alpha1.MysqlFailoverGroup{}
	g.Status.ActiveSite = "iad"
	if published(g, "iad") {
		t.Error("still the old active site: published")
	}
	g.Status.ActiveSite = "pdx"
	if !published(g, "iad") {
		t.Error("new active site, no transition: not published")
	}
	g.Status.Transition = &v1alpha1.Transition{}
	if published(g, "iad") {
		t.Error("a transition still recorded: published")
	}
}

func TestPeerClientsCutsEveryOtherSite(t *testing.T) {
	g := &v1alpha1.MysqlFailoverGroup{}
	g.Spec.Sites = []v1alpha1.SiteSpec{{Name: "iad"}, {Name: "pdx"}, {Name: "reader"}}
	if got, want := peerClients(g, "iad"), "client=mysqlsim%3Apdx&client=mysqlsim%3Areader"; got != want {
		t.Errorf("peerClients = %q, want %q", got, want)
	}
}

func TestMissingFromTakesTheAcknowledgementsBeforeTheServerIsRead(t *testing.T) {
	const uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	first, second := gtid.GTID{UUID: uuid, GNO: 1}, gtid.GTID{UUID: uuid, GNO: 2}
	acked := gtid.Set{}.Add(first)
	// The server holds the first write when it is read; the second is
	// committed and acknowledged just after the read, as a running writer's
	// next write is.
	read := func() (gtid.Set, error) {
		held := acked
		acked = acked.Add(second)
		return held, nil
	}
	missing, err := missingFrom(func() gtid.Set { return acked }, read)
	if err != nil {
		t.Fatal(err)
	}
	if !missing.IsEmpty() {
		t.Fatalf("missing %s: a write acknowledged after the read counted as lost", missing)
	}
	// A write acknowledged before the read and absent from the server is
	// missing.
	missing, err = missingFrom(func() gtid.Set { return acked }, func() (gtid.Set, error) { return gtid.Set{}.Add(first), nil })
	if err != nil {
		t.Fatal(err)
	}
	if missing.String() != second.String() {
		t.Fatalf("missing %s: want %s", missing, second)
	}
}

func TestOutcomeKeepsTheOldPrimaryOnlyAfterATransitionWasSeen(t *testing.T) {
	g := &v1alpha1.MysqlFailoverGroup{}
	g.Status.ActiveSite = "iad"
	if site, kept := outcome(g, "iad", false); site != "" || kept {
		t.Errorf("no transition seen yet (the fault not detected): outcome %q kept %v", site, kept)
	}
	g.Status.Transition = &v1alpha1.Transition{TargetSite: "pdx"}
	if site, kept := outcome(g, "iad", true); site != "" || kept {
		t.Errorf("the failover still in flight: outcome %q kept %v", site, kept)
	}
	g.Status.Transition = nil
	if site, kept := outcome(g, "iad", true); site != "iad" || !kept {
		t.Errorf("the transition cleared with iad still active: outcome %q kept %v, want iad kept", site, kept)
	}
	g.Status.ActiveSite = "pdx"
	if site, kept := outcome(g, "iad", true); site != "pdx" || kept {
		t.Errorf("pdx published: outcome %q kept %v", site, kept)
	}
}

func TestGapUntilBackRunsFromTheLastWriteBeforeTheOutage(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 9, 24, 42, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	acks := []Ack{
		{Site: "iad", At: at(0)}, {Site: "iad", At: at(10)}, // before the fault at 15
		{Site: "iad", At: at(20)},   // in flight as the fault took effect
		{Site: "iad", At: at(6020)}, // writable again after status showed iad kept at 6000
		{Site: "iad", At: at(6030)},
	}
	if gap, ok := GapUntilBack(acks, at(6000), "iad"); !ok || gap != 6000*time.Millisecond {
		t.Errorf("gap %v ok %v, want 6s from the write at 20 ms to the one at 6020 ms", gap, ok)
	}
	if _, ok := GapUntilBack(acks[:3], at(6000), "iad"); ok {
		t.Error("no write acknowledged since iad was back: a gap")
	}
}
