// Package leasestore is the durable store of the deployment API's leases.
//
// Every deployment lease (a migration lease or a failover hold of one
// operation) is one coordination.k8s.io/v1 Lease object in the group's
// namespace, separate from the operator's leader-election Lease. It holds the
// lease's state, its exact expiry, the topology generation it was granted at
// and the SHA-256 hash of its token, never the token itself. A revoked
// record is kept as a tombstone until the group is deleted (the records are
// owned by the MysqlFailoverGroup).
//
// "One migration lease per group" is enforced by one more Lease per group,
// the mutex, which names the operation holding the migration lease and until
// when. Every change to it is an update with a resourceVersion precondition,
// so two operator processes that share no memory still agree on one holder:
// the API server refuses the second writer, which then rereads.
package leasestore

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// Kind is the kind of a deployment lease.
type Kind string

const (
	// KindMigration is the group-wide migration mutex.
	KindMigration Kind = "migration"
	// KindFailoverHold defers planned operations; granted only to the
	// current migration holder for the same operation and instance.
	KindFailoverHold Kind = "failover-hold"
)

// ParseKind accepts the two kinds' wire names.
func ParseKind(s string) (Kind, bool) {
	switch Kind(s) {
	case KindMigration, KindFailoverHold:
		return Kind(s), true
	}
	return "", false
}

// State is the lifecycle state of a record.
type State string

const (
	StateActive   State = "Active"
	StateReleased State = "Released"
	StateExpired  State = "Expired"
	StateRevoked  State = "Revoked"
)

// Reason is why a lease was revoked (v1.7.0 spelling; also the metric label,
// the 409 body's reason and the Event message).
type Reason string

const (
	ReasonTopologyChanged Reason = "TopologyChanged"
	ReasonOperatorRevoked Reason = "OperatorRevoked"
)

// Record is one deployment lease as stored.
type Record struct {
	Namespace   string `json:"-"`
	Group       string `json:"group"`
	Kind        Kind   `json:"kind"`
	OperationID string `json:"operationId"`
	// Instance is the MysqlDatabase name the lease was granted for.
	Instance string `json:"instance"`
	// Holder is the ServiceAccount (namespace/name) that was granted it.
	Holder string `json:"holder"`
	State  State  `json:"state"`
	// TokenHash is "sha256:<hex>" of the current token. Never logged.
	TokenHash string `json:"tokenHash"`
	// GrantID is random per grant and re-grant (not derived from the token).
	// A migration grant writes it into the mutex too, so a release frees the
	// mutex only while the mutex still belongs to the grant it released.
	GrantID            string    `json:"grantId,omitempty"`
	ExpiresAt          time.Time `json:"expiresAt"`
	TopologyGeneration int64     `json:"topologyGeneration"`
	GrantTime          time.Time `json:"grantTime"`
	// RevokedReason and RevokeTime are set on a tombstone.
	RevokedReason Reason     `json:"revokedReason,omitempty"`
	RevokeTime    *time.Time `json:"revokeTime,omitempty"`
	// EndTime is when a Released or Expired state was recorded.
	EndTime *time.Time `json:"endTime,omitempty"`

	resourceVersion string
	obj             *coordinationv1.Lease // as read, to seed an update
}

// Live reports whether the record still carries authority at now: Active and
// not past its expiry (the operator clock decides: now > expiresAt ends it).
func (r Record) Live(now time.Time) bool {
	return r.State == StateActive && !now.After(r.ExpiresAt)
}

// Terminal reports whether the record can never become live again by renewal.
func (r Record) Terminal() bool { return r.State != StateActive }

// HashToken is the stored form of a lease token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// tokenMatches compares in constant time so a caller cannot learn the hash
// byte by byte.
func (r Record) tokenMatches(token string) bool {
	return subtle.ConstantTimeCompare([]byte(r.TokenHash), []byte(HashToken(token))) == 1
}

// mutexState is the content of a group's mutex Lease.
type mutexState struct {
	// OperationID holding the migration lease; empty when free.
	OperationID string `json:"operationId,omitempty"`
	Instance    string `json:"instance,omitempty"`
	// GrantID is the GrantID of the holder's current record.
	GrantID   string    `json:"grantId,omitempty"`
	ExpiresAt time.Time `json:"expiresAt"`

	resourceVersion string
	exists          bool
}

// heldAgainst reports whether the mutex blocks operation op at now. A
// holder's claim outlives its expiresAt by maxSkew: after a leader handover,
// a new leader whose clock runs up to maxSkew ahead of the clock that
// granted the lease still sees the old expiry as not yet passed plus grace,
// so it never hands the mutex to another operation while the holder may
// still believe it holds it. (A clock that runs behind only waits longer.)
func (m mutexState) heldAgainst(op string, now time.Time, maxSkew time.Duration) bool {
	return m.OperationID != "" && m.OperationID != op && !now.After(m.ExpiresAt.Add(maxSkew))
}

// ownedBy reports whether the mutex still belongs to grant rec: the same
// operation and, when both carry one, the same grant. A same-operation
// re-grant that raced a release has already written its new grant id, so
// the release leaves the mutex to it.
func (m mutexState) ownedBy(rec Record) bool {
	if m.OperationID != rec.OperationID {
		return false
	}
	return m.GrantID == "" || rec.GrantID == "" || m.GrantID == rec.GrantID
}

// durationProjection is spec.leaseDurationSeconds: the whole seconds from
// renewTime to expiresAt, rounded up, and at least 1 because the API server
// refuses 0. It is informational; expiresAt is authoritative.
func durationProjection(renew, expires time.Time) int32 {
	d := expires.Sub(renew).Seconds()
	if d <= 1 {
		return 1
	}
	if d > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(math.Ceil(d))
}

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("leasestore: encode: %v", err)) // plain structs never fail
	}
	return string(b)
}

// RevokeAnnotation on a MysqlFailoverGroup revokes all its deployment leases
// (any value); the deploy-lease controller (pkg/controllers/leaserevocation)
// removes it once the revocation is persisted.
const RevokeAnnotation = "bloodraven.shipstream.io/revoke-deployment-leases"
