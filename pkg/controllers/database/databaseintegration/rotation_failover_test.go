package databaseintegration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/database"
)

// A changed owner password is rotated: both work during the overlap, then
// only the new one.
func TestOwnerPasswordRotation(t *testing.T) {
	e := newEnv(t, 1)
	e.secret("owner-pw", map[string]string{"password": ownerPass1})
	e.group("iad")
	e.database("orders-db", "orders", owned("owner-pw"))
	e.wait("orders-db", database.PhaseReady, v1alpha1.ReasonApplied)
	e.secret("owner-pw", map[string]string{"password": "owner-pw-2"})
	e.event("orders-db", v1alpha1.EventOwnerPasswordRotationStarted, corev1.EventTypeNormal)
	// The overlap: both passwords authenticate.
	if !e.canLogin("iad", ownerUser, "owner-pw-2") || !e.canLogin("iad", ownerUser, ownerPass1) {
		t.Fatalf("during the overlap: new %v old %v", e.canLogin("iad", ownerUser, "owner-pw-2"), e.canLogin("iad", ownerUser, ownerPass1))
	}
	e.event("orders-db", v1alpha1.EventOwnerPasswordRotated, corev1.EventTypeNormal)
	if e.canLogin("iad", ownerUser, ownerPass1) {
		t.Fatal("the old password still works after the rotation")
	}
	if !e.canLogin("iad", ownerUser, "owner-pw-2") {
		t.Fatal("the new password does not work")
	}
	db := e.wait("orders-db", database.PhaseReady, v1alpha1.ReasonApplied)
	if strings.Contains(db.Status.Message, "owner-pw") || strings.Contains(db.Status.Message, ownerPass1) {
		t.Fatalf("a password reached the status: %q", db.Status.Message)
	}
}

// Across a failover the database stays Ready and nothing is written on the
// new active site: what it holds arrived by replication.
func TestReadyAcrossFailover(t *testing.T) {
	e := newEnv(t, 2)
	e.secret("owner-pw", map[string]string{"password": ownerPass1})
	e.group("iad")
	e.database("orders-db", "orders", owned("owner-pw"))
	e.wait("orders-db", database.PhaseReady, v1alpha1.ReasonApplied)
	ctx := context.Background()
	iad, pdx := e.admin("iad"), e.admin("pdx")
	// Wait until pdx has everything iad executed.
	want := e.sites["iad"].Snapshot().Executed
	deadline := time.Now().Add(10 * time.Second)
	for !want.IsSubsetOf(e.sites["pdx"].Snapshot().Executed) {
		if time.Now().After(deadline) {
			t.Fatalf("pdx never caught up: %s", e.sites["pdx"].Snapshot())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The failover, as the topology manager runs it: a transition in
	// flight, the old primary fenced, the new one promoted.
	e.setActive("iad", true)
	if err := iad.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	e.touch()
	time.Sleep(300 * time.Millisecond)
	e.wait("orders-db", database.PhaseReady, v1alpha1.ReasonApplied)
	if err := pdx.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	before := e.sites["pdx"].Snapshot().Executed
	e.setActive("pdx", false)
	e.touch()
	time.Sleep(500 * time.Millisecond) // reconciles on the new active site
	db := e.waitMsg("orders-db", database.PhaseReady, v1alpha1.ReasonApplied, "pdx")
	if after := e.sites["pdx"].Snapshot().Executed; !after.Equal(before) {
		t.Fatalf("the new active site executed %s after the failover: something was re-applied", after.OneLine())
	}
	if !e.schemas("pdx")["orders"] || !e.canLogin("pdx", ownerUser, ownerPass1) {
		t.Fatal("the new active site lacks the schema or the owner")
	}
	if _, ok := e.events("orders-db")[v1alpha1.EventDatabaseApplyFailed]; ok {
		t.Fatal("a failure was recorded across the failover")
	}
	_ = db
}
