package managerintegration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/eventrecorder"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// admitterEnv: a group with iad active (as if bootstrapped), and an
// admitter with real lease store and Event recorder on a settable clock.
func admitterEnv(t *testing.T) (*env, *topologymanager.PlannedAdmitter, *leasestore.Store, *time.Time) {
	e, g := claimEnv(t)
	g.Status.ActiveSite = "iad"
	g.Status.TopologyGeneration = 1
	if _, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).UpdateStatus(context.Background(), g, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	recorder, stopEvents := eventrecorder.NewRecorder(ctx, e.kube)
	t.Cleanup(func() { stopEvents(); cancel() })
	now := time.Now()
	clock := func() time.Time { return now }
	store := leasestore.New(e.kube, leasestore.Options{Now: clock})
	runs := 0
	a := &topologymanager.PlannedAdmitter{Ship: e.ship, Holds: store.Holds, Recorder: recorder, Now: clock,
		NewRunID: func() string { runs++; return fmt.Sprintf("run-%d", runs) }}
	return e, a, store, &now
}

func (e *env) annotatePlanned(value string) *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	// A merge patch, as `kubectl annotate` sends: the operator's status
	// writes must not make the request fail.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, topology.AnnotationPlannedFailover, value)
	out, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Patch(context.Background(), groupName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

var healthy = topologymanager.PlannedFacts{TargetTrusted: true, TargetReplicating: true}

func TestPlannedAdmissionDefersBehindAHoldAndStartsAfterExpiry(t *testing.T) {
	e, a, store, now := admitterEnv(t)
	ctx := context.Background()
	g := e.annotatePlanned("pdx:maxLagWait=30s")

	g, _, err := a.Step(ctx, g, healthy)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Annotations[topology.AnnotationPlannedFailover]; ok {
		t.Fatal("annotation not removed after the claim was stored")
	}
	if pf := e.get().Status.PlannedFailover; pf == nil || pf.Phase != "Admitting" || pf.RunID != "run-1" || pf.SourceSite != "iad" {
		t.Fatalf("claim = %+v", pf)
	}

	// A hold granted after the claim: the deploy API would refuse it (423);
	// granted directly here, it must still defer the run.
	ref := leasestore.GroupRef{Namespace: e.ns, Name: g.Name, UID: g.UID}
	for _, k := range []leasestore.Kind{leasestore.KindMigration, leasestore.KindFailoverHold} {
		if _, err := store.Grant(ctx, leasestore.GrantRequest{Group: ref, Kind: k, OperationID: "op-9", Instance: "billing",
			Holder: "ci", TTL: 2 * time.Minute, TopologyGeneration: 1}); err != nil {
			t.Fatalf("grant %s: %v", k, err)
		}
	}
	g, retry, err := a.Step(ctx, g, healthy)
	if err != nil {
		t.Fatal(err)
	}
	pf := e.get().Status.PlannedFailover
	if pf.Phase != "Deferred" || pf.Admission.DeferReason != "DeploymentHold" || pf.Admission.BlockingOperationID != "op-9" {
		t.Fatalf("claim = %+v %+v", pf, pf.Admission)
	}
	if retry < time.Minute || retry > 2*time.Minute+time.Second {
		t.Fatalf("retry in %s, want about the hold's remaining 2m", retry)
	}
	ev := e.waitEvent(v1alpha1.EventPlannedFailoverDeferred, corev1.EventTypeNormal)
	if !strings.Contains(ev.Message, "op-9") || !strings.Contains(ev.Message, "billing") {
		t.Fatalf("Deferred Event %q does not name the blocking operation and instance", ev.Message)
	}

	// Before retryAfter nothing is re-judged, even with the hold gone.
	*now = now.Add(time.Minute)
	rv := e.get().ResourceVersion
	if g, retry, err = a.Step(ctx, g, healthy); err != nil {
		t.Fatal(err)
	}
	if got := e.get(); got.ResourceVersion != rv || got.Status.PlannedFailover.Phase != "Deferred" || retry > time.Minute+time.Second {
		t.Fatalf("re-judged before retryAfter: phase %s, retry in %s", got.Status.PlannedFailover.Phase, retry)
	}
	// After the hold expired the run is admitted.
	*now = now.Add(2 * time.Minute)
	if g, _, err = a.Step(ctx, g, healthy); err != nil {
		t.Fatal(err)
	}
	if pf := e.get().Status.PlannedFailover; pf.Phase != "CatchingUp" || pf.Admission != nil || pf.RunID != "run-1" {
		t.Fatalf("claim after expiry = %+v", pf)
	}
	e.waitEvent(v1alpha1.EventPlannedFailoverStarted, corev1.EventTypeNormal)
}

func TestPlannedAdmissionRefusals(t *testing.T) {
	e, a, _, _ := admitterEnv(t)
	ctx := context.Background()

	// A malformed value is refused and removed; no claim is stored.
	g, _, err := a.Step(ctx, e.annotatePlanned("pdx:maxLagWait=2h"), healthy)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Annotations[topology.AnnotationPlannedFailover]; ok || g.Status.PlannedFailover != nil {
		t.Fatalf("bad annotation: annotations %v claim %+v", g.Annotations, g.Status.PlannedFailover)
	}
	ev := e.waitEvent(v1alpha1.EventPlannedFailoverRejected, corev1.EventTypeWarning)
	if !strings.Contains(ev.Message, "maxLagWait=2h") {
		t.Fatalf("Rejected Event %q does not name the bad part", ev.Message)
	}

	// The active site as target: the claim is stored, then ends not-started.
	if g, _, err = a.Step(ctx, e.annotatePlanned("iad"), healthy); err != nil {
		t.Fatal(err)
	}
	if g, _, err = a.Step(ctx, g, healthy); err != nil {
		t.Fatal(err)
	}
	pf := e.get().Status.PlannedFailover
	if pf.Phase != "Failed" || pf.Result == nil || pf.Result.Outcome != "NotStarted" || pf.Result.Reason != "AlreadyActive" {
		t.Fatalf("claim = %+v result %+v", pf, pf.Result)
	}

	// While a run holds the claim, a request for another site is refused
	// and the run is untouched.
	if g, _, err = a.Step(ctx, e.annotatePlanned("pdx"), topologymanager.PlannedFacts{}); err != nil {
		t.Fatal(err)
	}
	if g, _, err = a.Step(ctx, g, topologymanager.PlannedFacts{}); err != nil {
		t.Fatal(err)
	}
	if pf := e.get().Status.PlannedFailover; pf.RunID != "run-2" || pf.Phase != "Admitting" || pf.Admission.WaitReason != "TargetUnreachable" {
		t.Fatalf("waiting claim = %+v %+v", pf, pf.Admission)
	}
	if g, _, err = a.Step(ctx, e.annotatePlanned("iad"), healthy); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Annotations[topology.AnnotationPlannedFailover]; ok {
		t.Fatal("competing annotation not removed")
	}
	if pf := e.get().Status.PlannedFailover; pf.RunID != "run-2" || pf.TargetSite != "pdx" {
		t.Fatalf("competing request replaced the run: %+v", pf)
	}
}

// An operator that stored the claim and died before removing the annotation
// resumes by removing it: no second run starts.
func TestPlannedAdmissionResumesAfterCrashBetweenClaimAndAnnotationRemoval(t *testing.T) {
	e, a, _, now := admitterEnv(t)
	ctx := context.Background()
	g := e.annotatePlanned("pdx")
	claim := topology.NewPlannedClaim(topology.PlannedRequest{Site: "pdx"}, "run-before-crash", "iad", 0, *now)
	g, err := topologymanager.StorePlannedClaim(ctx, e.ship, g, claim)
	if err != nil {
		t.Fatal(err)
	}
	if g, _, err = a.Step(ctx, g, healthy); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Annotations[topology.AnnotationPlannedFailover]; ok {
		t.Fatal("annotation not removed on resume")
	}
	if _, _, err = a.Step(ctx, g, healthy); err != nil {
		t.Fatal(err)
	}
	if pf := e.get().Status.PlannedFailover; pf.RunID != "run-before-crash" || pf.Phase != "CatchingUp" {
		t.Fatalf("claim after resume = %+v", pf)
	}
	// Events arrive asynchronously but in order from one recorder: once the
	// run's Started Event is visible, a Rejected one emitted before it would be too.
	e.waitEvent(v1alpha1.EventPlannedFailoverStarted, corev1.EventTypeNormal)
	if n := len(e.eventsOf(v1alpha1.EventPlannedFailoverRejected)); n != 0 {
		t.Fatalf("%d Rejected Events for the run's own annotation", n)
	}
}
