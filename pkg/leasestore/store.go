package leasestore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// DefaultMaxClockSkew is how long past its expiresAt a migration lease still
// blocks other operations. Operator nodes' clocks must agree within it.
const DefaultMaxClockSkew = 5 * time.Second

// casAttempts bounds optimistic-concurrency retries of one operation.
const casAttempts = 16

// Options configure a Store.
type Options struct {
	// Now is the operator clock; nil means time.Now.
	Now func() time.Time
	// MaxClockSkew, if positive, replaces DefaultMaxClockSkew.
	MaxClockSkew time.Duration
}

// Store reads and writes deployment leases in the API server. It keeps no
// state in memory, so any number of Stores (in one process or in separate
// operator processes) can serve the same groups.
type Store struct {
	client  kubernetes.Interface
	now     func() time.Time
	maxSkew time.Duration
}

// New returns a Store over client.
func New(client kubernetes.Interface, opts Options) *Store {
	s := &Store{client: client, now: opts.Now, maxSkew: opts.MaxClockSkew}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxSkew <= 0 {
		s.maxSkew = DefaultMaxClockSkew
	}
	return s
}

// MaxClockSkew is the grace past expiry before the mutex changes hands.
func (s *Store) MaxClockSkew() time.Duration { return s.maxSkew }

func (s *Store) leases(ns string) coordinationclient.LeaseInterface {
	return s.client.CoordinationV1().Leases(ns)
}

// GrantRequest asks for a new lease, or a new token for the caller's own.
type GrantRequest struct {
	Group       GroupRef
	Kind        Kind
	OperationID string
	Instance    string
	Holder      string
	TTL         time.Duration
	// TopologyGeneration is the group's current status.topologyGeneration,
	// read from the API server just before.
	TopologyGeneration int64
	// Recheck, if set, runs after a failover hold is persisted; an error
	// withdraws the hold and is returned. Planned admission persists its
	// claim and then reads holds; the hold grant persists the hold and then
	// reads the claim, so at least one of the two sees the other.
	Recheck func(ctx context.Context) error
}

// Grant is a granted lease and its token (returned once, never stored).
type Grant struct {
	Record
	Token string
}

// Grant grants or re-grants a lease. A same-operation grant replaces the
// token hash, so the previous token stops working.
func (s *Store) Grant(ctx context.Context, req GrantRequest) (Grant, error) {
	switch req.Kind {
	case KindMigration:
		return s.grantMigration(ctx, req)
	case KindFailoverHold:
		return s.grantHold(ctx, req)
	}
	return Grant{}, fmt.Errorf("unknown lease kind %q", req.Kind)
}

// newTokenAndGrantID returns a fresh lease token (32 random bytes) and an
// independent grant id (16 random bytes), so the id says nothing about the
// token.
func newTokenAndGrantID() (token, grantID string, err error) {
	b := make([]byte, 48)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:32]), hex.EncodeToString(b[32:]), nil
}

// checkTombstones refuses an operation that has any revoked record, or a
// live record granted at an older topology generation (revoked in effect;
// the controller persists the tombstone).
func (s *Store) checkTombstones(ctx context.Context, g GroupRef, op string, gen int64) error {
	for _, k := range []Kind{KindMigration, KindFailoverHold} {
		r, ok, err := s.Get(ctx, g.Namespace, g.Name, k, op)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if r.State == StateRevoked {
			return &RevokedError{Reason: r.RevokedReason}
		}
		if r.State == StateActive && r.TopologyGeneration < gen {
			return &RevokedError{Reason: ReasonTopologyChanged}
		}
	}
	return nil
}

func (s *Store) grantMigration(ctx context.Context, req GrantRequest) (Grant, error) {
	g := req.Group
	if err := s.checkTombstones(ctx, g, req.OperationID, req.TopologyGeneration); err != nil {
		return Grant{}, err
	}
	now := s.now()
	if cur, ok, err := s.Get(ctx, g.Namespace, g.Name, KindMigration, req.OperationID); err != nil {
		return Grant{}, err
	} else if ok && cur.Live(now) && cur.Instance != req.Instance {
		return Grant{}, ErrInstanceMismatch
	}
	token, grantID, err := newTokenAndGrantID()
	if err != nil {
		return Grant{}, err
	}
	expires := now.Add(req.TTL)
	// 1. Take the mutex: the linearization point. Written before the record,
	// so the mutex's expiry always covers every expiry told to a client.
	prev, err := s.updateMutex(ctx, g, func(m *mutexState) error {
		if m.heldAgainst(req.OperationID, now, s.maxSkew) {
			return ErrMutexHeld
		}
		m.OperationID, m.Instance, m.GrantID, m.ExpiresAt = req.OperationID, req.Instance, grantID, expires
		return nil
	})
	if err != nil {
		return Grant{}, err
	}
	// 2. Write the record with a fresh token hash and the same grant id.
	rec, err := s.updateRecord(ctx, g, KindMigration, req.OperationID, nil, func(r *Record, exists bool) error {
		if exists {
			if r.State == StateRevoked {
				return &RevokedError{Reason: r.RevokedReason}
			}
			if r.Live(now) && r.Instance != req.Instance {
				return ErrInstanceMismatch
			}
		}
		*r = s.freshRecord(req, token, grantID, now, expires)
		return nil
	})
	if err != nil {
		s.undoMutexGrant(ctx, g, req.OperationID, grantID, prev)
		return Grant{}, err
	}
	return Grant{Record: rec, Token: token}, nil
}

// undoMutexGrant runs when a migration grant took the mutex but wrote no
// record: the operation is dead (revoked) or the write failed. A mutex this
// operation did not hold before goes back free; one it held keeps its
// (longer) expiry but gets the previous grant id back, so the still stored
// record of that grant can release it. Nothing changes if another grant has
// written the mutex since.
func (s *Store) undoMutexGrant(ctx context.Context, g GroupRef, op, grantID string, prev mutexState) {
	_, _ = s.updateMutex(ctx, g, func(m *mutexState) error {
		if !m.exists || m.OperationID != op || m.GrantID != grantID {
			return errNoChange
		}
		if prev.OperationID != op {
			m.OperationID, m.Instance, m.GrantID = "", "", ""
			return nil
		}
		m.GrantID = prev.GrantID
		return nil
	})
}

func (s *Store) freshRecord(req GrantRequest, token, grantID string, now, expires time.Time) Record {
	return Record{
		Group: req.Group.Name, Kind: req.Kind, OperationID: req.OperationID,
		Instance: req.Instance, Holder: req.Holder, State: StateActive,
		TokenHash: HashToken(token), GrantID: grantID, ExpiresAt: expires,
		TopologyGeneration: req.TopologyGeneration, GrantTime: now,
	}
}

func (s *Store) grantHold(ctx context.Context, req GrantRequest) (Grant, error) {
	g := req.Group
	if err := s.checkTombstones(ctx, g, req.OperationID, req.TopologyGeneration); err != nil {
		return Grant{}, err
	}
	now := s.now()
	if err := s.requireMigrationHolder(ctx, g, req.OperationID, req.Instance, now); err != nil {
		return Grant{}, err
	}
	token, grantID, err := newTokenAndGrantID()
	if err != nil {
		return Grant{}, err
	}
	expires := now.Add(req.TTL)
	rec, err := s.updateRecord(ctx, g, KindFailoverHold, req.OperationID, nil, func(r *Record, exists bool) error {
		if exists && r.State == StateRevoked {
			return &RevokedError{Reason: r.RevokedReason}
		}
		*r = s.freshRecord(req, token, grantID, now, expires)
		return nil
	})
	if err != nil {
		return Grant{}, err
	}
	if req.Recheck != nil {
		if rerr := req.Recheck(ctx); rerr != nil {
			hash := rec.TokenHash
			_, _ = s.updateRecord(ctx, g, KindFailoverHold, req.OperationID, nil, func(r *Record, exists bool) error {
				if !exists || r.TokenHash != hash || r.State != StateActive {
					return errNoChange
				}
				s.end(r, StateReleased)
				return nil
			})
			return Grant{}, rerr
		}
	}
	return Grant{Record: rec, Token: token}, nil
}

// requireMigrationHolder checks that op holds a live migration lease for
// instance at the current generation and the mutex names it.
func (s *Store) requireMigrationHolder(ctx context.Context, g GroupRef, op, instance string, now time.Time) error {
	mig, ok, err := s.Get(ctx, g.Namespace, g.Name, KindMigration, op)
	if err != nil {
		return err
	}
	if !ok || !mig.Live(now) || mig.Instance != instance {
		return ErrNotMigrationHolder
	}
	m, err := s.getMutex(ctx, g)
	if err != nil {
		return err
	}
	if m.OperationID != op || now.After(m.ExpiresAt) {
		return ErrNotMigrationHolder
	}
	return nil
}

// RenewRequest extends a live lease.
type RenewRequest struct {
	Group       GroupRef
	Kind        Kind
	OperationID string
	Token       string
	TTL         time.Duration
	// TopologyGeneration is the group's current generation; a lease granted
	// at another one is revoked.
	TopologyGeneration int64
	// Gate, if set, runs once the lease is known to be renewable by this
	// caller and before anything is extended; its error is returned. The
	// deployment API answers 423 from it while the topology is unconfirmed,
	// after a tombstone has had its chance to answer 409.
	Gate func(Record) error
}

// Renew extends a lease to now+TTL. Errors: ErrNotFound (absent, released,
// expired, mutex lost), *RevokedError, ErrTokenMismatch.
func (s *Store) Renew(ctx context.Context, req RenewRequest) (Record, error) {
	g := req.Group
	now := s.now()
	rec, ok, err := s.Get(ctx, g.Namespace, g.Name, req.Kind, req.OperationID)
	if err != nil {
		return Record{}, err
	}
	if err := checkRenewable(rec, ok, req, now); err != nil {
		return Record{}, err
	}
	if req.Gate != nil {
		if err := req.Gate(rec); err != nil {
			return Record{}, err
		}
	}
	expires := now.Add(req.TTL)
	if req.Kind == KindMigration {
		_, err := s.updateMutex(ctx, g, func(m *mutexState) error {
			if m.OperationID != req.OperationID || now.After(m.ExpiresAt) {
				return ErrNotFound
			}
			m.ExpiresAt = expires
			return nil
		})
		if err != nil {
			return Record{}, err
		}
	} else if err := s.requireMigrationHolder(ctx, g, req.OperationID, rec.Instance, now); err != nil {
		return Record{}, ErrNotFound
	}
	return s.updateRecord(ctx, g, req.Kind, req.OperationID, &rec, func(r *Record, exists bool) error {
		if err := checkRenewable(*r, exists, req, now); err != nil {
			return err
		}
		r.ExpiresAt = expires
		return nil
	})
}

// checkRenewable is the renewal decision. A tombstone answers before the
// token is checked: it is terminal whatever the caller holds.
func checkRenewable(r Record, exists bool, req RenewRequest, now time.Time) error {
	switch {
	case !exists:
		return ErrNotFound
	case r.State == StateRevoked:
		return &RevokedError{Reason: r.RevokedReason}
	case !r.tokenMatches(req.Token):
		return ErrTokenMismatch
	case !r.Live(now):
		return ErrNotFound
	case r.TopologyGeneration != req.TopologyGeneration:
		return &RevokedError{Reason: ReasonTopologyChanged}
	}
	return nil
}

// Release ends a lease. An absent or already terminal lease is success; an
// existing one requires the matching token.
func (s *Store) Release(ctx context.Context, g GroupRef, kind Kind, op, token string) error {
	rec, ok, err := s.Get(ctx, g.Namespace, g.Name, kind, op)
	if err != nil || !ok {
		return err
	}
	if !rec.tokenMatches(token) {
		return ErrTokenMismatch
	}
	_, err = s.updateRecord(ctx, g, kind, op, &rec, func(r *Record, exists bool) error {
		if !exists || r.State != StateActive {
			return errNoChange
		}
		if !r.tokenMatches(token) {
			return ErrTokenMismatch
		}
		s.end(r, StateReleased)
		return nil
	})
	if err != nil && !errors.Is(err, errNoChange) {
		return err
	}
	if kind == KindMigration {
		// Only the grant released here: a same-operation re-grant that
		// raced this release already owns the mutex with a new grant id.
		return s.clearMutexIf(ctx, g, func(m mutexState) bool { return m.ownedBy(rec) })
	}
	return nil
}

func (s *Store) end(r *Record, st State) {
	t := s.now()
	r.State = st
	r.EndTime = &t
}

// Revoke turns every Active record of the group that match selects into a
// tombstone with reason, frees the mutex of a revoked migration, and returns
// the records it revoked (for Events and metrics).
func (s *Store) Revoke(ctx context.Context, g GroupRef, reason Reason, selects func(Record) bool) ([]Record, error) {
	recs, err := s.List(ctx, g.Namespace, g.Name)
	if err != nil {
		return nil, err
	}
	var revoked []Record
	for _, r := range recs {
		if r.State != StateActive || !selects(r) {
			continue
		}
		out, err := s.updateRecord(ctx, g, r.Kind, r.OperationID, &r, func(cur *Record, exists bool) error {
			if !exists || cur.State != StateActive || !selects(*cur) {
				return errNoChange
			}
			t := s.now()
			cur.State, cur.RevokedReason, cur.RevokeTime = StateRevoked, reason, &t
			return nil
		})
		if errors.Is(err, errNoChange) {
			continue
		}
		if err != nil {
			return revoked, err
		}
		revoked = append(revoked, out)
		if out.Kind == KindMigration {
			if err := s.clearMutex(ctx, g, out.OperationID); err != nil {
				return revoked, err
			}
		}
	}
	return revoked, nil
}

// Expire records the Expired state of Active records past their expiry and
// frees a mutex past expiry plus the clock-skew grace. It returns the
// earliest future expiry still pending (zero when none), for requeueing.
func (s *Store) Expire(ctx context.Context, g GroupRef) (time.Time, error) {
	now := s.now()
	recs, err := s.List(ctx, g.Namespace, g.Name)
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	for _, r := range recs {
		if r.State != StateActive {
			continue
		}
		if !now.After(r.ExpiresAt) {
			next = earliest(next, r.ExpiresAt)
			continue
		}
		_, err := s.updateRecord(ctx, g, r.Kind, r.OperationID, &r, func(cur *Record, exists bool) error {
			if !exists || cur.State != StateActive || !now.After(cur.ExpiresAt) {
				return errNoChange
			}
			s.end(cur, StateExpired)
			return nil
		})
		if err != nil && !errors.Is(err, errNoChange) {
			return next, err
		}
	}
	m, err := s.getMutex(ctx, g)
	if err != nil || m.OperationID == "" {
		return next, err
	}
	free := m.ExpiresAt.Add(s.maxSkew)
	if now.After(free) {
		return next, s.clearMutexIf(ctx, g, func(cur mutexState) bool {
			return cur.OperationID == m.OperationID && now.After(cur.ExpiresAt.Add(s.maxSkew))
		})
	}
	return earliest(next, free), nil
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// HoldSummary answers planned failover's question: is there an unexpired
// failover hold, until when, and whose.
type HoldSummary struct {
	Held bool
	// EarliestExpiry is the expiry of the first hold to end (retryAfter).
	EarliestExpiry time.Time
	// OperationID and Instance identify the hold that ends first.
	OperationID string
	Instance    string
	// Count of unexpired holds.
	Count int
}

// Holds reads the group's failover holds from the API server (a quorum
// read, never a cache). Call it after persisting the planned-operation
// claim: a hold granted concurrently then either is seen here or sees the
// claim and withdraws itself. Holds granted at another topology generation
// are revoked in effect and do not count; terminal ones never count.
func (s *Store) Holds(ctx context.Context, g GroupRef, topologyGeneration int64) (HoldSummary, error) {
	recs, err := s.List(ctx, g.Namespace, g.Name)
	if err != nil {
		return HoldSummary{}, err
	}
	return summarizeHolds(recs, topologyGeneration, s.now()), nil
}

func summarizeHolds(recs []Record, gen int64, now time.Time) HoldSummary {
	var h HoldSummary
	for _, r := range recs {
		if r.Kind != KindFailoverHold || !r.Live(now) || r.TopologyGeneration != gen {
			continue
		}
		h.Count++
		if !h.Held || r.ExpiresAt.Before(h.EarliestExpiry) {
			h.Held, h.EarliestExpiry, h.OperationID, h.Instance = true, r.ExpiresAt, r.OperationID, r.Instance
		}
	}
	return h
}

// Get reads one record from the API server.
func (s *Store) Get(ctx context.Context, ns, group string, kind Kind, op string) (Record, bool, error) {
	l, err := s.leases(ns).Get(ctx, recordName(group, kind, op), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, err
	}
	r, err := leaseToRecord(l)
	return r, err == nil, err
}

// List reads every record of a group from the API server, oldest grant first.
func (s *Store) List(ctx context.Context, ns, group string) ([]Record, error) {
	sel := labels.SelectorFromSet(labels.Set{LabelGroup: group}).String()
	list, err := s.leases(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(list.Items))
	for i := range list.Items {
		r, err := leaseToRecord(&list.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GrantTime.Before(out[j].GrantTime) })
	return out, nil
}

// errNoChange aborts an update that turned out to be unnecessary.
var errNoChange = errors.New("no change")

// updateRecord reads a record, lets mutate change it, and writes it with a
// resourceVersion precondition (create when absent), retrying on conflict.
// A seed read just before saves the first read; a stale seed only costs a
// conflict and a retry.
func (s *Store) updateRecord(ctx context.Context, g GroupRef, kind Kind, op string, seed *Record, mutate func(r *Record, exists bool) error) (Record, error) {
	name := recordName(g.Name, kind, op)
	for range casAttempts {
		var l *coordinationv1.Lease
		var err error
		if seed != nil && seed.obj != nil {
			l, seed = seed.obj.DeepCopy(), nil
		} else {
			l, err = s.leases(g.Namespace).Get(ctx, name, metav1.GetOptions{})
		}
		exists := err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			return Record{}, err
		}
		var r Record
		if exists {
			if r, err = leaseToRecord(l); err != nil {
				return Record{}, err
			}
		} else {
			l = nil
		}
		if err := mutate(&r, exists); err != nil {
			return Record{}, err
		}
		obj := recordToLease(l, g, r, s.now())
		var out *coordinationv1.Lease
		if exists {
			out, err = s.leases(g.Namespace).Update(ctx, obj, metav1.UpdateOptions{})
		} else {
			out, err = s.leases(g.Namespace).Create(ctx, obj, metav1.CreateOptions{})
		}
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return Record{}, err
		}
		return leaseToRecord(out)
	}
	return Record{}, ErrContention
}

func (s *Store) getMutex(ctx context.Context, g GroupRef) (mutexState, error) {
	l, err := s.leases(g.Namespace).Get(ctx, mutexName(g.Name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return mutexState{}, nil
	}
	if err != nil {
		return mutexState{}, err
	}
	return leaseToMutex(l)
}

// updateMutex is updateRecord for the group's mutex; it returns the mutex
// as it was before the change.
func (s *Store) updateMutex(ctx context.Context, g GroupRef, mutate func(m *mutexState) error) (mutexState, error) {
	for range casAttempts {
		l, err := s.leases(g.Namespace).Get(ctx, mutexName(g.Name), metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return mutexState{}, err
		}
		var m mutexState
		if err == nil {
			if m, err = leaseToMutex(l); err != nil {
				return mutexState{}, err
			}
		} else {
			l = nil
		}
		prev := m
		if err := mutate(&m); err != nil {
			return prev, err
		}
		obj := mutexToLease(l, g, m, s.now())
		if m.exists {
			_, err = s.leases(g.Namespace).Update(ctx, obj, metav1.UpdateOptions{})
		} else {
			_, err = s.leases(g.Namespace).Create(ctx, obj, metav1.CreateOptions{})
		}
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			continue
		}
		return prev, err
	}
	return mutexState{}, ErrContention
}

// clearMutex frees the mutex if op holds it (any grant of op: a revoked
// operation has no grant left that may keep it).
func (s *Store) clearMutex(ctx context.Context, g GroupRef, op string) error {
	return s.clearMutexIf(ctx, g, func(m mutexState) bool { return m.OperationID == op })
}

func (s *Store) clearMutexIf(ctx context.Context, g GroupRef, cond func(mutexState) bool) error {
	_, err := s.updateMutex(ctx, g, func(m *mutexState) error {
		if !m.exists || m.OperationID == "" || !cond(*m) {
			return errNoChange
		}
		m.OperationID, m.Instance, m.GrantID = "", "", ""
		return nil
	})
	if errors.Is(err, errNoChange) {
		return nil
	}
	return err
}
