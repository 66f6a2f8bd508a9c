package leasestore

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound: no live lease (absent, released, expired, or the mutex
	// has passed to another operation). A renewal answers 404.
	ErrNotFound = errors.New("deployment lease not found or expired")
	// ErrTokenMismatch: the lease token does not match the stored hash
	// (a wrong token, or one a same-operation re-grant invalidated).
	ErrTokenMismatch = errors.New("lease token does not match")
	// ErrMutexHeld: another operation holds the group's migration lease.
	ErrMutexHeld = errors.New("another operation holds the migration lease")
	// ErrNotMigrationHolder: a failover hold was requested by an operation
	// and instance that do not hold a live migration lease.
	ErrNotMigrationHolder = errors.New("a failover hold requires the live migration lease of the same operation and instance")
	// ErrInstanceMismatch: the operation holds a live lease for another instance.
	ErrInstanceMismatch = errors.New("the operation holds its lease for another instance")
	// ErrContention: optimistic-concurrency retries ran out (a very busy
	// group); the caller may retry.
	ErrContention = errors.New("deployment lease store: too many concurrent updates")
)

// RevokedError is returned for a revoked lease (a tombstone, or a grant
// older than the group's topology generation).
type RevokedError struct{ Reason Reason }

func (e *RevokedError) Error() string { return fmt.Sprintf("deployment lease revoked: %s", e.Reason) }

// AsRevoked returns the revocation reason of err, if it is one.
func AsRevoked(err error) (Reason, bool) {
	var r *RevokedError
	if errors.As(err, &r) {
		return r.Reason, true
	}
	return "", false
}
