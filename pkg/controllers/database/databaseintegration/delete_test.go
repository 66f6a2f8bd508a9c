package databaseintegration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/database"
)

// Retain (the default) leaves schema and owner; Drop drops both.
func TestDeletionRetainAndDrop(t *testing.T) {
	e := newEnv(t, 1)
	e.secret("owner-pw", map[string]string{"password": ownerPass1})
	e.group("iad")
	e.database("kept", "kept", owned("owner-pw"))
	e.wait("kept", database.PhaseReady, v1alpha1.ReasonApplied)
	e.delete("kept")
	e.gone("kept")
	if !e.schemas("iad")["kept"] || !e.users("iad")[ownerUser] {
		t.Fatalf("Retain dropped something: schemas %v, owner %v", e.schemas("iad"), e.users("iad")[ownerUser])
	}

	e.database("dropped", "dropped", dropPolicy, func(db *v1alpha1.MysqlDatabase) {
		db.Spec.Owner = &v1alpha1.DatabaseOwner{Username: "dropped_owner", PasswordSecretKeyRef: v1alpha1.PasswordSecretKeySelector{Name: "owner-pw"}}
	})
	e.wait("dropped", database.PhaseReady, v1alpha1.ReasonApplied)
	e.delete("dropped")
	e.gone("dropped")
	if e.schemas("iad")["dropped"] || e.users("iad")["dropped_owner"] {
		t.Fatalf("Drop left schema %v / owner %v", e.schemas("iad")["dropped"], e.users("iad")["dropped_owner"])
	}
	e.event("dropped", v1alpha1.EventDatabaseDropped, corev1.EventTypeNormal)
	e.event("dropped", v1alpha1.EventOwnerUserDropped, corev1.EventTypeNormal)
	if !e.schemas("iad")["kept"] {
		t.Fatal("dropping one schema took another")
	}
}

// Drop never takes what another MysqlDatabase still declares or claims,
// and a schema already gone is DatabaseDropSkipped.
func TestDropRefusedWhileDeclaredOrClaimed(t *testing.T) {
	e := newEnv(t, 1)
	e.secret("owner-pw", map[string]string{"password": ownerPass1})
	e.group("iad")
	e.database("first", "orders", dropPolicy, owned("owner-pw"))
	e.wait("first", database.PhaseReady, v1alpha1.ReasonApplied)
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has second precision: "second" is younger
	e.database("second", "orders", dropPolicy)
	e.wait("second", database.PhaseFailed, v1alpha1.ReasonDuplicateDatabaseName)
	e.event("second", v1alpha1.EventDatabaseNameConflicted, corev1.EventTypeWarning)
	e.database("billing", "billing", dropPolicy, owned("owner-pw"))
	e.wait("billing", database.PhaseReady, v1alpha1.ReasonApplied)
	if g := e.grants("iad", ownerUser); !strings.Contains(g, "`billing`.*") || !strings.Contains(g, "`orders`.*") {
		t.Fatalf("the shared owner lacks a schema:\n%s", g)
	}

	e.delete("first")
	e.gone("first")
	e.event("first", v1alpha1.EventDatabaseDropRefused, corev1.EventTypeWarning)
	e.event("first", v1alpha1.EventOwnerUserDropSkipped, corev1.EventTypeWarning)
	if !e.schemas("iad")["orders"] || !e.users("iad")[ownerUser] {
		t.Fatal("a declared schema or a claimed owner was dropped")
	}
	// The duplicate takes over the schema it found (adopted: it existed).
	if db := e.wait("second", database.PhaseReady, v1alpha1.ReasonApplied); !db.Status.Adopted {
		t.Fatal("the second object did not record the schema as adopted")
	}
	// The owner keeps only billing now.
	deadline := time.Now().Add(10 * time.Second)
	for strings.Contains(e.grants("iad", ownerUser), "`orders`") {
		if time.Now().After(deadline) {
			t.Fatalf("owner still holds orders:\n%s", e.grants("iad", ownerUser))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Adopted: not dropped without the annotation naming its UID.
	e.delete("second")
	e.gone("second")
	e.event("second", v1alpha1.EventDatabaseDropRefused, corev1.EventTypeWarning)
	if !e.schemas("iad")["orders"] {
		t.Fatal("an adopted schema was dropped without the confirming annotation")
	}

	// Nothing left to drop: the schema went by hand (no event wakes the
	// controller before the delete, the resync is long).
	if err := e.admin("iad").DropDatabase(context.Background(), "billing"); err != nil {
		t.Fatal(err)
	}
	e.delete("billing")
	e.gone("billing")
	e.event("billing", v1alpha1.EventDatabaseDropSkipped, corev1.EventTypeNormal)
	if _, dropped := e.events("billing")[v1alpha1.EventDatabaseDropped]; dropped {
		t.Fatal("DatabaseDropped for a schema that was not there")
	}
	e.event("billing", v1alpha1.EventOwnerUserDropped, corev1.EventTypeNormal)
	if e.schemas("iad")["billing"] || e.users("iad")[ownerUser] {
		t.Fatal("billing's schema or owner remained")
	}
}

// An adopted schema is dropped when the annotation names the object's UID.
func TestDropAdoptedConfirmed(t *testing.T) {
	e := newEnv(t, 1)
	if err := e.admin("iad").CreateDatabase(context.Background(), "legacy", "", ""); err != nil {
		t.Fatal(err)
	}
	e.group("iad")
	e.database("legacy", "legacy", dropPolicy, func(db *v1alpha1.MysqlDatabase) { db.Spec.CharacterSet = "" })
	db := e.wait("legacy", database.PhaseReady, v1alpha1.ReasonApplied)
	if !db.Status.Adopted {
		t.Fatal("not adopted")
	}
	db.Annotations = map[string]string{database.AnnotationDropAdopted: string(db.UID)}
	if _, err := e.ke.Ship.ShipstreamV1alpha1().MysqlDatabases(e.ns).Update(context.Background(), db, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.delete("legacy")
	e.gone("legacy")
	if e.schemas("iad")["legacy"] {
		t.Fatal("the confirmed adopted schema was not dropped")
	}
	e.event("legacy", v1alpha1.EventDatabaseDropped, corev1.EventTypeNormal)
}

// A group without a writable primary holds a drop for DropWait, then
// releases the object and leaves everything (DatabaseDropTimedOut); a
// group that is gone releases at once (DatabaseDropSkipped).
func TestDeletionDoesNotBlockForever(t *testing.T) {
	e := newEnv(t, 1)
	e.group("iad")
	e.database("held", "held", dropPolicy)
	e.database("orphan", "orphan", dropPolicy)
	e.wait("held", database.PhaseReady, v1alpha1.ReasonApplied)
	e.wait("orphan", database.PhaseReady, v1alpha1.ReasonApplied)
	e.setActive("iad", true) // a transition in flight
	start := time.Now()
	e.delete("held")
	e.waitMsg("held", database.PhaseDeleting, v1alpha1.ReasonDeleting, "waits until")
	e.gone("held")
	// The wait counts from metadata.deletionTimestamp, which the API
	// server stores in whole seconds (rounded down): the release may come
	// up to a second before dropWait has passed since the delete.
	if waited := time.Since(start); waited < dropWait-time.Second-200*time.Millisecond {
		t.Fatalf("released after %s, before the drop wait of %s (less the deletionTimestamp's rounding)", waited, dropWait)
	}
	e.event("held", v1alpha1.EventDatabaseDropTimedOut, corev1.EventTypeWarning)
	if !e.schemas("iad")["held"] {
		t.Fatal("schema dropped although the group had no stable writable primary")
	}

	if err := e.ke.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Delete(context.Background(), groupName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.wait("orphan", database.PhasePending, v1alpha1.ReasonGroupNotYetCreated)
	e.delete("orphan")
	e.gone("orphan")
	e.event("orphan", v1alpha1.EventDatabaseDropSkipped, corev1.EventTypeNormal)
}
