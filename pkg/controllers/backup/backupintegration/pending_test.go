package backupintegration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/backup"
)

// The Ready condition is False from the first status on, whatever the wait.
func readyFalse(t *testing.T, b *v1alpha1.MysqlBackup) {
	t.Helper()
	for _, c := range b.Status.Conditions {
		if c.Type == v1alpha1.ConditionReady && c.Status != metav1.ConditionFalse {
			t.Fatalf("Ready=%s while %s", c.Status, b.Status.Phase)
		}
	}
}

// A backup of a group that does not exist waits for it, and runs once it
// is created; one that waits longer than 30 minutes fails PendingTimedOut.
func TestWaitingForGroup(t *testing.T) {
	e := newEnv(t)
	b := e.backup("early", "nightly")
	b = e.wait(b.Name, v1alpha1.PhasePending, backup.WaitingForGroup, string(backup.WaitingForGroup), "MysqlFailoverGroup orders does not exist")
	readyFalse(t, b)
	if len(e.jobs(b.Name)) != 0 {
		t.Fatal("a Job was made without a group")
	}
	e.group([]v1alpha1.BackupProfile{e.profile("nightly")})
	e.wait(b.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")

	late := e.backup("late", "nightly", func(b *v1alpha1.MysqlBackup) { b.Spec.FailoverGroupRef.Name = "other" })
	e.wait(late.Name, v1alpha1.PhasePending, backup.WaitingForGroup, string(backup.WaitingForGroup), "MysqlFailoverGroup other does not exist")
	e.clock.Advance(backup.PendingTimeout)
	e.touch(late.Name)
	late = e.wait(late.Name, v1alpha1.PhaseFailed, "", v1alpha1.ReasonPendingTimedOut, "still WaitingForGroup after 30m0s")
	ev := e.event(late.Name, v1alpha1.EventBackupFailed, corev1.EventTypeWarning)
	if !strings.HasPrefix(ev.Message, "PendingTimedOut: ") {
		t.Errorf("BackupFailed message %q", ev.Message)
	}
}

// A profile name that is not in the group: a clear reason and one Warning
// Event naming the profiles there are; the backup runs once the profile is
// added.
func TestWaitingForProfile(t *testing.T) {
	e := newEnv(t)
	e.group([]v1alpha1.BackupProfile{e.profile("nightly")})
	b := e.backup("typo", "nightlly")
	b = e.wait(b.Name, v1alpha1.PhasePending, backup.WaitingForProfile, string(backup.WaitingForProfile),
		"spec.profileName nightlly is not a profile of MysqlFailoverGroup orders (it has nightly)")
	readyFalse(t, b)
	ev := e.event(b.Name, v1alpha1.EventBackupDeferredProfileNotFound, corev1.EventTypeWarning)
	if !strings.Contains(ev.Message, "nightlly") || ev.Count != 1 {
		t.Errorf("Event %q, count %d", ev.Message, ev.Count)
	}
	g := e.getGroup()
	g.Spec.Backup.Profiles = append(g.Spec.Backup.Profiles, e.profile("nightlly"))
	if _, err := e.ke.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Update(context.Background(), g, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.wait(b.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
}

// No site qualifies: the backup waits naming every site and why; a site
// that becomes healthy is taken; past 30 minutes the wait fails
// NoHealthySource.
func TestWaitingForHealthySource(t *testing.T) {
	e := newEnv(t)
	g := e.group([]v1alpha1.BackupProfile{e.profile("nightly")}, func(g *v1alpha1.MysqlFailoverGroup) {
		g.Status = v1alpha1.MysqlFailoverGroupStatus{ActiveSite: "iad", Sites: []v1alpha1.SiteStatus{
			{Name: "iad", State: v1alpha1.SiteUnreachable},
			func() v1alpha1.SiteStatus {
				s := healthyReplica("pdx")
				s.DivergentGTID, s.DivergentTransactionCount = "3e11fa47-71ca-11e1-9e33-c80aa9429562:40-41", 2
				return s
			}(),
			func() v1alpha1.SiteStatus {
				s := healthyReplica("dr")
				s.RecoveryState = v1alpha1.RecoveryBlocked
				return s
			}(),
		}}
	})
	b := e.backup("stuck", "nightly")
	b = e.wait(b.Name, v1alpha1.PhasePending, backup.WaitingForHealthySource, v1alpha1.ReasonWaitingForHealthySource,
		"passed over: pdx: divergent (holds 2 transactions the active site lacks); dr: RecoveryBlocked; iad (primary): unreachable")
	readyFalse(t, b)
	if len(e.jobs(b.Name)) != 0 {
		t.Fatal("a Job was made without a source")
	}
	// Another cause on pdx: the message follows it.
	st := g.Status.DeepCopy()
	st.Sites[1].DivergentGTID, st.Sites[1].DivergentTransactionCount = "", 0
	st.Sites[1].SecondsBehindSource = lag(900)
	g = e.setStatus(g, *st)
	e.wait(b.Name, v1alpha1.PhasePending, backup.WaitingForHealthySource, v1alpha1.ReasonWaitingForHealthySource,
		"pdx: replication lag above maxLagSecondsForSource (900s, maximum 300s)")

	e.clock.Advance(backup.PendingTimeout + time.Second)
	e.touch(b.Name)
	b = e.wait(b.Name, v1alpha1.PhaseFailed, "", v1alpha1.ReasonNoHealthySource, "still WaitingForHealthySource after 30m0s")
	if len(e.jobs(b.Name)) != 0 {
		t.Fatal("a timed-out backup made a Job")
	}
	// Failed is final: a healthy group later changes nothing.
	st = g.Status.DeepCopy()
	st.Sites[0].State = v1alpha1.SiteWritable
	e.setStatus(g, *st)
	time.Sleep(time.Second)
	if got := e.get(b.Name); got.Status.Phase != v1alpha1.PhaseFailed || len(e.jobs(b.Name)) != 0 {
		t.Fatalf("a failed backup moved on: %s", got.Status.Phase)
	}
}

// The source choice is what the status and the Job carry: a divergent
// replica and one being cloned are passed over, the healthy DR site is
// taken; spec.sourceSite forces the primary.
func TestSourceSelectionInStatusAndJob(t *testing.T) {
	e := newEnv(t)
	e.group([]v1alpha1.BackupProfile{e.profile("nightly")}, func(g *v1alpha1.MysqlFailoverGroup) {
		pdx := healthyReplica("pdx")
		pdx.DivergentGTID = "3e11fa47-71ca-11e1-9e33-c80aa9429562:9"
		g.Status = v1alpha1.MysqlFailoverGroupStatus{ActiveSite: "iad", Sites: []v1alpha1.SiteStatus{
			{Name: "iad", State: v1alpha1.SiteWritable}, pdx, healthyReplica("dr")}}
	})
	b := e.backup("auto", "nightly")
	b = e.wait(b.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "backing up site dr")
	if b.Status.SourceSite != "dr" {
		t.Fatalf("sourceSite %s", b.Status.SourceSite)
	}
	if host := e.job(b.Name).Spec.Template.Spec.InitContainers[0].Args[0]; host != "--host=orders-dr-internal."+e.ns+".svc" {
		t.Errorf("the dump connects with %s, not to dr", host)
	}
	e.finish(e.pod(e.job(b.Name)), 0, "") // frees the group's slot (no stamp: Failed)
	e.wait(b.Name, v1alpha1.PhaseFailed, "", backup.ReasonStampInvalid, "")

	forced := e.backup("forced", "nightly", func(b *v1alpha1.MysqlBackup) { b.Spec.SourceSite = "iad" })
	forced = e.wait(forced.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "backing up site iad")
	if host := e.job(forced.Name).Spec.Template.Spec.InitContainers[0].Args[0]; host != "--host=orders-iad-internal."+e.ns+".svc" {
		t.Errorf("the forced dump connects with %s", host)
	}
}

// A site being cloned (the Bootstrapping condition the topology manager
// sets) is never the source, even when named.
func TestSiteBeingClonedIsPassedOver(t *testing.T) {
	e := newEnv(t)
	g := e.group([]v1alpha1.BackupProfile{e.profile("nightly")})
	st := g.Status.DeepCopy()
	st.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionBootstrapping, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCloning,
		Message: "cloning site pdx from site iad", LastTransitionTime: metav1.Now()}}
	e.setStatus(g, *st)
	b := e.backup("named", "nightly", func(b *v1alpha1.MysqlBackup) { b.Spec.SourceSite = "pdx" })
	e.wait(b.Name, v1alpha1.PhasePending, backup.WaitingForHealthySource, v1alpha1.ReasonWaitingForHealthySource, "pdx: being cloned")
}

// One backup of a group runs at a time; the next waits and starts when it
// ends.
func TestWaitingForPreviousBackup(t *testing.T) {
	e := newEnv(t)
	e.group([]v1alpha1.BackupProfile{e.profile("nightly")})
	first := e.backup("first", "nightly")
	e.wait(first.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	second := e.backup("second", "nightly")
	e.wait(second.Name, v1alpha1.PhasePending, backup.WaitingForPreviousBackup, string(backup.WaitingForPreviousBackup), "MysqlBackup first of the group is still running")
	if len(e.jobs(second.Name)) != 0 {
		t.Fatal("the second backup made a Job while the first runs")
	}
	if _, err := e.runPod(first.Name); err != nil {
		t.Fatal(err)
	}
	e.wait(first.Name, v1alpha1.PhaseSucceeded, "", v1alpha1.ReasonSucceeded, "")
	e.wait(second.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
}

// Two backups created together: exactly one runs first, whatever the two
// workers do.
func TestTwoBackupsAtOnceRunOneAtATime(t *testing.T) {
	e := newEnv(t)
	e.group([]v1alpha1.BackupProfile{e.profile("nightly")})
	e.backup("a", "nightly")
	e.backup("b", "nightly")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		a, b := e.get("a"), e.get("b")
		if a.Status.Phase != "" && b.Status.Phase != "" && (a.Status.JobName != "" || b.Status.JobName != "") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	a, b := e.get("a"), e.get("b")
	if (a.Status.JobName != "") == (b.Status.JobName != "") || len(e.jobs("a"))+len(e.jobs("b")) != 1 {
		t.Fatalf("a: %s %q, b: %s %q; want exactly one claimed", a.Status.Phase, a.Status.JobName, b.Status.Phase, b.Status.JobName)
	}
}

// A missing Secret the Job would mount fails the backup at once, naming
// the Secret, and makes no Job.
func TestMissingSecretsFailAtOnce(t *testing.T) {
	for _, c := range []struct {
		name, msg string
		mutate    func(*env, *v1alpha1.MysqlFailoverGroup)
	}{
		{"backup account", "Secret nobody (the backup account (spec.credentials.backupSecretName)) does not exist", func(_ *env, g *v1alpha1.MysqlFailoverGroup) {
			g.Spec.Credentials.BackupSecretName = "nobody"
		}},
		{"S3 credentials", "Secret orders-s3 (the S3 credentials of profile nightly) has no key AWS_SECRET_ACCESS_KEY", func(e *env, _ *v1alpha1.MysqlFailoverGroup) {
			sec, _ := e.ke.Kube.CoreV1().Secrets(e.ns).Get(context.Background(), s3Secret, metav1.GetOptions{})
			delete(sec.Data, "AWS_SECRET_ACCESS_KEY")
			if _, err := e.ke.Kube.CoreV1().Secrets(e.ns).Update(context.Background(), sec, metav1.UpdateOptions{}); err != nil {
				e.t.Fatal(err)
			}
		}},
		{"passphrase", "Secret gone (the passphrase of profile nightly) does not exist", func(_ *env, g *v1alpha1.MysqlFailoverGroup) {
			g.Spec.Backup.Profiles[0].Encryption = &v1alpha1.BackupEncryptionSpec{PassphraseSecretKeyRef: v1alpha1.PassphraseSecretKeySelector{Name: "gone"}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.group([]v1alpha1.BackupProfile{e.profile("nightly")}, func(g *v1alpha1.MysqlFailoverGroup) { c.mutate(e, g) })
			time.Sleep(200 * time.Millisecond) // the Secret informer sees the change
			b := e.backup("nightly-1", "nightly")
			e.wait(b.Name, v1alpha1.PhaseFailed, "", backup.ReasonSecretInvalid, c.msg)
			e.event(b.Name, v1alpha1.EventBackupFailed, corev1.EventTypeWarning)
			if len(e.jobs(b.Name)) != 0 {
				t.Fatal("a Job was made")
			}
		})
	}
}
