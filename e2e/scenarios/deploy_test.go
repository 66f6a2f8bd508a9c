//go:build e2e

package scenarios

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/playground"
)

// The group comes up: bootstrap picks a PrimaryCandidate, the others
// replicate from it, and the deploy API reports the same thing kubectl does.
func TestGroupReadyAndObservedThroughDeployAPI(t *testing.T) {
	requireReady(t)
	g := group(t)
	if g.Status.ActiveSite == "" {
		t.Fatal("Ready group has no status.activeSite")
	}
	out, errOut, err := pg.CP.Kubectl(context.Background(), "get", "mfg", pg.Group, "-n", pg.Namespace, "-o", "jsonpath={.status.activeSite}")
	if err != nil || out != g.Status.ActiveSite {
		t.Fatalf("kubectl get mfg: %q (%v %s), want %q", out, err, errOut, g.Status.ActiveSite)
	}
	r := call(t, token(t), http.MethodGet, "/groups/"+pg.Group, nil)
	if r.code != http.StatusOK {
		t.Fatalf("GET group: %d %s", r.code, r.raw)
	}
	if r.str("group") != pg.Group || r.str("namespace") != pg.Namespace || r.str("activeSite") != g.Status.ActiveSite {
		t.Fatalf("GET group: %s; want group %s in %s active at %s", r.raw, pg.Group, pg.Namespace, g.Status.ActiveSite)
	}
	if gen, _ := r.body["topologyGeneration"].(float64); int64(gen) != g.Status.TopologyGeneration {
		t.Fatalf("topologyGeneration %v, status says %d", r.body["topologyGeneration"], g.Status.TopologyGeneration)
	}
}

// Who may call: no token, a token of another ServiceAccount, and the
// deployment client named by the MysqlDatabase.
func TestDeployAPIAuthentication(t *testing.T) {
	path := "/groups/" + pg.Group
	if r := call(t, "", http.MethodGet, path, nil); r.code != http.StatusUnauthorized || r.str("error") != "unauthenticated" {
		t.Fatalf("no token: %d %s", r.code, r.raw)
	}
	other, err := pg.CP.MintToken(context.Background(), playground.ClientNamespace, "not-a-deploy-client", playground.Audience)
	if err != nil {
		t.Fatal(err)
	}
	if r := call(t, other, http.MethodGet, path, nil); r.code != http.StatusForbidden || r.str("error") != "forbidden" {
		t.Fatalf("unlisted ServiceAccount: %d %s", r.code, r.raw)
	}
	wrongAudience, err := pg.CP.MintToken(context.Background(), playground.ClientNamespace, playground.ClientServiceAccount, "some-other-audience")
	if err != nil {
		t.Fatal(err)
	}
	if r := call(t, wrongAudience, http.MethodGet, path, nil); r.code != http.StatusUnauthorized {
		t.Fatalf("token for another audience: %d %s", r.code, r.raw)
	}
	if r := call(t, token(t), http.MethodGet, path, nil); r.code != http.StatusOK {
		t.Fatalf("deployment client: %d %s", r.code, r.raw)
	}
}

// grant takes a lease and returns its token.
func grant(t *testing.T, tok, kind, op string) string {
	t.Helper()
	r := call(t, tok, http.MethodPost, "/groups/"+pg.Group+"/leases",
		map[string]any{"kind": kind, "operationId": op, "instance": pg.Database, "ttlSeconds": 120})
	if r.code != http.StatusCreated || r.str("token") == "" {
		t.Fatalf("grant %s: %d %s", kind, r.code, r.raw)
	}
	return r.str("token")
}

func renew(t *testing.T, tok, kind, op, leaseToken string) apiResult {
	t.Helper()
	return call(t, tok, http.MethodPut, "/groups/"+pg.Group+"/leases/"+kind+"/"+op,
		map[string]any{"token": leaseToken, "ttlSeconds": 120})
}

func release(t *testing.T, tok, kind, op, leaseToken string) {
	t.Helper()
	r := call(t, tok, http.MethodDelete, "/groups/"+pg.Group+"/leases/"+kind+"/"+op, nil, "X-Lease-Token", leaseToken)
	if r.code != http.StatusNoContent {
		t.Fatalf("release %s: %d %s", kind, r.code, r.raw)
	}
}

// A migration lease and its failover hold live in the API server: an
// operator restart with no topology change keeps them renewable.
func TestLeasesSurviveOperatorRestart(t *testing.T) {
	requireReady(t)
	tok := token(t)
	op := newOperationID()
	mig := grant(t, tok, "migration", op)
	hold := grant(t, tok, "failover-hold", op)
	t.Cleanup(func() {
		release(t, token(t), "failover-hold", op, hold)
		release(t, token(t), "migration", op, mig)
	})
	gen := group(t).Status.TopologyGeneration

	if err := pg.StopOperator(); err != nil {
		t.Fatal(err)
	}
	if err := pg.StartOperator(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The new process answers 503 not_leader until it holds the Lease.
	var r apiResult
	eventually(t, 60*time.Second, func() string {
		r = renew(t, tok, "migration", op, mig)
		if r.code == http.StatusServiceUnavailable {
			return "still not leading: " + r.raw
		}
		return ""
	})
	if r.code != http.StatusOK {
		t.Fatalf("renew migration after restart: %d %s", r.code, r.raw)
	}
	if r := renew(t, tok, "failover-hold", op, hold); r.code != http.StatusOK {
		t.Fatalf("renew hold after restart: %d %s", r.code, r.raw)
	}
	if now := group(t).Status.TopologyGeneration; now != gen {
		t.Fatalf("topologyGeneration moved from %d to %d across a restart with no failover", gen, now)
	}
	doc := call(t, tok, http.MethodGet, "/groups/"+pg.Group, nil)
	leases, _ := doc.body["leases"].([]any)
	if len(leases) != 2 {
		t.Fatalf("GET after restart lists %d live leases, want 2: %s", len(leases), doc.raw)
	}
}

// The revoke annotation (kubectl) ends every lease of the group with 409
// revoked/OperatorRevoked, and the controller removes the annotation.
func TestLeasesRevokedByAnnotation(t *testing.T) {
	requireReady(t)
	tok := token(t)
	op := newOperationID()
	mig := grant(t, tok, "migration", op)
	ctx := context.Background()
	const annotation = "bloodraven.shipstream.io/revoke-deployment-leases"
	if out, errOut, err := pg.CP.Kubectl(ctx, "annotate", "mfg", pg.Group, "-n", pg.Namespace, annotation+"=e2e"); err != nil {
		t.Fatalf("kubectl annotate: %v %s%s", err, out, errOut)
	}
	eventually(t, 30*time.Second, func() string {
		r := renew(t, tok, "migration", op, mig)
		if r.code == http.StatusConflict && r.str("error") == "revoked" && r.str("reason") == "OperatorRevoked" {
			return ""
		}
		return "renewal still answers " + r.raw
	})
	eventually(t, 30*time.Second, func() string {
		if v, ok := group(t).Annotations[annotation]; ok {
			return "annotation still present: " + v
		}
		return ""
	})
	// Terminal: a re-grant of the same operation stays revoked.
	r := call(t, tok, http.MethodPost, "/groups/"+pg.Group+"/leases",
		map[string]any{"kind": "migration", "operationId": op, "instance": pg.Database, "ttlSeconds": 30})
	if r.code != http.StatusConflict || r.str("error") != "revoked" {
		t.Fatalf("re-grant of a revoked operation: %d %s", r.code, r.raw)
	}
}
