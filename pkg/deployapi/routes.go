package deployapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/stability"
)

// LeaseTokenHeader carries the lease token of a release.
const LeaseTokenHeader = "X-Lease-Token"

// unstableError is a 423 decided after a write (the hold recheck).
type unstableError struct{ reason stability.Reason }

func (e *unstableError) Error() string { return "group unstable: " + string(e.reason) }

func writeUnstable(w http.ResponseWriter, rec *requestLog, reason stability.Reason) {
	writeError(w, rec, http.StatusLocked, "unstable", map[string]any{"unstableReason": string(reason)})
}

func writeBadRequest(w http.ResponseWriter, rec *requestLog, err error) {
	var fe *FieldError
	if errors.As(err, &fe) {
		writeError(w, rec, http.StatusBadRequest, "invalid_request", map[string]any{"field": fe.Field, "message": fe.Message})
		return
	}
	writeError(w, rec, http.StatusBadRequest, "invalid_request", map[string]any{"message": err.Error()})
}

// readBody reads at most maxBodyBytes; false means the answer was written.
func readBody(w http.ResponseWriter, r *http.Request, rec *requestLog) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, rec, http.StatusRequestEntityTooLarge, "request_too_large", map[string]any{"message": "the body exceeds " + strconv.Itoa(maxBodyBytes) + " bytes"})
		} else {
			writeBadRequest(w, rec, &FieldError{Field: "body", Message: "could not be read"})
		}
		return nil, false
	}
	return b, true
}

// target is the authorized group of a request.
type target struct {
	ref   leasestore.GroupRef
	group *v1alpha1.MysqlFailoverGroup // nil when not read
}

// resolve authorizes the caller for group (optionally through instance) and
// returns the group's namespace; false means the answer was written.
func (h *Handler) resolve(w http.ResponseWriter, r *http.Request, rec *requestLog, group, instance string, disambiguate func(context.Context, string) (bool, error)) (leasestore.GroupRef, bool) {
	ctx := r.Context()
	grants, err := h.authz.grantsOf(ctx, group, callerFrom(ctx))
	if err != nil {
		h.internal(w, rec, "list MysqlDatabases", err)
		return leasestore.GroupRef{}, false
	}
	ns, err := pickNamespace(ctx, grants, instance, disambiguate)
	if errors.Is(err, errForbidden) {
		writeForbidden(w, rec)
		return leasestore.GroupRef{}, false
	}
	if err != nil {
		h.internal(w, rec, "resolve group namespace", err)
		return leasestore.GroupRef{}, false
	}
	rec.group, rec.namespace = group, ns
	return leasestore.GroupRef{Namespace: ns, Name: group}, true
}

// readGroup reads the group uncached; false means the answer was written.
func (h *Handler) readGroup(w http.ResponseWriter, r *http.Request, rec *requestLog, ref *leasestore.GroupRef) (*v1alpha1.MysqlFailoverGroup, bool) {
	g, err := h.cfg.Shipstream.ShipstreamV1alpha1().MysqlFailoverGroups(ref.Namespace).Get(r.Context(), ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		writeError(w, rec, http.StatusNotFound, "group_not_found", map[string]any{"message": "the MysqlFailoverGroup does not exist"})
		return nil, false
	}
	if err != nil {
		h.internal(w, rec, "read MysqlFailoverGroup", err)
		return nil, false
	}
	ref.UID = g.UID
	return g, true
}

// recordIn is the disambiguation of renew and release: the namespace that
// holds the addressed lease.
func (h *Handler) recordIn(group string, kind leasestore.Kind, op string) func(context.Context, string) (bool, error) {
	return func(ctx context.Context, ns string) (bool, error) {
		_, ok, err := h.store.Get(ctx, ns, group, kind, op)
		return ok, err
	}
}

func (h *Handler) queryInstance(w http.ResponseWriter, r *http.Request, rec *requestLog) (string, bool) {
	inst := r.URL.Query().Get("instance")
	if inst == "" {
		return "", true
	}
	if _, err := parseInstance("instance", inst); err != nil {
		writeBadRequest(w, rec, err)
		return "", false
	}
	return inst, true
}

func (h *Handler) getGroup(w http.ResponseWriter, r *http.Request, rec *requestLog, p leasePath) {
	inst, ok := h.queryInstance(w, r, rec)
	if !ok {
		return
	}
	ref, ok := h.resolve(w, r, rec, p.Group, inst, nil)
	if !ok {
		return
	}
	g, ok := h.readGroup(w, r, rec, &ref)
	if !ok {
		return
	}
	if reason, blocked := observationBlock(g); blocked {
		writeUnstable(w, rec, reason)
		return
	}
	recs, err := h.store.List(r.Context(), ref.Namespace, ref.Name)
	if err != nil {
		h.internal(w, rec, "list deployment leases", err)
		return
	}
	writeJSON(w, http.StatusOK, buildDocument(g, recs, h.now()))
}

// GrantResponse is the body of a successful grant. Token appears only here.
type GrantResponse struct {
	Group              string `json:"group"`
	Namespace          string `json:"namespace"`
	Kind               string `json:"kind"`
	OperationID        string `json:"operationId"`
	Instance           string `json:"instance"`
	Token              string `json:"token"`
	ExpiresAt          string `json:"expiresAt"`
	TTLSeconds         int64  `json:"ttlSeconds"`
	TopologyGeneration int64  `json:"topologyGeneration"`
}

// RenewResponse is the body of a successful renewal.
type RenewResponse struct {
	Kind               string `json:"kind"`
	OperationID        string `json:"operationId"`
	Instance           string `json:"instance"`
	ExpiresAt          string `json:"expiresAt"`
	TTLSeconds         int64  `json:"ttlSeconds"`
	TopologyGeneration int64  `json:"topologyGeneration"`
}

const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

func (h *Handler) grantLease(w http.ResponseWriter, r *http.Request, rec *requestLog, p leasePath) {
	body, ok := readBody(w, r, rec)
	if !ok {
		return
	}
	req, err := DecodeGrant(body)
	if err != nil {
		writeBadRequest(w, rec, err)
		return
	}
	ref, ok := h.resolve(w, r, rec, p.Group, req.Instance, nil)
	if !ok {
		return
	}
	rec.instance, rec.operationID = req.Instance, req.OperationID
	g, ok := h.readGroup(w, r, rec, &ref)
	if !ok {
		return
	}
	block := observationBlock
	if req.Kind == leasestore.KindFailoverHold {
		block = holdGrantBlock
	}
	if reason, blocked := block(g); blocked {
		writeUnstable(w, rec, reason)
		return
	}
	gr := leasestore.GrantRequest{
		Group: ref, Kind: req.Kind, OperationID: req.OperationID, Instance: req.Instance,
		Holder: callerFrom(r.Context()).String(), TTL: req.TTL,
		TopologyGeneration: g.Status.TopologyGeneration,
	}
	if req.Kind == leasestore.KindFailoverHold {
		gr.Recheck = h.recheckHold(ref)
	}
	grant, err := h.store.Grant(r.Context(), gr)
	if err != nil {
		h.leaseError(w, rec, err)
		return
	}
	writeJSON(w, http.StatusCreated, GrantResponse{
		Group: ref.Name, Namespace: ref.Namespace, Kind: string(grant.Kind),
		OperationID: grant.OperationID, Instance: grant.Instance, Token: grant.Token,
		ExpiresAt: grant.ExpiresAt.UTC().Format(timeFormat), TTLSeconds: int64(req.TTL.Seconds()),
		TopologyGeneration: grant.TopologyGeneration,
	})
}

// recheckHold rereads the group after a hold was persisted: a planned claim
// or transition that appeared meanwhile withdraws the hold (423).
func (h *Handler) recheckHold(ref leasestore.GroupRef) func(context.Context) error {
	return func(ctx context.Context) error {
		g, err := h.cfg.Shipstream.ShipstreamV1alpha1().MysqlFailoverGroups(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if reason, blocked := holdGrantBlock(g); blocked {
			return &unstableError{reason: reason}
		}
		return nil
	}
}

// leasePathArgs validates the {kind}/{operationId} of a path.
func leasePathArgs(w http.ResponseWriter, rec *requestLog, p leasePath) (leasestore.Kind, string, bool) {
	kind, ok := leasestore.ParseKind(p.Kind)
	if !ok {
		writeBadRequest(w, rec, &FieldError{Field: "kind", Message: "must be migration or failover-hold"})
		return "", "", false
	}
	op, err := ParseOperationID("operationId", p.OperationID)
	if err != nil {
		writeBadRequest(w, rec, err)
		return "", "", false
	}
	return kind, op, true
}

func (h *Handler) renewLease(w http.ResponseWriter, r *http.Request, rec *requestLog, p leasePath) {
	kind, op, ok := leasePathArgs(w, rec, p)
	if !ok {
		return
	}
	inst, ok := h.queryInstance(w, r, rec)
	if !ok {
		return
	}
	body, ok := readBody(w, r, rec)
	if !ok {
		return
	}
	req, err := DecodeRenew(body)
	if err != nil {
		writeBadRequest(w, rec, err)
		return
	}
	ref, ok := h.resolve(w, r, rec, p.Group, inst, h.recordIn(p.Group, kind, op))
	if !ok {
		return
	}
	rec.operationID = op
	g, ok := h.readGroup(w, r, rec, &ref)
	if !ok {
		return
	}
	out, err := h.store.Renew(r.Context(), leasestore.RenewRequest{
		Group: ref, Kind: kind, OperationID: op, Token: req.Token, TTL: req.TTL,
		TopologyGeneration: g.Status.TopologyGeneration,
		// A persisted revocation is terminal and answers 409 even while the
		// group is in transition; a renewable lease answers 423 then.
		Gate: func(cur leasestore.Record) error {
			rec.instance = cur.Instance
			if reason, blocked := observationBlock(g); blocked {
				return &unstableError{reason: reason}
			}
			return nil
		},
	})
	if err != nil {
		h.leaseError(w, rec, err)
		return
	}
	writeJSON(w, http.StatusOK, RenewResponse{
		Kind: string(out.Kind), OperationID: out.OperationID, Instance: out.Instance,
		ExpiresAt: out.ExpiresAt.UTC().Format(timeFormat), TTLSeconds: int64(req.TTL.Seconds()),
		TopologyGeneration: out.TopologyGeneration,
	})
}

func (h *Handler) releaseLease(w http.ResponseWriter, r *http.Request, rec *requestLog, p leasePath) {
	kind, op, ok := leasePathArgs(w, rec, p)
	if !ok {
		return
	}
	inst, ok := h.queryInstance(w, r, rec)
	if !ok {
		return
	}
	token := r.Header.Get(LeaseTokenHeader)
	if token == "" {
		writeBadRequest(w, rec, &FieldError{Field: LeaseTokenHeader, Message: "header is required (the lease token)"})
		return
	}
	if err := checkLeaseToken(LeaseTokenHeader, token); err != nil {
		writeBadRequest(w, rec, err)
		return
	}
	ref, ok := h.resolve(w, r, rec, p.Group, inst, h.recordIn(p.Group, kind, op))
	if !ok {
		return
	}
	rec.operationID = op
	if err := h.store.Release(r.Context(), ref, kind, op, token); err != nil {
		h.leaseError(w, rec, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// leaseError maps store outcomes to the stable error codes.
func (h *Handler) leaseError(w http.ResponseWriter, rec *requestLog, err error) {
	var unstable *unstableError
	if reason, ok := leasestore.AsRevoked(err); ok {
		writeError(w, rec, http.StatusConflict, "revoked", map[string]any{"reason": string(reason)})
		return
	}
	switch {
	case errors.As(err, &unstable):
		writeUnstable(w, rec, unstable.reason)
	case errors.Is(err, leasestore.ErrNotFound):
		writeError(w, rec, http.StatusNotFound, "not_found", map[string]any{"message": "no live lease for this kind and operation"})
	case errors.Is(err, leasestore.ErrTokenMismatch):
		writeError(w, rec, http.StatusForbidden, "lease_token_mismatch", nil)
	case errors.Is(err, leasestore.ErrMutexHeld):
		writeError(w, rec, http.StatusConflict, "lease_held", map[string]any{"message": err.Error()})
	case errors.Is(err, leasestore.ErrNotMigrationHolder):
		writeError(w, rec, http.StatusConflict, "not_migration_holder", map[string]any{"message": err.Error()})
	case errors.Is(err, leasestore.ErrInstanceMismatch):
		writeError(w, rec, http.StatusConflict, "instance_mismatch", map[string]any{"message": err.Error()})
	case errors.Is(err, leasestore.ErrContention):
		w.Header().Set("Retry-After", "1")
		writeError(w, rec, http.StatusServiceUnavailable, "busy", map[string]any{"message": err.Error()})
	default:
		h.internal(w, rec, "deployment lease store", err)
	}
}
