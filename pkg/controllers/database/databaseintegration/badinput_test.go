package databaseintegration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/database"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// A missing owner Secret: Failed with an Event, nothing created; the
// Secret appearing makes it Ready.
func TestMissingOwnerSecret(t *testing.T) {
	e := newEnv(t, 1)
	e.group("iad")
	e.database("orders-db", "orders", owned("owner-pw"))
	db := e.wait("orders-db", database.PhaseFailed, v1alpha1.ReasonOwnerSecretInvalid)
	if !strings.Contains(db.Status.Message, "owner-pw") {
		t.Fatalf("message %q does not name the Secret", db.Status.Message)
	}
	e.event("orders-db", v1alpha1.EventOwnerSecretReadFailed, corev1.EventTypeWarning)
	if e.schemas("iad")["orders"] || e.users("iad")[ownerUser] {
		t.Fatal("something was created although the owner Secret is missing")
	}
	e.secret("owner-pw", map[string]string{"password": ownerPass1})
	e.wait("orders-db", database.PhaseReady, v1alpha1.ReasonApplied)
	if !e.canLogin("iad", ownerUser, ownerPass1) {
		t.Fatal("owner cannot log in")
	}
}

// An owner named like an account of spec.credentials is refused, and
// that account keeps its password and grants.
func TestOwnerCollidesWithManagedAccount(t *testing.T) {
	e := newEnv(t, 1)
	e.secret("owner-pw", map[string]string{"password": "hijack"})
	e.group("iad")
	before := e.grants("iad", simtest.AppUser)
	e.database("orders-db", "orders", func(db *v1alpha1.MysqlDatabase) {
		db.Spec.Owner = &v1alpha1.DatabaseOwner{Username: simtest.AppUser, PasswordSecretKeyRef: v1alpha1.PasswordSecretKeySelector{Name: "owner-pw"}}
	})
	e.wait("orders-db", database.PhaseFailed, v1alpha1.ReasonOwnerConflict)
	e.event("orders-db", v1alpha1.EventOwnerUserRefused, corev1.EventTypeWarning)
	if !e.canLogin("iad", simtest.AppUser, simtest.AppPass) || e.canLogin("iad", simtest.AppUser, "hijack") {
		t.Fatal("the app account's password changed")
	}
	if after := e.grants("iad", simtest.AppUser); after != before {
		t.Fatalf("the app account's grants changed:\n%s\nwas\n%s", after, before)
	}
	if e.schemas("iad")["orders"] {
		t.Fatal("schema created for a refused object")
	}
}

// An account of the owner's name that exists with another password is
// not taken over.
func TestExistingForeignOwnerAccount(t *testing.T) {
	e := newEnv(t, 1)
	if _, err := e.admin("iad").DB().Exec("CREATE USER '" + ownerUser + "'@'%' IDENTIFIED BY 'theirs'"); err != nil {
		t.Fatal(err)
	}
	e.secret("owner-pw", map[string]string{"password": ownerPass1})
	e.group("iad")
	e.database("orders-db", "orders", owned("owner-pw"))
	e.wait("orders-db", database.PhaseFailed, v1alpha1.ReasonOwnerConflict)
	e.event("orders-db", v1alpha1.EventOwnerUserRefused, corev1.EventTypeWarning)
	if !e.canLogin("iad", ownerUser, "theirs") || e.canLogin("iad", ownerUser, ownerPass1) {
		t.Fatal("the existing account's password changed")
	}
	if strings.Contains(e.grants("iad", ownerUser), "`orders`") {
		t.Fatal("the existing account was granted the schema")
	}
}

// Two objects with one databaseName: the younger is Failed and applies
// nothing; deleting it (Drop) drops nothing of the older's.
func TestDuplicateDatabaseName(t *testing.T) {
	e := newEnv(t, 1)
	e.secret("owner-pw", map[string]string{"password": ownerPass1})
	e.secret("other-pw", map[string]string{"password": "other"})
	e.group("iad")
	e.database("first", "orders", owned("owner-pw"))
	e.wait("first", database.PhaseReady, v1alpha1.ReasonApplied)
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has second precision
	e.database("second", "orders", dropPolicy, func(db *v1alpha1.MysqlDatabase) {
		db.Spec.CharacterSet = "latin1"
		db.Spec.Owner = &v1alpha1.DatabaseOwner{Username: "second_owner", PasswordSecretKeyRef: v1alpha1.PasswordSecretKeySelector{Name: "other-pw"}}
	})
	db := e.wait("second", database.PhaseFailed, v1alpha1.ReasonDuplicateDatabaseName)
	if !strings.Contains(db.Status.Message, `"first"`) {
		t.Fatalf("message %q does not name the older object", db.Status.Message)
	}
	e.event("second", v1alpha1.EventDatabaseNameConflicted, corev1.EventTypeWarning)
	if e.users("iad")["second_owner"] {
		t.Fatal("the duplicate created its owner")
	}
	e.delete("second")
	e.gone("second")
	if !e.schemas("iad")["orders"] {
		t.Fatal("deleting the duplicate dropped the schema")
	}
	if s, _, _ := e.admin("iad").SchemaSettings(context.Background(), "orders"); s.CharacterSet != "utf8mb4" {
		t.Fatalf("the duplicate's settings reached the schema: %+v", s)
	}
	e.event("second", v1alpha1.EventDatabaseDropSkipped, corev1.EventTypeNormal)
}
