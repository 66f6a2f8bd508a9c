package pluginview

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/topology"
)

const (
	uuidA = "aaaaaaaa-1111-1111-1111-111111111111"
	uuidC = "cccccccc-3333-3333-3333-333333333333"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func int64p(v int64) *int64 { return &v }

// group is three PrimaryCandidate sites and a reader: iad active, pdx two
// transactions behind, sfo holding two transactions of its own (recorded
// by the operator as divergent), dr not observed yet.
func group() *v1alpha1.MysqlFailoverGroup {
	g := &v1alpha1.MysqlFailoverGroup{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "databases", UID: "0b7f-uid", Generation: 3}}
	for _, s := range []string{"iad", "pdx", "sfo"} {
		g.Spec.Sites = append(g.Spec.Sites, v1alpha1.SiteSpec{Name: s, Role: v1alpha1.SiteRolePrimaryCandidate})
	}
	g.Spec.Sites = append(g.Spec.Sites, v1alpha1.SiteSpec{Name: "dr", Role: v1alpha1.SiteRoleReadOnly})
	g.Status = v1alpha1.MysqlFailoverGroupStatus{
		ObservedGeneration: 3, ActiveSite: "iad", TopologyGeneration: 7,
		Sites: []v1alpha1.SiteStatus{
			{Name: "iad", State: v1alpha1.SiteWritable, Replication: v1alpha1.ReplicationNotReplicating, GTIDExecuted: uuidA + ":1-100"},
			{Name: "pdx", State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationRunning, SecondsBehindSource: int64p(3), GTIDExecuted: uuidA + ":1-98"},
			{Name: "sfo", State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationStopped, GTIDExecuted: uuidA + ":1-100," + uuidC + ":1-2",
				DivergentGTID: uuidC + ":1-2", DivergentTransactionCount: 2, DivergenceDetectedBy: v1alpha1.DivergenceByReplicaAudit, DivergenceComparedTo: "iad"},
		},
		Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonHealthy, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
			{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonDivergentTransactions, Message: "site sfo holds 2", LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))},
			{Type: v1alpha1.ConditionRecoveryPending, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoRecoveryPending},
			{Type: v1alpha1.ConditionDNSReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonDNSEndpointCurrent},
		},
	}
	return g
}

func TestSummarizeSitesAndConditions(t *testing.T) {
	s := Summarize(group(), nil, nil, now)
	if s.ActiveSite != "iad" || s.TopologyGeneration != 7 || s.Ready == nil || s.Ready.Reason != v1alpha1.ReasonHealthy {
		t.Fatalf("header: %+v", s)
	}
	if len(s.Conditions) != 1 || s.Conditions[0].Type != v1alpha1.ConditionDegraded {
		t.Fatalf("conditions not fine = %+v, want only Degraded", s.Conditions)
	}
	byName := map[string]SiteSummary{}
	for _, r := range s.Sites {
		byName[r.Name] = r
	}
	if len(s.Sites) != 4 || !byName["iad"].Active || byName["dr"].State != "" {
		t.Fatalf("sites: %+v", s.Sites)
	}
	if p := byName["pdx"]; *p.MissingFromActive != 2 || *p.ExtraOverActive != 0 || p.Transactions != 98 {
		t.Fatalf("pdx: %+v", p)
	}
	if f := byName["sfo"]; *f.ExtraOverActive != 2 || f.Divergence == nil || f.Divergence.Transactions != 2 {
		t.Fatalf("sfo: %+v", f)
	}
}

func TestSummarizeInFlightAndLeases(t *testing.T) {
	g := group()
	g.Status.Transition = &v1alpha1.Transition{ID: "t1", Kind: v1alpha1.TransitionPlanned, SourceSite: "iad", TargetSite: "pdx", TopologyGeneration: 8, Step: v1alpha1.StepFencingSource, StartTime: metav1.NewTime(now.Add(-5 * time.Second))}
	g.Status.PlannedFailover = &v1alpha1.PlannedFailoverStatus{RunID: "t1", TargetSite: "pdx", SourceSite: "iad", Phase: v1alpha1.PlannedFailoverFencing}
	g.Status.AutomaticFailoverHold = &v1alpha1.AutomaticFailoverHold{Reason: topology.HoldReasonSourceLeftFenced, Since: metav1.NewTime(now.Add(-time.Minute))}
	g.Annotations = map[string]string{topology.AnnotationRecloneSite: "sfo:confirm=orders:uid=x", "unrelated": "x"}
	recs := []leasestore.Record{
		{Kind: leasestore.KindMigration, OperationID: "op1", Instance: "orders-app", Holder: "apps/deployer", State: leasestore.StateActive, ExpiresAt: now.Add(30 * time.Second), TopologyGeneration: 7},
		{Kind: leasestore.KindFailoverHold, OperationID: "op1", Instance: "orders-app", Holder: "apps/deployer", State: leasestore.StateActive, ExpiresAt: now.Add(10 * time.Second), TopologyGeneration: 6},
		{Kind: leasestore.KindMigration, OperationID: "op0", State: leasestore.StateRevoked, ExpiresAt: now.Add(-time.Hour)},
	}
	s := Summarize(g, recs, nil, now)
	if s.PlannedFailover == nil || !s.PlannedFailover.InFlight || s.Transition == nil || s.AutomaticHold == nil {
		t.Fatalf("in flight: %+v", s)
	}
	if len(s.PendingRequests) != 1 {
		t.Fatalf("pending = %v, want the reclone request only", s.PendingRequests)
	}
	ls := s.Leases
	if ls == nil || len(ls.Live) != 2 || ls.Ended != 1 || ls.Live[0].Kind != leasestore.KindFailoverHold || !ls.Live[0].Stale || ls.Live[1].Stale {
		t.Fatalf("leases: %+v", ls)
	}
	var out bytes.Buffer
	if err := WriteText(&out, s, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TRANSITION IN FLIGHT", "Planned iad -> pdx (generation 8), step FencingSource", "PLANNED FAILOVER IN FLIGHT",
		"AUTOMATIC FAILOVER HELD", "clear-automatic-failover-hold orders", "failover-hold op1 for orders-app by apps/deployer, expires in 10s, granted at another generation",
		"REQUESTS NOT YET HANDLED", "(1 ended)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}

func TestWriteTextHealthyAndDiverged(t *testing.T) {
	var out bytes.Buffer
	if err := WriteText(&out, Summarize(group(), nil, errors.New("leases is forbidden"), now), now); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	t.Log("\n" + text)
	for _, want := range []string{"Group:       databases/orders", "Active site: iad", "Generation:  7", "Ready:       True/Healthy",
		"iad *", "100 txns (active)", "98 txns (2 behind)", "3s", "102 txns (2 not on active)",
		"sfo: 2 transactions site iad lacks (found by ReplicaAudit): " + uuidC + ":1-2", "kubectl bloodraven reclone",
		"Degraded=True/DivergentTransactions since 1m0s ago: site sfo holds 2", "not readable: leases is forbidden"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	for _, unwanted := range []string{"DNSReady", "RecoveryPending", "TRANSITION", "HELD"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("text has %q, which is fine or absent:\n%s", unwanted, text)
		}
	}
}

func TestSummaryJSONFieldNames(t *testing.T) {
	b, err := json.Marshal(Summarize(group(), []leasestore.Record{}, nil, now))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "namespace", "activeSite", "topologyGeneration", "ready", "sites", "conditionsNotFine", "leases"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
}

// TestRecloneValueParsesAsTheOperatorDoes checks the builder against the
// operator's own parser, for the cold and the diverged form.
func TestRecloneValueParsesAsTheOperatorDoes(t *testing.T) {
	for _, tc := range []struct {
		site, prefix string
	}{{"pdx", ""}, {"sfo", uuidC}} {
		p, err := PlanReclone(group(), tc.site)
		if err != nil {
			t.Fatalf("%s: %v", tc.site, err)
		}
		r, err := topology.ParseRecloneValue(p.Value)
		if err != nil {
			t.Fatalf("%s: the operator's parser refuses %q: %v", tc.site, p.Value, err)
		}
		want := topology.RecloneRequest{Site: tc.site, Confirm: "orders", UID: "0b7f-uid", GTIDPrefix: tc.prefix}
		if r != want {
			t.Errorf("%s: parsed %+v, want %+v", tc.site, r, want)
		}
		if tc.prefix != "" && len(r.GTIDPrefix) < topology.MinGTIDPrefix {
			t.Errorf("gtidPrefix %q shorter than %d", r.GTIDPrefix, topology.MinGTIDPrefix)
		}
	}
}

func TestRecloneDiscardUsesRecordAndSets(t *testing.T) {
	g := group()
	// pdx took a transaction of its own the operator has not recorded yet:
	// the difference of the sets must still count it.
	g.Status.Sites[1].GTIDExecuted = uuidA + ":1-98," + uuidC + ":5"
	p, err := PlanReclone(g, "pdx")
	if err != nil {
		t.Fatal(err)
	}
	if p.Discard.OneLine() != uuidC+":5" || !strings.HasSuffix(p.Value, ":gtidPrefix="+uuidC) {
		t.Fatalf("plan = %+v", p)
	}
	sum := p.DiscardSummary()
	for _, want := range []string{"holds 1 transactions site iad lacks", "DESTROYS", uuidC + ":5", "mysqlbinlog --include-gtids"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	cold, _ := PlanReclone(group(), "pdx")
	if s := cold.DiscardSummary(); !strings.Contains(s, "nothing is discarded") {
		t.Errorf("cold summary: %s", s)
	}
}

// TestReclonePrefixFollowsTheSets: the operator matches gtidPrefix against
// what the site holds beyond the active site, so a divergence record
// naming another source (one poll behind) must not pick the prefix.
func TestReclonePrefixFollowsTheSets(t *testing.T) {
	const uuidD = "dddddddd-4444-4444-4444-444444444444"
	g := group()
	g.Status.Sites[2].DivergentGTID = uuidD + ":7"
	p, err := PlanReclone(g, "sfo")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(p.Value, ":gtidPrefix="+uuidC) || p.Discard.Count() != 3 {
		t.Fatalf("value %q, discard %s", p.Value, p.Discard.OneLine())
	}
}

func TestRecloneRefusals(t *testing.T) {
	noActive := group()
	noActive.Status.ActiveSite = ""
	inFlight := group()
	inFlight.Status.Transition = &v1alpha1.Transition{Kind: v1alpha1.TransitionAutomatic, TargetSite: "pdx"}
	for _, tc := range []struct {
		name string
		g    *v1alpha1.MysqlFailoverGroup
		site string
		want string
	}{
		{"unknown site", group(), "lax", `site "lax" is not in spec.sites of group orders (sites: iad, pdx, sfo, dr)`},
		{"active site", group(), "iad", "is the active site (the donor)"},
		{"no active site", noActive, "pdx", "has no active site to clone from yet"},
		{"transition", inFlight, "pdx", "a Automatic transition to pdx is in flight"},
	} {
		_, err := PlanReclone(tc.g, tc.site)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestRecloneValueEmptyDiscard(t *testing.T) {
	if v := RecloneValue("g", "u", "s", gtid.Set{}); v != "s:confirm=g:uid=u" {
		t.Errorf("cold value = %q", v)
	}
}

func TestPlannedFailoverValue(t *testing.T) {
	v, err := PlannedFailoverValue(group(), "pdx", 5*time.Minute)
	if err != nil || v != "pdx:maxLagWait=5m0s" {
		t.Fatalf("value %q, %v", v, err)
	}
	if r, err := topology.ParsePlannedFailoverValue(v); err != nil || r.MaxLagWait != 5*time.Minute {
		t.Fatalf("operator parses %+v, %v", r, err)
	}
	if v, _ := PlannedFailoverValue(group(), "pdx", 0); v != "pdx" {
		t.Errorf("without max-lag-wait: %q", v)
	}
	running := group()
	running.Status.PlannedFailover = &v1alpha1.PlannedFailoverStatus{RunID: "r", TargetSite: "sfo", Phase: v1alpha1.PlannedFailoverCatchingUp}
	requested := group()
	requested.Annotations = map[string]string{topology.AnnotationPlannedFailover: "sfo"}
	for _, tc := range []struct {
		g    *v1alpha1.MysqlFailoverGroup
		site string
		wait time.Duration
		want string
	}{
		{group(), "lax", 0, "not in spec.sites"},
		{group(), "dr", 0, "is a ReadOnly site"},
		{group(), "iad", 0, "already the active site"},
		{group(), "pdx", 2 * time.Hour, "--max-lag-wait: maxLagWait=2h0m0s is outside 1s to 1h0m0s"},
		{running, "pdx", 0, "a planned failover to sfo is in flight (phase CatchingUp"},
		{requested, "pdx", 0, "a planned-failover request (sfo) is waiting for the operator"},
	} {
		_, err := PlannedFailoverValue(tc.g, tc.site, tc.wait)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.site, err, tc.want)
		}
	}
}

func TestClearHoldValue(t *testing.T) {
	if _, err := ClearHoldValue(group()); err == nil || !strings.Contains(err.Error(), "nothing to clear") {
		t.Errorf("no hold: %v", err)
	}
	g := group()
	g.Status.AutomaticFailoverHold = &v1alpha1.AutomaticFailoverHold{Reason: "X", Since: metav1.NewTime(now)}
	if v, err := ClearHoldValue(g); err != nil || v != "orders" {
		t.Errorf("value %q, %v", v, err)
	}
}

// TestReclonePrefixSkipsTheActiveSitesOwnTail: when the active site's
// gtidExecuted in status is older than the site's (status refreshes lag),
// the difference also holds the active site's newest own transactions. The
// prefix must never name the active site's own UUID, which the operator
// never counts: with a record, a source both agree on; without one, the
// difference without the active site's UUID.
func TestReclonePrefixSkipsTheActiveSitesOwnTail(t *testing.T) {
	for _, withRecord := range []bool{true, false} {
		g := group()
		g.Status.Sites[0].ServerUUID = uuidA // iad, the active site
		sfo := &g.Status.Sites[2]
		sfo.GTIDExecuted = uuidA + ":1-102," + uuidC + ":1-2"
		if !withRecord {
			sfo.DivergentGTID = ""
		}
		p, err := PlanReclone(g, "sfo")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(p.Value, ":gtidPrefix="+uuidC) {
			t.Errorf("record %v: value %q, want the prefix %s (not the active site's %s)", withRecord, p.Value, uuidC, uuidA)
		}
	}
}
