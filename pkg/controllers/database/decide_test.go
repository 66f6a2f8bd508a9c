package database

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func mdb(name, dbName string, created time.Duration) *v1alpha1.MysqlDatabase {
	return &v1alpha1.MysqlDatabase{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Generation: 1,
			CreationTimestamp: metav1.NewTime(t0.Add(created))},
		Spec: v1alpha1.MysqlDatabaseSpec{FailoverGroupRef: v1alpha1.FailoverGroupReference{Name: "orders"}, DatabaseName: dbName, CharacterSet: "utf8mb4"},
	}
}

func withOwner(db *v1alpha1.MysqlDatabase, user string) *v1alpha1.MysqlDatabase {
	db.Spec.Owner = &v1alpha1.DatabaseOwner{Username: user, PasswordSecretKeyRef: v1alpha1.PasswordSecretKeySelector{Name: "pw"}}
	return db
}

func readyGroup() *v1alpha1.MysqlFailoverGroup {
	return &v1alpha1.MysqlFailoverGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orders"},
		Status: v1alpha1.MysqlFailoverGroupStatus{ActiveSite: "iad",
			Sites:      []v1alpha1.SiteStatus{{Name: "iad", State: v1alpha1.SiteWritable}, {Name: "pdx", State: v1alpha1.SiteReadOnly}},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonHealthy}}},
	}
}

func markReady(db *v1alpha1.MysqlDatabase) *v1alpha1.MysqlDatabase {
	db.Status.AppliedCharacterSet, db.Status.AppliedCollation = "utf8mb4", "utf8mb4_0900_ai_ci"
	setPhase(&db.Status, db, PhaseReady, v1alpha1.ReasonApplied, "ready")
	return db
}

func TestDecideGates(t *testing.T) {
	now := metav1.NewTime(t0)
	deletingGroup := readyGroup()
	deletingGroup.DeletionTimestamp = &now
	noActive := readyGroup()
	noActive.Status.ActiveSite = ""
	fresh := readyGroup()
	fresh.Status = v1alpha1.MysqlFailoverGroupStatus{}
	transition := readyGroup()
	transition.Status.Transition = &v1alpha1.Transition{}
	unreachable := readyGroup()
	unreachable.Status.Sites[0].State = v1alpha1.SiteUnreachable
	dupOlder := mdb("older", "orders", -time.Hour)
	dupOlderDeleting := mdb("older", "orders", -time.Hour)
	dupOlderDeleting.DeletionTimestamp = &now
	sameTimeA := mdb("a", "orders", 0)

	for _, tc := range []struct {
		name    string
		in      Input
		apply   bool
		keep    bool
		phase   v1alpha1.DatabasePhase
		reason  string
		event   string
		manages bool
	}{
		{name: "group missing", in: Input{DB: mdb("app", "orders", 0)}, phase: PhasePending, reason: v1alpha1.ReasonGroupNotYetCreated},
		{name: "group deleting", in: Input{DB: mdb("app", "orders", 0), Group: deletingGroup}, phase: PhasePending, reason: v1alpha1.ReasonGroupDeleting},
		{name: "group without status", in: Input{DB: mdb("app", "orders", 0), Group: fresh}, phase: PhasePending, reason: v1alpha1.ReasonGroupNotReady},
		{name: "no active site", in: Input{DB: mdb("app", "orders", 0), Group: noActive}, phase: PhaseFailed, reason: v1alpha1.ReasonNoWritablePrimary},
		{name: "active site unreachable", in: Input{DB: mdb("app", "orders", 0), Group: unreachable}, phase: PhaseFailed, reason: v1alpha1.ReasonNoWritablePrimary},
		{name: "ready stays ready when the site is unreachable", in: Input{DB: markReady(mdb("app", "orders", 0)), Group: unreachable}, keep: true},
		{name: "transition", in: Input{DB: mdb("app", "orders", 0), Group: transition}, phase: PhaseApplying, reason: v1alpha1.ReasonWaitingForActiveSite},
		{name: "ready stays ready across a transition", in: Input{DB: markReady(mdb("app", "orders", 0)), Group: transition}, keep: true},
		{name: "apply", in: Input{DB: mdb("app", "orders", 0), Group: readyGroup()}, apply: true},
		{name: "duplicate, newer", in: Input{DB: mdb("app", "orders", 0), Group: readyGroup(), Others: []*v1alpha1.MysqlDatabase{dupOlder}},
			phase: PhaseFailed, reason: v1alpha1.ReasonDuplicateDatabaseName, event: v1alpha1.EventDatabaseNameConflicted},
		{name: "duplicate, older one applies", in: Input{DB: dupOlder, Group: readyGroup(), Others: []*v1alpha1.MysqlDatabase{mdb("app", "orders", 0)}}, apply: true},
		{name: "duplicate being deleted does not block", in: Input{DB: mdb("app", "orders", 0), Group: readyGroup(), Others: []*v1alpha1.MysqlDatabase{dupOlderDeleting}}, apply: true},
		{name: "duplicate created at the same time: name order", in: Input{DB: mdb("b", "orders", 0), Group: readyGroup(), Others: []*v1alpha1.MysqlDatabase{sameTimeA}},
			phase: PhaseFailed, reason: v1alpha1.ReasonDuplicateDatabaseName, event: v1alpha1.EventDatabaseNameConflicted},
		{name: "another schema name is no duplicate", in: Input{DB: mdb("app", "orders", 0), Group: readyGroup(), Others: []*v1alpha1.MysqlDatabase{mdb("x", "Orders", -time.Hour)}}, apply: true},
		{name: "owner collides with a managed account", in: Input{DB: withOwner(mdb("app", "orders", 0), "app"), Group: readyGroup(), ManagedUsers: []string{"app", "bloodraven", "root"}},
			phase: PhaseFailed, reason: v1alpha1.ReasonOwnerConflict, event: v1alpha1.EventOwnerUserRefused},
		{name: "owner named root", in: Input{DB: withOwner(mdb("app", "orders", 0), "root"), Group: readyGroup(), ManagedUsers: []string{"root"}},
			phase: PhaseFailed, reason: v1alpha1.ReasonOwnerConflict, event: v1alpha1.EventOwnerUserRefused},
		{name: "owner secret missing", in: Input{DB: withOwner(mdb("app", "orders", 0), "o"), Group: readyGroup(), OwnerSecretErr: errors.New("not found")},
			phase: PhaseFailed, reason: v1alpha1.ReasonOwnerSecretInvalid, event: v1alpha1.EventOwnerSecretReadFailed},
		{name: "owner applies and manages", in: Input{DB: withOwner(mdb("app", "orders", 0), "o"), Group: readyGroup()}, apply: true, manages: true},
		{name: "shared owner: the older claimant manages", in: Input{DB: withOwner(mdb("app", "orders", 0), "o"), Group: readyGroup(),
			Others: []*v1alpha1.MysqlDatabase{withOwner(mdb("first", "billing", -time.Hour), "o")}, OwnerSecretErr: errors.New("ignored: not the manager")}, apply: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Decide(tc.in)
			if g.Apply != tc.apply || g.Keep != tc.keep {
				t.Fatalf("apply=%v keep=%v, want %v %v (%+v)", g.Apply, g.Keep, tc.apply, tc.keep, g)
			}
			if tc.apply {
				if g.Site != "iad" || g.ManageOwner != tc.manages {
					t.Fatalf("site %q manage %v, want iad %v", g.Site, g.ManageOwner, tc.manages)
				}
				return
			}
			if tc.keep {
				return
			}
			if g.Phase != tc.phase || g.Reason != tc.reason {
				t.Fatalf("phase %s reason %s, want %s %s (%s)", g.Phase, g.Reason, tc.phase, tc.reason, g.Message)
			}
			if (g.Event == nil) != (tc.event == "") || (g.Event != nil && g.Event.Reason != tc.event) {
				t.Fatalf("event %+v, want %q", g.Event, tc.event)
			}
			if g.Event != nil && g.Event.Type != "Warning" {
				t.Fatalf("event type %s, want Warning", g.Event.Type)
			}
		})
	}
}

func TestOwnerSchemasUnionOfClaimants(t *testing.T) {
	db := withOwner(mdb("app", "orders", 0), "o")
	gone := withOwner(mdb("gone", "old", -2*time.Hour), "o")
	now := metav1.NewTime(t0)
	gone.DeletionTimestamp = &now
	g := Decide(Input{DB: db, Group: readyGroup(), Others: []*v1alpha1.MysqlDatabase{
		withOwner(mdb("b", "billing", time.Hour), "o"), withOwner(mdb("c", "crm", time.Hour), "other"), gone, mdb("d", "docs", 0)}})
	if got := strings.Join(g.OwnerSchemas, ","); got != "billing,orders" {
		t.Fatalf("owner schemas %s, want billing,orders", got)
	}
	if !g.ManageOwner || g.OwnerManager != "app" {
		t.Fatalf("manager %q (%v), want app", g.OwnerManager, g.ManageOwner)
	}
}

func ready(st v1alpha1.MysqlDatabaseStatus) *metav1.Condition {
	return meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
}

func reasons(evs []Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return strings.Join(out, ",")
}

func TestOutcome(t *testing.T) {
	plain := Applied{CharacterSet: "utf8mb4", Collation: "utf8mb4_0900_ai_ci"}
	for _, tc := range []struct {
		name     string
		db       *v1alpha1.MysqlDatabase
		a        Applied
		phase    v1alpha1.DatabasePhase
		reason   string
		events   string
		adopted  bool
		appliedC string
	}{
		{name: "created", db: mdb("app", "orders", 0), a: plain, phase: PhaseReady, reason: v1alpha1.ReasonApplied,
			events: "DatabaseGroupResolved,DatabaseApplied", appliedC: "utf8mb4_0900_ai_ci"},
		{name: "existed at first apply: adopted", db: mdb("app", "orders", 0), a: Applied{Existed: true, CharacterSet: "utf8mb4", Collation: "utf8mb4_bin"},
			phase: PhaseReady, reason: v1alpha1.ReasonApplied, events: "DatabaseGroupResolved,DatabaseAdopted,DatabaseApplied", adopted: true, appliedC: "utf8mb4_bin"},
		{name: "existing later is not adopted", db: markReady(mdb("app", "orders", 0)), a: Applied{Existed: true, CharacterSet: "utf8mb4", Collation: "utf8mb4_0900_ai_ci"},
			phase: PhaseReady, reason: v1alpha1.ReasonApplied, appliedC: "utf8mb4_0900_ai_ci"},
		{name: "character set differs", db: mdb("app", "orders", 0), a: Applied{Existed: true, CharacterSet: "latin1", Collation: "latin1_swedish_ci"},
			phase: PhaseFailed, reason: v1alpha1.ReasonSettingsMismatch, events: "DatabaseGroupResolved,DatabaseAdopted,DatabaseSettingsMismatched", adopted: true, appliedC: "latin1_swedish_ci"},
		{name: "collation differs when set", db: func() *v1alpha1.MysqlDatabase {
			d := mdb("app", "orders", 0)
			d.Spec.Collation = "utf8mb4_unicode_ci"
			return d
		}(), a: Applied{Existed: true, CharacterSet: "utf8mb4", Collation: "utf8mb4_bin"},
			phase: PhaseFailed, reason: v1alpha1.ReasonSettingsMismatch, events: "DatabaseGroupResolved,DatabaseAdopted,DatabaseSettingsMismatched", adopted: true, appliedC: "utf8mb4_bin"},
		{name: "refused", db: mdb("app", "orders", 0), a: Applied{Err: errors.New("Error 1044: Access denied")},
			phase: PhaseFailed, reason: v1alpha1.ReasonStatementRefused, events: "DatabaseGroupResolved,DatabaseApplyFailed"},
		{name: "unreachable", db: mdb("app", "orders", 0), a: Applied{Unreachable: true, Err: errors.New("dial")},
			phase: PhaseFailed, reason: v1alpha1.ReasonNoWritablePrimary, events: "DatabaseGroupResolved"},
		{name: "owner pending", db: withOwner(mdb("app", "orders", 0), "o"), a: Applied{CharacterSet: "utf8mb4", Collation: "x", Owner: "wait", OwnerReason: v1alpha1.ReasonOwnerPending},
			phase: PhaseApplying, reason: v1alpha1.ReasonOwnerPending, events: "DatabaseGroupResolved", appliedC: "x"},
		{name: "owner refused", db: withOwner(mdb("app", "orders", 0), "o"), a: Applied{CharacterSet: "utf8mb4", Collation: "x", Owner: "exists", OwnerReason: v1alpha1.ReasonOwnerConflict, OwnerFailed: true,
			Events: []Event{{"Warning", v1alpha1.EventOwnerUserRefused, "exists"}}},
			phase: PhaseFailed, reason: v1alpha1.ReasonOwnerConflict, events: "OwnerUserRefused,DatabaseGroupResolved", appliedC: "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, evs := Outcome(tc.db, "iad", tc.a)
			c := ready(st)
			if st.Phase != tc.phase || c.Reason != tc.reason || st.ObservedGeneration != 1 || c.ObservedGeneration != 1 {
				t.Fatalf("phase %s reason %s gen %d/%d, want %s %s (%s)", st.Phase, c.Reason, st.ObservedGeneration, c.ObservedGeneration, tc.phase, tc.reason, c.Message)
			}
			if (c.Status == metav1.ConditionTrue) != (tc.phase == PhaseReady) {
				t.Fatalf("Ready %s with phase %s", c.Status, st.Phase)
			}
			if got := reasons(evs); got != tc.events {
				t.Fatalf("events %s, want %s", got, tc.events)
			}
			if st.Adopted != tc.adopted || st.AppliedCollation != tc.appliedC {
				t.Fatalf("adopted %v collation %q, want %v %q", st.Adopted, st.AppliedCollation, tc.adopted, tc.appliedC)
			}
		})
	}
}

// A failure seen again records no second Warning; a Ready database that
// finds its site unreachable keeps its status.
func TestOutcomeRepeats(t *testing.T) {
	db := mdb("app", "orders", 0)
	st, _ := Outcome(db, "iad", Applied{Err: errors.New("refused")})
	db.Status = st
	if _, evs := Outcome(db, "iad", Applied{Err: errors.New("refused")}); len(evs) != 0 {
		t.Fatalf("repeat failure recorded %s", reasons(evs))
	}
	r := markReady(mdb("app", "orders", 0))
	if st, evs := Outcome(r, "iad", Applied{Unreachable: true, Err: errors.New("dial")}); ready(st).Status != metav1.ConditionTrue || len(evs) != 0 {
		t.Fatalf("a Ready database lost Ready to an unreachable site: %+v %s", ready(st), reasons(evs))
	}
}

func dropDB(policy v1alpha1.DatabaseDeletionPolicy, applied bool) *v1alpha1.MysqlDatabase {
	db := withOwner(mdb("app", "orders", 0), "o")
	db.Spec.DeletionPolicy = policy
	del := metav1.NewTime(t0)
	db.DeletionTimestamp = &del
	if applied {
		markReady(db)
	}
	return db
}

func TestPlanDrop(t *testing.T) {
	wait := time.Minute
	adopted := dropDB(v1alpha1.DatabaseDrop, true)
	adopted.Status.Adopted = true
	confirmed := adopted.DeepCopy()
	confirmed.Annotations = map[string]string{AnnotationDropAdopted: string(confirmed.UID)}
	wrongUID := adopted.DeepCopy()
	wrongUID.Annotations = map[string]string{AnnotationDropAdopted: "someone-else"}
	transition := readyGroup()
	transition.Status.Transition = &v1alpha1.Transition{}
	goneTS := metav1.NewTime(t0)
	deletingGroup := readyGroup()
	deletingGroup.DeletionTimestamp = &goneTS
	for _, tc := range []struct {
		name                  string
		in                    Input
		now                   time.Time
		release, schema, user bool
		wait                  bool
		events                string
	}{
		{name: "retain", in: Input{DB: dropDB(v1alpha1.DatabaseRetain, true), Group: readyGroup()}, release: true},
		{name: "default policy retains", in: Input{DB: dropDB("", true), Group: readyGroup()}, release: true},
		{name: "drop", in: Input{DB: dropDB(v1alpha1.DatabaseDrop, true), Group: readyGroup()}, schema: true, user: true},
		{name: "never applied: nothing of its own", in: Input{DB: dropDB(v1alpha1.DatabaseDrop, false), Group: readyGroup()}, release: true, events: "DatabaseDropSkipped"},
		{name: "another declares the schema", in: Input{DB: dropDB(v1alpha1.DatabaseDrop, true), Group: readyGroup(),
			Others: []*v1alpha1.MysqlDatabase{mdb("other", "orders", time.Hour)}}, user: true, events: "DatabaseDropRefused"},
		{name: "another claims the owner", in: Input{DB: dropDB(v1alpha1.DatabaseDrop, true), Group: readyGroup(),
			Others: []*v1alpha1.MysqlDatabase{withOwner(mdb("other", "billing", time.Hour), "o")}}, schema: true, events: "OwnerUserDropSkipped"},
		{name: "both claimed: release", in: Input{DB: dropDB(v1alpha1.DatabaseDrop, true), Group: readyGroup(),
			Others: []*v1alpha1.MysqlDatabase{withOwner(mdb("other", "orders", time.Hour), "o")}}, release: true, events: "DatabaseDropRefused,OwnerUserDropSkipped"},
		{name: "claimants being deleted do not count", in: Input{DB: dropDB(v1alpha1.DatabaseDrop, true), Group: readyGroup(),
			Others: []*v1alpha1.MysqlDatabase{dropDB(v1alpha1.DatabaseDrop, true)}}, schema: true, user: true},
		{name: "adopted without annotation", in: Input{DB: adopted, Group: readyGroup()}, user: true, events: "DatabaseDropRefused"},
		{name: "adopted, annotation names another UID", in: Input{DB: wrongUID, Group: readyGroup()}, user: true, events: "DatabaseDropRefused"},
		{name: "adopted, confirmed", in: Input{DB: confirmed, Group: readyGroup()}, schema: true, user: true},
		{name: "group gone", in: Input{DB: dropDB(v1alpha1.DatabaseDrop, true)}, release: true, events: "DatabaseDropSkipped"},
		{name: "group deleting", in: Input{DB: dropDB(v1alpha1.DatabaseDrop, true), Group: deletingGroup}, release: true, events: "DatabaseDropSkipped"},
		{name: "transition: wait", in: Input{DB: dropDB(v1alpha1.DatabaseDrop, true), Group: transition}, now: t0.Add(30 * time.Second), wait: true},
		{name: "transition past the wait: released", in: Input{DB: dropDB(v1alpha1.DatabaseDrop, true), Group: transition}, now: t0.Add(wait), release: true, events: "DatabaseDropTimedOut"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := tc.now
			if now.IsZero() {
				now = t0
			}
			p := PlanDrop(tc.in, now, wait)
			if p.Release != tc.release || p.DropSchema != tc.schema || p.DropOwner != tc.user || (p.Wait != "") != tc.wait {
				t.Fatalf("plan %+v, want release=%v schema=%v owner=%v wait=%v", p, tc.release, tc.schema, tc.user, tc.wait)
			}
			if got := reasons(p.Events); got != tc.events {
				t.Fatalf("events %s, want %s", got, tc.events)
			}
			if tc.wait && p.RequeueAfter != 30*time.Second {
				t.Fatalf("requeue after %s, want the rest of the wait", p.RequeueAfter)
			}
			if p.Connect() && p.Site != "iad" {
				t.Fatalf("site %q", p.Site)
			}
		})
	}
}

func TestDropEvents(t *testing.T) {
	db := dropDB(v1alpha1.DatabaseDrop, true)
	p := DropPlan{Site: "iad", DropSchema: true, DropOwner: true}
	if got := reasons(DropEvents(db, p, Dropped{SchemaExisted: true, OwnerExisted: true})); got != "DatabaseDropped,OwnerUserDropped" {
		t.Fatal(got)
	}
	if got := reasons(DropEvents(db, p, Dropped{})); got != "DatabaseDropSkipped" {
		t.Fatal(got)
	}
}
