package backup

import "github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"

// Pending reasons (status.pendingReason, the CRD's enum). While a backup is
// Pending its Ready condition carries the pending reason as its reason.
const (
	WaitingForHealthySource  v1alpha1.BackupPendingReason = v1alpha1.ReasonWaitingForHealthySource
	WaitingForGroup          v1alpha1.BackupPendingReason = "WaitingForGroup"
	WaitingForProfile        v1alpha1.BackupPendingReason = "WaitingForProfile"
	WaitingForPreviousBackup v1alpha1.BackupPendingReason = "WaitingForPreviousBackup"
)

// Ready reasons of a Failed backup besides v1alpha1's NoHealthySource,
// PendingTimedOut and GroupNotFound. Each names one cause, so an alert or a
// script can tell them apart without reading the message.
const (
	// ReasonJobFailed: the backup Job failed (its backoffLimit was used up
	// or its activeDeadlineSeconds passed); the message carries the Job's
	// own reason and message.
	ReasonJobFailed = "JobFailed"
	// ReasonJobDeleted: the backup's Job was deleted before it finished.
	// The controller never creates it again: a second Job of the same
	// attempt would meet the first one's partial output.
	ReasonJobDeleted = "JobDeleted"
	// ReasonSecretInvalid: a Secret the Job would mount (the backup
	// account, the S3 credentials, the passphrase) or one of its keys is
	// missing or empty. Nothing was started.
	ReasonSecretInvalid = "SecretInvalid"
	// ReasonClaimNotOwned: the claim a profile's pvc.provisioned names
	// exists and is not the group's: the operator never adopts or writes
	// onto someone else's claim. Nothing was started.
	ReasonClaimNotOwned = "ClaimNotOwned"
	// ReasonStampInvalid: the Job succeeded but the stamp it should have
	// written (on a claim: the result its succeeded pod reported) could
	// not be read, is not valid, or does not name this backup, its group,
	// its attempt and its encryption.
	ReasonStampInvalid = "StampInvalid"
	// ReasonResultUnavailable: the Job of a PVC profile succeeded, but the
	// result its succeeded pod reported is gone (the pod was deleted, or
	// its upload container has no termination message), so the backup
	// cannot be confirmed; the stamp on the claim may well be whole.
	ReasonResultUnavailable = "ResultUnavailable"
)
