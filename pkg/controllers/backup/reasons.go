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
	// ReasonStorageUnsupported: the profile's storage is of a kind this
	// build cannot back up to (a provisioned claim).
	ReasonStorageUnsupported = "StorageUnsupported"
	// ReasonStampInvalid: the Job succeeded but the stamp it should have
	// written could not be read, or does not name this backup, its group
	// and its attempt.
	ReasonStampInvalid = "StampInvalid"
)
