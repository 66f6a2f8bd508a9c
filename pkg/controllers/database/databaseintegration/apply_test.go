package databaseintegration

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/database"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// Pending while the group is missing or has no status, then Ready with
// the schema created with its character set and no COLLATE (unset), and an
// owner that can work in that schema and nowhere else.
func TestPhasesAndApply(t *testing.T) {
	e := newEnv(t, 1)
	e.secret("owner-pw", map[string]string{"password": ownerPass1})
	e.database("orders-db", "orders", owned("owner-pw"), func(db *v1alpha1.MysqlDatabase) { db.Spec.CharacterSet = "latin1" })
	e.wait("orders-db", database.PhasePending, v1alpha1.ReasonGroupNotYetCreated)
	e.group("")
	e.wait("orders-db", database.PhasePending, v1alpha1.ReasonGroupNotReady)
	e.event("orders-db", v1alpha1.EventDatabaseGroupResolved, corev1.EventTypeNormal)
	if e.schemas("iad")["orders"] {
		t.Fatal("schema created before the group had an active site")
	}
	e.setActive("iad", false)
	db := e.wait("orders-db", database.PhaseReady, v1alpha1.ReasonApplied)
	e.event("orders-db", v1alpha1.EventDatabaseApplied, corev1.EventTypeNormal)
	e.event("orders-db", v1alpha1.EventOwnerUserCreated, corev1.EventTypeNormal)

	// What the server holds.
	if !e.schemas("iad")["orders"] {
		t.Fatal("SHOW DATABASES lacks orders")
	}
	s, _, err := e.admin("iad").SchemaSettings(context.Background(), "orders")
	if err != nil || s.CharacterSet != "latin1" || s.Collation != "latin1_swedish_ci" {
		t.Fatalf("orders on the server: %+v %v", s, err)
	}
	if db.Status.AppliedCharacterSet != "latin1" || db.Status.AppliedCollation != "latin1_swedish_ci" || db.Status.Adopted {
		t.Fatalf("status %+v", db.Status)
	}
	var create string
	for _, q := range e.binlogQueries("iad") {
		if strings.Contains(q, "CREATE DATABASE") && strings.Contains(q, "orders") {
			create = q
		}
	}
	if create == "" || !strings.Contains(create, "CHARACTER SET latin1") || strings.Contains(create, "COLLATE") {
		t.Fatalf("CREATE DATABASE as logged: %q, want CHARACTER SET latin1 and no COLLATE", create)
	}
	if !e.finalized("orders-db") {
		t.Fatal("no finalizer on an applied database")
	}

	// The owner works in its schema, and nowhere else.
	owner := e.login("iad", ownerUser, ownerPass1)
	ctx := context.Background()
	if _, err := owner.DB().ExecContext(ctx, "CREATE TABLE orders.items (id INT, name VARCHAR(20))"); err != nil {
		t.Fatalf("the owner cannot create a table in its schema: %v", err)
	}
	if _, err := owner.DB().ExecContext(ctx, "CREATE DATABASE elsewhere"); err == nil {
		t.Fatal("the owner created another schema")
	}
	if _, err := owner.DB().ExecContext(ctx, "SET GLOBAL read_only = OFF"); err == nil {
		t.Fatal("the owner may unfence the site")
	}
	grants := e.grants("iad", ownerUser)
	if strings.Contains(grants, "GRANT OPTION") || !strings.Contains(grants, "ON `orders`.*") || strings.Contains(grants, "SUPER") {
		t.Fatalf("owner grants:\n%s", grants)
	}
	// The application account uses the owner's table.
	app := e.login("iad", simtest.AppUser, simtest.AppPass)
	if _, err := app.DB().ExecContext(ctx, "INSERT INTO orders.items VALUES (1, 'x')"); err != nil {
		t.Fatalf("the app account cannot write the owner's table: %v", err)
	}
}

func (e *env) finalized(name string) bool {
	db, err := e.ke.Ship.ShipstreamV1alpha1().MysqlDatabases(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range db.Finalizers {
		if f == database.Finalizer {
			return true
		}
	}
	return false
}

// A schema that exists with other settings is reported and left as it is,
// and recorded as adopted.
func TestExistingSchemaIsAdoptedNotAltered(t *testing.T) {
	e := newEnv(t, 1)
	if err := e.admin("iad").CreateDatabase(context.Background(), "orders", "latin1", "latin1_bin"); err != nil {
		t.Fatal(err)
	}
	e.group("iad")
	e.database("orders-db", "orders", func(db *v1alpha1.MysqlDatabase) { db.Spec.CharacterSet = "utf8mb4" })
	db := e.wait("orders-db", database.PhaseFailed, v1alpha1.ReasonSettingsMismatch)
	e.event("orders-db", v1alpha1.EventDatabaseSettingsMismatched, corev1.EventTypeWarning)
	e.event("orders-db", v1alpha1.EventDatabaseAdopted, corev1.EventTypeNormal)
	if !db.Status.Adopted || db.Status.AppliedCollation != "latin1_bin" {
		t.Fatalf("status %+v", db.Status)
	}
	s, _, _ := e.admin("iad").SchemaSettings(context.Background(), "orders")
	if s.CharacterSet != "latin1" || s.Collation != "latin1_bin" {
		t.Fatalf("the existing schema was altered: %+v", s)
	}
	// Setting the spec to what the server has makes it Ready, still adopted.
	db.Spec.CharacterSet, db.Spec.Collation = "latin1", "latin1_bin"
	if _, err := e.ke.Ship.ShipstreamV1alpha1().MysqlDatabases(e.ns).Update(context.Background(), db, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if db := e.wait("orders-db", database.PhaseReady, v1alpha1.ReasonApplied); !db.Status.Adopted {
		t.Fatal("adoption forgotten")
	}
}

// No writable primary: the group says so, or the server does.
func TestNoWritablePrimary(t *testing.T) {
	e := newEnv(t, 1)
	e.group("")
	g, _ := e.ke.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Get(context.Background(), groupName, metav1.GetOptions{})
	g.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoWritablePrimary, Message: "test",
		LastTransitionTime: metav1.Now()}}
	if _, err := e.ke.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).UpdateStatus(context.Background(), g, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.database("orders-db", "orders")
	e.wait("orders-db", database.PhaseFailed, v1alpha1.ReasonNoWritablePrimary)
	// The group names iad writable, but the server is fenced.
	if _, err := e.admin("iad").DB().Exec("SET GLOBAL super_read_only = ON"); err != nil {
		t.Fatal(err)
	}
	e.setActive("iad", false)
	e.waitMsg("orders-db", database.PhaseFailed, v1alpha1.ReasonNoWritablePrimary, "read-only")
	if e.schemas("iad")["orders"] {
		t.Fatal("schema created on a read-only site")
	}
	if err := e.admin("iad").Unfence(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.touch()
	e.wait("orders-db", database.PhaseReady, v1alpha1.ReasonApplied)
}

// MySQL refusing a statement is Failed with its error: an operator
// account without GRANT OPTION cannot give the owner its grants.
func TestStatementRefused(t *testing.T) {
	e := newEnv(t, 1)
	e.secret(opSecret, map[string]string{"username": simtest.AppUser, "password": simtest.AppPass})
	e.secret("owner-pw", map[string]string{"password": ownerPass1})
	e.secret(appSecret, map[string]string{"username": "someone", "password": "x"})
	e.group("iad")
	e.database("orders-db", "orders", owned("owner-pw"))
	db := e.wait("orders-db", database.PhaseFailed, v1alpha1.ReasonStatementRefused)
	if n, _ := mysqlErrno(db.Status.Message); n == "" {
		t.Fatalf("message %q carries no MySQL error", db.Status.Message)
	}
	e.event("orders-db", v1alpha1.EventDatabaseApplyFailed, corev1.EventTypeWarning)
	if !strings.Contains(db.Status.Message, "1044") {
		t.Fatalf("message %q does not carry MySQL's refusal of the GRANT (1044)", db.Status.Message)
	}
	// MySQL let the account with INSERT on the mysql schema create the
	// user but refused the GRANT: the owner holds nothing on the schema.
	if e.users("iad")[ownerUser] && strings.Contains(e.grants("iad", ownerUser), "`orders`") {
		t.Fatalf("owner holds grants on orders although the GRANT was refused")
	}
}

func mysqlErrno(msg string) (string, bool) {
	i := strings.Index(msg, "Error ")
	if i < 0 {
		return "", false
	}
	return msg[i : i+10], true
}
