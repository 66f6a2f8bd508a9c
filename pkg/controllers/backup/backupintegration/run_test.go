package backupintegration

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/backup/envelope"
	"github.com/shipstream/bloodraven/pkg/backup/upload"
	"github.com/shipstream/bloodraven/pkg/controllers/backup"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsh"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// dumpFixture is a dump directory in mysqlsh's layout (package dump's
// fixture): what the Job's dump step leaves in the staging volume.
var dumpFixture = filepath.Join("..", "..", "..", "backup", "dump", "testdata", "dumpinstance")

// runPod plays the kubelet for the backup's current pod: the dump step's
// output is put in the staging volume, the upload step runs for real with
// the pod's own argv (its volumes mapped to local directories), and the pod
// ends with the step's exit.
func (e *env) runPod(name string) (stderr string, err error) {
	e.t.Helper()
	return e.runPodAs(e.pod(e.job(name)), true)
}

// runPodAs runs pod p's steps; with report false its end is left for the
// caller to report (the upload's error is still returned).
func (e *env) runPodAs(p *corev1.Pod, report bool) (stderr string, err error) {
	e.t.Helper()
	dirs := e.volumeDirs(p)
	if code, out := e.runDump(p, dirs); code != 0 {
		if report {
			e.finishSteps(p, int32(code), 0, out)
		}
		return out, fmt.Errorf("the dump step exited %d: %s", code, out)
	}
	var argv []string
	for _, a := range expandedArgs(p, p.Spec.Containers[0]) {
		argv = append(argv, mapped(a, dirs))
	}
	var out bytes.Buffer
	a, err := upload.Parse(argv)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = upload.Run(ctx, a, &out)
		cancel()
	}
	if !report {
		return out.String(), err
	}
	if err != nil {
		e.finish(p, 1, err.Error())
		return out.String(), err
	}
	e.finish(p, 0, "")
	return out.String(), nil
}

// runDump is the dump step: with a simulated mysqld for the source site,
// the mysqlsh stand-in runs with the init container's own arguments as its
// script passes them (the user name from the mounted file first, the
// password on standard input), the Service address mapped to the
// simulator's; without one, the fixture dump is what the step leaves.
func (e *env) runDump(p *corev1.Pod, dirs map[string]string) (int, string) {
	e.t.Helper()
	c := p.Spec.InitContainers[0]
	var srv *mysqlsim.Server
	for site, s := range e.sims {
		if slices.Contains(c.Args, "--host="+siteaddr.SiteKey{Namespace: e.ns, Group: groupName, Site: site}.InternalServiceFQDN()) {
			srv = s
		}
	}
	if srv == nil {
		copyDir(e.t, dumpFixture, filepath.Join(dirs[backup.StagingDir], "dump"))
		return 0, ""
	}
	if !slices.Equal(c.Command, []string{"/bin/sh", "-c", backup.DumpScript, "mysqlsh"}) {
		e.t.Fatalf("the dump container runs %q, which this kubelet cannot map", c.Command)
	}
	user, err := os.ReadFile(filepath.Join(dirs[backup.MySQLSecretDir], "username"))
	if err != nil {
		e.t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(srv.Addr())
	argv := []string{"--user=" + strings.TrimRight(string(user), "\n")} // as $(cat ...) strips
	for _, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--host="):
			a = "--host=" + host
		case a == "--port=3306":
			a = "--port=" + port
		}
		argv = append(argv, mapped(a, dirs))
	}
	pw, err := os.Open(filepath.Join(dirs[backup.MySQLSecretDir], "password"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer pw.Close()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := mysqlsh.Run(ctx, argv, pw, &out, &out, mysqlsh.Hooks{})
	return code, out.String()
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range ents {
		b, err := os.ReadFile(filepath.Join(from, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, en.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// fixtureCoordinates are the GTID set and binary log position the dump's
// own @.json states.
func fixtureCoordinates(t *testing.T) (gtid.Set, string, int64) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dumpFixture, "@.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		GTIDExecuted   string `json:"gtidExecuted"`
		BinlogFile     string `json:"binlogFile"`
		BinlogPosition int64  `json:"binlogPosition"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	s, err := gtid.Parse(doc.GTIDExecuted)
	if err != nil {
		t.Fatal(err)
	}
	return s, doc.BinlogFile, doc.BinlogPosition
}

// objects lists what the bucket holds under prefix, with sizes.
func (e *env) objects(prefix string) map[string]int64 {
	e.t.Helper()
	out := map[string]int64{}
	for o := range e.s3.Client().ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			e.t.Fatal(o.Err)
		}
		out[o.Key] = o.Size
	}
	return out
}

func (e *env) object(key string) []byte {
	e.t.Helper()
	o, err := e.s3.Client().GetObject(context.Background(), bucket, key, minio.GetObjectOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// The whole run: Pending, Running once the Job exists, Succeeded once the
// real upload step stored the dump in the real bucket; the status carries
// what the dump's own @.json and the bucket say.
func TestBackupSucceedsWithTheDumpsCoordinates(t *testing.T) {
	e := newEnv(t)
	e.group([]v1alpha1.BackupProfile{e.profile("nightly")})
	b := e.backup("nightly-1", "nightly")
	b = e.wait(b.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "triggered by test "+t.Name())
	if b.Status.SourceSite != "pdx" || b.Status.StartTime == nil || b.Status.MySQLImage != backup.DefaultImage || b.Status.JobName != e.job(b.Name).Name {
		t.Fatalf("running status: %+v", b.Status)
	}
	started := e.event(b.Name, v1alpha1.EventBackupStarted, corev1.EventTypeNormal)
	if !strings.Contains(started.Message, "site pdx") || !strings.Contains(started.Message, "triggered by test") {
		t.Errorf("BackupStarted message %q", started.Message)
	}
	if _, err := e.runPod(b.Name); err != nil {
		t.Fatalf("the upload step failed: %v", err)
	}
	b = e.wait(b.Name, v1alpha1.PhaseSucceeded, "", v1alpha1.ReasonSucceeded, "backup of site pdx stored at s3://")

	want, file, pos := fixtureCoordinates(t)
	got, err := gtid.Parse(b.Status.GTIDExecuted)
	if err != nil || !got.Equal(want) {
		t.Errorf("gtidExecuted %q (%v), the dump's @.json says %s", b.Status.GTIDExecuted, err, want)
	}
	if b.Status.BinlogPosition == nil || b.Status.BinlogPosition.File != file || b.Status.BinlogPosition.Position != pos {
		t.Errorf("binlogPosition %+v, the dump's @.json says %s:%d", b.Status.BinlogPosition, file, pos)
	}
	prefix := "prod/" + e.ns + "/" + upload.AttemptDir(b.Name, string(b.UID), 0)
	if loc := b.Status.ArtifactStorage; loc == nil || loc.Type != v1alpha1.BackupStorageS3 || loc.Location != "s3://"+bucket+"/"+strings.TrimSuffix(prefix, "/") {
		t.Errorf("artifactStorage %+v, want s3://%s/%s", loc, bucket, prefix)
	}
	objs := e.objects(prefix)
	var size int64
	for k, n := range objs {
		if !strings.HasSuffix(k, "@.bloodraven-backup.json") {
			size += n
		}
	}
	if len(objs) < 5 || b.Status.SizeBytes != size {
		t.Errorf("sizeBytes %d; the bucket holds %d bytes of dump files under %s (%v)", b.Status.SizeBytes, size, prefix, objs)
	}
	if b.Status.Encryption != nil || b.Status.CompletionTime == nil {
		t.Errorf("encryption %+v, completionTime %v", b.Status.Encryption, b.Status.CompletionTime)
	}
	e.event(b.Name, v1alpha1.EventBackupSucceeded, corev1.EventTypeNormal)
}

// An encrypted profile: the Job mounts a key snapshot Secret the controller
// copied from the profile's Secret (no owner reference, so it outlives the
// backup and the group), every stored file is a BRV1 envelope that opens
// with the passphrase, and rotating the profile's Secret afterwards leaves
// the snapshot as it was.
func TestEncryptedBackupUsesItsOwnKeySnapshot(t *testing.T) {
	e := newEnv(t)
	e.group([]v1alpha1.BackupProfile{e.profile("secure", encrypted)})
	b := e.backup("secure-1", "secure")
	b = e.wait(b.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	enc := b.Status.Encryption
	if enc == nil || enc.Algorithm != envelope.Algorithm || enc.KeySecretName != backup.KeySnapshotName(b) || !strings.HasPrefix(enc.KeySecretName, "mysql-dump-key-") {
		t.Fatalf("encryption %+v", enc)
	}
	snap, err := e.ke.Kube.CoreV1().Secrets(e.ns).Get(context.Background(), enc.KeySecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.OwnerReferences) != 0 {
		t.Errorf("key snapshot has owner references %v: it would go with its owner", snap.OwnerReferences)
	}
	if got := string(snap.Data[backup.PassphraseKey]); strings.TrimSpace(got) != passphraseVal {
		t.Errorf("key snapshot holds %q, not the profile's passphrase", got)
	}
	// Rotate the profile's Secret while the Job runs: the Job still reads
	// the snapshot.
	live, err := e.ke.Kube.CoreV1().Secrets(e.ns).Get(context.Background(), passSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.Data["passphrase"] = []byte("a rotated passphrase 0d1e")
	if _, err := e.ke.Kube.CoreV1().Secrets(e.ns).Update(context.Background(), live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.runPod(b.Name); err != nil {
		t.Fatalf("the upload step failed: %v", err)
	}
	b = e.wait(b.Name, v1alpha1.PhaseSucceeded, "", v1alpha1.ReasonSucceeded, "encrypted with AES-256-GCM")
	prefix := "prod/" + e.ns + "/" + upload.AttemptDir(b.Name, string(b.UID), 0)
	opened := 0
	for k := range e.objects(prefix) {
		if strings.HasSuffix(k, "@.bloodraven-backup.json") {
			continue
		}
		data := e.object(k)
		if !envelope.IsEnvelope(data) {
			t.Errorf("%s is not a BRV1 envelope", k)
			continue
		}
		pass, _ := envelope.Passphrase([]byte(passphraseVal))
		r, err := envelope.NewReader(bytes.NewReader(data), pass)
		if err == nil {
			var plain []byte
			if plain, err = io.ReadAll(r); err == nil {
				name := k[strings.LastIndex(k, "/")+1:]
				orig, _ := os.ReadFile(filepath.Join(dumpFixture, name))
				if !bytes.Equal(plain, orig) {
					t.Errorf("%s decrypts to something other than the dump's %s", k, name)
				}
				opened++
			}
		}
		if err != nil {
			t.Errorf("%s does not open with the passphrase the backup started with: %v", k, err)
		}
	}
	if opened < 5 {
		t.Errorf("opened only %d stored files", opened)
	}
	again, _ := e.ke.Kube.CoreV1().Secrets(e.ns).Get(context.Background(), enc.KeySecretName, metav1.GetOptions{})
	if strings.TrimSpace(string(again.Data[backup.PassphraseKey])) != passphraseVal {
		t.Errorf("the key snapshot changed with the profile's Secret")
	}
}

// A failed Job ends the backup Failed with the Job's own reason.
func TestJobFailedFailsTheBackup(t *testing.T) {
	e := newEnv(t)
	e.group([]v1alpha1.BackupProfile{e.profile("nightly")}, func(g *v1alpha1.MysqlFailoverGroup) {
		g.Spec.Backup.BackoffLimit = new(int32) // an explicit 0: one pod
	})
	b := e.backup("nightly-1", "nightly")
	e.wait(b.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	e.finish(e.pod(e.job(b.Name)), 2, "mysqlsh: dump failed")
	b = e.wait(b.Name, v1alpha1.PhaseFailed, "", backup.ReasonJobFailed, "FailedIndexes")
	if b.Status.CompletionTime == nil {
		t.Error("no completionTime")
	}
	ev := e.event(b.Name, v1alpha1.EventBackupFailed, corev1.EventTypeWarning)
	if !strings.HasPrefix(ev.Message, backup.ReasonJobFailed+": ") {
		t.Errorf("BackupFailed message %q", ev.Message)
	}
}

// A Job deleted under the controller fails the backup with its own reason
// and Event, and no Job is made again.
func TestJobDeletedUnderTheController(t *testing.T) {
	e := newEnv(t)
	e.group([]v1alpha1.BackupProfile{e.profile("nightly")})
	b := e.backup("nightly-1", "nightly")
	e.wait(b.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	j := e.job(b.Name)
	bg := metav1.DeletePropagationBackground
	if err := e.ke.Kube.BatchV1().Jobs(e.ns).Delete(context.Background(), j.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	b = e.wait(b.Name, v1alpha1.PhaseFailed, "", backup.ReasonJobDeleted, "was deleted before it finished")
	e.event(b.Name, v1alpha1.EventBackupJobLost, corev1.EventTypeWarning)
	// Wake it a few times: the Job must stay gone.
	for range 3 {
		e.touch(b.Name)
		time.Sleep(300 * time.Millisecond)
	}
	if js := e.jobs(b.Name); len(js) != 0 {
		t.Fatalf("the controller made the Job again: %v", js[0].Name)
	}
	if got := e.get(b.Name); got.Status.Phase != v1alpha1.PhaseFailed {
		t.Fatalf("phase %s after the wake-ups", got.Status.Phase)
	}
}

// A Job that succeeds without storing a stamp does not make a successful
// backup.
func TestJobSucceededWithoutAStamp(t *testing.T) {
	e := newEnv(t)
	e.group([]v1alpha1.BackupProfile{e.profile("nightly")})
	b := e.backup("nightly-1", "nightly")
	e.wait(b.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "")
	e.finish(e.pod(e.job(b.Name)), 0, "")
	b = e.wait(b.Name, v1alpha1.PhaseFailed, "", backup.ReasonStampInvalid, "does not exist")
	if b.Status.GTIDExecuted != "" || b.Status.SizeBytes != 0 {
		t.Errorf("a backup without a stamp reports gtidExecuted %q, size %d", b.Status.GTIDExecuted, b.Status.SizeBytes)
	}
}

// startSite starts a simulated mysqld standing for site, with the
// product's backup account (pkg/accounts' backup role, the Secret's user
// and password) and a table with rows; it returns an admin connection.
func (e *env) startSite(site string) *sql.DB {
	e.t.Helper()
	srv := simtest.Start(e.t, mysqlsim.Config{Name: site})
	if e.sims == nil {
		e.sims = map[string]*mysqlsim.Server{}
	}
	e.sims[site] = srv
	c, err := mysql.Open(mysql.Options{Addr: srv.Addr(), User: simtest.AdminUser, Password: simtest.AdminPass, StatementTimeout: 5 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	db := c.DB()
	stmts := accounts.CreateStatements(accounts.Account{Role: accounts.RoleBackup, User: backupUser, Password: backupPass})
	stmts = append(stmts, "CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT PRIMARY KEY, item VARCHAR(32))",
		"INSERT INTO shop.orders VALUES (1, 'anvil'), (2, 'rope'), (3, 'tnt')")
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			e.t.Fatalf("%s: %v", q, err)
		}
	}
	return db
}

// The whole Job against a simulated source: the mysqlsh stand-in takes the
// dump container's command line as rendered, the upload step stores its
// output, and the backup's GTID set is the one the server holds.
func TestBackupOfASimulatedSite(t *testing.T) {
	e := newEnv(t)
	db := e.startSite("pdx")
	e.group([]v1alpha1.BackupProfile{e.profile("nightly", func(p *v1alpha1.BackupProfile) {
		p.Dump = &v1alpha1.DumpOptions{Threads: ptrTo(int32(2)), IncludeSchemas: []string{"shop"}}
	})})
	b := e.backup("nightly-1", "nightly")
	e.wait(b.Name, v1alpha1.PhaseRunning, "", v1alpha1.ReasonRunning, "backing up site pdx")
	if out, err := e.runPod(b.Name); err != nil {
		t.Fatalf("the Job's steps failed: %v\n%s", err, out)
	}
	b = e.wait(b.Name, v1alpha1.PhaseSucceeded, "", v1alpha1.ReasonSucceeded, "")
	var executed string
	if err := db.QueryRow("SELECT @@GLOBAL.gtid_executed").Scan(&executed); err != nil {
		t.Fatal(err)
	}
	want, err := gtid.Parse(executed)
	if err != nil {
		t.Fatal(err)
	}
	got, err := gtid.Parse(b.Status.GTIDExecuted)
	if err != nil || !got.Equal(want) || want.IsEmpty() {
		t.Fatalf("status.gtidExecuted %q; the server holds %q", b.Status.GTIDExecuted, executed)
	}
	prefix := "prod/" + e.ns + "/" + upload.AttemptDir(b.Name, string(b.UID), 0)
	objs := e.objects(prefix)
	if _, ok := objs[prefix+"shop@orders.json"]; !ok {
		t.Fatalf("the bucket holds no table file for shop.orders under %s: %v", prefix, objs)
	}
}

func ptrTo[T any](v T) *T { return &v }
