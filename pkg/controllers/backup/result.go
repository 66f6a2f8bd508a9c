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

// ErrStampInvalid: there is no stamp, or not a valid one, at the key.
var ErrStampInvalid = errors.New("backup stamp missing or invalid")

// StoreResults reads stamps from the profile's store as the upload step
// wrote them (package objstore).
type StoreResults struct {
	// ClaimRoot gives the directory a claim is reachable at from the
	// operator, for PVC stores; nil (or false) when it is not.
	ClaimRoot func(namespace, claim string) (string, bool)
}

// ClaimReader is implemented by Results that can read stamps on claims;
// without it PVC profiles are refused before a Job starts.
type ClaimReader interface{ ReadsClaims() bool }

// ReadsClaims reports whether ClaimRoot is set.
func (r StoreResults) ReadsClaims() bool { return r.ClaimRoot != nil }

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
	case p.Storage.PVC != nil && p.Storage.PVC.ClaimName != "":
		if r.ClaimRoot == nil {
			return nil, fmt.Errorf("claim %s is not reachable from the operator, so the stamp cannot be read", p.Storage.PVC.ClaimName)
		}
		root, ok := r.ClaimRoot(t.Namespace, p.Storage.PVC.ClaimName)
		if !ok {
			return nil, fmt.Errorf("claim %s is not reachable from the operator, so the stamp cannot be read", p.Storage.PVC.ClaimName)
		}
		return objstore.NewDir(p.Storage.PVC.ClaimName, root, false)
	}
	return nil, fmt.Errorf("profile %s has no usable storage", p.Name)
}

// stampKey is the key of the stamp of one attempt of the backup.
func stampKey(b *v1alpha1.MysqlBackup, attempt int) string {
	return upload.StampKey(b.Name, string(b.UID), attempt)
}

// Outcome ends a backup whose Job succeeded, from what reading its stamp
// gave. A read error within StampGrace of the Job's completion is returned
// as retry (the status is left as it is).
func Outcome(in Input, s stamp.Stamp, readErr error) (v Verdict, retry error) {
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
		done := in.Now
		if in.Job != nil && in.Job.Status.CompletionTime != nil {
			done = in.Job.Status.CompletionTime.Time
		}
		if !errors.Is(readErr, ErrStampInvalid) && in.Now.Sub(done) < StampGrace {
			return Verdict{}, readErr
		}
		return fail(in, ReasonStampInvalid, fmt.Sprintf("Job %s succeeded, but its backup stamp: %v", b.Status.JobName, readErr)), nil
	}
	loc := Location(p, b, in.Attempt)
	if msg := stampMismatch(b, g, s, in.Attempt); msg != "" {
		return fail(in, ReasonStampInvalid, fmt.Sprintf("Job %s succeeded, but the stamp at %s %s", b.Status.JobName, loc, msg)), nil
	}
	return succeed(in, s, loc), nil
}

// stampMismatch says how the stamp is not this attempt's, or "".
func stampMismatch(b *v1alpha1.MysqlBackup, g *v1alpha1.MysqlFailoverGroup, s stamp.Stamp, attempt int) string {
	want := stamp.EncryptionNone
	if b.Status.Encryption != nil {
		want = envelope.Algorithm
	}
	switch {
	case s.Backup.Name != b.Name || s.Backup.UID != string(b.UID):
		return fmt.Sprintf("names backup %s (uid %s), not this one", s.Backup.Name, s.Backup.UID)
	case s.Group.Name != g.Name || s.Group.UID != string(g.UID):
		return fmt.Sprintf("names group %s (uid %s), not %s (uid %s)", s.Group.Name, s.Group.UID, g.Name, g.UID)
	case s.Attempt != attempt:
		return fmt.Sprintf("is of attempt %d, not %d", s.Attempt, attempt)
	case s.Encryption != want:
		return fmt.Sprintf("says encryption %s, but the backup was started with %s", s.Encryption, want)
	}
	return ""
}

func succeed(in Input, s stamp.Stamp, location string) Verdict {
	b := in.Backup
	st := b.Status
	st.ArtifactStorage = &v1alpha1.ArtifactStorage{Type: st.ArtifactStorage.Type, Location: location}
	st.ObservedGeneration = b.Generation
	st.Phase, st.PendingReason = v1alpha1.PhaseSucceeded, ""
	var size int64
	for _, f := range s.Files {
		size += f.Size
	}
	st.SizeBytes = size
	st.GTIDExecuted = s.GTIDExecuted
	st.BinlogPosition = &v1alpha1.BinlogPosition{File: s.BinlogPosition.File, Position: int64(s.BinlogPosition.Position)}
	done := metav1.NewTime(in.Now)
	if in.Job != nil && in.Job.Status.CompletionTime != nil {
		done = *in.Job.Status.CompletionTime
	}
	st.CompletionTime = &done
	enc := "not encrypted"
	if st.Encryption != nil {
		enc = "encrypted with " + s.Encryption
	}
	msg := fmt.Sprintf("backup of site %s stored at %s: %d files, %d bytes, %s; gtidExecuted %s", st.SourceSite, st.ArtifactStorage.Location, len(s.Files), size, enc, orEmpty(s.GTIDExecuted))
	setReady(&st, b, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, msg, in.Now)
	return Verdict{Status: st, Event: &Event{corev1.EventTypeNormal, v1alpha1.EventBackupSucceeded, msg}}
}

func orEmpty(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}
