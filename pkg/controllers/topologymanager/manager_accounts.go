package topologymanager

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controller"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// The accounts pass (docs/credentials.md): after the decision's actions,
// and only while the group has a stable writable active site and no
// transition, the manager converges the accounts of spec.credentials on
// the active site (a role added later is created, drifted grants are
// restored) and moves each changed Secret's password through its rotation
// (accounts.Rotation). Account statements are logged on the active site
// and replicate; nothing is ever sent to a fenced site, where it would be
// refused (super_read_only) or, with the fence lifted, be an errant
// transaction.

// storeCopy is a copy of the applied-password store Secret.
type storeCopy = corev1.Secret

// accountsPass runs the accounts pass and writes CredentialsReady.
func (p *mpass) accountsPass(ctx context.Context, results map[string]observe.Result[Sample]) {
	if ctx.Err() != nil || p.g.Status.Transition != nil {
		return
	}
	active := p.g.Status.ActiveSite
	r, ok := results[active]
	if active == "" || !ok || !r.Fresh || r.Last == nil || r.Health.Reach != observe.Reachable ||
		r.Last.Value.Observation.ReadOnly || r.Last.Value.Replica != nil {
		return
	}
	var msgs []string
	reason, status := v1alpha1.ReasonCredentialsCurrent, metav1.ConditionTrue
	if err := p.creds.SecretErr; err != nil {
		p.setCredentialsCondition(ctx, metav1.ConditionFalse, v1alpha1.ReasonCredentialsInvalid,
			err.Error()+"; nothing changes and the previous passwords keep working", v1alpha1.EventCredentialsRejected)
		return
	}
	accts, err := accounts.FromSecrets(p.g.Spec.Credentials, secretCredentials{c: p.m.ctrl}.secretData(p.g.Namespace))
	if err != nil {
		p.setCredentialsCondition(ctx, metav1.ConditionFalse, v1alpha1.ReasonCredentialsInvalid,
			err.Error()+"; nothing changes and the previous passwords keep working", v1alpha1.EventCredentialsRejected)
		return
	}
	c, err := p.client(active)
	if err != nil {
		return
	}
	store := p.m.appliedFor(p)
	for _, a := range accts {
		if err := p.convergeAccount(ctx, c, a, store); err != nil {
			p.recordf(corev1.EventTypeWarning, v1alpha1.EventAccountsFailed, "the %s account %s on site %s: %v", a.Role, a.User, active, err)
			p.setCredentialsCondition(ctx, metav1.ConditionFalse, v1alpha1.ReasonAccountsFailed,
				fmt.Sprintf("the %s account %s on site %s: %v", a.Role, a.User, active, err), "")
			return
		}
	}
	if err := p.moveReturnedChannels(ctx, accounts.ReplicationOf(accts), store, results); err != nil {
		p.recordf(corev1.EventTypeWarning, v1alpha1.EventAccountsFailed, "moving a returned site's replication channel: %v", err)
	}
	if op, ok := accounts.Find(accts, accounts.RoleOperator); ok {
		if err := p.caughtUpOperatorSites(ctx, op, store, results); err != nil {
			p.recordf(corev1.EventTypeWarning, v1alpha1.EventAccountsFailed, "a returned site's operator password: %v", err)
		}
	}
	for _, a := range accts {
		step, err := p.rotate(ctx, c, a, accts, store, results)
		if err != nil {
			p.recordf(corev1.EventTypeWarning, v1alpha1.EventAccountsFailed, "rotating the %s account %s's password: %v", a.Role, a.User, err)
			reason, status = v1alpha1.ReasonAccountsFailed, metav1.ConditionFalse
			msgs = append(msgs, fmt.Sprintf("rotating the %s account %s's password failed: %v", a.Role, a.User, err))
			continue
		}
		if m := stepMessage(a, step, store[a.Role], p.m.opts.overlap()); m != "" {
			if reason == v1alpha1.ReasonCredentialsCurrent {
				reason, status = v1alpha1.ReasonRotating, metav1.ConditionFalse
			}
			msgs = append(msgs, m)
		}
	}
	msg := "every account of spec.credentials exists on the active site with its role's grants; no rotation is in progress"
	if len(msgs) > 0 {
		msg = strings.Join(msgs, "; ")
	}
	p.setCredentialsCondition(ctx, status, reason, msg, "")
}

// stepMessage says where a's rotation stands, or "" when it is Steady.
func stepMessage(a accounts.Account, step accounts.Step, e appliedEntry, overlap time.Duration) string {
	switch e.rotation().Phase {
	case accounts.PhaseAltering, accounts.PhaseRetained:
		if step == accounts.StepAwaitReplicas {
			return fmt.Sprintf("the %s account %s has its new password on the active site; waiting until every reachable site has it", a.Role, a.User)
		}
		return fmt.Sprintf("the %s account %s: moving the managed consumers to the new password", a.Role, a.User)
	case accounts.PhaseOverlap:
		return fmt.Sprintf("the %s account %s: both passwords work until %s, then the old one is discarded",
			a.Role, a.User, e.Since.Add(overlap).UTC().Format(time.RFC3339))
	}
	return ""
}

// convergeAccount creates a's account when the active site lacks it and
// restores its grants when they drifted. The operator's own account is
// neither created (the manager is connected as it) nor diffed (see
// accounts.Drift).
func (p *mpass) convergeAccount(ctx context.Context, c *mysql.Client, a accounts.Account, store appliedPasswords) error {
	if a.Role == accounts.RoleOperator {
		return nil
	}
	lines, err := c.ShowGrants(ctx, a.User)
	if errors.Is(err, mysql.ErrNoSuchAccount) {
		stmts := accounts.CreateStatements(a)
		if err := c.ExecAccount(ctx, mysql.StmtCreateUser, stmts[0]); err != nil {
			return err
		}
		for _, s := range stmts[1:] {
			stmt := mysql.StmtGrant
			if strings.HasPrefix(s, "REVOKE ") { // the role's partial revokes (accounts.PartialRevokes)
				stmt = mysql.StmtRevoke
			}
			if err := c.ExecAccount(ctx, stmt, s); err != nil {
				return err
			}
		}
		if err := p.m.saveApplied(ctx, p, a.Role, entryOf(a.User, accounts.Rotation{Current: a.Password}, "")); err != nil {
			return err
		}
		store[a.Role] = entryOf(a.User, accounts.Rotation{Current: a.Password}, "")
		p.recordf(corev1.EventTypeNormal, v1alpha1.EventAccountCreated, "the %s account %s was created on the active site %s", a.Role, a.User, p.g.Status.ActiveSite)
		return nil
	}
	if err != nil {
		return err
	}
	fixes, err := accounts.Drift(a.Role, a.User, lines)
	if err != nil {
		return err
	}
	for _, s := range fixes {
		stmt := mysql.StmtGrant
		if strings.HasPrefix(s, "REVOKE ") {
			stmt = mysql.StmtRevoke
		}
		if err := c.ExecAccount(ctx, stmt, s); err != nil {
			return err
		}
	}
	if len(fixes) > 0 {
		p.recordf(corev1.EventTypeWarning, v1alpha1.EventAccountGrantsRestored,
			"the %s account %s's grants had drifted from its role's and were restored on the active site %s (%d statements)",
			a.Role, a.User, p.g.Status.ActiveSite, len(fixes))
	}
	return nil
}

// rotate moves a's password rotation on by as many steps as it can now.
func (p *mpass) rotate(ctx context.Context, c *mysql.Client, a accounts.Account, accts []accounts.Account,
	store appliedPasswords, results map[string]observe.Result[Sample]) (accounts.Step, error) {
	e, ok := store[a.Role]
	if !ok || e.User != a.User {
		// First sight of the account (or of a renamed one): the Secret's
		// password is the one it was created with.
		e = entryOf(a.User, accounts.Rotation{Current: a.Password}, "")
		if err := p.m.saveApplied(ctx, p, a.Role, e); err != nil {
			return accounts.StepNone, err
		}
		store[a.Role] = e
	}
	for i := 0; i < 6; i++ {
		r := e.rotation()
		o := accounts.Observed{Desired: a.Password, Now: p.m.opts.Now(), Overlap: p.m.opts.overlap()}
		if r.Phase == accounts.PhaseAltering {
			v, err := c.AuthFingerprint(ctx, a.User)
			if err != nil {
				return accounts.StepNone, err
			}
			o.AuthNow = v
		}
		if r.Phase == accounts.PhaseRetained {
			o.Replicated = p.replicated(e.AppliedGTIDs, results)
		}
		step := accounts.Plan(r, o)
		next, err := p.rotationStep(ctx, c, a, accts, e, step, results)
		if err != nil || next == nil {
			return step, err
		}
		if hook := p.m.opts.AfterRotationStep; hook != nil {
			hook(string(a.Role), string(step))
		}
		if ctx.Err() != nil {
			return step, ctx.Err()
		}
		if next.Unmoved == nil { // kept until those sites return
			next.Unmoved, next.Behind, next.BehindGTIDs = e.Unmoved, e.Behind, e.BehindGTIDs
		}
		if err := p.m.saveApplied(ctx, p, a.Role, *next); err != nil {
			return step, err
		}
		store[a.Role] = *next
		e = *next
	}
	return accounts.StepNone, nil
}

// rotationStep performs step and returns the entry to store, or nil when
// the rotation waits.
func (p *mpass) rotationStep(ctx context.Context, c *mysql.Client, a accounts.Account, accts []accounts.Account,
	e appliedEntry, step accounts.Step, results map[string]observe.Result[Sample]) (*appliedEntry, error) {
	r := e.rotation()
	switch step {
	case accounts.StepBegin:
		// Recorded before anything is sent: after a restart the store
		// knows a rotation may have been applied.
		before, err := c.AuthFingerprint(ctx, a.User)
		if err != nil {
			return nil, err
		}
		n := entryOf(a.User, r.Begin(a.Password, before), "")
		return &n, nil
	case accounts.StepAlter, accounts.StepMarkRetained:
		if step == accounts.StepAlter {
			if err := c.ExecAccount(ctx, mysql.StmtAlterUserRetain, accounts.AlterRetain(a.User, r.Next)); err != nil {
				return nil, err
			}
		}
		o, err := c.Observe(ctx)
		if err != nil {
			return nil, err
		}
		n := entryOf(a.User, r.Retained(), o.GTIDExecuted.String())
		p.recordf(corev1.EventTypeNormal, v1alpha1.EventPasswordRotationStarted,
			"the %s account %s has its new password on the active site %s; the old one keeps working", a.Role, a.User, p.g.Status.ActiveSite)
		return &n, nil
	case accounts.StepMoveConsumers:
		moved, unmoved, err := p.moveConsumers(ctx, a, accts, r, results)
		if err != nil || !moved {
			return nil, err
		}
		n := entryOf(a.User, r.Moved(p.m.opts.Now()), e.AppliedGTIDs)
		n.Unmoved, n.Behind, n.BehindGTIDs = union(e.Unmoved, unmoved), e.Behind, e.BehindGTIDs
		if a.Role == accounts.RoleOperator && len(unmoved) > 0 {
			if n.Behind == "" { // the oldest password they may still have
				n.Behind = r.Current
			}
			n.BehindGTIDs = e.AppliedGTIDs
		}
		p.recordf(corev1.EventTypeNormal, v1alpha1.EventPasswordOverlapStarted,
			"every managed consumer of the %s account %s uses the new password; the old one keeps working until %s",
			a.Role, a.User, n.Since.Add(p.m.opts.overlap()).UTC().Format(time.RFC3339))
		return &n, nil
	case accounts.StepDiscard:
		if err := c.ExecAccount(ctx, mysql.StmtDiscardOldPassword, accounts.Discard(a.User)); err != nil {
			return nil, err
		}
		n := entryOf(a.User, r.Discarded(), "")
		p.recordf(corev1.EventTypeNormal, v1alpha1.EventPasswordRotated, "the %s account %s's old password was discarded", a.Role, a.User)
		return &n, nil
	}
	return nil, nil
}

// replicated: every reachable site but the active one has executed the
// active site's transactions up to the ALTER.
func (p *mpass) replicated(applied string, results map[string]observe.Result[Sample]) bool {
	want, err := gtid.Parse(applied)
	if err != nil {
		return false
	}
	for site, r := range results {
		if site == p.g.Status.ActiveSite || !r.Fresh || r.Last == nil {
			continue
		}
		if !want.IsSubsetOf(r.Last.Value.Observation.GTIDExecuted) {
			return false
		}
	}
	return true
}

// moveConsumers moves every consumer the operator manages of a's account
// to r.Next: the operator's own connections moved when the store recorded
// Retained (they read the store); the sidecars read a Secret the operator
// writes; each reachable replica's channel when a is the replication
// account. It reports whether all have moved, and the sites it could not
// reach (their channels move when they return: moveReturnedChannels).
func (p *mpass) moveConsumers(ctx context.Context, a accounts.Account, accts []accounts.Account, r accounts.Rotation,
	results map[string]observe.Result[Sample]) (bool, []string, error) {
	if a.Role == accounts.RoleOperator {
		// The operator's connections read the store, which says Retained;
		// the sidecars' Secret was written with it (saveApplied). The
		// kubelet refreshes the mounted file within its sync period, which
		// the overlap must exceed (docs/credentials.md).
		if err := p.syncSidecarPassword(ctx, r); err != nil {
			return false, nil, err
		}
	}
	unmoved := p.unreachable(results)
	if accounts.ReplicationOf(accts).Role != a.Role {
		if a.Role == accounts.RoleOperator {
			return true, unmoved, nil
		}
		return true, nil, nil
	}
	for _, site := range p.siteNames() {
		res, ok := results[site]
		if site == p.g.Status.ActiveSite || slicesContains(unmoved, site) || !ok {
			continue
		}
		if err := p.moveChannel(ctx, site, a.User, r.Next, res); err != nil {
			return false, nil, err
		}
	}
	return true, unmoved, nil
}

// unreachable are the group's sites but the active one without a fresh
// observation: they miss what the active site does now until they
// replicate it.
func (p *mpass) unreachable(results map[string]observe.Result[Sample]) []string {
	var out []string
	for _, site := range p.siteNames() {
		if res, ok := results[site]; site != p.g.Status.ActiveSite && (!ok || !res.Fresh || res.Last == nil) {
			out = append(out, site)
		}
	}
	return out
}

// caughtUpOperatorSites drops from the operator account's Unmoved the
// sites that executed the ALTER they missed (BehindGTIDs): the manager
// connects to them with the current password again (its pooled
// connections stay logged in; new ones use it).
func (p *mpass) caughtUpOperatorSites(ctx context.Context, op accounts.Account, store appliedPasswords,
	results map[string]observe.Result[Sample]) error {
	e, ok := store[op.Role]
	if !ok || e.User != op.User || len(e.Unmoved) == 0 {
		return nil
	}
	want, err := gtid.Parse(e.BehindGTIDs)
	if err != nil {
		return err
	}
	var still []string
	for _, site := range e.Unmoved {
		res, ok := results[site]
		if !slicesContains(p.siteNames(), site) || (ok && res.Fresh && res.Last != nil && want.IsSubsetOf(res.Last.Value.Observation.GTIDExecuted)) {
			continue
		}
		still = append(still, site)
	}
	if len(still) == len(e.Unmoved) {
		return nil
	}
	e.Unmoved = still
	if len(still) == 0 {
		e.Behind, e.BehindGTIDs = "", ""
	}
	if err := p.m.saveApplied(ctx, p, op.Role, e); err != nil {
		return err
	}
	store[op.Role] = e
	return nil
}

// moveChannel points site's replication channel at password when it
// replicates as user (a site without a channel gets the current password
// when one is configured).
func (p *mpass) moveChannel(ctx context.Context, site, user, password string, res observe.Result[Sample]) error {
	rs := res.Last.Value.Replica
	if rs == nil || rs.SourceUser != user {
		return nil
	}
	c, err := p.client(site)
	if err != nil {
		return err
	}
	if err := c.ChangeSourcePassword(ctx, password, rs.IORunning() || rs.ReplicaIORunning == "Connecting"); err != nil {
		return fmt.Errorf("site %s's replication channel: %w", site, err)
	}
	p.m.tracker.Invalidate(p.key, site)
	return nil
}

// moveReturnedChannels moves the channel of each site the replication
// account's rotation could not reach (appliedEntry.Unmoved) once it is
// reachable again: after the discard its receiver fails to authenticate
// (1045) with the old password and would stay broken. The password is
// the one the servers accept now (the rotation's Use), whatever phase a
// later rotation is in.
func (p *mpass) moveReturnedChannels(ctx context.Context, repl accounts.Account, store appliedPasswords,
	results map[string]observe.Result[Sample]) error {
	e, ok := store[repl.Role]
	if !ok || e.User != repl.User || len(e.Unmoved) == 0 {
		return nil
	}
	var still []string
	for _, site := range e.Unmoved {
		res, ok := results[site]
		switch {
		case site == p.g.Status.ActiveSite || !slicesContains(p.siteNames(), site):
			// The source now, or gone: a channel it gets later is set up
			// with the current password.
		case !ok || !res.Fresh || res.Last == nil:
			still = append(still, site)
		default:
			if err := p.moveChannel(ctx, site, repl.User, e.rotation().Use(), res); err != nil {
				return err
			}
			if res.Last.Value.Replica != nil {
				p.recordf(corev1.EventTypeNormal, v1alpha1.EventReplicationChannelMoved,
					"site %s, unreachable while the %s account's password rotated, is back; its replication channel uses the current password", site, repl.User)
			}
		}
	}
	if len(still) == len(e.Unmoved) {
		return nil
	}
	e.Unmoved = still
	if err := p.m.saveApplied(ctx, p, repl.Role, e); err != nil {
		return err
	}
	store[repl.Role] = e
	return nil
}

func slicesContains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// union is a's sites then b's not in a.
func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, s := range b {
		if !slicesContains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// setCredentialsCondition writes CredentialsReady when it changed, and
// records event (Warning) when the condition's message changed with it.
func (p *mpass) setCredentialsCondition(ctx context.Context, status metav1.ConditionStatus, reason, msg, event string) {
	prev := apimeta.FindStatusCondition(p.g.Status.Conditions, v1alpha1.ConditionCredentialsReady)
	if prev != nil && prev.Status == status && prev.Reason == reason && prev.Message == msg && prev.ObservedGeneration == p.g.Generation {
		return
	}
	update := p.m.ctrl.ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.g.Namespace).UpdateStatus
	g, _, err := controller.UpdateStatusIfChanged(ctx, p.g,
		func(o *v1alpha1.MysqlFailoverGroup) any { return o.Status },
		func(o *v1alpha1.MysqlFailoverGroup) {
			apimeta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionCredentialsReady,
				Status: status, Reason: reason, Message: msg, ObservedGeneration: o.Generation})
		}, update)
	if err != nil {
		return
	}
	p.g = g
	if event != "" {
		p.recordf(corev1.EventTypeWarning, event, "%s", msg)
	}
}

// overlap is how long both passwords work after the consumers moved.
func (o Options) overlap() time.Duration {
	if o.RotationOverlap > 0 {
		return o.RotationOverlap
	}
	return accounts.DefaultOverlap
}

// appliedFor is the group's store as this process last wrote or read it:
// the informer cache may not show the manager's own latest write yet, and
// a step must never be taken twice on a stale copy (a second RETAIN would
// drop the password the slow consumers still use).
func (m *Manager) appliedFor(p *mpass) appliedPasswords {
	sc := secretCredentials{c: m.ctrl}
	cached, _ := sc.lister(p.g.Namespace).Get(AppliedSecretName(p.g.Name))
	m.mu.Lock()
	defer m.mu.Unlock()
	mine := p.st.applied
	if mine == nil || (cached != nil && newerRV(cached.ResourceVersion, mine.ResourceVersion)) {
		if cached == nil {
			return appliedPasswords{}
		}
		p.st.applied = cached.DeepCopy()
		return decodeApplied(cached)
	}
	return decodeApplied(mine)
}

// newerRV: resource version a is later than b (etcd revisions; an
// unparsable one is never newer).
func newerRV(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x > y
}

// saveApplied stores role's entry in the group's applied-password store,
// creating it (owned by the group) when missing.
func (m *Manager) saveApplied(ctx context.Context, p *mpass, role accounts.Role, e appliedEntry) error {
	api := m.ctrl.kube.CoreV1().Secrets(p.g.Namespace)
	store := m.appliedFor(p)
	store[role] = e
	m.mu.Lock()
	base := p.st.applied
	m.mu.Unlock()
	var out *corev1.Secret
	var err error
	if base == nil {
		sec := &corev1.Secret{ObjectMeta: p.ownedMeta(AppliedSecretName(p.g.Name)), Type: corev1.SecretTypeOpaque, Data: store.encode()}
		out, err = api.Create(ctx, sec, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("the applied-password store %s appeared meanwhile; retrying", AppliedSecretName(p.g.Name))
		}
	} else {
		sec := base.DeepCopy()
		sec.Data = store.encode()
		out, err = api.Update(ctx, sec, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write the applied-password store %s: %w", AppliedSecretName(p.g.Name), err)
	}
	m.mu.Lock()
	p.st.applied = out
	m.mu.Unlock()
	if role == accounts.RoleOperator {
		return p.syncSidecarPassword(ctx, e.rotation())
	}
	return nil
}

// syncSidecarPassword writes the sidecars' password Secret
// (accounts.SidecarSecretName) from the operator account's rotation: the
// password to use and, while both work, the previous one.
func (p *mpass) syncSidecarPassword(ctx context.Context, r accounts.Rotation) error {
	api := p.m.ctrl.kube.CoreV1().Secrets(p.g.Namespace)
	name := accounts.SidecarSecretName(p.g.Name)
	data := map[string][]byte{accounts.SidecarPasswordKey: []byte(r.Use())}
	if f := r.Fallback(); f != "" {
		data[accounts.SidecarPreviousPasswordKey] = []byte(f)
	}
	live, err := api.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sec := &corev1.Secret{ObjectMeta: p.ownedMeta(name), Type: corev1.SecretTypeOpaque, Data: data}
		if _, err := api.Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create the sidecars' password Secret %s: %w", name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the sidecars' password Secret %s: %w", name, err)
	}
	if !metav1.IsControlledBy(live, p.g) {
		return fmt.Errorf("Secret %s exists and is not controlled by this group", name)
	}
	if equality.Semantic.DeepEqual(live.Data, data) {
		return nil
	}
	live.Data = data
	if _, err := api.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update the sidecars' password Secret %s: %w", name, err)
	}
	return nil
}

// ownedMeta is the metadata of a Secret the group owns.
func (p *mpass) ownedMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: p.g.Namespace,
		Labels:          map[string]string{"app.kubernetes.io/managed-by": "bloodraven", "shipstream.io/group": p.g.Name},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(p.g, v1alpha1.SchemeGroupVersion.WithKind("MysqlFailoverGroup"))}}
}
