// Package database is the MysqlDatabase controller. This file holds its pure
// decisions: given a MysqlDatabase, its group, the other MysqlDatabases of
// the group and what MySQL reports, what to do and the status to carry. The
// controller (controller.go, apply.go, delete.go) reads the listers, talks
// to MySQL and writes the result.
package database

import (
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Phases of a MysqlDatabase (the CRD's enum).
const (
	PhasePending  v1alpha1.DatabasePhase = "Pending"
	PhaseApplying v1alpha1.DatabasePhase = "Applying"
	PhaseReady    v1alpha1.DatabasePhase = "Ready"
	PhaseFailed   v1alpha1.DatabasePhase = "Failed"
	PhaseDeleting v1alpha1.DatabasePhase = "Deleting"
)

// Finalizer holds a MysqlDatabase until its deletionPolicy was carried out.
const Finalizer = "bloodraven.shipstream.io/mysql-database"

// AnnotationDropAdopted confirms that deletionPolicy Drop may drop an
// adopted schema: its value must be the object's UID.
const AnnotationDropAdopted = "bloodraven.shipstream.io/drop-adopted-database"

// Event is one Event to record.
type Event struct{ Type, Reason, Message string }

// Input is what the decisions read from the API server.
type Input struct {
	DB *v1alpha1.MysqlDatabase
	// Group is nil when it does not exist.
	Group *v1alpha1.MysqlFailoverGroup
	// Others are the other MysqlDatabases naming the same group.
	Others []*v1alpha1.MysqlDatabase
	// OwnerSecretErr is why the owner's password could not be read (nil
	// without spec.owner or when it was read).
	OwnerSecretErr error
	// ManagedUsers are the accounts of the group's spec.credentials
	// (accounts.ManagedUsers).
	ManagedUsers []string
}

// Gate is the verdict before any MySQL I/O: either a status to publish
// (Apply false) or the go-ahead to apply on Site.
type Gate struct {
	Apply bool
	Site  string
	// Phase, Reason and Message when Apply is false. Keep: the database was
	// Ready and stays so (a change of active site is in flight); nothing
	// is written.
	Phase           v1alpha1.DatabasePhase
	Reason, Message string
	Keep            bool
	Event           *Event
	// ManageOwner: this object creates the owner and rotates its password
	// (the oldest live MysqlDatabase claiming the owner on the group);
	// OwnerSchemas: every schema that owner holds grants on.
	ManageOwner  bool
	OwnerManager string
	OwnerSchemas []string
}

// live are the others not being deleted.
func live(others []*v1alpha1.MysqlDatabase) []*v1alpha1.MysqlDatabase {
	var out []*v1alpha1.MysqlDatabase
	for _, o := range others {
		if o.DeletionTimestamp == nil {
			out = append(out, o)
		}
	}
	return out
}

// older orders by creation, then name: the first claimant wins.
func older(a, b *v1alpha1.MysqlDatabase) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// Decide is the gate for a MysqlDatabase that is not being deleted.
func Decide(in Input) Gate {
	db, g := in.DB, in.Group
	ref := db.Spec.FailoverGroupRef.Name
	switch {
	case g == nil:
		return wait(PhasePending, v1alpha1.ReasonGroupNotYetCreated,
			fmt.Sprintf("MysqlFailoverGroup %q does not exist in namespace %q yet; the schema is applied once it does", ref, db.Namespace))
	case g.DeletionTimestamp != nil:
		return wait(PhasePending, v1alpha1.ReasonGroupDeleting, fmt.Sprintf("MysqlFailoverGroup %q is being deleted", ref))
	}
	if o := firstClaimant(db, live(in.Others), func(o *v1alpha1.MysqlDatabase) bool { return o.Spec.DatabaseName == db.Spec.DatabaseName }); o != db {
		gt := wait(PhaseFailed, v1alpha1.ReasonDuplicateDatabaseName, fmt.Sprintf(
			"MysqlDatabase %q, created earlier, already declares database %q on MysqlFailoverGroup %q; this object applies nothing until it is gone or renamed",
			o.Name, db.Spec.DatabaseName, ref))
		gt.Event = &Event{"Warning", v1alpha1.EventDatabaseNameConflicted, gt.Message}
		return gt
	}
	if ow := db.Spec.Owner; ow != nil {
		if err := accounts.OwnerCollision(ow.Username, in.ManagedUsers); err != nil {
			gt := wait(PhaseFailed, v1alpha1.ReasonOwnerConflict, "spec.owner.username: "+err.Error()+"; nothing was applied: choose another username")
			gt.Event = &Event{"Warning", v1alpha1.EventOwnerUserRefused, gt.Message}
			return gt
		}
	}
	claimant := firstClaimant(db, live(in.Others), func(o *v1alpha1.MysqlDatabase) bool {
		return db.Spec.Owner != nil && o.Spec.Owner != nil && o.Spec.Owner.Username == db.Spec.Owner.Username
	})
	if db.Spec.Owner != nil && claimant == db && in.OwnerSecretErr != nil {
		gt := wait(PhaseFailed, v1alpha1.ReasonOwnerSecretInvalid, fmt.Sprintf(
			"spec.owner.passwordSecretKeyRef: %v; nothing was applied", in.OwnerSecretErr))
		gt.Event = &Event{"Warning", v1alpha1.EventOwnerSecretReadFailed, gt.Message}
		return gt
	}
	if gt, blocked := siteGate(db, g); blocked {
		return gt
	}
	gt := Gate{Apply: true, Site: g.Status.ActiveSite}
	if db.Spec.Owner != nil {
		gt.ManageOwner, gt.OwnerManager = claimant == db, claimant.Name
		gt.OwnerSchemas = ownerSchemas(db, live(in.Others))
	}
	return gt
}

// siteGate blocks applying without a stable writable active site. A
// database that was Ready for this generation stays Ready while a change of
// active site is in flight: nothing on the sites undid it.
func siteGate(db *v1alpha1.MysqlDatabase, g *v1alpha1.MysqlFailoverGroup) (Gate, bool) {
	ref := db.Spec.FailoverGroupRef.Name
	active := g.Status.ActiveSite
	if g.Status.Transition != nil {
		if wasReady(db) {
			return Gate{Keep: true}, true
		}
		return wait(PhaseApplying, v1alpha1.ReasonWaitingForActiveSite, fmt.Sprintf(
			"MysqlFailoverGroup %q is changing its active site; the schema is applied on the new one", ref)), true
	}
	if active == "" {
		if meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady) == nil {
			return wait(PhasePending, v1alpha1.ReasonGroupNotReady, fmt.Sprintf(
				"waiting for MysqlFailoverGroup %q: it has not reported an active site yet", ref)), true
		}
		return notWritable(db, fmt.Sprintf("MysqlFailoverGroup %q has no active site (no writable primary)", ref))
	}
	for _, s := range g.Status.Sites {
		if s.Name == active && s.State != v1alpha1.SiteWritable {
			return notWritable(db, fmt.Sprintf("the active site %s of MysqlFailoverGroup %q is %s, not Writable", active, ref, s.State))
		}
	}
	return Gate{}, false
}

// notWritable is Failed/NoWritablePrimary, or keeps a Ready database Ready.
func notWritable(db *v1alpha1.MysqlDatabase, msg string) (Gate, bool) {
	if wasReady(db) {
		return Gate{Keep: true}, true
	}
	return wait(PhaseFailed, v1alpha1.ReasonNoWritablePrimary, msg+"; the schema is applied once it has one"), true
}

func wasReady(db *v1alpha1.MysqlDatabase) bool {
	c := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == db.Generation
}

func wait(p v1alpha1.DatabasePhase, reason, msg string) Gate {
	return Gate{Phase: p, Reason: reason, Message: msg}
}

// firstClaimant is the oldest of db and the others that match.
func firstClaimant(db *v1alpha1.MysqlDatabase, others []*v1alpha1.MysqlDatabase, match func(*v1alpha1.MysqlDatabase) bool) *v1alpha1.MysqlDatabase {
	first := db
	for _, o := range others {
		if match(o) && older(o, first) {
			first = o
		}
	}
	return first
}

// ownerSchemas are the schemas of every live MysqlDatabase claiming db's
// owner, db's own included.
func ownerSchemas(db *v1alpha1.MysqlDatabase, others []*v1alpha1.MysqlDatabase) []string {
	set := map[string]bool{db.Spec.DatabaseName: true}
	for _, o := range others {
		if o.Spec.Owner != nil && o.Spec.Owner.Username == db.Spec.Owner.Username {
			set[o.Spec.DatabaseName] = true
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Applied is what the apply on the active site found and did.
type Applied struct {
	// Existed: the schema was there before this apply looked.
	Existed bool
	// CharacterSet and Collation as information_schema reports them after.
	CharacterSet, Collation string
	// Err: a statement MySQL refused (or the site could not be reached).
	Err error
	// Unreachable: the site could not be reached or was not writable.
	Unreachable bool
	// Owner says where the owner stands ("" when all is well); OwnerPhase
	// is the phase that state means (Applying, Failed).
	Owner       string
	OwnerReason string
	OwnerFailed bool
	// Rotating describes an owner password rotation in progress.
	Rotating string
	// Events the apply's own steps call for (owner created, rotation).
	Events []Event
}

// Outcome turns what the apply found into the status db must carry.
func Outcome(db *v1alpha1.MysqlDatabase, site string, a Applied) (v1alpha1.MysqlDatabaseStatus, []Event) {
	st := *db.Status.DeepCopy()
	evs := append([]Event(nil), a.Events...)
	if e := groupEvent(db, meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionReady), ""); e != nil {
		evs = append(evs, *e)
	}
	firstApply := st.AppliedCharacterSet == ""
	if a.Err == nil || a.CharacterSet != "" {
		if a.CharacterSet != "" {
			if firstApply && a.Existed && !st.Adopted {
				st.Adopted = true
				evs = append(evs, Event{"Normal", v1alpha1.EventDatabaseAdopted, fmt.Sprintf(
					"schema %q already existed on the active site %s; it is recorded as adopted and deletionPolicy Drop leaves it unless annotation %s names this object's UID",
					db.Spec.DatabaseName, site, AnnotationDropAdopted)})
			}
			st.AppliedCharacterSet, st.AppliedCollation = a.CharacterSet, a.Collation
		}
	}
	phase, reason, msg := PhaseReady, v1alpha1.ReasonApplied, fmt.Sprintf("schema %q exists on the active site %s with character set %s and collation %s",
		db.Spec.DatabaseName, site, a.CharacterSet, a.Collation)
	switch {
	case a.Unreachable:
		if wasReady(db) {
			return db.Status, nil
		}
		phase, reason, msg = PhaseFailed, v1alpha1.ReasonNoWritablePrimary, fmt.Sprintf("the active site %s: %v; the schema is applied once it is writable", site, a.Err)
	case a.Err != nil:
		phase, reason, msg = PhaseFailed, v1alpha1.ReasonStatementRefused, fmt.Sprintf("MySQL on the active site %s refused: %v", site, a.Err)
		evs = append(evs, Event{"Warning", v1alpha1.EventDatabaseApplyFailed, msg})
	case mismatch(db, a) != "":
		phase, reason = PhaseFailed, v1alpha1.ReasonSettingsMismatch
		msg = mismatch(db, a) + "; the operator never alters or drops an existing schema: set the spec to the server's settings, or ALTER DATABASE by hand"
		evs = append(evs, Event{"Warning", v1alpha1.EventDatabaseSettingsMismatched, msg})
	case a.OwnerFailed:
		phase, reason, msg = PhaseFailed, a.OwnerReason, a.Owner
	case a.Owner != "":
		phase, reason, msg = PhaseApplying, a.OwnerReason, a.Owner
	default:
		if db.Spec.Owner != nil {
			msg += fmt.Sprintf("; owner %s holds all privileges on it", db.Spec.Owner.Username)
		}
		if a.Rotating != "" {
			msg += "; " + a.Rotating
		}
	}
	prev := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionReady)
	if phase == PhaseReady && (prev == nil || prev.Status != metav1.ConditionTrue) {
		evs = append(evs, Event{"Normal", v1alpha1.EventDatabaseApplied, msg})
	}
	if prev != nil && prev.Reason == reason && prev.Message == msg {
		evs = dropWarnings(evs) // the same failure again: its Event was recorded
	}
	setPhase(&st, db, phase, reason, msg)
	return st, evs
}

func dropWarnings(evs []Event) []Event {
	var out []Event
	for _, e := range evs {
		if e.Type != "Warning" {
			out = append(out, e)
		}
	}
	return out
}

// mismatch names how the server's settings differ from the spec; a
// collation left unset accepts the character set's default, whatever the
// server took.
func mismatch(db *v1alpha1.MysqlDatabase, a Applied) string {
	var out string
	if cs := db.Spec.CharacterSet; cs != "" && cs != a.CharacterSet {
		out = fmt.Sprintf("schema %q has character set %s on the server, the spec says %s", db.Spec.DatabaseName, a.CharacterSet, cs)
	}
	if c := db.Spec.Collation; c != "" && c != a.Collation {
		if out != "" {
			out += "; "
		}
		out += fmt.Sprintf("schema %q has collation %s on the server, the spec says %s", db.Spec.DatabaseName, a.Collation, c)
	}
	return out
}

// GateStatus is the status of a gate that applies nothing, and its Event
// (nil when none is due: the same reason was already published).
func GateStatus(db *v1alpha1.MysqlDatabase, g Gate) (v1alpha1.MysqlDatabaseStatus, []Event) {
	st := *db.Status.DeepCopy()
	prev := meta.FindStatusCondition(db.Status.Conditions, v1alpha1.ConditionReady)
	var evs []Event
	if e := groupEvent(db, prev, g.Reason); e != nil {
		evs = append(evs, *e)
	}
	if g.Event != nil && (prev == nil || prev.Reason != g.Reason || prev.Message != g.Message) {
		evs = append(evs, *g.Event)
	}
	setPhase(&st, db, g.Phase, g.Reason, g.Message)
	return st, evs
}

// setPhase writes phase, message, observedGeneration and Ready.
func setPhase(st *v1alpha1.MysqlDatabaseStatus, db *v1alpha1.MysqlDatabase, phase v1alpha1.DatabasePhase, reason, msg string) {
	st.ObservedGeneration = db.Generation
	st.Phase, st.Message = phase, msg
	status := metav1.ConditionFalse
	if phase == PhaseReady {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: db.Generation,
	})
}

// groupEvent reports the group appearing or disappearing, judged from the
// previous Ready reason: an Event marks the change, not every reconcile.
func groupEvent(db *v1alpha1.MysqlDatabase, prev *metav1.Condition, newReason string) *Event {
	wasMissing := prev == nil || prev.Reason == v1alpha1.ReasonGroupNotYetCreated
	nowMissing := newReason == v1alpha1.ReasonGroupNotYetCreated
	ref := db.Spec.FailoverGroupRef.Name
	switch {
	case wasMissing && !nowMissing:
		return &Event{"Normal", v1alpha1.EventDatabaseGroupResolved, fmt.Sprintf("MysqlFailoverGroup %q found", ref)}
	case prev != nil && !wasMissing && nowMissing:
		return &Event{"Warning", v1alpha1.EventDatabaseGroupLost, fmt.Sprintf("MysqlFailoverGroup %q no longer exists", ref)}
	}
	return nil
}

// DefaultDropWait is how long deletionPolicy Drop waits for a writable
// active site before it releases the object and leaves schema and owner.
const DefaultDropWait = 10 * time.Minute
