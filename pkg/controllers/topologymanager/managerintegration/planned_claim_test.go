package managerintegration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// claimEnv is a namespace with a group and no operator: the claim writes
// are exercised against the real API server on their own.
func claimEnv(t *testing.T) (*env, *v1alpha1.MysqlFailoverGroup) {
	ship, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ns: cp.NewNamespace(t), kube: cp.Client(), ship: ship}
	e.create(e.group([]siteDef{{"iad", v1alpha1.SiteRolePrimaryCandidate}, {"pdx", v1alpha1.SiteRolePrimaryCandidate}}))
	return e, e.get()
}

func TestPlannedClaimIsStoredWithResourceVersionPrecondition(t *testing.T) {
	e, g := claimEnv(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	req, err := topology.ParsePlannedFailoverValue("pdx:maxLagWait=45s")
	if err != nil {
		t.Fatal(err)
	}
	claim := topology.NewPlannedClaim(req, "run-1", "iad", 0, now)

	stored, err := topologymanager.StorePlannedClaim(ctx, e.ship, g, claim)
	if err != nil {
		t.Fatalf("store claim: %v", err)
	}
	got := e.get().Status.PlannedFailover
	if got == nil || got.RunID != "run-1" || got.Phase != "Admitting" || got.TargetSite != "pdx" ||
		got.MaxLagWait == nil || got.MaxLagWait.Duration != 45*time.Second {
		t.Fatalf("stored claim = %+v", got)
	}

	// A writer that read the group before the claim was stored cannot
	// overwrite it: its write is refused with a Conflict.
	_, err = topologymanager.StorePlannedClaim(ctx, e.ship, g, topology.NewPlannedClaim(topology.PlannedRequest{Site: "iad"}, "run-1", "pdx", 0, now))
	if !apierrors.IsConflict(errors.Unwrap(err)) {
		t.Fatalf("stale write: err = %v, want a Conflict", err)
	}

	// Another run may not replace an unfinished claim, even when up to date.
	_, err = topologymanager.StorePlannedClaim(ctx, e.ship, stored, topology.NewPlannedClaim(topology.PlannedRequest{Site: "iad"}, "run-2", "pdx", 0, now))
	var held *topologymanager.PlannedClaimHeldError
	if !errors.As(err, &held) || held.RunID != "run-1" || held.Phase != "Admitting" {
		t.Fatalf("second run: err = %v, want PlannedClaimHeldError naming run-1", err)
	}
	if e.get().Status.PlannedFailover.RunID != "run-1" {
		t.Fatal("the held claim was replaced")
	}

	// Once the run ended, a new run replaces the record.
	ended := topology.ApplyPlannedAdmission(*got, topology.PlannedAdmission{Phase: "Failed", ResultReason: "CooldownActive", Message: "cooldown"}, now)
	stored, err = topologymanager.StorePlannedClaim(ctx, e.ship, e.get(), ended)
	if err != nil {
		t.Fatalf("store ended run: %v", err)
	}
	if _, err := topologymanager.StorePlannedClaim(ctx, e.ship, stored, topology.NewPlannedClaim(topology.PlannedRequest{Site: "pdx"}, "run-2", "iad", 0, now)); err != nil {
		t.Fatalf("new run after a finished one: %v", err)
	}
	if r := e.get().Status.PlannedFailover; r.RunID != "run-2" || r.Result != nil {
		t.Fatalf("record after the new run = %+v", r)
	}
}

// The admission order of deploy-api.md: claim first, then the hold query;
// an unexpired hold defers the stored run with the hold's operation,
// instance and expiry.
func TestPlannedClaimDeferredBehindARealHold(t *testing.T) {
	e, g := claimEnv(t)
	ctx := context.Background()
	store := leasestore.New(e.kube, leasestore.Options{})
	ref := leasestore.GroupRef{Namespace: e.ns, Name: g.Name, UID: g.UID}
	// A failover hold rides on the migration lease of the same operation.
	if _, err := store.Grant(ctx, leasestore.GrantRequest{Group: ref, Kind: leasestore.KindMigration,
		OperationID: "op-42", Instance: "checkout", Holder: "ci", TTL: 10 * time.Minute, TopologyGeneration: g.Status.TopologyGeneration}); err != nil {
		t.Fatalf("grant migration lease: %v", err)
	}
	grant, err := store.Grant(ctx, leasestore.GrantRequest{Group: ref, Kind: leasestore.KindFailoverHold,
		OperationID: "op-42", Instance: "checkout", Holder: "ci", TTL: 10 * time.Minute, TopologyGeneration: g.Status.TopologyGeneration})
	if err != nil {
		t.Fatalf("grant hold: %v", err)
	}

	now := time.Now()
	claim := topology.NewPlannedClaim(topology.PlannedRequest{Site: "pdx"}, "run-1", "iad", 0, now)
	stored, err := topologymanager.StorePlannedClaim(ctx, e.ship, g, claim)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := store.Holds(ctx, ref, stored.Status.TopologyGeneration)
	if err != nil {
		t.Fatal(err)
	}
	v := topology.AdmitPlanned(topology.PlannedAdmissionInput{
		Now: now, Target: "pdx", Active: "iad",
		Sites:         []topology.SiteSpec{{Name: "iad", Role: v1alpha1.SiteRolePrimaryCandidate}, {Name: "pdx", Role: v1alpha1.SiteRolePrimaryCandidate}},
		TargetTrusted: true, TargetReplicating: true, AdmittingSince: now,
		Holds:    topology.PlannedHolds{Held: hs.Held, EarliestExpiry: hs.EarliestExpiry, OperationID: hs.OperationID, Instance: hs.Instance, Count: hs.Count},
		Settings: topology.PlannedSettings{OnCooldown: "Reject", AdmissionTimeout: 5 * time.Minute, Cooldown: time.Minute},
	})
	if _, err := topologymanager.StorePlannedClaim(ctx, e.ship, stored, topology.ApplyPlannedAdmission(claim, v, now)); err != nil {
		t.Fatal(err)
	}
	pf := e.get().Status.PlannedFailover
	a := pf.Admission
	if pf.Phase != "Deferred" || a == nil || a.DeferReason != "DeploymentHold" || a.BlockingOperationID != "op-42" ||
		a.BlockingInstance != "checkout" || a.RetryAfter == nil || !strings.Contains(a.Message, "op-42") {
		t.Fatalf("claim after admission = %+v %+v", pf, a)
	}
	// retryAfter is the hold's expiry (the API stores whole seconds).
	if d := a.RetryAfter.Time.Sub(grant.ExpiresAt); d < -time.Second || d > time.Second {
		t.Fatalf("retryAfter %s, hold expires %s", a.RetryAfter.Time, grant.ExpiresAt)
	}
}
