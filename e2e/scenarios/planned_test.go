//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// plannedView is operations.plannedFailover of GET /deploy/v1/groups/{group}.
func plannedView(t *testing.T, tok string) (phase, reason, outcome string, code int) {
	t.Helper()
	r := call(t, tok, http.MethodGet, "/groups/"+pg.Group, nil)
	ops, _ := r.body["operations"].(map[string]any)
	pf, _ := ops["plannedFailover"].(map[string]any)
	s := func(k string) string { v, _ := pf[k].(string); return v }
	return s("phase"), s("reason"), s("outcome"), r.code
}

// otherCandidate is a PrimaryCandidate site other than the active one.
func otherCandidate(t *testing.T, g *v1alpha1.MysqlFailoverGroup) string {
	for _, s := range g.Spec.Sites {
		if s.Name != g.Status.ActiveSite && (s.Role == "" || s.Role == v1alpha1.SiteRolePrimaryCandidate) {
			return s.Name
		}
	}
	t.Fatal("no other PrimaryCandidate site")
	return ""
}

// A user asks for a planned failover with kubectl while a deploy job holds
// failover through /deploy/v1: the run is deferred behind the hold (the
// deploy API shows Deferred/DeploymentHold), runs once the hold is gone,
// hands the primary role over with real sidecars running, without losing
// an acknowledged write of the DNS-following write load; DNS and the
// primary Service follow, and the job's migration lease is revoked with
// TopologyChanged.
func TestPlannedFailoverDeferredByAHoldThenHandsOver(t *testing.T) {
	requireReady(t)
	waitCooldown(t)
	g := group(t)
	from, to, gen := g.Status.ActiveSite, otherCandidate(t, g), g.Status.TopologyGeneration
	l := startLoad(t)
	tok := token(t)
	op := newOperationID()
	mig := grant(t, tok, "migration", op)
	hold := grant(t, tok, "failover-hold", op)

	ctx := context.Background()
	if out, errOut, err := pg.CP.Kubectl(ctx, "annotate", "mfg", pg.Group, "-n", pg.Namespace,
		"bloodraven.shipstream.io/planned-failover="+to+":maxLagWait=30s"); err != nil {
		t.Fatalf("kubectl annotate: %v %s%s", err, out, errOut)
	}
	eventually(t, 30*time.Second, func() string {
		if phase, reason, _, code := plannedView(t, tok); phase != "Deferred" || reason != "DeploymentHold" {
			return fmt.Sprintf("deploy API: %d planned failover %q/%q", code, phase, reason)
		}
		return ""
	})
	if g := group(t); g.Status.ActiveSite != from || g.Status.Transition != nil {
		t.Fatalf("a deferred run changed the topology: %+v", g.Status)
	}
	// New holds are refused while the claim stands.
	if r := call(t, tok, http.MethodPost, "/groups/"+pg.Group+"/leases",
		map[string]any{"kind": "failover-hold", "operationId": newOperationID(), "instance": pg.Database, "ttlSeconds": 30}); r.code != http.StatusLocked && r.code != http.StatusConflict {
		t.Fatalf("a new hold during the claim: %d %s", r.code, r.raw)
	}

	// The job finishes its critical part and releases the hold; the run is
	// judged again at retryAfter and hands over.
	release(t, tok, "failover-hold", op, hold)
	startedAt := time.Now()
	to2 := failedOver(t, from, 3*time.Minute)
	if to2 != to {
		t.Fatalf("active site %s, want %s", to2, to)
	}
	eventually(t, 60*time.Second, func() string {
		g := group(t)
		pf := g.Status.PlannedFailover
		if pf == nil || !pf.Phase.IsTerminal() {
			return fmt.Sprintf("claim %+v", pf)
		}
		if pf.Result.Outcome != "Succeeded" || g.Status.TopologyGeneration != gen+1 {
			t.Fatalf("run ended %s/%s (%s), generation %d", pf.Result.Outcome, pf.Result.Reason, pf.Result.Message, g.Status.TopologyGeneration)
		}
		return ""
	})
	if phase, reason, outcome, _ := plannedView(t, tok); phase != "Succeeded" || reason != "Completed" || outcome != "Succeeded" {
		t.Fatalf("deploy API after the run: %q/%q/%q", phase, reason, outcome)
	}
	if r := renew(t, tok, "migration", op, mig); r.code != http.StatusConflict || r.str("reason") != "TopologyChanged" {
		t.Fatalf("renew the migration lease after the handoff: %d %s", r.code, r.raw)
	}
	l.reachedNewPrimary(t, startedAt, to)
	l.halt()
	missing, err := l.w.Missing(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	if !missing.IsEmpty() {
		t.Fatalf("acknowledged writes missing on the new primary %s: %s", to, missing)
	}
	t.Logf("acknowledged writes: %d, none missing on %s", len(l.w.Acks()), to)
	// The former primary follows the new one.
	if st := rejoined(t, from); st.DivergentGTID != "" {
		t.Fatalf("former primary %s reports divergence %s after a planned handoff", from, st.DivergentGTID)
	}
}
