package database

import (
	"fmt"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// DropPlan is what deleting a MysqlDatabase does (docs/api.md, "Deleting a
// MysqlDatabase").
type DropPlan struct {
	// Release: remove the finalizer now.
	Release bool
	// Site, DropSchema, DropOwner: connect to the active site and drop
	// the schema and/or the owner (each only if it exists).
	Site                  string
	DropSchema, DropOwner bool
	// Events are recorded whatever MySQL then says (refusals, skips).
	Events []Event
	// Wait explains why the drop waits (phase Deleting); RequeueAfter is
	// when the wait ends.
	Wait         string
	RequeueAfter time.Duration
}

// Connect: the plan needs the active site.
func (p DropPlan) Connect() bool { return p.DropSchema || p.DropOwner }

// PlanDrop decides the deletion of in.DB, at now, waiting at most dropWait
// (from the deletion timestamp) for a writable active site.
func PlanDrop(in Input, now time.Time, dropWait time.Duration) DropPlan {
	db := in.DB
	if db.Spec.DeletionPolicy != v1alpha1.DatabaseDrop {
		return DropPlan{Release: true} // Retain: schema and owner stay
	}
	name := db.Spec.DatabaseName
	var p DropPlan
	others := live(in.Others)
	if db.Status.AppliedCharacterSet == "" && !db.Status.Adopted {
		return DropPlan{Release: true, Events: []Event{{"Normal", v1alpha1.EventDatabaseDropSkipped, fmt.Sprintf(
			"this MysqlDatabase never applied schema %q, so there is nothing of its own to drop", name)}}}
	}
	if o := anyOther(others, func(o *v1alpha1.MysqlDatabase) bool { return o.Spec.DatabaseName == name }); o != nil {
		p.Events = append(p.Events, Event{"Warning", v1alpha1.EventDatabaseDropRefused, fmt.Sprintf(
			"schema %q was not dropped: MysqlDatabase %q still declares it", name, o.Name)})
	} else if db.Status.Adopted && db.Annotations[AnnotationDropAdopted] != string(db.UID) {
		p.Events = append(p.Events, Event{"Warning", v1alpha1.EventDatabaseDropRefused, fmt.Sprintf(
			"schema %q was not dropped: it existed before this MysqlDatabase (adopted); annotation %s=%s confirms a drop",
			name, AnnotationDropAdopted, db.UID)})
	} else {
		p.DropSchema = true
	}
	if ow := db.Spec.Owner; ow != nil {
		if o := anyOther(others, func(o *v1alpha1.MysqlDatabase) bool {
			return o.Spec.Owner != nil && o.Spec.Owner.Username == ow.Username
		}); o != nil {
			p.Events = append(p.Events, Event{"Warning", v1alpha1.EventOwnerUserDropSkipped, fmt.Sprintf(
				"owner %s was not dropped: MysqlDatabase %q still claims it", ow.Username, o.Name)})
		} else {
			p.DropOwner = true
		}
	}
	if !p.Connect() {
		p.Release = true
		return p
	}
	g := in.Group
	if g == nil || g.DeletionTimestamp != nil {
		// The group's servers go with the group (its StatefulSets and
		// claims): there is no server left to drop from.
		p.Release, p.DropSchema, p.DropOwner = true, false, false
		p.Events = append(p.Events, Event{"Normal", v1alpha1.EventDatabaseDropSkipped, fmt.Sprintf(
			"MysqlFailoverGroup %q is gone or being deleted; nothing to drop", db.Spec.FailoverGroupRef.Name)})
		return p
	}
	if why := unstable(g); why != "" {
		deadline := now
		if db.DeletionTimestamp != nil {
			deadline = db.DeletionTimestamp.Add(dropWait)
		}
		if !now.Before(deadline) {
			return DropPlan{Release: true, Events: []Event{{"Warning", v1alpha1.EventDatabaseDropTimedOut, fmt.Sprintf(
				"%s for %s after the deletion; schema %q and its owner were left in place (drop them by hand on the active site)",
				why, dropWait, name)}}}
		}
		return DropPlan{Wait: fmt.Sprintf("deletionPolicy Drop waits until %s for a writable active site: %s",
			deadline.UTC().Format(time.RFC3339), why), RequeueAfter: deadline.Sub(now)}
	}
	p.Site = g.Status.ActiveSite
	return p
}

// unstable says why g has no stable writable active site ("" if it has).
func unstable(g *v1alpha1.MysqlFailoverGroup) string {
	switch {
	case g.Status.Transition != nil:
		return "the group is changing its active site"
	case g.Status.ActiveSite == "":
		return "the group has no active site"
	}
	for _, s := range g.Status.Sites {
		if s.Name == g.Status.ActiveSite && s.State != v1alpha1.SiteWritable {
			return fmt.Sprintf("the active site %s is %s", s.Name, s.State)
		}
	}
	return ""
}

// Dropped is what the drop on the active site found.
type Dropped struct {
	SchemaExisted, OwnerExisted bool
}

// DropEvents are the Events of a drop that succeeded.
func DropEvents(db *v1alpha1.MysqlDatabase, p DropPlan, d Dropped) []Event {
	evs := append([]Event(nil), p.Events...)
	name := db.Spec.DatabaseName
	if p.DropSchema {
		if d.SchemaExisted {
			evs = append(evs, Event{"Normal", v1alpha1.EventDatabaseDropped, fmt.Sprintf("schema %q was dropped on the active site %s", name, p.Site)})
		} else {
			evs = append(evs, Event{"Normal", v1alpha1.EventDatabaseDropSkipped, fmt.Sprintf("schema %q does not exist on the active site %s; nothing to drop", name, p.Site)})
		}
	}
	if p.DropOwner && d.OwnerExisted {
		evs = append(evs, Event{"Normal", v1alpha1.EventOwnerUserDropped, fmt.Sprintf("owner %s was dropped on the active site %s", db.Spec.Owner.Username, p.Site)})
	}
	return evs
}

// anyOther is the oldest of others that matches, or nil.
func anyOther(others []*v1alpha1.MysqlDatabase, match func(*v1alpha1.MysqlDatabase) bool) *v1alpha1.MysqlDatabase {
	var first *v1alpha1.MysqlDatabase
	for _, o := range others {
		if match(o) && (first == nil || older(o, first)) {
			first = o
		}
	}
	return first
}
