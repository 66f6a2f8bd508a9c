// Package events holds the Kubernetes Event reasons Bloodraven records and
// builds the process's Event recorder.
//
// Every reason has the form <Subject><PastTenseVerb>, optionally followed by
// a qualifier naming the cause (PromotionRefusedReclonePending), and each
// reason is always recorded with the same type (Normal or Warning), noted
// beside it. Messages never carry secrets.
package events

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	shipstreamscheme "github.com/shipstream/bloodraven/generated/clientset/versioned/scheme"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// Reasons of MysqlDatabase Events.
const (
	// DatabaseGroupResolved (Normal): the referenced MysqlFailoverGroup exists.
	DatabaseGroupResolved = "DatabaseGroupResolved"
	// DatabaseGroupLost (Warning): the referenced MysqlFailoverGroup was deleted.
	DatabaseGroupLost = "DatabaseGroupLost"
	// DatabaseDropRefused (Warning): another MysqlDatabase still declares the schema.
	DatabaseDropRefused = "DatabaseDropRefused"
	// DatabaseDropSkipped (Normal): there was nothing to drop.
	DatabaseDropSkipped = "DatabaseDropSkipped"
	// OwnerUserDropSkipped (Warning): another MysqlDatabase still claims the owner user.
	OwnerUserDropSkipped = "OwnerUserDropSkipped"
)

// Reasons of the deployment API and planned failover (seed 000, v1.7.0 names).
// The planned-failover reasons the operator records are defined where they
// are decided (package topology) and only named here, so there is one
// spelling.
const (
	DeploymentLeaseRevoked                   = "DeploymentLeaseRevoked"                    // Normal
	PlannedFailoverStarted                   = topology.EventPlannedFailoverStarted        // Normal
	PlannedFailoverSkipped                   = "PlannedFailoverSkipped"                    // Normal
	PlannedFailoverRejected                  = topology.EventPlannedFailoverRejected       // Warning
	PlannedFailoverDeferred                  = topology.EventPlannedFailoverDeferred       // Normal
	PlannedFailoverFailed                    = topology.EventPlannedFailoverFailed         // Warning
	PlannedFailoverDrainStarted              = topology.EventPlannedFailoverDrainStarted   // Normal
	PlannedFailoverTargetCaughtUp            = topology.EventPlannedFailoverTargetCaughtUp // Normal
	PlannedFailoverSucceeded                 = topology.EventPlannedFailoverSucceeded      // Normal
	PlannedFailoverRollbackStarted           = topology.EventPlannedFailoverRollbackStarted
	PlannedFailoverHoldAcknowledgmentIgnored = "PlannedFailoverHoldAcknowledgmentIgnored"
)

// Reasons renamed by v1.7.0 (seed 003's Events table), kept here so every
// controller uses one spelling.
const (
	OldPrimaryRecovered                 = "OldPrimaryRecovered"
	PromotionRefusedReclonePending      = "PromotionRefusedReclonePending"
	KeyringPhaseChanged                 = "KeyringPhaseChanged"
	KeyringEscrowTimedOut               = "KeyringEscrowTimedOut"
	KeyringRotationRejected             = "KeyringRotationRejected"
	PITRArchiveRecovered                = "PITRArchiveRecovered"
	PITRReplayTruncated                 = "PITRReplayTruncated"
	PITRArchiveKeySnapshotReadFailed    = "PITRArchiveKeySnapshotReadFailed"
	PITRArchiveStampSkipped             = "PITRArchiveStampSkipped"
	DragonflyPromotionSucceeded         = "DragonflyPromotionSucceeded"
	DragonflySessionsLost               = "DragonflySessionsLost"
	DragonflyUpgradeSucceeded           = "DragonflyUpgradeSucceeded"
	DragonflySyncTimedOut               = "DragonflySyncTimedOut"
	DragonflyPromotionDeferred          = "DragonflyPromotionDeferred"
	DragonflyUpgradeDeferred            = "DragonflyUpgradeDeferred"
	RestoreInPlaceCanceled              = "RestoreInPlaceCanceled"
	RestoreInPlaceConfirmIgnored        = "RestoreInPlaceConfirmIgnored"
	RestoreInPlaceRejected              = "RestoreInPlaceRejected"
	RestoreInPlaceFailed                = "RestoreInPlaceFailed"
	RestoreInPlaceDeferredPreviousQueue = "RestoreInPlaceDeferredPreviousQueue"
	RestorePeerReplicationStoppedBehind = "RestorePeerReplicationStoppedBehind"
	RestoreReclonesDrained              = "RestoreReclonesDrained"
	ArtifactCleanupStalledProducerStop  = "ArtifactCleanupStalledProducerStop"
)

// Scheme knows the core and Bloodraven types, so Events can reference both.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(shipstreamscheme.AddToScheme(s))
	return s
}

// Component is the Event source of the operator.
const Component = "bloodraven"

// NewRecorder returns a recorder that writes Events through client until ctx
// ends, and a function that flushes and stops it.
func NewRecorder(ctx context.Context, client kubernetes.Interface) (record.EventRecorder, func()) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return b.NewRecorder(Scheme(), corev1.EventSource{Component: Component}), b.Shutdown
}
