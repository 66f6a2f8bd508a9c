package database

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/mysql"
)

// apply brings the schema and its owner to the spec on the active site
// (gate.Site). Only what is missing is created; an existing schema is
// never altered. It returns what it found and, during an owner password
// rotation, when to look again.
func (c *Controller) apply(ctx context.Context, in Input, gate Gate, pw string) (Applied, time.Duration) {
	db := in.DB
	cl, err := c.connect(ctx, in.Group, gate.Site)
	if err != nil {
		return Applied{Unreachable: true, Err: err}, 0
	}
	defer cl.Close()
	o, err := cl.Observe(ctx)
	if err != nil {
		return Applied{Unreachable: true, Err: err}, 0
	}
	if !o.Writable() {
		return Applied{Unreachable: true, Err: errors.New("the server is read-only (super_read_only or read_only is ON)")}, 0
	}
	name := db.Spec.DatabaseName
	s, existed, err := cl.SchemaSettings(ctx, name)
	if err != nil {
		return Applied{Err: err}, 0
	}
	if !existed {
		if err := c.mayMutate(); err != nil {
			return Applied{Unreachable: true, Err: err}, 0
		}
		if err := cl.CreateDatabase(ctx, name, db.Spec.CharacterSet, db.Spec.Collation); err != nil {
			return Applied{Err: err}, 0
		}
		c.mu.Lock()
		c.created[db.UID] = true
		c.mu.Unlock()
		if s, _, err = cl.SchemaSettings(ctx, name); err != nil {
			return Applied{Err: err}, 0
		}
	}
	c.mu.Lock()
	mine := c.created[db.UID]
	c.mu.Unlock()
	a := Applied{Existed: existed && !mine, CharacterSet: s.CharacterSet, Collation: s.Collation}
	if db.Spec.Owner == nil || mismatch(db, a) != "" {
		return a, 0 // a schema that is not the one the spec means gets no owner grants
	}
	return c.applyOwner(ctx, cl, in, gate, pw, a)
}

func (c *Controller) mayMutate() error {
	if c.opts.Leadership == nil {
		return nil
	}
	if err := c.opts.Leadership(); err != nil {
		return fmt.Errorf("not sent: %w", err)
	}
	return nil
}

// applyOwner creates the owner when missing (its manager only), adopts an
// existing account only if it accepts the Secret's password, restores its
// grants and moves its password rotation on.
func (c *Controller) applyOwner(ctx context.Context, cl *mysql.Client, in Input, gate Gate, pw string, a Applied) (Applied, time.Duration) {
	db, user := in.DB, in.DB.Spec.Owner.Username
	lines, err := cl.ShowGrants(ctx, user)
	if errors.Is(err, mysql.ErrNoSuchAccount) {
		if !gate.ManageOwner {
			a.Owner, a.OwnerReason = fmt.Sprintf("owner %s is created by MysqlDatabase %q, which claimed it first and has not created it yet", user, gate.OwnerManager), v1alpha1.ReasonOwnerPending
			return a, 0
		}
		if err := c.createOwner(ctx, cl, db, user, pw, gate.OwnerSchemas); err != nil {
			a.Err = err
			return a, 0
		}
		a.Events = append(a.Events, Event{"Normal", v1alpha1.EventOwnerUserCreated, fmt.Sprintf("owner %s was created on the active site %s with all privileges on %s", user, gate.Site, strings.Join(gate.OwnerSchemas, ", "))})
		return a, 0
	}
	if err != nil {
		a.Err = err
		return a, 0
	}
	var requeue time.Duration
	if gate.ManageOwner {
		st, err := c.readStore(ctx, db)
		if err != nil {
			a.Err = err
			return a, 0
		}
		if st.User != user {
			ok, err := c.authenticates(ctx, in.Group, gate.Site, user, pw)
			if err != nil {
				a.Err = err
				return a, 0
			}
			if !ok {
				a.OwnerFailed, a.OwnerReason = true, v1alpha1.ReasonOwnerConflict
				a.Owner = fmt.Sprintf("an account %s already exists on the active site %s and does not accept the password of spec.owner's Secret; "+
					"this MysqlDatabase did not create it and changed nothing: drop or rename that account, or put its password in the Secret", user, gate.Site)
				a.Events = append(a.Events, Event{"Warning", v1alpha1.EventOwnerUserRefused, a.Owner})
				return a, 0
			}
			if err := c.saveStore(ctx, db, ownerEntry{User: user, Rotation: accounts.Rotation{Current: pw}}); err != nil {
				a.Err = err
				return a, 0
			}
			st = ownerEntry{User: user, Rotation: accounts.Rotation{Current: pw}}
		}
		if requeue, err = c.rotate(ctx, cl, db, st, pw, &a); err != nil {
			a.Err = err
			return a, 0
		}
	}
	fixes, err := accounts.OwnerDrift(user, gate.OwnerSchemas, lines)
	if err != nil {
		a.Err = err
		return a, 0
	}
	for _, s := range fixes {
		stmt := mysql.StmtGrant
		if strings.HasPrefix(s, "REVOKE ") {
			stmt = mysql.StmtRevoke
		}
		if err := c.exec(ctx, cl, stmt, s); err != nil {
			a.Err = err
			return a, 0
		}
	}
	return a, requeue
}

func (c *Controller) exec(ctx context.Context, cl *mysql.Client, stmt mysql.Statement, text string) error {
	if err := c.mayMutate(); err != nil {
		return err
	}
	return cl.ExecAccount(ctx, stmt, text)
}

func (c *Controller) createOwner(ctx context.Context, cl *mysql.Client, db *v1alpha1.MysqlDatabase, user, pw string, schemas []string) error {
	stmts := accounts.OwnerCreateStatements(user, pw, schemas)
	if err := c.exec(ctx, cl, mysql.StmtCreateUser, stmts[0]); err != nil {
		return err
	}
	for _, s := range stmts[1:] {
		if err := c.exec(ctx, cl, mysql.StmtGrant, s); err != nil {
			return err
		}
	}
	return c.saveStore(ctx, db, ownerEntry{User: user, Rotation: accounts.Rotation{Current: pw}})
}

// rotate moves the owner's password rotation on as far as it can now
// (accounts.Rotation): RETAIN CURRENT PASSWORD, then, after the overlap,
// DISCARD OLD PASSWORD. The owner has no consumer the operator manages
// (the application reads the Secret), and the ALTER and the DISCARD
// replicate in order, so the overlap starts with the ALTER. It returns how
// long until the overlap ends (0 when no rotation waits).
func (c *Controller) rotate(ctx context.Context, cl *mysql.Client, db *v1alpha1.MysqlDatabase, e ownerEntry, pw string, a *Applied) (time.Duration, error) {
	user := e.User
	for range 5 {
		r := e.Rotation
		o := accounts.Observed{Desired: pw, Replicated: true, ConsumersMoved: true, Now: c.opts.Now(), Overlap: c.opts.RotationOverlap}
		if r.Phase == accounts.PhaseAltering {
			v, err := cl.AuthFingerprint(ctx, user)
			if err != nil {
				return 0, err
			}
			o.AuthNow = v
		}
		var next accounts.Rotation
		switch accounts.Plan(r, o) {
		case accounts.StepBegin:
			before, err := cl.AuthFingerprint(ctx, user)
			if err != nil {
				return 0, err
			}
			next = r.Begin(pw, before) // recorded before anything is sent
		case accounts.StepAlter, accounts.StepMarkRetained:
			if accounts.Plan(r, o) == accounts.StepAlter {
				if err := c.exec(ctx, cl, mysql.StmtAlterUserRetain, accounts.AlterRetain(user, r.Next)); err != nil {
					return 0, err
				}
			}
			next = r.Retained()
			a.Events = append(a.Events, Event{"Normal", v1alpha1.EventOwnerPasswordRotationStarted, fmt.Sprintf(
				"owner %s has its new password on the active site; the old one keeps working until %s", user,
				o.Now.Add(o.Overlap).UTC().Format(time.RFC3339))})
		case accounts.StepMoveConsumers:
			next = r.Moved(o.Now)
		case accounts.StepAwaitOverlap:
			until := r.Since.Add(o.Overlap)
			a.Rotating = fmt.Sprintf("owner %s's old password keeps working until %s", user, until.UTC().Format(time.RFC3339))
			return until.Sub(o.Now), nil
		case accounts.StepDiscard:
			if err := c.exec(ctx, cl, mysql.StmtDiscardOldPassword, accounts.Discard(user)); err != nil {
				return 0, err
			}
			next = r.Discarded()
			a.Events = append(a.Events, Event{"Normal", v1alpha1.EventOwnerPasswordRotated, fmt.Sprintf("owner %s's old password was discarded", user)})
		default:
			return 0, nil
		}
		e.Rotation = next
		if err := c.saveStore(ctx, db, e); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

// The owner's applied-password store: a Secret owned by the MysqlDatabase
// holding the owner's rotation (the password the server accepts, and the
// one being rotated to). It lets a restarted operator know where a
// rotation stands; passwords never go to status, logs or Events.

// storeKey is the store Secret's key.
const storeKey = "rotation"

// StoreName is the owner store Secret of MysqlDatabase name.
func StoreName(name string) string { return name + "-bloodraven-owner" }

type ownerEntry struct {
	User     string            `json:"user"`
	Rotation accounts.Rotation `json:"rotation"`
}

// readStore reads the store from the API server (never a cache: a step
// taken twice on a stale copy would retain the wrong password).
func (c *Controller) readStore(ctx context.Context, db *v1alpha1.MysqlDatabase) (ownerEntry, error) {
	sec, err := c.kube.CoreV1().Secrets(db.Namespace).Get(ctx, StoreName(db.Name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ownerEntry{}, nil
	}
	if err != nil {
		return ownerEntry{}, fmt.Errorf("read the owner store %s: %w", StoreName(db.Name), err)
	}
	var e ownerEntry
	if raw := sec.Data[storeKey]; len(raw) > 0 {
		if err := json.Unmarshal(raw, &e); err != nil {
			return ownerEntry{}, fmt.Errorf("the owner store %s is unreadable", StoreName(db.Name))
		}
	}
	return e, nil
}

func (c *Controller) saveStore(ctx context.Context, db *v1alpha1.MysqlDatabase, e ownerEntry) error {
	raw, err := json.Marshal(e)
	if err != nil {
		return err
	}
	api := c.kube.CoreV1().Secrets(db.Namespace)
	name := StoreName(db.Name)
	sec, err := api.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sec = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: db.Namespace,
			Labels:          map[string]string{"app.kubernetes.io/managed-by": "bloodraven"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(db, v1alpha1.SchemeGroupVersion.WithKind("MysqlDatabase"))}},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{storeKey: raw}}
		_, err = api.Create(ctx, sec, metav1.CreateOptions{})
	} else if err == nil {
		if !metav1.IsControlledBy(sec, db) {
			return fmt.Errorf("Secret %s exists and is not controlled by this MysqlDatabase", name)
		}
		sec = sec.DeepCopy()
		sec.Data = map[string][]byte{storeKey: raw}
		_, err = api.Update(ctx, sec, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write the owner store %s: %w", name, err)
	}
	return nil
}
