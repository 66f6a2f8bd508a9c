package database

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controller"
	"github.com/shipstream/bloodraven/pkg/mysql"
)

// finalize carries out the deletionPolicy of a MysqlDatabase being deleted
// (PlanDrop), then releases it. A drop that cannot reach a writable active
// site waits at most Options.DropWait after the deletion, then releases the
// object and leaves schema and owner in place (DatabaseDropTimedOut).
func (c *Controller) finalize(ctx context.Context, in Input) (controller.Result, error) {
	db := in.DB
	if !hasFinalizer(db) {
		return controller.Result{}, nil
	}
	now := c.opts.Now()
	p := PlanDrop(in, now, c.opts.DropWait)
	if p.Wait != "" {
		return c.deleting(ctx, db, p.Wait, p.RequeueAfter)
	}
	evs := p.Events
	if p.Connect() {
		d, err := c.drop(ctx, in, p)
		if err != nil {
			deadline := db.DeletionTimestamp.Add(c.opts.DropWait)
			if now.Before(deadline) {
				return c.deleting(ctx, db, fmt.Sprintf("deletionPolicy Drop on the active site %s failed, retrying until %s: %v",
					p.Site, deadline.UTC().Format("2006-01-02T15:04:05Z"), err), 0)
			}
			evs = []Event{{"Warning", v1alpha1.EventDatabaseDropTimedOut, fmt.Sprintf(
				"deletionPolicy Drop kept failing for %s after the deletion (last: %v); schema %q and its owner were left in place",
				c.opts.DropWait, err, db.Spec.DatabaseName)}}
		} else {
			evs = DropEvents(db, p, d)
		}
	}
	c.record(db, evs)
	return controller.Result{}, c.release(ctx, db)
}

// drop drops what p says on its site, each only if it exists.
func (c *Controller) drop(ctx context.Context, in Input, p DropPlan) (Dropped, error) {
	var d Dropped
	cl, err := c.connect(ctx, in.Group, p.Site)
	if err != nil {
		return d, err
	}
	defer cl.Close()
	o, err := cl.Observe(ctx)
	if err != nil {
		return d, err
	}
	if !o.Writable() {
		return d, errors.New("the server is read-only")
	}
	if p.DropSchema {
		if _, d.SchemaExisted, err = cl.SchemaSettings(ctx, in.DB.Spec.DatabaseName); err != nil {
			return d, err
		}
		if d.SchemaExisted {
			if err := c.mayMutate(); err != nil {
				return d, err
			}
			if err := cl.DropDatabase(ctx, in.DB.Spec.DatabaseName); err != nil {
				return d, err
			}
		}
	}
	if p.DropOwner {
		user := in.DB.Spec.Owner.Username
		_, err := cl.ShowGrants(ctx, user)
		switch {
		case errors.Is(err, mysql.ErrNoSuchAccount):
		case err != nil:
			return d, err
		default:
			d.OwnerExisted = true
			if err := c.mayMutate(); err != nil {
				return d, err
			}
			if err := cl.DropUser(ctx, user); err != nil {
				return d, err
			}
		}
	}
	return d, nil
}

// deleting publishes phase Deleting with msg.
func (c *Controller) deleting(ctx context.Context, db *v1alpha1.MysqlDatabase, msg string, requeue time.Duration) (controller.Result, error) {
	st := *db.Status.DeepCopy()
	setPhase(&st, db, PhaseDeleting, v1alpha1.ReasonDeleting, msg)
	res, err := c.publish(ctx, db, st, nil, 0)
	if err != nil {
		return res, err
	}
	if requeue <= 0 || requeue > dropRetry {
		requeue = dropRetry // group events wake it sooner; the wait's end must not be missed
	}
	return controller.Result{RequeueAfter: requeue}, nil
}

// dropRetry is how soon a waiting or failed drop is tried again.
const dropRetry = 5 * time.Second

// release removes the finalizer.
func (c *Controller) release(ctx context.Context, db *v1alpha1.MysqlDatabase) error {
	cp := db.DeepCopy()
	cp.Finalizers = nil
	for _, f := range db.Finalizers {
		if f != Finalizer {
			cp.Finalizers = append(cp.Finalizers, f)
		}
	}
	_, err := c.client.ShipstreamV1alpha1().MysqlDatabases(db.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err == nil {
		c.mu.Lock()
		delete(c.created, db.UID)
		c.mu.Unlock()
	}
	return err
}
