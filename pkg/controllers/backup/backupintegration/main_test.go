// Package backupintegration tests the MysqlBackup controller against a real
// kube-apiserver and kube-controller-manager (its Job controller makes the
// backup Job's pods and judges them) and a real S3 server (versitygw). The
// tests play the kubelet for the Job's pods: they run the real upload step
// (package upload) with the argv the pod really carries, its volumes mapped
// to local directories, and report the pod's exit as a kubelet does. Every
// check judges by what the API server and the bucket hold.
package backupintegration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/backup/upload"
	"github.com/shipstream/bloodraven/pkg/controllers/backup"
	"github.com/shipstream/bloodraven/pkg/testbed/kubeenv"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/s3server"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	// The Job kubelet of the PVC tests runs this binary as the Bloodraven
	// image's entrypoint: the upload step as the backup Job's container.
	if len(os.Args) > 1 && os.Args[1] == upload.Command {
		os.Exit(uploadMain(os.Args[1:]))
	}
	framework.Main(m, framework.Options{CRDDir: "deploy/crds", ControllerManager: true}, &cp)
}

const (
	groupName     = "orders"
	backupSecret  = "orders-backup"
	s3Secret      = "orders-s3"
	passSecret    = "orders-passphrase"
	bucket        = "backups"
	uploadImage   = "ghcr.io/shipstream/bloodraven:test"
	backupUser    = "bloodraven_backup"
	backupPass    = "backup-pw-Zq81"
	passphraseVal = "correct horse battery staple 9f2c1e7a44b0"
)

// clock is the controller's injected clock: real time plus an offset the
// test moves forward.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// env is one test's namespace, S3 server and running controller.
type env struct {
	t     *testing.T
	ke    *kubeenv.Env
	ns    string
	s3    *s3server.Server
	clock *clock
	// sims are simulated mysqld per site, when a test starts them: the dump
	// step then runs the mysqlsh stand-in against the source site's.
	sims map[string]*mysqlsim.Server
	inst *kubeenv.Instance
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := newStoppedEnv(t)
	e.start()
	return e
}

// newStoppedEnv is newEnv without a running controller: start runs one
// (again, as a restarted operator), stop ends it.
func newStoppedEnv(t *testing.T) *env {
	t.Helper()
	e := newStoppedEnvNoS3(t)
	e.s3 = s3server.StartT(t)
	if err := e.s3.Bucket(bucket); err != nil {
		t.Fatal(err)
	}
	e.secret(s3Secret, map[string]string{"AWS_ACCESS_KEY_ID": e.s3.AccessKey, "AWS_SECRET_ACCESS_KEY": e.s3.SecretKey})
	return e
}

// newStoppedEnvNoS3 is newStoppedEnv without an S3 server, for the PVC
// profiles' tests.
func newStoppedEnvNoS3(t *testing.T) *env {
	t.Helper()
	ke := kubeenv.New(t, cp)
	e := &env{t: t, ke: ke, ns: ke.Namespace, clock: &clock{}}
	e.secret(backupSecret, map[string]string{"username": backupUser, "password": backupPass})
	e.secret(passSecret, map[string]string{"passphrase": "  " + passphraseVal + "\n"})
	t.Cleanup(ke.CheckMessages)
	return e
}

// start runs an operator instance with the backup controller: its own
// informers, nothing remembered from an earlier one.
func (e *env) start() {
	e.t.Helper()
	inst := e.ke.NewInstance()
	c, err := backup.New(inst.Deps, backup.Options{Image: uploadImage, Now: e.clock.Now, Resync: 30 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	inst.Start(2, c)
	e.inst = inst
}

// stop ends the running instance and waits until its controller returned.
func (e *env) stop() { e.inst.Stop() }

func (e *env) secret(name string, data map[string]string) {
	e.t.Helper()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, StringData: data}
	if _, err := e.ke.Kube.CoreV1().Secrets(e.ns).Create(context.Background(), sec, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func lag(n int64) *int64 { return &n }

func healthyReplica(name string) v1alpha1.SiteStatus {
	return v1alpha1.SiteStatus{Name: name, State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationRunning,
		SourceConvergenceState: "Converged", SourceConvergenceReason: "DirectSource", SecondsBehindSource: lag(1)}
}

// profile is an S3 profile on the test's server; mutate adjusts it.
func (e *env) profile(name string, mutate ...func(*v1alpha1.BackupProfile)) v1alpha1.BackupProfile {
	p := v1alpha1.BackupProfile{Name: name, Storage: v1alpha1.BackupStorage{Type: v1alpha1.BackupStorageS3, S3: &v1alpha1.S3Storage{
		Bucket: bucket, Prefix: "prod/" + e.ns, Region: s3server.Region, EndpointURL: e.s3.Endpoint(), ForcePathStyle: true, CredentialsSecretName: s3Secret,
	}}}
	for _, m := range mutate {
		m(&p)
	}
	return p
}

func encrypted(p *v1alpha1.BackupProfile) {
	p.Encryption = &v1alpha1.BackupEncryptionSpec{PassphraseSecretKeyRef: v1alpha1.PassphraseSecretKeySelector{Name: passSecret}}
}

// group creates the group with sites iad (active), pdx and dr, the given
// profiles, and a status where every site is healthy; mutate adjusts the
// object before it is created and its status before that is written.
func (e *env) group(profiles []v1alpha1.BackupProfile, mutate ...func(*v1alpha1.MysqlFailoverGroup)) *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	ctx := context.Background()
	g := &v1alpha1.MysqlFailoverGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: groupName},
		Spec: v1alpha1.MysqlFailoverGroupSpec{
			Sites:       []v1alpha1.SiteSpec{site("iad", 101, "10.0.1.1"), site("pdx", 102, "10.0.2.1"), site("dr", 103, "10.0.3.1")},
			Credentials: v1alpha1.CredentialsSpec{OperatorSecretName: "orders-operator", BackupSecretName: backupSecret},
			DNS:         v1alpha1.DNSSpec{Hostname: "orders.db.example.com"},
			Backup:      &v1alpha1.BackupSpec{Profiles: profiles},
		},
	}
	g.Spec.Sites[2].Role = "DisasterRecovery"
	for _, m := range mutate {
		m(g)
	}
	status := g.Status
	created, err := e.ke.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Create(ctx, g, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if status.ActiveSite == "" && status.Sites == nil {
		status = v1alpha1.MysqlFailoverGroupStatus{ActiveSite: "iad", Sites: []v1alpha1.SiteStatus{
			{Name: "iad", State: v1alpha1.SiteWritable, Replication: v1alpha1.ReplicationNotReplicating}, healthyReplica("pdx"), healthyReplica("dr")}}
	}
	return e.setStatus(created, status)
}

func (e *env) setStatus(g *v1alpha1.MysqlFailoverGroup, st v1alpha1.MysqlFailoverGroupStatus) *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	g = g.DeepCopy()
	g.Status = st
	out, err := e.ke.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).UpdateStatus(context.Background(), g, metav1.UpdateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) getGroup() *v1alpha1.MysqlFailoverGroup {
	e.t.Helper()
	g, err := e.ke.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Get(context.Background(), groupName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return g
}

func site(name string, id int64, ip string) v1alpha1.SiteSpec {
	return v1alpha1.SiteSpec{
		Name: name, Role: "PrimaryCandidate", ServerID: id, Zone: "zone-" + name, LoadBalancerIP: ip,
		TaintNodeSelector: map[string]string{"bloodraven.shipstream.io/site": name},
		Storage:           v1alpha1.StorageSpec{StorageClassName: "fast", Size: "10Gi"},
	}
}

// backup creates a MysqlBackup of profile; mutate adjusts it first.
func (e *env) backup(name, profile string, mutate ...func(*v1alpha1.MysqlBackup)) *v1alpha1.MysqlBackup {
	e.t.Helper()
	b := &v1alpha1.MysqlBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Annotations: map[string]string{backup.AnnotationTriggeredBy: "test " + e.t.Name()}},
		Spec:       v1alpha1.MysqlBackupSpec{FailoverGroupRef: v1alpha1.FailoverGroupReference{Name: groupName}, ProfileName: profile},
	}
	for _, m := range mutate {
		m(b)
	}
	b, err := e.ke.Ship.ShipstreamV1alpha1().MysqlBackups(e.ns).Create(context.Background(), b, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *env) get(name string) *v1alpha1.MysqlBackup {
	e.t.Helper()
	b, err := e.ke.Ship.ShipstreamV1alpha1().MysqlBackups(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// touch changes an annotation of the backup, which wakes the controller
// (after the test moved the clock).
func (e *env) touch(name string) {
	e.t.Helper()
	// Retried on a conflict: the controller writes the status meanwhile.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b := e.get(name)
		b.Annotations["touch"] = fmt.Sprint(time.Now().UnixNano())
		_, err := e.ke.Ship.ShipstreamV1alpha1().MysqlBackups(e.ns).Update(context.Background(), b, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// wait polls until the backup has phase, pendingReason and Ready reason,
// and its message contains msg.
func (e *env) wait(name string, phase v1alpha1.ResourcePhase, pending v1alpha1.BackupPendingReason, reason, msg string) *v1alpha1.MysqlBackup {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last *v1alpha1.MysqlBackup
	for time.Now().Before(deadline) {
		b := e.get(name)
		last = b
		c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady)
		if c != nil && b.Status.Phase == phase && b.Status.PendingReason == pending && c.Reason == reason && strings.Contains(c.Message, msg) {
			if want := phase == v1alpha1.PhaseSucceeded; (c.Status == metav1.ConditionTrue) != want {
				e.t.Fatalf("Ready=%s in phase %s", c.Status, phase)
			}
			if c.ObservedGeneration != b.Generation || b.Status.ObservedGeneration != b.Generation {
				e.t.Fatalf("observedGeneration %d/%d, generation %d", c.ObservedGeneration, b.Status.ObservedGeneration, b.Generation)
			}
			return b
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("MysqlBackup %s never reached %s/%s/%s with %q; last status %+v", name, phase, pending, reason, msg, last.Status)
	return nil
}

func (e *env) events(name string) map[string]corev1.Event {
	e.t.Helper()
	return kubeenv.EventsOn(e.t, e.ke.Kube, e.ns, name)
}

// event waits for an Event of reason and type on name.
func (e *env) event(name, reason, typ string) corev1.Event {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if ev, ok := e.events(name)[reason]; ok {
			if ev.Type != typ {
				e.t.Fatalf("Event %s is %s, want %s", reason, ev.Type, typ)
			}
			return ev
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("no Event %s on %s; have %v", reason, name, e.events(name))
	return corev1.Event{}
}

// jobs are the Jobs of backup name, as the API server holds them.
func (e *env) jobs(name string) []batchv1.Job {
	e.t.Helper()
	list, err := e.ke.Kube.BatchV1().Jobs(e.ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{backup.LabelBackup: name}).String(),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

// job waits for the backup's one Job.
func (e *env) job(name string) *batchv1.Job {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if js := e.jobs(name); len(js) == 1 {
			return &js[0]
		} else if len(js) > 1 {
			e.t.Fatalf("backup %s has %d Jobs", name, len(js))
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("backup %s has no Job", name)
	return nil
}

// pod waits for the pod the real Job controller made for job, the one not
// finished yet.
func (e *env) pod(job *batchv1.Job) *corev1.Pod {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		list, err := e.ke.Kube.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(labels.Set{"batch.kubernetes.io/job-name": job.Name}).String(),
		})
		if err != nil {
			e.t.Fatal(err)
		}
		for i := range list.Items {
			if p := &list.Items[i]; p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil {
				return p
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("the Job controller made no pod for Job %s", job.Name)
	return nil
}

// finish reports pod's end as a kubelet does: the dump init container
// exited 0, the upload container exited with code.
func (e *env) finish(p *corev1.Pod, code int32, message string) {
	e.t.Helper()
	e.finishSteps(p, 0, code, message)
}

// finishSteps reports the pod's end with the dump's exit code and, when
// the dump succeeded, the upload's.
func (e *env) finishSteps(p *corev1.Pod, dumpCode, code int32, message string) {
	e.t.Helper()
	now := metav1.Now()
	term := func(name string, code int32, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: "x", ImageID: "x", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: map[bool]string{true: "Completed", false: "Error"}[code == 0], Message: msg, StartedAt: now, FinishedAt: now}}}
	}
	// Retried on a conflict: the Job controller updates its pods too.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := e.ke.Kube.CoreV1().Pods(e.ns).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		report(cur, dumpCode, code, message, term, now)
		_, err = e.ke.Kube.CoreV1().Pods(e.ns).UpdateStatus(context.Background(), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("reporting pod %s finished: %v", p.Name, err)
	}
}

// report writes a finished pod's status as a kubelet would.
func report(p *corev1.Pod, dumpCode, code int32, message string, term func(string, int32, string) corev1.ContainerStatus, now metav1.Time) {
	p.Status.Phase = corev1.PodSucceeded
	if code != 0 {
		p.Status.Phase = corev1.PodFailed
	}
	p.Status.StartTime = &now
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{term(backup.ContainerDump, dumpCode, "")}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{term(backup.ContainerUpload, code, message)}
	if dumpCode != 0 {
		p.Status.Phase = corev1.PodFailed
		p.Status.InitContainerStatuses[0].State.Terminated.Message = message
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
	}
}

// volumeDirs maps the pod's mount paths to local directories, as a node
// agent binds volumes: the staging emptyDir, and each Secret volume with
// its items projected as files.
func (e *env) volumeDirs(p *corev1.Pod) map[string]string {
	e.t.Helper()
	root := e.t.TempDir()
	vols := map[string]corev1.Volume{}
	for _, v := range p.Spec.Volumes {
		vols[v.Name] = v
	}
	out := map[string]string{}
	var mounts []corev1.VolumeMount
	for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
		mounts = append(mounts, c.VolumeMounts...)
	}
	for _, m := range mounts {
		if _, done := out[m.MountPath]; done {
			continue
		}
		dir := filepath.Join(root, m.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			e.t.Fatal(err)
		}
		out[m.MountPath] = dir
		v := vols[m.Name]
		if v.Secret == nil {
			continue
		}
		sec, err := e.ke.Kube.CoreV1().Secrets(e.ns).Get(context.Background(), v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			e.t.Fatalf("pod %s mounts Secret %s: %v", p.Name, v.Secret.SecretName, err)
		}
		for _, it := range v.Secret.Items {
			if err := os.WriteFile(filepath.Join(dir, it.Path), sec.Data[it.Key], 0o400); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	return out
}

// mapped rewrites an argument's container paths to the local directories.
func mapped(arg string, dirs map[string]string) string {
	for mount, dir := range dirs {
		if arg == mount || strings.HasPrefix(arg, mount+"/") {
			return dir + arg[len(mount):]
		}
		if i := strings.Index(arg, "="+mount); i >= 0 {
			rest := arg[i+1+len(mount):]
			if rest == "" || strings.HasPrefix(rest, "/") {
				return arg[:i+1] + dir + rest
			}
		}
	}
	return arg
}

// expandedArgs is container c's args as the kubelet passes them: each
// $(VAR) replaced by the container's variable (a value, or a downward-API
// reference to the pod's name, namespace or an annotation), $$ by $, and a
// reference to an undefined variable left as written.
func expandedArgs(p *corev1.Pod, c corev1.Container) []string {
	env := map[string]string{}
	for _, ev := range c.Env {
		switch {
		case ev.ValueFrom == nil:
			env[ev.Name] = ev.Value
		case ev.ValueFrom.FieldRef != nil:
			if v, ok := podField(p, ev.ValueFrom.FieldRef.FieldPath); ok {
				env[ev.Name] = v
			}
		}
	}
	var out []string
	for _, a := range c.Args {
		out = append(out, expand(a, env))
	}
	return out
}

func podField(p *corev1.Pod, path string) (string, bool) {
	switch {
	case path == "metadata.name":
		return p.Name, true
	case path == "metadata.namespace":
		return p.Namespace, true
	case strings.HasPrefix(path, "metadata.annotations['") && strings.HasSuffix(path, "']"):
		return p.Annotations[strings.TrimSuffix(strings.TrimPrefix(path, "metadata.annotations['"), "']")], true
	}
	return "", false
}

func expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case s[i+1] == '$':
			b.WriteByte('$')
			i++
		case s[i+1] == '(':
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			if v, ok := env[s[i+2:i+end]]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+end+1])
			}
			i += end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
