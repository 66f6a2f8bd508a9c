package backupintegration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/backup/envelope"
	"github.com/shipstream/bloodraven/pkg/backup/stamp"
	"github.com/shipstream/bloodraven/pkg/backup/upload"
	"github.com/shipstream/bloodraven/pkg/controllers/backup"
	"github.com/shipstream/bloodraven/pkg/testbed/jobkubelet"
)

// uploadMain is `bloodraven encrypt-upload` (cmd/bloodraven) run by this
// test binary: the Job kubelet maps the Bloodraven image to it.
func uploadMain(argv []string) int {
	a, err := upload.Parse(argv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "encrypt-upload:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := upload.Run(ctx, a, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "encrypt-upload: failed:", err)
		return 1
	}
	return 0
}

// fakeMysqlsh stands for mysqlsh on the dump container's PATH: it leaves
// the fixture dump where `util dump-instance <dir>` names, as the dump
// step would.
const fakeMysqlsh = `#!/bin/sh
while [ "$#" -gt 0 ] && [ "$1" != dump-instance ]; do shift; done
[ -n "$2" ] || { echo "no dump-instance directory" >&2; exit 2; }
mkdir -p "$2" && cp -R "$FIXTURE"/. "$2"/
`

// kubelet is a Job kubelet for the test's backup pods: the dump step's
// shell runs the fake mysqlsh, the Bloodraven image is this test binary,
// and claim volumes are bind-mounted into the upload container's own mount
// namespace, so its mount-point check is the real one.
func (e *env) kubelet() *jobkubelet.Kubelet {
	e.t.Helper()
	self, err := os.Executable()
	if err != nil {
		e.t.Fatal(err)
	}
	fixture, err := filepath.Abs(dumpFixture)
	if err != nil {
		e.t.Fatal(err)
	}
	dir := e.t.TempDir()
	script := filepath.Join(dir, "mysqlsh")
	if err := os.WriteFile(script, []byte(strings.Replace(fakeMysqlsh, `"$FIXTURE"`, `'`+fixture+`'`, 1)), 0o755); err != nil {
		e.t.Fatal(err)
	}
	return jobkubelet.New(jobkubelet.Config{Kube: e.ke.Kube, Root: filepath.Join(dir, "kubelet"),
		Images:   map[string]string{strings.Split(uploadImage, ":")[0]: self},
		Programs: map[string]string{"/bin/sh": "/bin/sh", "mysqlsh": script}})
}

// runPodOn runs the backup's current pod on k to its end.
func (e *env) runPodOn(k *jobkubelet.Kubelet, name string) *corev1.Pod {
	e.t.Helper()
	p := e.pod(e.job(name))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := k.RunPod(ctx, p); err != nil {
		e.t.Fatalf("running pod %s: %v", p.Name, err)
	}
	got, err := e.ke.Kube.CoreV1().Pods(e.ns).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func (e *env) pvc(name string, mutate ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}}}}
	for _, m := range mutate {
		m(c)
	}
	out, err := e.ke.Kube.CoreV1().PersistentVolumeClaims(e.ns).Create(context.Background(), c, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func claimProfile(name, claim string) v1alpha1.BackupProfile {
	return v1alpha1.BackupProfile{Name: name, Storage: v1alpha1.BackupStorage{Type: v1alpha1.BackupStoragePVC, PVC: &v1alpha1.PVCStorage{ClaimName: claim}}}
}

func provisionedProfile(name string) v1alpha1.BackupProfile {
	return v1alpha1.BackupProfile{Name: name, Storage: v1alpha1.BackupStorage{Type: v1alpha1.BackupStoragePVC,
		PVC: &v1alpha1.PVCStorage{Provisioned: &v1alpha1.ProvisionedClaim{StorageClassName: "local-backups", Size: "20Gi"}}}}
}

// checkOnClaim judges the succeeded backup by what the claim's directory
// holds: the stamp at the status's location decodes, names the backup, and
// every file it lists verifies (size and SHA-256 of the bytes on disk);
// the status's coordinates and size are the stamp's; the pod's reported
// result names that stamp by its SHA-256 on disk. It returns the stamp.
func (e *env) checkOnClaim(k *jobkubelet.Kubelet, b *v1alpha1.MysqlBackup, claim string, pod *corev1.Pod) stamp.Stamp {
	e.t.Helper()
	root := k.ClaimDir(e.ns, claim)
	dir := upload.AttemptDir(b.Name, string(b.UID), 0)
	if want := "pvc://" + claim + "/" + strings.TrimSuffix(dir, "/"); b.Status.ArtifactStorage == nil || b.Status.ArtifactStorage.Location != want ||
		b.Status.ArtifactStorage.Type != v1alpha1.BackupStoragePVC {
		e.t.Fatalf("artifactStorage %+v, want %s", b.Status.ArtifactStorage, want)
	}
	raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dir+stamp.Name)))
	if err != nil {
		e.t.Fatalf("the stamp on the claim: %v", err)
	}
	st, err := stamp.Decode(raw)
	if err != nil {
		e.t.Fatal(err)
	}
	if st.Backup.UID != string(b.UID) || st.Group.Name != groupName || st.Attempt != 0 {
		e.t.Fatalf("the stamp on the claim is not this backup's: %+v", st)
	}
	err = stamp.Verify(st, func(key string) (io.ReadCloser, error) { return os.Open(filepath.Join(root, filepath.FromSlash(key))) })
	if err != nil {
		e.t.Fatalf("the files on the claim do not verify against the stamp: %v", err)
	}
	var size int64
	for _, f := range st.Files {
		size += f.Size
	}
	gs, file, pos := fixtureCoordinates(e.t)
	if b.Status.GTIDExecuted != gs.OneLine() || st.GTIDExecuted != gs.OneLine() || b.Status.BinlogPosition == nil ||
		*b.Status.BinlogPosition != (v1alpha1.BinlogPosition{File: file, Position: pos}) || b.Status.SizeBytes != size {
		e.t.Errorf("status gtid %q binlog %+v size %d; the dump's @.json says %q %s:%d, the claim holds %d bytes",
			b.Status.GTIDExecuted, b.Status.BinlogPosition, b.Status.SizeBytes, gs.OneLine(), file, pos, size)
	}
	var msg string
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == backup.ContainerUpload && s.State.Terminated != nil {
			msg = s.State.Terminated.Message
		}
	}
	r, err := upload.DecodeResult([]byte(msg))
	sum := sha256.Sum256(raw)
	if err != nil || r.Stamp.SHA256 != hex.EncodeToString(sum[:]) || r.Stamp.Location != "pvc://"+claim+"/"+dir+stamp.Name {
		e.t.Errorf("the pod's termination message %q (%v) does not name the stamp on the claim (sha256 %x)", msg, err, sum)
	}
	return st
}

// An on-demand backup to a claimName profile: the Job's pod runs on the
// Job kubelet with the claim bind-mounted at the upload step's mount path,
// the step's result comes back through the termination message, and the
// backup Succeeds; the claim holds the dump and its stamp, which verify.
func TestPVCClaimBackupSucceeds(t *testing.T) {
	e := newStoppedEnvNoS3(t)
	e.start()
	k := e.kubelet()
	e.pvc("orders-backups")
	e.group([]v1alpha1.BackupProfile{claimProfile("local", "orders-backups")})
	e.backup("b1", "local")
	e.wait("b1", v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	pod := e.runPodOn(k, "b1")
	if pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("the backup pod ended %s: %+v", pod.Status.Phase, pod.Status.ContainerStatuses)
	}
	b := e.wait("b1", v1alpha1.PhaseSucceeded, "", v1alpha1.ReasonSucceeded, "stored at pvc://orders-backups/")
	e.checkOnClaim(k, b, "orders-backups", pod)
}

// A provisioned profile: the controller creates <group>-backup-<profile>
// with the profile's class and size, controlled by the group and labelled
// with group and profile, and the backup on it Succeeds.
func TestPVCProvisionedClaimIsCreatedAndUsed(t *testing.T) {
	e := newStoppedEnvNoS3(t)
	e.start()
	k := e.kubelet()
	g := e.group([]v1alpha1.BackupProfile{provisionedProfile("local")})
	e.backup("b1", "local")
	e.wait("b1", v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	claim := groupName + "-backup-local"
	pvc, err := e.ke.Kube.CoreV1().PersistentVolumeClaims(e.ns).Get(context.Background(), claim, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the provisioned claim: %v", err)
	}
	ref := metav1.GetControllerOf(pvc)
	if ref == nil || ref.UID != g.UID || ref.Kind != "MysqlFailoverGroup" || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "local-backups" ||
		pvc.Spec.Resources.Requests.Storage().Cmp(resource.MustParse("20Gi")) != 0 || pvc.Labels[backup.LabelGroup] != groupName || pvc.Labels[backup.LabelProfile] != "local" {
		t.Fatalf("claim %s: owner %+v, spec %+v, labels %v", claim, ref, pvc.Spec, pvc.Labels)
	}
	pod := e.runPodOn(k, "b1")
	b := e.wait("b1", v1alpha1.PhaseSucceeded, "", v1alpha1.ReasonSucceeded, "stored at pvc://"+claim+"/")
	e.checkOnClaim(k, b, claim, pod)
	// A second backup of the profile uses the same claim; nothing else is made.
	e.backup("b2", "local")
	e.wait("b2", v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	list, err := e.ke.Kube.CoreV1().PersistentVolumeClaims(e.ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{backup.LabelGroup: groupName}).String()})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("claims of the group: %d (%v)", len(list.Items), err)
	}
}

// A claim of the provisioned name that is not the group's is never adopted
// or written: the backup fails ClaimNotOwned, no Job is made, and the claim
// is as it was.
func TestPVCForeignClaimOfTheProvisionedNameFails(t *testing.T) {
	e := newStoppedEnvNoS3(t)
	claim := groupName + "-backup-local"
	before := e.pvc(claim, func(c *corev1.PersistentVolumeClaim) { c.Labels = map[string]string{"team": "payments"} })
	e.start()
	e.group([]v1alpha1.BackupProfile{provisionedProfile("local")})
	e.backup("b1", "local")
	e.wait("b1", v1alpha1.PhaseFailed, "", backup.ReasonClaimNotOwned, "PersistentVolumeClaim "+claim+" (the provisioned claim of profile local) already exists with no controller")
	if js := e.jobs("b1"); len(js) != 0 {
		t.Errorf("a Job was made: %v", js[0].Name)
	}
	after, err := e.ke.Kube.CoreV1().PersistentVolumeClaims(e.ns).Get(context.Background(), claim, metav1.GetOptions{})
	if err != nil || after.ResourceVersion != before.ResourceVersion || len(after.OwnerReferences) != 0 {
		t.Errorf("the foreign claim was changed: %+v (%v)", after.ObjectMeta, err)
	}
}

// An encrypted backup to a claim: every dump file on the claim is a BRV1
// envelope that decrypts, with the passphrase the profile's Secret holds,
// to the dump's own bytes.
func TestPVCEncryptedBackupRoundTrips(t *testing.T) {
	e := newStoppedEnvNoS3(t)
	e.start()
	k := e.kubelet()
	e.pvc("orders-backups")
	p := claimProfile("local", "orders-backups")
	encrypted(&p)
	e.group([]v1alpha1.BackupProfile{p})
	e.backup("b1", "local")
	e.wait("b1", v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	pod := e.runPodOn(k, "b1")
	b := e.wait("b1", v1alpha1.PhaseSucceeded, "", v1alpha1.ReasonSucceeded, "encrypted with "+envelope.Algorithm)
	st := e.checkOnClaim(k, b, "orders-backups", pod)
	if st.Encryption != envelope.Algorithm {
		t.Fatalf("the stamp says encryption %s", st.Encryption)
	}
	pass, err := envelope.Passphrase([]byte(passphraseVal))
	if err != nil {
		t.Fatal(err)
	}
	root := k.ClaimDir(e.ns, "orders-backups")
	dir := upload.AttemptDir(b.Name, string(b.UID), 0)
	ents, err := os.ReadDir(dumpFixture)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, en := range ents {
		names = append(names, en.Name())
		plain, err := os.ReadFile(filepath.Join(dumpFixture, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		stored, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dir+en.Name())))
		if err != nil {
			t.Fatalf("%s on the claim: %v", en.Name(), err)
		}
		if !envelope.IsEnvelope(stored) {
			t.Errorf("%s is stored in plaintext", en.Name())
			continue
		}
		r, err := envelope.NewReader(bytes.NewReader(stored), pass)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("%s decrypts to %d bytes (%v), the dump's file has %d", en.Name(), len(got), err, len(plain))
		}
	}
	var onClaim []string
	dirEnts, _ := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
	for _, en := range dirEnts {
		if en.Name() != stamp.Name {
			onClaim = append(onClaim, en.Name())
		}
	}
	sort.Strings(names)
	sort.Strings(onClaim)
	if strings.Join(names, ",") != strings.Join(onClaim, ",") {
		t.Errorf("the claim holds %q, the dump %q", onClaim, names)
	}
}

// A PVC backup whose Job succeeded but whose pod reported something that is
// not a result (here a log line) is never confirmed: StampInvalid, naming
// what the message held.
func TestPVCMessageThatIsNotAResultFails(t *testing.T) {
	e := newStoppedEnvNoS3(t)
	e.start()
	e.pvc("orders-backups")
	e.group([]v1alpha1.BackupProfile{claimProfile("local", "orders-backups")})
	e.backup("b1", "local")
	e.wait("b1", v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	e.finish(e.pod(e.job("b1")), 0, "stored 12 files, all good")
	e.wait("b1", v1alpha1.PhaseFailed, "", backup.ReasonStampInvalid, `is not a backup result`)
	if b := e.get("b1"); !strings.Contains(b.Status.Message, `"stored 12 files, all good"`) || b.Status.GTIDExecuted != "" {
		t.Errorf("status %+v", b.Status)
	}
}

// A PVC backup whose Job succeeded while no operator ran, and whose pods
// were deleted before one came back, has nothing left to confirm it by:
// ResultUnavailable, never Succeeded.
func TestPVCPodsGoneIsResultUnavailable(t *testing.T) {
	e := newStoppedEnvNoS3(t)
	e.start()
	k := e.kubelet()
	e.pvc("orders-backups")
	e.group([]v1alpha1.BackupProfile{claimProfile("local", "orders-backups")})
	e.backup("b1", "local")
	e.wait("b1", v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	e.stop()
	j := e.job("b1")
	if p := e.runPodOn(k, "b1"); p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("the pod ended %s", p.Status.Phase)
	}
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for !jobComplete(e, j.Name) {
		if time.Now().After(deadline) {
			t.Fatal("the Job controller did not complete the Job")
		}
		time.Sleep(100 * time.Millisecond)
	}
	sel := labels.SelectorFromSet(labels.Set{"batch.kubernetes.io/job-name": j.Name}).String()
	if err := e.ke.Kube.CoreV1().Pods(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{LabelSelector: sel}); err != nil {
		t.Fatal(err)
	}
	for {
		list, err := e.ke.Kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pods of the Job are still there", len(list.Items))
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.start()
	e.wait("b1", v1alpha1.PhaseFailed, "", backup.ReasonResultUnavailable, "the Job's succeeded pod is gone")
}

func jobComplete(e *env, name string) bool {
	e.t.Helper()
	j, err := e.ke.Kube.BatchV1().Jobs(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, c := range j.Status.Conditions {
		if c.Type == "Complete" && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
