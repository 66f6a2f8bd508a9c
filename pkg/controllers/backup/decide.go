// Package backup is the MysqlBackup controller (queue "backup"). This file
// holds its pure decisions: from a backup, its group, its Job and the
// Secrets the Job would mount, the status to carry, the Event to record and
// the one action to take. The controller (controller.go) reads the listers,
// writes the status first and acts after: the claim on a source and a Job
// name is stored before the Job is created, so a restarted operator finds
// the Job it may have created instead of creating a second one.
package backup

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/backup/source"
	"github.com/shipstream/bloodraven/pkg/backup/upload"
)

// PendingTimeout is how long a backup may wait before it fails: with
// NoHealthySource when it waited for a source, PendingTimedOut otherwise.
const PendingTimeout = 30 * time.Minute

// AnnotationTriggeredBy names who or what asked for the backup (a
// schedule, a person, a script). The controller copies it to the Job and
// names it in the Started Event and the Running message.
const AnnotationTriggeredBy = "bloodraven.shipstream.io/triggered-by"

// DefaultImage is spec.backup.image when the group leaves it unset (the
// CRD default).
const DefaultImage = "container-registry.oracle.com/mysql/community-server:9.7"

// Event is one Event to record once the status write succeeded.
type Event struct{ Type, Reason, Message string }

// Action is what the controller does after writing the status.
type Action int

const (
	// None: only the status (and Event).
	None Action = iota
	// CreateJob: make the provisioned claim (pvc.provisioned), the key
	// snapshot Secret (encrypted profiles) and the Job the stored claim
	// names; an existing one is kept.
	CreateJob
	// ReadResult: the Job succeeded; read its result (the stamp on S3, the
	// succeeded pod's termination message on a claim) and decide with
	// Outcome.
	ReadResult
)

// SecretGetter returns the data of a Secret of the backup's namespace, or
// false when there is none.
type SecretGetter func(name string) (map[string][]byte, bool)

// Input is what Decide reads.
type Input struct {
	Backup *v1alpha1.MysqlBackup
	// Group is nil when it does not exist.
	Group *v1alpha1.MysqlFailoverGroup
	// Job is the Job status.jobName names, nil when the API server has none.
	Job *batchv1.Job
	// Blocker is another backup of the group that holds the group's backup
	// slot (claimed and not finished); empty when none.
	Blocker string
	// Cloning are the sites a clone runs into or is requested for.
	Cloning map[string]bool
	Secret  SecretGetter
	Now     time.Time
	// Claim is the provisioned claim of the backup's profile as the API
	// server holds it; nil when there is none (or the profile names its
	// claim with claimName).
	Claim *corev1.PersistentVolumeClaim
	// Attempt is the pod attempt whose stamp Outcome judges: the
	// job-index-failure-count of the Job's succeeded pod (each retried pod
	// stores in its own location).
	Attempt int
}

// Verdict is Decide's answer.
type Verdict struct {
	Status v1alpha1.MysqlBackupStatus
	Event  *Event
	Action Action
	// RequeueAfter wakes a waiting backup when its wait times out.
	RequeueAfter time.Duration
}

// Decide is the verdict for a backup that is not being deleted.
func Decide(in Input) Verdict {
	b := in.Backup
	switch {
	case b.Status.Phase == v1alpha1.PhaseSucceeded || b.Status.Phase == v1alpha1.PhaseFailed:
		return Verdict{Status: b.Status}
	case b.Status.JobName != "":
		return decideClaimed(in)
	}
	return decideUnclaimed(in)
}

func decideUnclaimed(in Input) Verdict {
	b, g := in.Backup, in.Group
	ref := b.Spec.FailoverGroupRef.Name
	switch {
	case g == nil:
		return wait(in, WaitingForGroup, fmt.Sprintf("MysqlFailoverGroup %s does not exist in namespace %s", ref, b.Namespace), nil)
	case g.DeletionTimestamp != nil:
		return wait(in, WaitingForGroup, fmt.Sprintf("MysqlFailoverGroup %s is being deleted", ref), nil)
	}
	p := findProfile(g, b.Spec.ProfileName)
	if p == nil {
		msg := fmt.Sprintf("spec.profileName %s is not a profile of MysqlFailoverGroup %s (%s); add it to spec.backup.profiles or recreate the backup with one of them",
			b.Spec.ProfileName, ref, profileNames(g))
		return wait(in, WaitingForProfile, msg, &Event{corev1.EventTypeWarning, v1alpha1.EventBackupDeferredProfileNotFound, msg})
	}
	if msg := claimProblem(in, p); msg != "" {
		return fail(in, ReasonClaimNotOwned, msg)
	}
	if msg := secretProblem(in.Secret, g, p); msg != "" {
		return fail(in, ReasonSecretInvalid, msg+"; nothing was started")
	}
	if in.Blocker != "" {
		return wait(in, WaitingForPreviousBackup, fmt.Sprintf("MysqlBackup %s of the group is still running; one backup of a group runs at a time", in.Blocker), nil)
	}
	d := source.Choose(source.Input{Group: g, SourceSite: b.Spec.SourceSite, Cloning: in.Cloning})
	if d.Site == "" {
		return wait(in, WaitingForHealthySource, d.Message, nil)
	}
	return claim(in, p, d)
}

// claim stores the source and the Job name before the Job exists.
func claim(in Input, p *v1alpha1.BackupProfile, d source.Decision) Verdict {
	b, g := in.Backup, in.Group
	st := b.Status
	st.ObservedGeneration = b.Generation
	st.Phase, st.PendingReason = v1alpha1.PhasePending, ""
	st.JobName = JobName(b)
	st.SourceSite = d.Site
	st.MySQLImage = image(g)
	st.ArtifactStorage = &v1alpha1.ArtifactStorage{Type: p.Storage.Type, Location: Location(p, b, 0)}
	st.Encryption = nil
	if e := p.Encryption; e != nil {
		st.Encryption = &v1alpha1.BackupEncryptionStatus{Algorithm: algorithm(e), KeySecretName: KeySnapshotName(b)}
	}
	setReady(&st, b, metav1.ConditionFalse, v1alpha1.ReasonPending, fmt.Sprintf("starting Job %s: %s", st.JobName, d.Message), in.Now)
	return Verdict{Status: st, Action: CreateJob}
}

func decideClaimed(in Input) Verdict {
	b, j := in.Backup, in.Job
	if j == nil {
		if b.Status.Phase != v1alpha1.PhaseRunning {
			// Claimed, and the Job never seen: the write of the claim
			// succeeded and the create did not (yet).
			if in.Group == nil || findProfile(in.Group, b.Spec.ProfileName) == nil {
				return fail(in, v1alpha1.ReasonGroupNotFound, fmt.Sprintf("MysqlFailoverGroup %s or its profile %s went away before Job %s was created; nothing was started",
					b.Spec.FailoverGroupRef.Name, b.Spec.ProfileName, b.Status.JobName))
			}
			if msg := claimProblem(in, findProfile(in.Group, b.Spec.ProfileName)); msg != "" {
				return fail(in, ReasonClaimNotOwned, msg)
			}
			if in.Now.Sub(b.CreationTimestamp.Time) >= PendingTimeout {
				return fail(in, v1alpha1.ReasonPendingTimedOut, fmt.Sprintf("Job %s could not be created within %s (the operator's log has each refusal)", b.Status.JobName, PendingTimeout))
			}
			return Verdict{Status: b.Status, Action: CreateJob, RequeueAfter: PendingTimeout - in.Now.Sub(b.CreationTimestamp.Time)}
		}
		msg := fmt.Sprintf("Job %s was deleted before it finished; it is not created again, as a second run of the same attempt would find the first one's partial output; create a new MysqlBackup", b.Status.JobName)
		v := fail(in, ReasonJobDeleted, msg)
		v.Event = &Event{corev1.EventTypeWarning, v1alpha1.EventBackupJobLost, msg}
		return v
	}
	if ref := metav1.GetControllerOfNoCopy(j); ref == nil || ref.UID != b.UID {
		return fail(in, ReasonJobFailed, fmt.Sprintf("Job %s exists but does not belong to this backup; nothing was started", j.Name))
	}
	if c := jobCondition(j, batchv1.JobFailed); c != nil {
		return fail(in, ReasonJobFailed, fmt.Sprintf("Job %s failed: %s", j.Name, condText(c)))
	}
	if jobCondition(j, batchv1.JobComplete) != nil {
		st := running(in)
		return Verdict{Status: st, Action: ReadResult}
	}
	st := running(in)
	v := Verdict{Status: st}
	if b.Status.Phase != v1alpha1.PhaseRunning {
		v.Event = &Event{corev1.EventTypeNormal, v1alpha1.EventBackupStarted, readyMessage(st)}
	}
	return v
}

func running(in Input) v1alpha1.MysqlBackupStatus {
	b, j := in.Backup, in.Job
	st := b.Status
	st.ObservedGeneration = b.Generation
	st.Phase, st.PendingReason = v1alpha1.PhaseRunning, ""
	if st.StartTime == nil {
		t := j.CreationTimestamp
		if j.Status.StartTime != nil {
			t = *j.Status.StartTime
		}
		st.StartTime = &t
	}
	msg := fmt.Sprintf("Job %s is backing up site %s", j.Name, st.SourceSite)
	if by := triggeredBy(b); by != "" {
		msg += ", triggered by " + by
	}
	setReady(&st, b, metav1.ConditionFalse, v1alpha1.ReasonRunning, msg, in.Now)
	return st
}

// wait keeps the backup Pending for reason, or fails it once it waited
// PendingTimeout.
func wait(in Input, reason v1alpha1.BackupPendingReason, msg string, ev *Event) Verdict {
	b := in.Backup
	waited := in.Now.Sub(b.CreationTimestamp.Time)
	if waited >= PendingTimeout {
		failReason := v1alpha1.ReasonPendingTimedOut
		if reason == WaitingForHealthySource {
			failReason = v1alpha1.ReasonNoHealthySource
		}
		return fail(in, failReason, fmt.Sprintf("still %s after %s: %s", reason, PendingTimeout, msg))
	}
	st := b.Status
	st.ObservedGeneration = b.Generation
	st.Phase, st.PendingReason = v1alpha1.PhasePending, reason
	setReady(&st, b, metav1.ConditionFalse, string(reason), msg, in.Now)
	if b.Status.PendingReason == reason {
		ev = nil // announced when the wait began
	}
	return Verdict{Status: st, Event: ev, RequeueAfter: PendingTimeout - waited}
}

// fail ends the backup Failed with reason.
func fail(in Input, reason, msg string) Verdict {
	b := in.Backup
	st := b.Status
	st.ObservedGeneration = b.Generation
	st.Phase, st.PendingReason = v1alpha1.PhaseFailed, ""
	if st.CompletionTime == nil {
		t := metav1.NewTime(in.Now)
		st.CompletionTime = &t
	}
	st.Message = msg
	setReady(&st, b, metav1.ConditionFalse, reason, msg, in.Now)
	return Verdict{Status: st, Event: &Event{corev1.EventTypeWarning, v1alpha1.EventBackupFailed, reason + ": " + msg}}
}

func setReady(st *v1alpha1.MysqlBackupStatus, b *v1alpha1.MysqlBackup, status metav1.ConditionStatus, reason, msg string, now time.Time) {
	if st.Phase != v1alpha1.PhaseFailed {
		st.Message = msg
	}
	st.Conditions = append([]metav1.Condition(nil), st.Conditions...)
	c := metav1.Condition{Type: v1alpha1.ConditionReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: b.Generation}
	if prev := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); prev == nil || prev.Status != status {
		c.LastTransitionTime = metav1.NewTime(now)
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

func readyMessage(st v1alpha1.MysqlBackupStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Message
	}
	return ""
}

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if c := &j.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func condText(c *batchv1.JobCondition) string {
	s := c.Reason
	if c.Message != "" {
		s += " (" + strings.TrimSuffix(c.Message, ".") + ")"
	}
	if s == "" {
		return "no reason given"
	}
	return s
}

func findProfile(g *v1alpha1.MysqlFailoverGroup, name string) *v1alpha1.BackupProfile {
	if g.Spec.Backup == nil {
		return nil
	}
	for i := range g.Spec.Backup.Profiles {
		if g.Spec.Backup.Profiles[i].Name == name {
			return &g.Spec.Backup.Profiles[i]
		}
	}
	return nil
}

func profileNames(g *v1alpha1.MysqlFailoverGroup) string {
	if g.Spec.Backup == nil || len(g.Spec.Backup.Profiles) == 0 {
		return "it has none"
	}
	names := make([]string, len(g.Spec.Backup.Profiles))
	for i, p := range g.Spec.Backup.Profiles {
		names[i] = p.Name
	}
	return "it has " + strings.Join(names, ", ")
}

func image(g *v1alpha1.MysqlFailoverGroup) string {
	if g.Spec.Backup != nil && g.Spec.Backup.Image != "" {
		return g.Spec.Backup.Image
	}
	return DefaultImage
}

func algorithm(e *v1alpha1.BackupEncryptionSpec) string {
	if e.Algorithm != "" {
		return e.Algorithm
	}
	return "AES-256-GCM"
}

// triggeredBy is the annotation's value as messages carry it: one line,
// bounded.
func triggeredBy(b *v1alpha1.MysqlBackup) string {
	v := strings.Join(strings.Fields(b.Annotations[AnnotationTriggeredBy]), " ")
	if len(v) > 128 {
		v = v[:128] + "..."
	}
	return v
}

// Location is where one attempt (pod) of the backup is stored (the upload
// step's attempt directory). status.artifactStorage.location holds attempt
// 0's while the Job runs and the succeeded attempt's once it is confirmed.
func Location(p *v1alpha1.BackupProfile, b *v1alpha1.MysqlBackup, attempt int) string {
	dir := strings.TrimSuffix(upload.AttemptDir(b.Name, string(b.UID), attempt), "/")
	switch {
	case p.Storage.Type == v1alpha1.BackupStorageS3 && p.Storage.S3 != nil:
		prefix := strings.Trim(p.Storage.S3.Prefix, "/")
		return "s3://" + p.Storage.S3.Bucket + "/" + prefix + "/" + dir
	case ClaimName(p, b.Spec.FailoverGroupRef.Name) != "":
		return "pvc://" + ClaimName(p, b.Spec.FailoverGroupRef.Name) + "/" + dir
	}
	return ""
}
