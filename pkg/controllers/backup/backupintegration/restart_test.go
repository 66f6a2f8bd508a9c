package backupintegration

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/backup"
)

// An operator that stored the claim and died before creating the Job: the
// next one creates the Job the claim names, once, and carries it through.
func TestAClaimWithoutItsJobIsCarriedOutAfterARestart(t *testing.T) {
	e := newStoppedEnv(t)
	e.group([]v1alpha1.BackupProfile{e.profile("nightly")})
	b := e.backup("nightly-1", "nightly")
	// The claim as the dead process wrote it: source, Job name, location.
	b.Status = v1alpha1.MysqlBackupStatus{Phase: v1alpha1.PhasePending, JobName: backup.JobName(b), SourceSite: "dr",
		MySQLImage: backup.DefaultImage, ArtifactStorage: &v1alpha1.ArtifactStorage{Type: v1alpha1.BackupStorageS3,
			Location: "s3://" + bucket + "/prod/" + e.ns + "/" + b.Name + "-" + string(b.UID) + "/0"},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPending,
			Message: "starting Job", LastTransitionTime: metav1.Now(), ObservedGeneration: 1}}}
	if _, err := e.ke.Ship.ShipstreamV1alpha1().MysqlBackups(e.ns).UpdateStatus(context.Background(), b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.start()
	b = e.wait(b.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "backing up site dr")
	j := e.job(b.Name)
	if j.Name != b.Status.JobName {
		t.Fatalf("Job %s, claim %s", j.Name, b.Status.JobName)
	}
	if host := j.Spec.Template.Spec.InitContainers[0].Args[0]; host != "--host=orders-dr-internal."+e.ns+".svc" {
		t.Errorf("the Job dumps %s, not the claimed site dr", host)
	}
}

// A restarted operator finds the running Job and does not make another.
func TestARestartKeepsTheRunningJob(t *testing.T) {
	e := newEnv(t)
	e.group([]v1alpha1.BackupProfile{e.profile("nightly")})
	b := e.backup("nightly-1", "nightly")
	e.wait(b.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	first := e.job(b.Name)
	e.stop()
	e.start()
	e.touch(b.Name)
	time.Sleep(time.Second)
	if js := e.jobs(b.Name); len(js) != 1 || js[0].UID != first.UID {
		t.Fatalf("after the restart the backup has %d Jobs", len(js))
	}
	if _, err := e.runPod(b.Name); err != nil {
		t.Fatal(err)
	}
	e.wait(b.Name, v1alpha1.PhaseSucceeded, "", v1alpha1.ReasonSucceeded, "")
	if js := e.jobs(b.Name); len(js) != 1 || js[0].UID != first.UID {
		t.Fatalf("the backup ended with %d Jobs", len(js))
	}
}
