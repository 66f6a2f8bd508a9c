package deployapiintegration_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/deployapi"
	"github.com/shipstream/bloodraven/pkg/leasestore"
)

var errClaimSeen = errors.New("planned claim persisted meanwhile")

const (
	opA = "11111111-1111-4111-8111-111111111111"
	opB = "22222222-2222-4222-8222-222222222222"
)

func TestAuthenticationAndForbidden(t *testing.T) {
	f := newFixture(t)
	path := "/deploy/v1/groups/orders"

	// No, malformed, and foreign credentials: 401.
	f.expect(f.do(f.op, "GET", path, "", nil, nil), 401, "unauthenticated")
	f.expect(f.do(f.op, "GET", path, "", nil, map[string]string{"Authorization": "Basic Zm9vOmJhcg=="}), 401, "unauthenticated")
	f.expect(f.do(f.op, "GET", path, "not-a-token", nil, nil), 401, "unauthenticated")
	wrongAudience := f.mint(f.appNS, "deployer", "some-other-audience")
	f.expect(f.do(f.op, "GET", path, wrongAudience, nil, nil), 401, "unauthenticated")
	apiAudience := f.mint(f.appNS, "deployer", "https://kubernetes.default.svc.cluster.local")
	f.expect(f.do(f.op, "GET", path, apiAudience, nil, nil), 401, "unauthenticated")
	// An authenticated user that is not a ServiceAccount (the admin).
	f.remember(cp.Config.BearerToken)
	f.expect(f.do(f.op, "GET", path, cp.Config.BearerToken, nil, nil), 401, "unauthenticated")

	// The right audience works.
	f.expect(f.do(f.op, "GET", path, f.token, nil, nil), 200, "")

	// An undeclared ServiceAccount: the same 403 body for an existing group,
	// a group that exists nowhere, and an invalid group name.
	stranger := f.mint(f.appNS, "stranger", deployapi.DefaultAudience)
	var bodies []string
	for _, p := range []string{path, "/deploy/v1/groups/no-such-group", "/deploy/v1/groups/Not_A_Name"} {
		r := f.do(f.op, "GET", p, stranger, nil, nil)
		f.expect(r, 403, "forbidden")
		bodies = append(bodies, r.raw)
	}
	for _, b := range bodies {
		if b != `{"error":"forbidden"}`+"\n" {
			t.Fatalf("403 body %q reveals more than forbidden", b)
		}
	}
	// A declared client of the same namespace but another ServiceAccount.
	r := f.do(f.op, "POST", path+"/leases", stranger, grantBody("migration", opA, "orders-app", 30), nil)
	f.expect(r, 403, "forbidden")
	// Release of an absent lease still requires authorization.
	f.expect(f.do(f.op, "DELETE", leasePath("orders", "migration", opA), stranger, nil, map[string]string{deployapi.LeaseTokenHeader: "x"}), 403, "forbidden")
	f.expect(f.do(f.op, "DELETE", leasePath("orders", "migration", opA), "", nil, map[string]string{deployapi.LeaseTokenHeader: "x"}), 401, "unauthenticated")

	// An existing lease: its token does not stand in for authorization.
	g := f.do(f.op, "POST", path+"/leases", f.token, grantBody("migration", opA, "orders-app", 30), nil)
	f.expect(g, 201, "")
	mig := leasePath("orders", "migration", opA)
	for _, r := range []response{
		f.do(f.op, "PUT", mig, stranger, map[string]any{"token": g.str("token")}, nil),
		f.do(f.op, "DELETE", mig, stranger, nil, map[string]string{deployapi.LeaseTokenHeader: g.str("token")}),
	} {
		f.expect(r, 403, "forbidden")
		if r.raw != `{"error":"forbidden"}`+"\n" {
			t.Fatalf("403 body %q reveals more than forbidden", r.raw)
		}
	}
	f.expect(f.do(f.op, "PUT", mig, "", map[string]any{"token": g.str("token")}, nil), 401, "unauthenticated")
	f.expect(f.do(f.op, "PUT", mig, wrongAudience, map[string]any{"token": g.str("token")}, nil), 401, "unauthenticated")
	// The refused release released nothing.
	f.expect(f.do(f.op, "PUT", mig, f.token, map[string]any{"token": g.str("token")}, nil), 200, "")

	// Unknown paths and methods.
	f.expect(f.do(f.op, "GET", "/deploy/v1/other", f.token, nil, nil), 404, "not_found")
	f.expect(f.do(f.op, "PATCH", path, f.token, nil, nil), 405, "method_not_allowed")

	// Unauthenticated and unauthorized requests log group="" (no arbitrary
	// path in a log field); authorized ones name the group.
	var refused, authorized int
	for _, rec := range f.logRecords() {
		switch rec["status"] {
		case float64(401), float64(403):
			refused++
			if rec["group"] != "" || rec["namespace"] != "" {
				t.Fatalf("a refused request logged group %q namespace %q", rec["group"], rec["namespace"])
			}
		case float64(200), float64(201):
			authorized++
			if rec["group"] != "orders" || rec["namespace"] != f.ns {
				t.Fatalf("an authorized request logged group %q namespace %q", rec["group"], rec["namespace"])
			}
		}
	}
	if refused < 10 || authorized < 3 {
		t.Fatalf("%d refused and %d authorized log records, fewer than sent", refused, authorized)
	}
}

func TestAuthorizationFollowsDatabasesUncached(t *testing.T) {
	f := newFixture(t)
	path := "/deploy/v1/groups/orders"
	f.expect(f.do(f.op, "GET", path, f.token, nil, nil), 200, "")
	// Removing the deployment client takes effect on the next request, even
	// though the token's review is cached.
	db, err := f.ship.ShipstreamV1alpha1().MysqlDatabases(f.ns).Get(f.ctx, "orders-app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	db.Spec.DeploymentClients = []v1alpha1.DeploymentClient{client(f.appNS, "someone-else")}
	if _, err := f.ship.ShipstreamV1alpha1().MysqlDatabases(f.ns).Update(f.ctx, db, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.expect(f.do(f.op, "GET", path, f.token, nil, nil), 403, "forbidden")
	// A database on another group does not authorize this one.
	f.database(f.ns, "billing-app", "billing", client(f.appNS, "deployer"))
	f.expect(f.do(f.op, "GET", path, f.token, nil, nil), 403, "forbidden")
	// Grant for an instance that does not authorize the caller: 403.
	f.database(f.ns, "orders-reports", "orders", client(f.appNS, "deployer"))
	f.expect(f.do(f.op, "POST", path+"/leases", f.token, grantBody("migration", opA, "orders-app", 30), nil), 403, "forbidden")
	f.expect(f.do(f.op, "POST", path+"/leases", f.token, grantBody("migration", opA, "orders-reports", 30), nil), 201, "")
}

func TestRequestMetricsLabelOnlyAuthorizedGroups(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	in := f.newInstance(func(c *deployapi.Config) { c.Registerer = reg })
	stranger := f.mint(f.appNS, "stranger", deployapi.DefaultAudience)
	f.expect(f.do(in, "GET", "/deploy/v1/groups/orders", f.token, nil, nil), 200, "")
	f.expect(f.do(in, "GET", "/deploy/v1/groups/orders", stranger, nil, nil), 403, "forbidden")
	f.expect(f.do(in, "GET", "/deploy/v1/groups/made-up-path-1", stranger, nil, nil), 403, "forbidden")
	f.expect(f.do(in, "POST", "/deploy/v1/groups/made-up-path-2/leases", stranger, grantBody("migration", opA, "x", 30), nil), 403, "forbidden")
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, fam := range families {
		if fam.GetName() != "bloodraven_deploy_api_requests_total" {
			continue
		}
		for _, m := range fam.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			got[l["handler"]+"/"+l["group"]+"/"+l["code"]] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"getGroup/orders/200": 1, "getGroup//403": 2, "grantLease//403": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("request series %v, want %v", got, want)
	}
}

func TestAmbiguousGroupNamesAcrossNamespaces(t *testing.T) {
	e := newEnv(t)
	nsA, nsB, appNS := cp.NewNamespace(t), cp.NewNamespace(t), cp.NewNamespace(t)
	e.group(nsA, "orders", 1)
	e.group(nsB, "orders", 7)
	e.database(nsA, "orders-east", "orders", client(appNS, "deployer"))
	e.database(nsB, "orders-west", "orders", client(appNS, "deployer"))
	in := e.newInstance()
	tok := e.mint(appNS, "deployer", deployapi.DefaultAudience)

	e.expect(e.do(in, "GET", "/deploy/v1/groups/orders", tok, nil, nil), 403, "forbidden")
	r := e.do(in, "GET", "/deploy/v1/groups/orders?instance=orders-west", tok, nil, nil)
	e.expect(r, 200, "")
	if r.str("namespace") != nsB || r.body["topologyGeneration"] != float64(7) {
		t.Fatalf("instance orders-west resolved to %s gen %v", r.str("namespace"), r.body["topologyGeneration"])
	}
	// The grant's instance identifies the namespace.
	g := e.do(in, "POST", "/deploy/v1/groups/orders/leases", tok, grantBody("migration", opA, "orders-east", 30), nil)
	e.expect(g, 201, "")
	if g.str("namespace") != nsA {
		t.Fatalf("grant landed in %s, want %s", g.str("namespace"), nsA)
	}
	// Renew and release find the one namespace holding the lease.
	e.expect(e.do(in, "PUT", leasePath("orders", "migration", opA), tok, map[string]any{"token": g.str("token"), "ttlSeconds": 30}, nil), 200, "")
	// A lease that exists in neither namespace stays ambiguous: 403.
	e.expect(e.do(in, "PUT", leasePath("orders", "migration", opB), tok, map[string]any{"token": "x", "ttlSeconds": 30}, nil), 403, "forbidden")
	e.expect(e.do(in, "DELETE", leasePath("orders", "migration", opA), tok, nil, map[string]string{deployapi.LeaseTokenHeader: g.str("token")}), 204, "")
}

func TestGroupDocumentAndUnstable(t *testing.T) {
	f := newFixture(t)
	path := "/deploy/v1/groups/orders"
	r := f.do(f.op, "GET", path, f.token, nil, nil)
	f.expect(r, 200, "")
	if r.str("group") != "orders" || r.str("namespace") != f.ns || r.str("activeSite") != "iad" || r.body["topologyGeneration"] != float64(3) {
		t.Fatalf("document identity wrong: %s", r.raw)
	}
	if r.body["stable"] != true || r.str("unstableReason") != "" {
		t.Fatalf("healthy group not stable: %s", r.raw)
	}
	health := r.body["health"].(map[string]any)
	if health["ready"] != true || health["replicationRunning"] != true || health["replicationLagSeconds"] != float64(1) || health["recoveryPending"] != false || health["degradedReason"] != "" {
		t.Fatalf("health wrong: %v", health)
	}
	ops := r.body["operations"].(map[string]any)
	if pf := ops["plannedFailover"].(map[string]any); pf["phase"] != "" || pf["reason"] != "" {
		t.Fatalf("planned failover should be empty: %v", pf)
	}
	if leases, ok := r.body["leases"].([]any); !ok || len(leases) != 0 {
		t.Fatalf("leases should be [] : %s", r.raw)
	}

	// Degraded: stable=false with the stability function's reason.
	f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) {
		s.Conditions = append(s.Conditions, metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSiteUnhealthy, LastTransitionTime: metav1.Now()})
	})
	r = f.do(f.op, "GET", path, f.token, nil, nil)
	f.expect(r, 200, "")
	if r.body["stable"] != false || r.str("unstableReason") != "Degraded" || r.body["health"].(map[string]any)["degradedReason"] != "SiteUnhealthy" {
		t.Fatalf("degraded group: %s", r.raw)
	}

	// A planned failover deferred by a hold: observable (200) with the
	// v1alpha1.7.0 vocabulary.
	f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) {
		s.Conditions = s.Conditions[:1]
		s.PlannedFailover = &v1alpha1.PlannedFailoverStatus{RunID: "run-1", TargetSite: "pdx", Phase: v1alpha1.PlannedFailoverDeferred,
			Admission: &v1alpha1.PlannedFailoverAdmission{DeferReason: "DeploymentHold"}}
	})
	r = f.do(f.op, "GET", path, f.token, nil, nil)
	f.expect(r, 200, "")
	pf := r.body["operations"].(map[string]any)["plannedFailover"].(map[string]any)
	if pf["phase"] != "Deferred" || pf["reason"] != "DeploymentHold" || r.str("unstableReason") != "PlannedFailover" {
		t.Fatalf("deferred planned failover: %s", r.raw)
	}

	// A planned failover fencing: 423.
	f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) { s.PlannedFailover.Phase = v1alpha1.PlannedFailoverFencing })
	r = f.do(f.op, "GET", path, f.token, nil, nil)
	f.expect(r, 423, "unstable")
	if r.str("unstableReason") != "PlannedFailover" {
		t.Fatalf("423 reason: %s", r.raw)
	}
	// A finished run with its result.
	f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) {
		s.PlannedFailover.Phase = v1alpha1.PlannedFailoverSucceeded
		s.PlannedFailover.Result = &v1alpha1.PlannedFailoverResult{Outcome: "Succeeded", Reason: "Completed"}
	})
	r = f.do(f.op, "GET", path, f.token, nil, nil)
	f.expect(r, 200, "")
	pf = r.body["operations"].(map[string]any)["plannedFailover"].(map[string]any)
	if pf["phase"] != "Succeeded" || pf["reason"] != "Completed" || pf["outcome"] != "Succeeded" || r.body["stable"] != true {
		t.Fatalf("finished planned failover: %s", r.raw)
	}

	// An unconfirmed topology transition: 423 TopologyTransition.
	f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) {
		s.Transition = &v1alpha1.Transition{ID: "t-1", Kind: v1alpha1.TransitionAutomatic, SourceSite: "iad", TargetSite: "pdx", TopologyGeneration: 4, Step: v1alpha1.StepFencingSource, StartTime: metav1.Now()}
	})
	r = f.do(f.op, "GET", path, f.token, nil, nil)
	f.expect(r, 423, "unstable")
	if r.str("unstableReason") != "TopologyTransition" {
		t.Fatalf("423 reason: %s", r.raw)
	}

	// An authorized caller for a group that does not exist: 404.
	f.database(f.ns, "ghost-app", "ghost", client(f.appNS, "deployer"))
	f.expect(f.do(f.op, "GET", "/deploy/v1/groups/ghost", f.token, nil, nil), 404, "group_not_found")
}

func TestGrantRenewReleaseLifecycle(t *testing.T) {
	f := newFixture(t)
	leases := "/deploy/v1/groups/orders/leases"
	mig := leasePath("orders", "migration", opA)

	// Bad requests name the field.
	for body, field := range map[string]string{
		`{"kind":"migration","operationId":"nope","instance":"orders-app"}`:                          "operationId",
		`{"kind":"lock","operationId":"` + opA + `","instance":"orders-app"}`:                        "kind",
		`{"kind":"migration","operationId":"` + opA + `"}`:                                           "instance",
		`{"kind":"migration","operationId":"` + opA + `","instance":"orders-app","ttlSeconds":"30"}`: "ttlSeconds",
		`{"kind":"migration","operationId":"` + opA + `","instance":"orders-app","ttlSeconds":2.5}`:  "ttlSeconds",
		`{"kind":"migration","operationId":"` + opA + `","instance":"orders-app","extra":1}`:         "extra",
		`not json`: "body",
	} {
		r := f.do(f.op, "POST", leases, f.token, body, nil)
		f.expect(r, 400, "invalid_request")
		if r.str("field") != field {
			t.Fatalf("body %s: field %q, want %q", body, r.str("field"), field)
		}
	}
	f.expect(f.do(f.op, "POST", leases, f.token, strings.Repeat(" ", 5000)+"{}", nil), 413, "request_too_large")

	// TTL clamp on grant: 1 -> 5, 1000 -> 120, omitted -> 30.
	before := f.clock.Now()
	g := f.do(f.op, "POST", leases, f.token, grantBody("migration", opA, "orders-app", 1), nil)
	f.expect(g, 201, "")
	checkTTL(t, g, before, 5)
	if g.str("kind") != "migration" || g.str("operationId") != opA || g.str("instance") != "orders-app" || g.body["topologyGeneration"] != float64(3) || len(g.str("token")) < 32 {
		t.Fatalf("grant body: %s", g.raw)
	}
	tok1 := g.str("token")

	// Renew with the token; clamp on renew too.
	before = f.clock.Now()
	r := f.do(f.op, "PUT", mig, f.token, map[string]any{"token": tok1, "ttlSeconds": 1000}, nil)
	f.expect(r, 200, "")
	checkTTL(t, r, before, 120)
	before = f.clock.Now()
	r = f.do(f.op, "PUT", mig, f.token, map[string]any{"token": tok1}, nil)
	f.expect(r, 200, "")
	checkTTL(t, r, before, 30)
	f.expect(f.do(f.op, "PUT", mig, f.token, map[string]any{"token": "wrong-token"}, nil), 403, "lease_token_mismatch")
	f.expect(f.do(f.op, "PUT", mig, f.token, map[string]any{"ttlSeconds": 30}, nil), 400, "invalid_request")
	f.expect(f.do(f.op, "PUT", leasePath("orders", "lock", opA), f.token, map[string]any{"token": tok1}, nil), 400, "invalid_request")
	f.expect(f.do(f.op, "PUT", leasePath("orders", "migration", "not-a-uuid"), f.token, map[string]any{"token": tok1}, nil), 400, "invalid_request")
	// Renew without ServiceAccount authentication is refused even with the token.
	f.expect(f.do(f.op, "PUT", mig, "", map[string]any{"token": tok1}, nil), 401, "unauthenticated")

	// Re-grant of the same operation: a new token; the old one stops working.
	g2 := f.do(f.op, "POST", leases, f.token, grantBody("migration", opA, "orders-app", 30), nil)
	f.expect(g2, 201, "")
	tok2 := g2.str("token")
	if tok2 == tok1 {
		t.Fatal("re-grant returned the same token")
	}
	f.expect(f.do(f.op, "PUT", mig, f.token, map[string]any{"token": tok1}, nil), 403, "lease_token_mismatch")
	f.expect(f.do(f.op, "PUT", mig, f.token, map[string]any{"token": tok2}, nil), 200, "")

	// The same operation cannot move to another instance while live.
	f.database(f.ns, "orders-reports", "orders", client(f.appNS, "deployer"))
	f.expect(f.do(f.op, "POST", leases, f.token, grantBody("migration", opA, "orders-reports", 30), nil), 409, "instance_mismatch")

	// Only the hash is stored.
	l, err := f.kube.CoordinationV1().Leases(f.ns).Get(f.ctx, "bloodraven-deploy.orders.migration."+opA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := fmt.Sprint(l.Annotations, l.Spec)
	if strings.Contains(stored, tok2) || !strings.Contains(stored, leasestore.HashToken(tok2)) {
		t.Fatal("the Lease must hold the token's hash and never the token")
	}
	// Owned by the group: tombstones and records go when the group goes.
	grp, _ := f.ship.ShipstreamV1alpha1().MysqlFailoverGroups(f.ns).Get(f.ctx, "orders", metav1.GetOptions{})
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != grp.UID || l.OwnerReferences[0].Kind != "MysqlFailoverGroup" {
		t.Fatalf("owner references %+v, want the group", l.OwnerReferences)
	}
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds < 29 || *l.Spec.LeaseDurationSeconds > 30 {
		t.Fatalf("leaseDurationSeconds %v, want the 30 s projection", l.Spec.LeaseDurationSeconds)
	}

	// Release needs the header and the right token; then it is idempotent.
	f.expect(f.do(f.op, "DELETE", mig, f.token, nil, nil), 400, "invalid_request")
	f.expect(f.do(f.op, "DELETE", mig, f.token, nil, map[string]string{deployapi.LeaseTokenHeader: tok1}), 403, "lease_token_mismatch")
	rel := f.do(f.op, "DELETE", mig, f.token, nil, map[string]string{deployapi.LeaseTokenHeader: tok2})
	f.expect(rel, 204, "")
	if rel.raw != "" {
		t.Fatalf("204 with a body: %q", rel.raw)
	}
	f.expect(f.do(f.op, "DELETE", mig, f.token, nil, map[string]string{deployapi.LeaseTokenHeader: tok2}), 204, "")
	f.expect(f.do(f.op, "DELETE", leasePath("orders", "failover-hold", opB), f.token, nil, map[string]string{deployapi.LeaseTokenHeader: "anything"}), 204, "")
	f.expect(f.do(f.op, "PUT", mig, f.token, map[string]any{"token": tok2}, nil), 404, "not_found")
	l, err = f.kube.CoordinationV1().Leases(f.ns).Get(f.ctx, "bloodraven-deploy.orders.migration."+opA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *l.Spec.LeaseDurationSeconds != 1 {
		t.Fatalf("a released record projects %d s, want the minimum 1", *l.Spec.LeaseDurationSeconds)
	}
	// The mutex is free for another operation at once.
	f.expect(f.do(f.op, "POST", leases, f.token, grantBody("migration", opB, "orders-app", 30), nil), 201, "")
}

// checkTTL checks a grant's or renewal's expiresAt against the clamp.
func checkTTL(t *testing.T, r response, before time.Time, seconds int) {
	t.Helper()
	if r.body["ttlSeconds"] != float64(seconds) {
		t.Fatalf("ttlSeconds %v, want %d", r.body["ttlSeconds"], seconds)
	}
	exp, err := time.Parse(time.RFC3339Nano, r.str("expiresAt"))
	if err != nil {
		t.Fatalf("expiresAt %q: %v", r.str("expiresAt"), err)
	}
	d := exp.Sub(before)
	want := time.Duration(seconds) * time.Second
	if d < want || d > want+5*time.Second {
		t.Fatalf("expiresAt is %s after the request, want about %s", d, want)
	}
}

func TestMigrationMutexAndHolds(t *testing.T) {
	f := newFixture(t)
	leases := "/deploy/v1/groups/orders/leases"
	f.database(f.ns, "orders-reports", "orders", client(f.appNS, "deployer"))

	// A hold needs the migration lease first.
	f.expect(f.do(f.op, "POST", leases, f.token, grantBody("failover-hold", opA, "orders-app", 30), nil), 409, "not_migration_holder")
	a := f.do(f.op, "POST", leases, f.token, grantBody("migration", opA, "orders-app", 60), nil)
	f.expect(a, 201, "")
	// One migration lease per group.
	f.expect(f.do(f.op, "POST", leases, f.token, grantBody("migration", opB, "orders-reports", 30), nil), 409, "lease_held")
	// Holds only for the holder's operation and instance.
	f.expect(f.do(f.op, "POST", leases, f.token, grantBody("failover-hold", opB, "orders-app", 30), nil), 409, "not_migration_holder")
	f.expect(f.do(f.op, "POST", leases, f.token, grantBody("failover-hold", opA, "orders-reports", 30), nil), 409, "not_migration_holder")
	// A same-operation hold re-grant: a new token (ttlSeconds clamped to
	// 120), and the previous hold token stops working.
	before := f.clock.Now()
	h0 := f.do(f.op, "POST", leases, f.token, grantBody("failover-hold", opA, "orders-app", 1000), nil)
	f.expect(h0, 201, "")
	checkTTL(t, h0, before, 120)
	if h0.str("kind") != "failover-hold" || h0.str("operationId") != opA || h0.str("instance") != "orders-app" {
		t.Fatalf("hold grant body: %s", h0.raw)
	}
	h := f.do(f.op, "POST", leases, f.token, grantBody("failover-hold", opA, "orders-app", 20), nil)
	f.expect(h, 201, "")
	if h.str("token") == h0.str("token") {
		t.Fatal("hold re-grant returned the same token")
	}
	f.expect(f.do(f.op, "PUT", leasePath("orders", "failover-hold", opA), f.token, map[string]any{"token": h0.str("token"), "ttlSeconds": 20}, nil), 403, "lease_token_mismatch")
	f.expect(f.do(f.op, "DELETE", leasePath("orders", "failover-hold", opA), f.token, nil, map[string]string{deployapi.LeaseTokenHeader: h0.str("token")}), 403, "lease_token_mismatch")

	doc := f.do(f.op, "GET", "/deploy/v1/groups/orders", f.token, nil, nil)
	f.expect(doc, 200, "")
	if n := len(doc.body["leases"].([]any)); n != 2 {
		t.Fatalf("document lists %d leases, want 2: %s", n, doc.raw)
	}
	if strings.Contains(doc.raw, a.str("token")) || strings.Contains(doc.raw, "sha256:") {
		t.Fatal("the document shows a token or hash")
	}

	// The holds query planned failover calls.
	g, _ := f.ship.ShipstreamV1alpha1().MysqlFailoverGroups(f.ns).Get(f.ctx, "orders", metav1.GetOptions{})
	ref := leasestore.GroupRef{Namespace: f.ns, Name: "orders", UID: g.UID}
	sum, err := f.op.store.Holds(f.ctx, ref, 3)
	if err != nil {
		t.Fatal(err)
	}
	hExp, _ := time.Parse(time.RFC3339Nano, h.str("expiresAt"))
	if !sum.Held || sum.Count != 1 || sum.OperationID != opA || sum.Instance != "orders-app" || !sum.EarliestExpiry.Equal(hExp) {
		t.Fatalf("holds summary %+v, want the one hold of %s until %s", sum, opA, hExp)
	}
	// A migration lease alone holds nothing: release the hold.
	f.expect(f.do(f.op, "DELETE", leasePath("orders", "failover-hold", opA), f.token, nil, map[string]string{deployapi.LeaseTokenHeader: h.str("token")}), 204, "")
	if sum, _ = f.op.store.Holds(f.ctx, ref, 3); sum.Held {
		t.Fatalf("a released hold still counts: %+v", sum)
	}
	h = f.do(f.op, "POST", leases, f.token, grantBody("failover-hold", opA, "orders-app", 20), nil)
	f.expect(h, 201, "")

	// A persisted planned-failover claim: no new holds (423), but the
	// existing hold and migration lease stay renewable while it is deferred.
	f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) {
		s.PlannedFailover = &v1alpha1.PlannedFailoverStatus{RunID: "run-1", TargetSite: "pdx", Phase: v1alpha1.PlannedFailoverAdmitting}
	})
	r := f.do(f.op, "POST", leases, f.token, grantBody("failover-hold", opA, "orders-app", 20), nil)
	f.expect(r, 423, "unstable")
	if r.str("unstableReason") != "PlannedFailover" {
		t.Fatalf("423 reason %s", r.raw)
	}
	f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) {
		s.PlannedFailover.Phase = v1alpha1.PlannedFailoverDeferred
		s.PlannedFailover.Admission = &v1alpha1.PlannedFailoverAdmission{DeferReason: "DeploymentHold"}
	})
	f.expect(f.do(f.op, "PUT", leasePath("orders", "failover-hold", opA), f.token, map[string]any{"token": h.str("token"), "ttlSeconds": 20}, nil), 200, "")
	f.expect(f.do(f.op, "PUT", leasePath("orders", "migration", opA), f.token, map[string]any{"token": a.str("token"), "ttlSeconds": 60}, nil), 200, "")
	// Once the run fences, renewals answer 423 instead of extending.
	f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) { s.PlannedFailover.Phase = v1alpha1.PlannedFailoverFencing })
	f.expect(f.do(f.op, "PUT", leasePath("orders", "migration", opA), f.token, map[string]any{"token": a.str("token")}, nil), 423, "unstable")
	f.expect(f.do(f.op, "POST", leases, f.token, grantBody("migration", opB, "orders-reports", 30), nil), 423, "unstable")
}

func TestExpiryOnTheOperatorClock(t *testing.T) {
	f := newFixture(t)
	leases := "/deploy/v1/groups/orders/leases"
	f.database(f.ns, "orders-reports", "orders", client(f.appNS, "deployer"))
	a := f.do(f.op, "POST", leases, f.token, grantBody("migration", opA, "orders-app", 5), nil)
	f.expect(a, 201, "")
	h := f.do(f.op, "POST", leases, f.token, grantBody("failover-hold", opA, "orders-app", 30), nil)
	f.expect(h, 201, "")
	f.clock.Advance(4 * time.Second)
	r := f.do(f.op, "PUT", leasePath("orders", "migration", opA), f.token, map[string]any{"token": a.str("token"), "ttlSeconds": 5}, nil)
	f.expect(r, 200, "")
	if _, ok := r.body["token"]; ok {
		t.Fatalf("a renewal returned a token: %s", r.raw)
	}
	f.clock.Advance(5*time.Second + 100*time.Millisecond) // now > expiresAt
	f.expect(f.do(f.op, "PUT", leasePath("orders", "migration", opA), f.token, map[string]any{"token": a.str("token"), "ttlSeconds": 5}, nil), 404, "not_found")
	// The hold outlives its migration lease only until its own expiry: it
	// cannot be renewed any more.
	f.expect(f.do(f.op, "PUT", leasePath("orders", "failover-hold", opA), f.token, map[string]any{"token": h.str("token"), "ttlSeconds": 30}, nil), 404, "not_found")
	f.expect(f.do(f.op, "DELETE", leasePath("orders", "failover-hold", opA), f.token, nil, map[string]string{deployapi.LeaseTokenHeader: h.str("token")}), 204, "")
	doc := f.do(f.op, "GET", "/deploy/v1/groups/orders", f.token, nil, nil)
	if n := len(doc.body["leases"].([]any)); n != 0 {
		t.Fatalf("an expired lease is listed: %s", doc.raw)
	}
	// Another operation waits out the documented clock-skew grace (2 s here).
	f.expect(f.do(f.op, "POST", leases, f.token, grantBody("migration", opB, "orders-reports", 30), nil), 409, "lease_held")
	f.clock.Advance(2 * time.Second)
	f.expect(f.do(f.op, "POST", leases, f.token, grantBody("migration", opB, "orders-reports", 30), nil), 201, "")
	// The expired holder cannot renew into the new holder's mutex.
	f.expect(f.do(f.op, "PUT", leasePath("orders", "migration", opA), f.token, map[string]any{"token": a.str("token")}, nil), 404, "not_found")
}

func TestLeasesSurviveOperatorRestart(t *testing.T) {
	f := newFixture(t)
	a := f.do(f.op, "POST", "/deploy/v1/groups/orders/leases", f.token, grantBody("migration", opA, "orders-app", 60), nil)
	f.expect(a, 201, "")
	h := f.do(f.op, "POST", "/deploy/v1/groups/orders/leases", f.token, grantBody("failover-hold", opA, "orders-app", 60), nil)
	f.expect(h, 201, "")
	f.op.server.Close() // the first operator goes away

	next := f.newInstance() // a new process: new clients, new store, new server
	f.expect(f.do(next, "PUT", leasePath("orders", "migration", opA), f.token, map[string]any{"token": a.str("token"), "ttlSeconds": 60}, nil), 200, "")
	f.expect(f.do(next, "PUT", leasePath("orders", "failover-hold", opA), f.token, map[string]any{"token": h.str("token"), "ttlSeconds": 60}, nil), 200, "")
	f.database(f.ns, "orders-reports", "orders", client(f.appNS, "deployer"))
	f.expect(f.do(next, "POST", "/deploy/v1/groups/orders/leases", f.token, grantBody("migration", opB, "orders-reports", 30), nil), 409, "lease_held")
}

func TestConcurrentGrantsThroughTwoInstances(t *testing.T) {
	f := newFixture(t)
	second := f.newInstance()
	instances := []*instance{f.op, second}
	const contenders = 10
	ops := make([]string, contenders)
	for i := range ops {
		ops[i] = fmt.Sprintf("%08d-0000-4000-8000-%012d", i+10, i)
	}
	for round := range 3 {
		var wg sync.WaitGroup
		results := make([]response, contenders)
		start := make(chan struct{})
		for i := range contenders {
			wg.Go(func() {
				<-start
				results[i] = f.do(instances[i%2], "POST", "/deploy/v1/groups/orders/leases", f.token, grantBody("migration", ops[i], "orders-app", 30), nil)
			})
		}
		close(start)
		wg.Wait()
		var winners []int
		for i, r := range results {
			switch {
			case r.status == http.StatusCreated:
				winners = append(winners, i)
			case r.status == http.StatusConflict && r.str("error") == "lease_held":
			default:
				t.Fatalf("round %d contender %d: %d %s", round, i, r.status, r.raw)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d grants succeeded, want exactly 1", round, len(winners))
		}
		w := winners[0]
		// The winner renews through the other instance; then releases so
		// the next round contends again.
		other := instances[(w+1)%2]
		f.expect(f.do(other, "PUT", leasePath("orders", "migration", ops[w]), f.token, map[string]any{"token": results[w].str("token")}, nil), 200, "")
		f.expect(f.do(other, "DELETE", leasePath("orders", "migration", ops[w]), f.token, nil, map[string]string{deployapi.LeaseTokenHeader: results[w].str("token")}), 204, "")
	}
}

func TestNotLeader(t *testing.T) {
	f := newFixture(t)
	g := f.do(f.op, "POST", "/deploy/v1/groups/orders/leases", f.token, grantBody("migration", opA, "orders-app", 30), nil)
	f.expect(g, 201, "")
	follower := f.newInstance(func(c *deployapi.Config) { c.IsLeader = func() bool { return false } })
	mig := leasePath("orders", "migration", opA)
	for _, r := range []response{
		f.do(follower, "GET", "/deploy/v1/groups/orders", f.token, nil, nil),
		f.do(follower, "POST", "/deploy/v1/groups/orders/leases", f.token, grantBody("migration", opB, "orders-app", 30), nil),
		f.do(follower, "PUT", mig, f.token, map[string]any{"token": g.str("token")}, nil),
		f.do(follower, "DELETE", mig, f.token, nil, map[string]string{deployapi.LeaseTokenHeader: g.str("token")}),
		f.do(follower, "GET", "/deploy/v1/groups/orders", "", nil, nil), // before authentication too
	} {
		f.expect(r, 503, "not_leader")
		if r.raw != `{"error":"not_leader"}`+"\n" {
			t.Fatalf("503 body %q", r.raw)
		}
	}
	// The follower changed nothing: the lease is still the leader's to renew.
	f.expect(f.do(f.op, "PUT", mig, f.token, map[string]any{"token": g.str("token")}, nil), 200, "")
	for _, rec := range f.logRecords() {
		if rec["status"] == float64(503) && rec["group"] != "" {
			t.Fatalf("a follower's answer logged group %q", rec["group"])
		}
	}
}

func TestHoldWithdrawnWhenClaimAppearsDuringGrant(t *testing.T) {
	f := newFixture(t)
	a := f.do(f.op, "POST", "/deploy/v1/groups/orders/leases", f.token, grantBody("migration", opA, "orders-app", 60), nil)
	f.expect(a, 201, "")
	g, _ := f.ship.ShipstreamV1alpha1().MysqlFailoverGroups(f.ns).Get(f.ctx, "orders", metav1.GetOptions{})
	ref := leasestore.GroupRef{Namespace: f.ns, Name: "orders", UID: g.UID}
	// The recheck runs after the hold is persisted: here planned admission
	// persists its claim in between, as a concurrent admission would.
	_, err := f.op.store.Grant(f.ctx, leasestore.GrantRequest{
		Group: ref, Kind: leasestore.KindFailoverHold, OperationID: opA, Instance: "orders-app",
		TTL: 30 * time.Second, TopologyGeneration: 3,
		Recheck: func(ctx context.Context) error {
			f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) {
				s.PlannedFailover = &v1alpha1.PlannedFailoverStatus{RunID: "run-9", TargetSite: "pdx", Phase: v1alpha1.PlannedFailoverAdmitting}
			})
			return errClaimSeen
		},
	})
	if err != errClaimSeen {
		t.Fatalf("grant error %v, want the recheck's", err)
	}
	sum, err := f.op.store.Holds(f.ctx, ref, 3)
	if err != nil || sum.Held {
		t.Fatalf("a withdrawn hold still counts: %+v %v", sum, err)
	}
}

// storedExpiry reads a record's expiresAt from the API server.
func (f *fixture) storedExpiry(kind leasestore.Kind, op string) time.Time {
	f.t.Helper()
	r, ok, err := f.op.store.Get(f.ctx, f.ns, "orders", kind, op)
	if err != nil || !ok {
		f.t.Fatalf("read %s %s: %v (found %v)", kind, op, err, ok)
	}
	return r.ExpiresAt
}

// TestUnconfirmedTransitionAnswers423AndExtendsNothing: while an active-site
// change is recorded but not confirmed, renewals and grants answer 423 with
// unstableReason, and a 423 renewal leaves the stored expiry where it was.
func TestUnconfirmedTransitionAnswers423AndExtendsNothing(t *testing.T) {
	f := newFixture(t)
	leases := "/deploy/v1/groups/orders/leases"
	a := f.do(f.op, "POST", leases, f.token, grantBody("migration", opA, "orders-app", 60), nil)
	f.expect(a, 201, "")
	h := f.do(f.op, "POST", leases, f.token, grantBody("failover-hold", opA, "orders-app", 60), nil)
	f.expect(h, 201, "")
	migExp, holdExp := f.storedExpiry(leasestore.KindMigration, opA), f.storedExpiry(leasestore.KindFailoverHold, opA)

	f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) {
		s.Transition = &v1alpha1.Transition{ID: "t-3", Kind: v1alpha1.TransitionAutomatic, SourceSite: "iad", TargetSite: "pdx", TopologyGeneration: 4, Step: v1alpha1.StepFencingSource, StartTime: metav1.Now()}
	})
	f.clock.Advance(10 * time.Second) // a successful renewal would move expiresAt
	for _, r := range []response{
		f.do(f.op, "PUT", leasePath("orders", "migration", opA), f.token, map[string]any{"token": a.str("token"), "ttlSeconds": 60}, nil),
		f.do(f.op, "PUT", leasePath("orders", "failover-hold", opA), f.token, map[string]any{"token": h.str("token"), "ttlSeconds": 60}, nil),
		f.do(f.op, "POST", leases, f.token, grantBody("failover-hold", opA, "orders-app", 60), nil),
		f.do(f.op, "POST", leases, f.token, grantBody("migration", opB, "orders-app", 60), nil),
	} {
		f.expect(r, 423, "unstable")
		if r.str("unstableReason") != "TopologyTransition" || r.str("expiresAt") != "" || r.str("token") != "" {
			t.Fatalf("423 body %s", r.raw)
		}
	}
	if got := f.storedExpiry(leasestore.KindMigration, opA); !got.Equal(migExp) {
		t.Fatalf("a 423 renewal moved the migration expiry from %s to %s", migExp, got)
	}
	if got := f.storedExpiry(leasestore.KindFailoverHold, opA); !got.Equal(holdExp) {
		t.Fatalf("a 423 renewal moved the hold expiry from %s to %s", holdExp, got)
	}

	// Confirmed without a generation change: the same tokens renew again
	// (the refused hold re-grant replaced nothing).
	f.editStatus(f.ns, "orders", func(s *v1alpha1.MysqlFailoverGroupStatus) { s.Transition = nil })
	f.expect(f.do(f.op, "PUT", leasePath("orders", "migration", opA), f.token, map[string]any{"token": a.str("token"), "ttlSeconds": 60}, nil), 200, "")
	f.expect(f.do(f.op, "PUT", leasePath("orders", "failover-hold", opA), f.token, map[string]any{"token": h.str("token"), "ttlSeconds": 60}, nil), 200, "")
}

// TestMutexAfterLeaderHandoverWaitsOutClockSkew: the operator that granted
// the lease goes away; the new leader's clock runs ahead of the old one's
// (by less than the 2 s skew these tests configure). It already sees the
// lease expired, yet hands the mutex to another operation only once
// expiresAt plus the skew has passed on its own clock.
func TestMutexAfterLeaderHandoverWaitsOutClockSkew(t *testing.T) {
	f := newFixture(t)
	leases := "/deploy/v1/groups/orders/leases"
	f.database(f.ns, "orders-reports", "orders", client(f.appNS, "deployer"))
	a := f.do(f.op, "POST", leases, f.token, grantBody("migration", opA, "orders-app", 5), nil)
	f.expect(a, 201, "")
	exp, err := time.Parse(time.RFC3339Nano, a.str("expiresAt"))
	if err != nil {
		t.Fatal(err)
	}
	f.op.server.Close()

	ahead := &clock{}
	next := f.newInstanceOn(ahead)
	// The old leader's clock reads expiresAt-1s, the new one's expiresAt+0.5s.
	f.clock.Set(exp.Add(-time.Second))
	ahead.Set(exp.Add(500 * time.Millisecond))
	f.expect(f.do(next, "PUT", leasePath("orders", "migration", opA), f.token, map[string]any{"token": a.str("token")}, nil), 404, "not_found")
	f.expect(f.do(next, "POST", leases, f.token, grantBody("migration", opB, "orders-reports", 30), nil), 409, "lease_held")
	// Past expiresAt plus the skew on the new leader's clock.
	ahead.Set(exp.Add(2*time.Second + 100*time.Millisecond))
	b := f.do(next, "POST", leases, f.token, grantBody("migration", opB, "orders-reports", 30), nil)
	f.expect(b, 201, "")
	if b.str("operationId") != opB {
		t.Fatalf("grant body %s", b.raw)
	}
}
