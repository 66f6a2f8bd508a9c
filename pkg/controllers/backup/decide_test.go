package backup

import (
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/backup/stamp"
	"github.com/shipstream/bloodraven/pkg/backup/upload"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func lag(n int64) *int64 { return &n }

func testGroup() *v1alpha1.MysqlFailoverGroup {
	return &v1alpha1.MysqlFailoverGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "ns", UID: "7d1e3b52-9f0c-4a8e-b6d2-5c4f1e2a9b30"},
		Spec: v1alpha1.MysqlFailoverGroupSpec{
			Sites:       []v1alpha1.SiteSpec{{Name: "iad"}, {Name: "pdx"}},
			Credentials: v1alpha1.CredentialsSpec{BackupSecretName: "bk"},
			Backup: &v1alpha1.BackupSpec{Profiles: []v1alpha1.BackupProfile{{Name: "nightly", Storage: v1alpha1.BackupStorage{
				Type: v1alpha1.BackupStorageS3, S3: &v1alpha1.S3Storage{Bucket: "b", Prefix: "/prod/x/", CredentialsSecretName: "s3"}}}}},
		},
		Status: v1alpha1.MysqlFailoverGroupStatus{ActiveSite: "iad", Sites: []v1alpha1.SiteStatus{
			{Name: "iad", State: v1alpha1.SiteWritable},
			{Name: "pdx", State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationRunning, SourceConvergenceState: "Converged", SecondsBehindSource: lag(3)},
		}},
	}
}

func testBackup() *v1alpha1.MysqlBackup {
	return &v1alpha1.MysqlBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly-1", Namespace: "ns", UID: "0a4c902a-c1b5-4714-a4d6-092fc1f2c71a", Generation: 1, CreationTimestamp: metav1.NewTime(t0)},
		Spec:       v1alpha1.MysqlBackupSpec{FailoverGroupRef: v1alpha1.FailoverGroupReference{Name: "orders"}, ProfileName: "nightly"},
	}
}

func allSecrets(name string) (map[string][]byte, bool) {
	return map[string][]byte{"username": []byte("u"), "password": []byte("p"), "AWS_ACCESS_KEY_ID": []byte("a"),
		"AWS_SECRET_ACCESS_KEY": []byte("s"), "passphrase": []byte("x"), "ca.crt": []byte("c")}, true
}

func input(mutate ...func(*Input)) Input {
	in := Input{Backup: testBackup(), Group: testGroup(), Secret: allSecrets, Now: t0.Add(time.Minute)}
	for _, m := range mutate {
		m(&in)
	}
	return in
}

func ready(t *testing.T, st v1alpha1.MysqlBackupStatus) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	if c == nil {
		t.Fatal("no Ready condition")
	}
	return *c
}

func TestWaitsAndTheirTimeouts(t *testing.T) {
	noGroup := func(in *Input) { in.Group = nil }
	deleting := func(in *Input) { now := metav1.NewTime(t0); in.Group.DeletionTimestamp = &now }
	noProfile := func(in *Input) { in.Backup.Spec.ProfileName = "weekly" }
	noBackupSpec := func(in *Input) { in.Group.Spec.Backup = nil; in.Backup.Spec.ProfileName = "weekly" }
	noSource := func(in *Input) {
		in.Group.Status.Sites[0].State = v1alpha1.SiteUnreachable
		in.Group.Status.Sites[1].State = v1alpha1.SiteUnknown
	}
	blocked := func(in *Input) { in.Blocker = "older" }
	for _, c := range []struct {
		name     string
		mutate   func(*Input)
		reason   v1alpha1.BackupPendingReason
		msg      string
		timedOut string
		event    string
	}{
		{"no group", noGroup, WaitingForGroup, "MysqlFailoverGroup orders does not exist in namespace ns", v1alpha1.ReasonPendingTimedOut, ""},
		{"group deleting", deleting, WaitingForGroup, "MysqlFailoverGroup orders is being deleted", v1alpha1.ReasonPendingTimedOut, ""},
		{"no such profile", noProfile, WaitingForProfile, "spec.profileName weekly is not a profile of MysqlFailoverGroup orders (it has nightly)", v1alpha1.ReasonPendingTimedOut, v1alpha1.EventBackupDeferredProfileNotFound},
		{"no backup spec", noBackupSpec, WaitingForProfile, "(it has none)", v1alpha1.ReasonPendingTimedOut, v1alpha1.EventBackupDeferredProfileNotFound},
		{"no source", noSource, WaitingForHealthySource, "passed over: pdx: state unknown; iad (primary): unreachable", v1alpha1.ReasonNoHealthySource, ""},
		{"previous backup", blocked, WaitingForPreviousBackup, "MysqlBackup older of the group is still running", v1alpha1.ReasonPendingTimedOut, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Decide(input(c.mutate))
			r := ready(t, v.Status)
			if v.Status.Phase != v1alpha1.PhasePending || v.Status.PendingReason != c.reason || r.Status != metav1.ConditionFalse ||
				r.Reason != string(c.reason) || !strings.Contains(r.Message, c.msg) || v.Action != None || v.Status.JobName != "" {
				t.Fatalf("got %+v / %+v", v.Status, r)
			}
			if got := v.RequeueAfter; got != PendingTimeout-time.Minute {
				t.Errorf("requeue after %s, want the time left until the timeout", got)
			}
			if (v.Event != nil) != (c.event != "") || (v.Event != nil && (v.Event.Reason != c.event || v.Event.Type != corev1.EventTypeWarning)) {
				t.Errorf("Event %+v, want %q", v.Event, c.event)
			}
			// The same wait again: no second Event.
			again := input(c.mutate)
			again.Backup.Status = v.Status
			if v := Decide(again); v.Event != nil {
				t.Errorf("the wait's Event was recorded again: %+v", v.Event)
			}
			// 1 ns short of the timeout: still waiting; at it: failed.
			late := input(c.mutate, func(in *Input) { in.Now = t0.Add(PendingTimeout - time.Nanosecond) })
			if v := Decide(late); v.Status.Phase != v1alpha1.PhasePending {
				t.Fatalf("failed before the timeout: %+v", v.Status)
			}
			late.Now = t0.Add(PendingTimeout)
			v = Decide(late)
			r = ready(t, v.Status)
			if v.Status.Phase != v1alpha1.PhaseFailed || r.Reason != c.timedOut || !strings.HasPrefix(r.Message, "still "+string(c.reason)+" after 30m0s: ") ||
				v.Event == nil || v.Event.Reason != v1alpha1.EventBackupFailed || v.Status.CompletionTime == nil {
				t.Fatalf("at the timeout: %+v / %+v / %+v", v.Status, r, v.Event)
			}
			// Failed is final.
			done := input(c.mutate, func(in *Input) { in.Now = t0.Add(time.Hour) })
			done.Backup.Status = v.Status
			if v2 := Decide(done); v2.Action != None || v2.Event != nil || v2.Status.Phase != v1alpha1.PhaseFailed {
				t.Fatalf("a failed backup moved: %+v", v2)
			}
		})
	}
}

func TestClaim(t *testing.T) {
	v := Decide(input(func(in *Input) {
		in.Group.Spec.Backup.Profiles[0].Encryption = &v1alpha1.BackupEncryptionSpec{PassphraseSecretKeyRef: v1alpha1.PassphraseSecretKeySelector{Name: "pp"}}
	}))
	st := v.Status
	r := ready(t, st)
	if v.Action != CreateJob || st.Phase != v1alpha1.PhasePending || st.PendingReason != "" || r.Reason != v1alpha1.ReasonPending || r.Status != metav1.ConditionFalse {
		t.Fatalf("claim: %+v / %+v", st, r)
	}
	if st.JobName != JobName(testBackup()) || st.SourceSite != "pdx" || st.MySQLImage != DefaultImage ||
		st.ArtifactStorage == nil || st.ArtifactStorage.Location != "s3://b/prod/x/nightly-1-0a4c902a-c1b5-4714-a4d6-092fc1f2c71a/0" ||
		st.Encryption == nil || st.Encryption.Algorithm != "AES-256-GCM" || st.Encryption.KeySecretName != KeySnapshotName(testBackup()) {
		t.Fatalf("claim: %+v", st)
	}
	if !strings.Contains(r.Message, "starting Job "+st.JobName+": site pdx, a replica 3s behind") {
		t.Errorf("message %q", r.Message)
	}
}

func TestSecretsAndStorageFailAtOnce(t *testing.T) {
	for _, c := range []struct {
		name, reason, msg string
		mutate            func(*Input)
	}{
		{"no backup account", ReasonSecretInvalid, "the backup account (spec.credentials.backupSecretName) is not set", func(in *Input) { in.Group.Spec.Credentials.BackupSecretName = "" }},
		{"absent", ReasonSecretInvalid, "Secret bk (the backup account (spec.credentials.backupSecretName)) does not exist", func(in *Input) {
			in.Secret = func(n string) (map[string][]byte, bool) {
				if n == "bk" {
					return nil, false
				}
				return allSecrets(n)
			}
		}},
		{"empty key", ReasonSecretInvalid, "Secret s3 (the S3 credentials of profile nightly) has no key AWS_ACCESS_KEY_ID, or it is empty", func(in *Input) {
			in.Secret = func(n string) (map[string][]byte, bool) {
				d, _ := allSecrets(n)
				d["AWS_ACCESS_KEY_ID"] = []byte(" \n")
				return d, true
			}
		}},
		{"ambient S3 identity", ReasonSecretInvalid, "profile nightly has no storage.s3.credentialsSecretName", func(in *Input) {
			in.Group.Spec.Backup.Profiles[0].Storage.S3.CredentialsSecretName = ""
		}},
		{"passphrase key", ReasonSecretInvalid, "Secret pp (the passphrase of profile nightly) has no key mine", func(in *Input) {
			in.Group.Spec.Backup.Profiles[0].Encryption = &v1alpha1.BackupEncryptionSpec{PassphraseSecretKeyRef: v1alpha1.PassphraseSecretKeySelector{Name: "pp", Key: "mine"}}
		}},
		{"TLS CA", ReasonSecretInvalid, "Secret tls (the TLS Secret (spec.tls.secretName)) has no key ca.crt", func(in *Input) {
			in.Group.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "tls"}
			in.Secret = func(n string) (map[string][]byte, bool) {
				d, _ := allSecrets(n)
				if n == "tls" {
					delete(d, "ca.crt")
				}
				return d, true
			}
		}},
		{"provisioned claim not the group's", ReasonClaimNotOwned, "PersistentVolumeClaim orders-backup-nightly (the provisioned claim of profile nightly) already exists with no controller, not MysqlFailoverGroup orders", func(in *Input) {
			provisionedProfile(in)
			in.Claim = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "orders-backup-nightly", Namespace: "ns"}}
		}},
		{"provisioned claim of another group of that name", ReasonClaimNotOwned, "with controller MysqlFailoverGroup orders, not", func(in *Input) {
			provisionedProfile(in)
			other := testGroup()
			other.UID = "0b9a8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d" // the group's deleted predecessor
			in.Claim = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "orders-backup-nightly", Namespace: "ns",
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(other, v1alpha1.SchemeGroupVersion.WithKind("MysqlFailoverGroup"))}}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Decide(input(c.mutate))
			r := ready(t, v.Status)
			if v.Status.Phase != v1alpha1.PhaseFailed || r.Reason != c.reason || !strings.Contains(r.Message, c.msg) || v.Action != None || v.Status.JobName != "" {
				t.Fatalf("got %+v / %+v", v.Status, r)
			}
			if v.Event == nil || v.Event.Reason != v1alpha1.EventBackupFailed || !strings.HasPrefix(v.Event.Message, c.reason+": ") {
				t.Errorf("Event %+v", v.Event)
			}
		})
	}
}

// claimed is an input whose backup holds the claim Decide made.
func claimed(phase v1alpha1.ResourcePhase, job *batchv1.Job) Input {
	in := input()
	in.Backup.Status = Decide(in).Status
	in.Backup.Status.Phase = phase
	in.Job = job
	return in
}

func ownJob(conds ...batchv1.JobCondition) *batchv1.Job {
	b := testBackup()
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: JobName(b), CreationTimestamp: metav1.NewTime(t0),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(b, v1alpha1.SchemeGroupVersion.WithKind("MysqlBackup"))}},
		Status: batchv1.JobStatus{Conditions: conds},
	}
}

func TestClaimedBackup(t *testing.T) {
	failed := batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline."}
	complete := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}

	// Claimed, no Job yet: create it.
	var in Input
	if v := Decide(claimed(v1alpha1.PhasePending, nil)); v.Action != CreateJob || v.Status.Phase != v1alpha1.PhasePending {
		t.Fatalf("claimed without a Job: %+v", v)
	}
	// Claimed, and the Job still not made after the pending timeout.
	in = claimed(v1alpha1.PhasePending, nil)
	in.Now = t0.Add(PendingTimeout)
	if v := Decide(in); v.Status.Phase != v1alpha1.PhaseFailed || ready(t, v.Status).Reason != v1alpha1.ReasonPendingTimedOut || v.Action != None {
		t.Fatalf("claimed, no Job after the timeout: %+v", v)
	}
	// Claimed, the group gone before the Job was made.
	in = claimed(v1alpha1.PhasePending, nil)
	in.Group = nil
	if v := Decide(in); v.Status.Phase != v1alpha1.PhaseFailed || ready(t, v.Status).Reason != v1alpha1.ReasonGroupNotFound {
		t.Fatalf("group gone before the Job: %+v", v.Status)
	}
	// The Job exists: Running, with the Started Event once.
	v := Decide(claimed(v1alpha1.PhasePending, ownJob()))
	if v.Status.Phase != v1alpha1.PhaseRunning || ready(t, v.Status).Reason != v1alpha1.ReasonRunning || v.Event == nil || v.Event.Reason != v1alpha1.EventBackupStarted || v.Status.StartTime == nil {
		t.Fatalf("running: %+v / %+v", v.Status, v.Event)
	}
	if v := Decide(claimed(v1alpha1.PhaseRunning, ownJob())); v.Event != nil {
		t.Errorf("Started recorded twice: %+v", v.Event)
	}
	// Running, and the Job gone: JobDeleted, never created again.
	v = Decide(claimed(v1alpha1.PhaseRunning, nil))
	if v.Status.Phase != v1alpha1.PhaseFailed || ready(t, v.Status).Reason != ReasonJobDeleted || v.Action != None || v.Event == nil || v.Event.Reason != v1alpha1.EventBackupJobLost {
		t.Fatalf("job deleted: %+v / %+v", v.Status, v.Event)
	}
	// A Job of that name that is not ours.
	foreign := ownJob()
	foreign.OwnerReferences[0].UID = "someone-else"
	if v := Decide(claimed(v1alpha1.PhaseRunning, foreign)); v.Status.Phase != v1alpha1.PhaseFailed || !strings.Contains(ready(t, v.Status).Message, "does not belong to this backup") {
		t.Fatalf("foreign Job: %+v", v.Status)
	}
	// Failed Job: the Job's reason in the message.
	v = Decide(claimed(v1alpha1.PhaseRunning, ownJob(failed)))
	if r := ready(t, v.Status); v.Status.Phase != v1alpha1.PhaseFailed || r.Reason != ReasonJobFailed || !strings.Contains(r.Message, "DeadlineExceeded (Job was active longer than specified deadline)") {
		t.Fatalf("job failed: %+v", r)
	}
	// Complete: read the result.
	if v := Decide(claimed(v1alpha1.PhaseRunning, ownJob(complete))); v.Action != ReadResult {
		t.Fatalf("complete: %+v", v)
	}
}

func goodStamp() stamp.Stamp {
	return stamp.Stamp{Backup: stamp.Object{Name: "nightly-1", UID: "0a4c902a-c1b5-4714-a4d6-092fc1f2c71a"}, Group: stamp.Object{Name: "orders", UID: "7d1e3b52-9f0c-4a8e-b6d2-5c4f1e2a9b30"},
		GTIDExecuted: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", BinlogPosition: stamp.BinlogPosition{File: "binlog.000002", Position: 157},
		Encryption: stamp.EncryptionNone, Files: []stamp.File{{Key: "a", Size: 10}, {Key: "b", Size: 32}}}
}

func TestOutcome(t *testing.T) {
	complete := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}
	done := metav1.NewTime(t0.Add(30 * time.Second))
	job := ownJob(complete)
	job.Status.CompletionTime = &done

	v, retry := Outcome(claimed(v1alpha1.PhaseRunning, job), FromStamp(goodStamp()), nil)
	st := v.Status
	if retry != nil || st.Phase != v1alpha1.PhaseSucceeded || ready(t, st).Status != metav1.ConditionTrue || st.SizeBytes != 42 ||
		st.GTIDExecuted != goodStamp().GTIDExecuted || *st.BinlogPosition != (v1alpha1.BinlogPosition{File: "binlog.000002", Position: 157}) ||
		!st.CompletionTime.Equal(&done) || v.Event == nil || v.Event.Reason != v1alpha1.EventBackupSucceeded {
		t.Fatalf("success: %+v / %v", st, retry)
	}

	for _, c := range []struct {
		name   string
		mutate func(*stamp.Stamp)
		msg    string
	}{
		{"another backup", func(s *stamp.Stamp) { s.Backup.UID = "old-uid" }, "names backup nightly-1 (uid old-uid), not this one"},
		{"another group", func(s *stamp.Stamp) { s.Group.UID = "other" }, "names group orders (uid other), not orders (uid 7d1e3b52-9f0c-4a8e-b6d2-5c4f1e2a9b30)"},
		{"another attempt", func(s *stamp.Stamp) { s.Attempt = 1 }, "is of attempt 1, not 0"},
		{"encryption", func(s *stamp.Stamp) { s.Encryption = "AES-256-GCM" }, "says encryption AES-256-GCM, but the backup was started with none"},
	} {
		s := goodStamp()
		c.mutate(&s)
		v, retry := Outcome(claimed(v1alpha1.PhaseRunning, job), FromStamp(s), nil)
		if r := ready(t, v.Status); retry != nil || v.Status.Phase != v1alpha1.PhaseFailed || r.Reason != ReasonStampInvalid || !strings.Contains(r.Message, c.msg) {
			t.Errorf("%s: %+v", c.name, r)
		}
	}

	// A store error is retried within the grace, fails after it; a
	// missing or invalid stamp fails at once.
	in := claimed(v1alpha1.PhaseRunning, job)
	in.Now = done.Add(StampGrace - time.Second)
	if _, retry := Outcome(in, Confirmed{}, errors.New("connection refused")); retry == nil {
		t.Error("a store error within the grace was not retried")
	}
	in.Now = done.Add(StampGrace)
	if v, retry := Outcome(in, Confirmed{}, errors.New("connection refused")); retry != nil || ready(t, v.Status).Reason != ReasonStampInvalid {
		t.Errorf("after the grace: %+v, %v", v.Status, retry)
	}
	in.Now = done.Add(time.Second)
	if v, retry := Outcome(in, Confirmed{}, ErrStampInvalid); retry != nil || ready(t, v.Status).Reason != ReasonStampInvalid {
		t.Errorf("invalid stamp: %+v, %v", v.Status, retry)
	}
	// The group gone, or its profile moved elsewhere: not confirmed.
	in = claimed(v1alpha1.PhaseRunning, job)
	in.Group = nil
	if v, _ := Outcome(in, FromStamp(goodStamp()), nil); ready(t, v.Status).Reason != v1alpha1.ReasonGroupNotFound {
		t.Errorf("group gone: %+v", v.Status)
	}
	in = claimed(v1alpha1.PhaseRunning, job)
	in.Group.Spec.Backup.Profiles[0].Storage.S3.Bucket = "elsewhere"
	if v, _ := Outcome(in, FromStamp(goodStamp()), nil); !strings.Contains(ready(t, v.Status).Message, "now stores at s3://elsewhere/") {
		t.Errorf("storage moved: %+v", v.Status)
	}
}

func TestNames(t *testing.T) {
	b := testBackup()
	if got := JobName(b); got != JobName(b) || !strings.HasPrefix(got, "nightly-1-") || len(got) != len("nightly-1-")+10 {
		t.Errorf("JobName %q", got)
	}
	long := testBackup()
	long.Name = strings.Repeat("a", 62) + "b"
	if got := JobName(long); len(got) > 63 || strings.Contains(got, "--") {
		t.Errorf("JobName of a 63-character backup: %q (%d)", got, len(got))
	}
	other := testBackup()
	other.UID = types.UID("another")
	if JobName(other) == JobName(b) {
		t.Error("a recreated backup gets its predecessor's Job name")
	}
	if got := KeySnapshotName(b); !strings.HasPrefix(got, "mysql-dump-key-nightly-1-") {
		t.Errorf("KeySnapshotName %q", got)
	}
}

func TestCloningSites(t *testing.T) {
	g := testGroup()
	g.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionBootstrapping, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCloning,
		Message: "cloning site pdx from site iad, site dr-2 from site iad"}}
	g.Annotations = map[string]string{annotationRecloneSite: "sfo:confirm=orders:uid=7d1e3b52-9f0c-4a8e-b6d2-5c4f1e2a9b30"}
	got := CloningSites(g)
	if len(got) != 3 || !got["pdx"] || !got["dr-2"] || !got["sfo"] {
		t.Fatalf("CloningSites %v", got)
	}
	g.Status.Conditions[0].Status = metav1.ConditionFalse
	g.Annotations = nil
	if got := CloningSites(g); len(got) != 0 {
		t.Fatalf("no clone running: %v", got)
	}
}

func TestSecurityContextOverrideMerges(t *testing.T) {
	uid := int64(27)
	got, err := mergeJSON(defaultPodSecurityContext(), &corev1.PodSecurityContext{RunAsUser: &uid, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: new(string)}})
	if err != nil {
		t.Fatal(err)
	}
	if *got.RunAsUser != 27 || *got.RunAsGroup != mysqlUID || !*got.RunAsNonRoot || got.SeccompProfile.Type != corev1.SeccompProfileTypeLocalhost {
		t.Fatalf("merged %+v", got)
	}
	if d := defaultPodSecurityContext(); *d.RunAsUser != mysqlUID {
		t.Fatal("the default changed")
	}
}

func claimProfile(in *Input) {
	in.Group.Spec.Backup.Profiles[0].Storage = v1alpha1.BackupStorage{Type: v1alpha1.BackupStoragePVC, PVC: &v1alpha1.PVCStorage{ClaimName: "backups"}}
}

func provisionedProfile(in *Input) {
	in.Group.Spec.Backup.Profiles[0].Storage = v1alpha1.BackupStorage{Type: v1alpha1.BackupStoragePVC,
		PVC: &v1alpha1.PVCStorage{Provisioned: &v1alpha1.ProvisionedClaim{StorageClassName: "standard", Size: "20Gi"}}}
}

// TestPVCProfiles: a claimName profile and a provisioned one are started
// (no longer refused), at the claim's location; the Job mounts that claim
// at the upload step's mount path and has the step report its result
// through the container's termination message.
func TestPVCProfiles(t *testing.T) {
	for _, c := range []struct {
		name    string
		profile func(*Input)
		claim   string
	}{{"claimName", claimProfile, "backups"}, {"provisioned", provisionedProfile, "orders-backup-nightly"}} {
		t.Run(c.name, func(t *testing.T) {
			v := Decide(input(c.profile))
			if v.Action != CreateJob || v.Status.ArtifactStorage.Location != "pvc://"+c.claim+"/nightly-1-0a4c902a-c1b5-4714-a4d6-092fc1f2c71a/0" || v.Status.ArtifactStorage.Type != v1alpha1.BackupStoragePVC {
				t.Fatalf("PVC profile: %+v", v.Status)
			}
			b := testBackup()
			b.Status = v.Status
			g := testGroup()
			c.profile(&Input{Group: g})
			j, err := RenderJob(JobInput{Backup: b, Group: g, Profile: &g.Spec.Backup.Profiles[0], Image: "bloodraven:test"})
			if err != nil {
				t.Fatal(err)
			}
			up := j.Spec.Template.Spec.Containers[0]
			a, err := upload.Parse(expandAttempt(up.Args, "0"))
			if err != nil || a.StoreType != "PVC" || a.PVCClaim != c.claim || a.PVCMountPath != StoreMountPath || a.S3Bucket != "" || a.ResultFile != up.TerminationMessagePath {
				t.Fatalf("upload args %+v, %v", a, err)
			}
			if up.TerminationMessagePath != "/dev/termination-log" || up.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
				t.Errorf("termination message %s (%s)", up.TerminationMessagePath, up.TerminationMessagePolicy)
			}
			mounted := false
			for _, m := range up.VolumeMounts {
				mounted = mounted || (m.MountPath == StoreMountPath && m.Name == "store")
			}
			var claim string
			for _, v := range j.Spec.Template.Spec.Volumes {
				if v.Name == "store" && v.PersistentVolumeClaim != nil {
					claim = v.PersistentVolumeClaim.ClaimName
				}
			}
			if !mounted || claim != c.claim {
				t.Fatalf("the upload container mounts the claim %q at %s: %v", claim, StoreMountPath, mounted)
			}
		})
	}
	// An S3 profile's step reports nothing: the operator reads the stamp.
	g := testGroup()
	g.Spec.Backup.Profiles[0].Storage.S3.Prefix = "prod/x"
	b := testBackup()
	b.Status = Decide(input()).Status
	j, err := RenderJob(JobInput{Backup: b, Group: g, Profile: &g.Spec.Backup.Profiles[0], Image: "bloodraven:test"})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := upload.Parse(expandAttempt(j.Spec.Template.Spec.Containers[0].Args, "0")); err != nil || a.ResultFile != "" {
		t.Errorf("S3 upload args %+v, %v", a, err)
	}
}

// TestProvisionedClaim: the claim is <group>-backup-<profile>, of the
// profile's class and size, controlled by the group (deleted with it),
// labelled; the group's own claim is used, and one that is not stops a
// claimed backup before its Job.
func TestProvisionedClaim(t *testing.T) {
	in := input(provisionedProfile)
	p := &in.Group.Spec.Backup.Profiles[0]
	pvc, err := RenderClaim(in.Group, p)
	if err != nil {
		t.Fatal(err)
	}
	ref := metav1.GetControllerOf(pvc)
	if pvc.Name != "orders-backup-nightly" || pvc.Namespace != "ns" || *pvc.Spec.StorageClassName != "standard" ||
		pvc.Spec.Resources.Requests.Storage().String() != "20Gi" || len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteOnce ||
		ref == nil || ref.UID != in.Group.UID || ref.Kind != "MysqlFailoverGroup" || ref.Name != "orders" ||
		pvc.Labels[LabelGroup] != "orders" || pvc.Labels[LabelProfile] != "nightly" {
		t.Fatalf("claim %+v", pvc)
	}
	// The longest names admission allows still make a valid claim name and
	// label values.
	long := ProvisionedClaimName(strings.Repeat("g", 63), strings.Repeat("p", 63))
	if len(long) > 253 || len(validation.IsDNS1123Subdomain(long)) > 0 {
		t.Errorf("claim name %q (%d characters)", long, len(long))
	}
	in.Claim = pvc
	if v := Decide(in); v.Action != CreateJob {
		t.Fatalf("with the group's own claim: %+v", v.Status)
	}
	cl := claimed(v1alpha1.PhasePending, nil)
	provisionedProfile(&cl)
	cl.Claim = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "orders-backup-nightly"}}
	if v := Decide(cl); v.Action != None || v.Status.Phase != v1alpha1.PhaseFailed || ready(t, v.Status).Reason != ReasonClaimNotOwned {
		t.Fatalf("claimed, and a foreign claim appeared before the Job: %+v", v)
	}
}

// expandAttempt replaces the upload container's $(AttemptEnv) reference as
// the kubelet expands it from the pod's environment.
func expandAttempt(args []string, n string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "$("+AttemptEnv+")", n)
	}
	return out
}
