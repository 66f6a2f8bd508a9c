package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/backup/envelope"
	"github.com/shipstream/bloodraven/pkg/backup/objstore"
	"github.com/shipstream/bloodraven/pkg/backup/stamp"
	"github.com/shipstream/bloodraven/pkg/backup/upload"
)

// StampGrace is how long after its Job succeeded a stamp that cannot be
// read is retried (a store briefly unreachable) before the backup fails.
const StampGrace = 5 * time.Minute

// Target is the attempt whose stamp to read.
type Target struct {
	Namespace string
	Profile   *v1alpha1.BackupProfile
	// Secret reads the profile's credentials Secret.
	Secret SecretGetter
	// StampKey is the stamp's key relative to the store's root.
	StampKey string
}

// Results reads the stamp an attempt wrote. ErrStampInvalid (wrapped)
// means the store answered and what it holds is not a stamp; any other
// error may pass (the store was unreachable).
type Results interface {
	ReadStamp(ctx context.Context, t Target) (stamp.Stamp, error)
}

// ErrStampInvalid: there is no stamp, or not a valid one, at the key; or
// the result a claim's pod reported is not a valid result.
var ErrStampInvalid = errors.New("backup stamp missing or invalid")

// ErrResultUnavailable: the result a claim's pod reported is gone (no
// succeeded pod, no termination message).
var ErrResultUnavailable = errors.New("backup result unavailable")

// StoreResults reads stamps from the profile's S3 store as the upload step
// wrote them (package objstore). A claim's stamp is never read by the
// operator, which mounts no claims: the Job's pod reports it (Confirmed
// from the upload container's termination message, podresult.go).
type StoreResults struct{}

// ReadStamp opens the store and decodes the stamp.
func (r StoreResults) ReadStamp(ctx context.Context, t Target) (stamp.Stamp, error) {
	store, err := r.open(t)
	if err != nil {
		return stamp.Stamp{}, err
	}
	rc, err := store.Open(ctx, t.StampKey)
	if errors.Is(err, objstore.ErrNotFound) {
		return stamp.Stamp{}, fmt.Errorf("%w: %s does not exist", ErrStampInvalid, store.Location(t.StampKey))
	}
	if err != nil {
		return stamp.Stamp{}, fmt.Errorf("reading %s: %w", store.Location(t.StampKey), err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxStampBytes+1))
	if err != nil {
		return stamp.Stamp{}, fmt.Errorf("reading %s: %w", store.Location(t.StampKey), err)
	}
	if len(data) > maxStampBytes {
		return stamp.Stamp{}, fmt.Errorf("%w: %s is larger than %d bytes", ErrStampInvalid, store.Location(t.StampKey), maxStampBytes)
	}
	s, err := stamp.Decode(data)
	if err != nil {
		return stamp.Stamp{}, fmt.Errorf("%w: %s: %v", ErrStampInvalid, store.Location(t.StampKey), err)
	}
	return s, nil
}

// maxStampBytes bounds what the operator reads: a stamp lists every file of
// a dump, some hundred bytes each.
const maxStampBytes = 64 << 20

func (r StoreResults) open(t Target) (objstore.Store, error) {
	p := t.Profile
	switch {
	case p.Storage.Type == v1alpha1.BackupStorageS3 && p.Storage.S3 != nil:
		s3 := p.Storage.S3
		data, ok := t.Secret(s3.CredentialsSecretName)
		if !ok {
			return nil, fmt.Errorf("Secret %s (the S3 credentials of profile %s) does not exist", s3.CredentialsSecretName, p.Name)
		}
		return objstore.NewS3(objstore.S3Config{Endpoint: s3.EndpointURL, Region: s3.Region, Bucket: s3.Bucket, Prefix: s3.Prefix, PathStyle: s3.ForcePathStyle,
			AccessKey: strings.TrimSpace(string(data[keyS3AccessKey])), SecretKey: strings.TrimSpace(string(data[keyS3SecretKey]))})
	}
	return nil, fmt.Errorf("profile %s has no S3 storage, so the operator has no stamp to read", p.Name)
}

// stampKey is the key of the stamp of one attempt of the backup.
func stampKey(b *v1alpha1.MysqlBackup, attempt int) string {
	return upload.StampKey(b.Name, string(b.UID), attempt)
}

// Confirmed is what a succeeded attempt says it stored, from its stamp
// (S3) or from the result its pod reported (a claim): what status records.
type Confirmed struct {
	Backup, Group stamp.Object
	Attempt       int
	Encryption    string
	// StampLocation is where the reported stamp is (a claim's result names
	// it); "" when the stamp itself was read.
	StampLocation  string
	GTIDExecuted   string
	BinlogPosition stamp.BinlogPosition
	SizeBytes      int64
	Files          int
}

// FromStamp is what a stamp read from the store says.
func FromStamp(s stamp.Stamp) Confirmed {
	var size int64
	for _, f := range s.Files {
		size += f.Size
	}
	return Confirmed{Backup: s.Backup, Group: s.Group, Attempt: s.Attempt, Encryption: s.Encryption,
		GTIDExecuted: s.GTIDExecuted, BinlogPosition: s.BinlogPosition, SizeBytes: size, Files: len(s.Files)}
}

// FromResult is what a pod's reported result says.
func FromResult(r upload.Result) Confirmed {
	return Confirmed{Backup: r.Backup, Group: r.Group, Attempt: r.Attempt, Encryption: r.Encryption, StampLocation: r.Stamp.Location,
		GTIDExecuted: r.GTIDExecuted, BinlogPosition: r.BinlogPosition, SizeBytes: r.SizeBytes, Files: r.Files}
}

// Outcome ends a backup whose Job succeeded, from what reading its result
// gave. A read error within StampGrace of the Job's completion is returned
// as retry (the status is left as it is); ErrResultUnavailable and
// ErrStampInvalid end it at once.
func Outcome(in Input, c Confirmed, readErr error) (v Verdict, retry error) {
	b, g := in.Backup, in.Group
	if g == nil {
		return fail(in, v1alpha1.ReasonGroupNotFound, fmt.Sprintf("Job %s succeeded, but MysqlFailoverGroup %s no longer exists, so its store cannot be read to confirm the backup", b.Status.JobName, b.Spec.FailoverGroupRef.Name)), nil
	}
	p := findProfile(g, b.Spec.ProfileName)
	if p == nil {
		return fail(in, ReasonStampInvalid, fmt.Sprintf("Job %s succeeded, but profile %s is no longer in the group, so its store cannot be read to confirm the backup", b.Status.JobName, b.Spec.ProfileName)), nil
	}
	// The claim recorded attempt 0's location: a profile that now stores
	// elsewhere cannot confirm what the Job wrote.
	if loc := Location(p, b, 0); b.Status.ArtifactStorage == nil || loc != b.Status.ArtifactStorage.Location {
		return fail(in, ReasonStampInvalid, fmt.Sprintf("profile %s now stores at %s, not where Job %s wrote; the backup cannot be confirmed", p.Name, loc, b.Status.JobName)), nil
	}
	if readErr != nil {
		return readFailure(in, readErr)
	}
	loc := Location(p, b, in.Attempt)
	if msg := mismatch(b, g, c, in.Attempt, loc+"/"+stamp.Name); msg != "" {
		what := "the stamp at " + loc
		if c.StampLocation != "" {
			what = "the result its pod reported for " + loc
		}
		return fail(in, ReasonStampInvalid, fmt.Sprintf("Job %s succeeded, but %s %s", b.Status.JobName, what, msg)), nil
	}
	return succeed(in, c, loc), nil
}

// readFailure is the verdict on a result that could not be read.
func readFailure(in Input, readErr error) (Verdict, error) {
	b := in.Backup
	if errors.Is(readErr, ErrResultUnavailable) {
		return fail(in, ReasonResultUnavailable, fmt.Sprintf("Job %s succeeded, but %v; the backup cannot be confirmed", b.Status.JobName, readErr)), nil
	}
	done := in.Now
	if in.Job != nil && in.Job.Status.CompletionTime != nil {
		done = in.Job.Status.CompletionTime.Time
	}
	if !errors.Is(readErr, ErrStampInvalid) && in.Now.Sub(done) < StampGrace {
		return Verdict{}, readErr
	}
	return fail(in, ReasonStampInvalid, fmt.Sprintf("Job %s succeeded, but its backup stamp: %v", b.Status.JobName, readErr)), nil
}

// mismatch says how what the attempt reported is not this attempt's, or
// "". stampAt is where this attempt's stamp must be.
func mismatch(b *v1alpha1.MysqlBackup, g *v1alpha1.MysqlFailoverGroup, c Confirmed, attempt int, stampAt string) string {
	want := stamp.EncryptionNone
	if b.Status.Encryption != nil {
		want = envelope.Algorithm
	}
	switch {
	case c.Backup.Name != b.Name || c.Backup.UID != string(b.UID):
		return fmt.Sprintf("names backup %s (uid %s), not this one", c.Backup.Name, c.Backup.UID)
	case c.Group.Name != g.Name || c.Group.UID != string(g.UID):
		return fmt.Sprintf("names group %s (uid %s), not %s (uid %s)", c.Group.Name, c.Group.UID, g.Name, g.UID)
	case c.Attempt != attempt:
		return fmt.Sprintf("is of attempt %d, not %d", c.Attempt, attempt)
	case c.Encryption != want:
		return fmt.Sprintf("says encryption %s, but the backup was started with %s", c.Encryption, want)
	case c.StampLocation != "" && c.StampLocation != stampAt:
		return fmt.Sprintf("names the stamp %s, not %s", c.StampLocation, stampAt)
	}
	return ""
}

func succeed(in Input, c Confirmed, location string) Verdict {
	b := in.Backup
	st := b.Status
	st.ArtifactStorage = &v1alpha1.ArtifactStorage{Type: st.ArtifactStorage.Type, Location: location}
	st.ObservedGeneration = b.Generation
	st.Phase, st.PendingReason = v1alpha1.PhaseSucceeded, ""
	st.SizeBytes = c.SizeBytes
	st.GTIDExecuted = c.GTIDExecuted
	st.BinlogPosition = &v1alpha1.BinlogPosition{File: c.BinlogPosition.File, Position: int64(c.BinlogPosition.Position)}
	done := metav1.NewTime(in.Now)
	if in.Job != nil && in.Job.Status.CompletionTime != nil {
		done = *in.Job.Status.CompletionTime
	}
	st.CompletionTime = &done
	enc := "not encrypted"
	if st.Encryption != nil {
		enc = "encrypted with " + c.Encryption
	}
	msg := fmt.Sprintf("backup of site %s stored at %s: %d files, %d bytes, %s; gtidExecuted %s", st.SourceSite, st.ArtifactStorage.Location, c.Files, c.SizeBytes, enc, orEmpty(c.GTIDExecuted))
	setReady(&st, b, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, msg, in.Now)
	return Verdict{Status: st, Event: &Event{corev1.EventTypeNormal, v1alpha1.EventBackupSucceeded, msg}}
}

func orEmpty(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}
