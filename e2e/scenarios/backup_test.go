//go:build e2e

package scenarios

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/minio/minio-go/v7"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/backup/envelope"
	"github.com/shipstream/bloodraven/pkg/backup/stamp"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/mysql"
)

// An on-demand MysqlBackup of the sample group runs as a real Job (the
// node agent runs its pod: the mysqlsh stand-in against the source site's
// simulated mysqld, then bin/bloodraven encrypt-upload into the
// playground's versitygw) and is judged by what the bucket holds: the
// stamp under the recorded location, every file it lists with its size
// and SHA-256, the dump's own @.json GTID set containing every write the
// test made before creating the backup (as the active site's server held
// them), and the test's row in the table's data.
func TestOnDemandBackup(t *testing.T) {
	requireReady(t)
	ctx := context.Background()
	store := pg.BackupStore()
	if store == nil {
		t.Fatal("the playground has no backup store")
	}
	g := group(t)
	if g.Spec.Backup == nil || len(g.Spec.Backup.Profiles) == 0 || g.Spec.Backup.Profiles[0].Storage.S3 == nil {
		t.Fatal("the sample group has no S3 backup profile")
	}
	prof := g.Spec.Backup.Profiles[0]

	marker := fmt.Sprintf("before-backup-%d", time.Now().UnixNano())
	wrote := writeMarker(t, marker)
	// Whichever site the backup picks, its server holds the writes first:
	// a replica's dump is at that replica's point, which is right.
	waitAllSitesHold(t, wrote)

	b := &v1alpha1.MysqlBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-on-demand", Namespace: pg.Namespace},
		Spec:       v1alpha1.MysqlBackupSpec{FailoverGroupRef: v1alpha1.FailoverGroupReference{Name: pg.Group}, ProfileName: prof.Name},
	}
	if _, err := pg.Ship.ShipstreamV1alpha1().MysqlBackups(pg.Namespace).Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteBackup(t, b.Name) })
	created := time.Now()
	eventually(t, 3*time.Minute, func() string {
		var err error
		if b, err = pg.Ship.ShipstreamV1alpha1().MysqlBackups(pg.Namespace).Get(ctx, b.Name, metav1.GetOptions{}); err != nil {
			return err.Error()
		}
		if b.Status.Phase == v1alpha1.PhaseFailed {
			t.Fatalf("the backup failed: %+v", b.Status)
		}
		if b.Status.Phase != v1alpha1.PhaseSucceeded {
			return fmt.Sprintf("phase %s, %+v", b.Status.Phase, b.Status.Conditions)
		}
		return ""
	})
	t.Logf("Succeeded %s after the MysqlBackup was created (source site %s, Job %s)", time.Since(created).Round(time.Millisecond), b.Status.SourceSite, b.Status.JobName)
	loc := b.Status.ArtifactStorage
	bucketPrefix := "s3://" + prof.Storage.S3.Bucket + "/"
	if loc == nil || !strings.HasPrefix(loc.Location, bucketPrefix) {
		t.Fatalf("artifactStorage %+v is not in bucket %s", loc, prof.Storage.S3.Bucket)
	}
	dir := strings.TrimPrefix(loc.Location, bucketPrefix) + "/"
	objs := listObjects(t, prof.Storage.S3.Bucket, dir)
	raw, ok := objs[dir+"@.bloodraven-backup.json"]
	if !ok {
		t.Fatalf("no stamp under %s: %v", dir, keys(objs))
	}
	st, err := stamp.Decode(raw)
	if err != nil {
		t.Fatalf("the stamp in the bucket: %v", err)
	}
	if st.Backup.UID != string(b.UID) || st.Group.UID != string(g.UID) {
		t.Errorf("the stamp names backup %+v and group %+v, not this backup (%s) and group (%s)", st.Backup, st.Group, b.UID, g.UID)
	}
	// Every file the stamp lists is in the bucket with its size and
	// SHA-256, and nothing else is under the location.
	root := strings.TrimSuffix(prof.Storage.S3.Prefix, "/") + "/"
	if prof.Storage.S3.Prefix == "" {
		root = ""
	}
	for _, f := range st.Files {
		data, ok := objs[root+f.Key]
		sum := sha256.Sum256(data)
		if !ok || int64(len(data)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
			t.Errorf("stamp file %s (%d bytes, %s): the bucket holds %v, %d bytes, %x", f.Key, f.Size, f.SHA256, ok, len(data), sum)
		}
	}
	if len(objs) != len(st.Files)+1 {
		t.Errorf("the location holds %d objects, the stamp lists %d files: %v", len(objs), len(st.Files), keys(objs))
	}

	t.Logf("%s: %d objects, %d bytes of dump files, encryption %s", loc.Location, len(objs), b.Status.SizeBytes, st.Encryption)
	open := opener(t, g, objs, dir)
	var doc struct {
		GTIDExecuted string `json:"gtidExecuted"`
	}
	if err := json.Unmarshal(open("@.json"), &doc); err != nil {
		t.Fatalf("the dump's @.json: %v", err)
	}
	dumped, err := gtid.Parse(doc.GTIDExecuted)
	if err != nil {
		t.Fatal(err)
	}
	if !wrote.IsSubsetOf(dumped) {
		t.Errorf("the dump's gtidExecuted %s does not contain the writes made before the backup (%s)", dumped, wrote)
	}
	if status, err := gtid.Parse(b.Status.GTIDExecuted); err != nil || !status.Equal(dumped) {
		t.Errorf("status.gtidExecuted %q; the dump's @.json says %s", b.Status.GTIDExecuted, dumped)
	}
	var rows []byte
	for k := range objs {
		name := strings.TrimPrefix(k, dir)
		if strings.HasPrefix(name, markerSchema(t)+"@e2e_backup@") && (strings.HasSuffix(name, ".tsv") || strings.HasSuffix(name, ".tsv.zst")) {
			rows = append(rows, open(name)...)
		}
	}
	if !bytes.Contains(rows, []byte(marker)) {
		t.Errorf("the table's dumped rows (%d bytes) do not hold the row written before the backup", len(rows))
	}
}

// markerSchema is the sample database's schema, which the test's table is in.
func markerSchema(t *testing.T) string {
	t.Helper()
	db, err := pg.Ship.ShipstreamV1alpha1().MysqlDatabases(pg.Namespace).Get(context.Background(), pg.Database, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return db.Spec.DatabaseName
}

// writeMarker writes a row holding marker on the active site as the
// database's owner and returns the server's gtid_executed after it.
func writeMarker(t *testing.T, marker string) gtid.Set {
	t.Helper()
	ctx := context.Background()
	db, err := pg.Ship.ShipstreamV1alpha1().MysqlDatabases(pg.Namespace).Get(ctx, pg.Database, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec, err := pg.CP.Client().CoreV1().Secrets(pg.Namespace).Get(ctx, db.Spec.Owner.PasswordSecretKeyRef.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	app, err := pg.AppTLS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := app.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	c, err := mysql.Open(mysql.Options{Addr: net.JoinHostPort(app.Host, app.Port), User: db.Spec.Owner.Username, Password: string(sec.Data["password"]),
		TLS: cfg, Program: "bloodraven-e2e-backup", StatementTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS " + db.Spec.DatabaseName + ".e2e_backup (id INT PRIMARY KEY, note VARCHAR(64))",
		"INSERT INTO " + db.Spec.DatabaseName + ".e2e_backup VALUES (1, '" + marker + "')",
	} {
		if _, err := c.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var executed string
	if err := c.DB().QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_executed").Scan(&executed); err != nil {
		t.Fatal(err)
	}
	s, err := gtid.Parse(executed)
	if err != nil || s.IsEmpty() {
		t.Fatalf("the active site's gtid_executed %q: %v", executed, err)
	}
	return s
}

// deleteBackup deletes the MysqlBackup (its artifact is kept) and waits
// until its Job's pods are gone, so that later scenarios see only the
// group's mysqld pods.
func deleteBackup(t *testing.T, name string) {
	ctx := context.Background()
	bg := metav1.DeletePropagationBackground
	if err := pg.Ship.ShipstreamV1alpha1().MysqlBackups(pg.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Errorf("delete MysqlBackup %s: %v", name, err)
		return
	}
	eventually(t, time.Minute, func() string {
		pods, err := pg.CP.Client().CoreV1().Pods(pg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "bloodraven.shipstream.io/backup=" + name})
		if err != nil {
			return err.Error()
		}
		if n := len(pods.Items); n > 0 {
			return fmt.Sprintf("%d pods of backup %s left", n, name)
		}
		return ""
	})
}

// waitAllSitesHold waits until every site's server reports a gtid_executed
// that contains set.
func waitAllSitesHold(t *testing.T, set gtid.Set) {
	t.Helper()
	ctx := context.Background()
	app, err := pg.AppTLS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pg.MySQLClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range pg.Sites {
		c, err := mysql.Open(mysql.Options{Addr: s.MySQLAddr, User: app.User, Password: app.Password, TLS: cfg,
			Program: "bloodraven-e2e-backup", StatementTimeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("site %s: %v", s.Name, err)
		}
		eventually(t, 30*time.Second, func() string {
			var executed string
			if err := c.DB().QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_executed").Scan(&executed); err != nil {
				return err.Error()
			}
			if held, err := gtid.Parse(executed); err != nil || !set.IsSubsetOf(held) {
				return fmt.Sprintf("site %s holds %q, not yet %s", s.Name, executed, set)
			}
			return ""
		})
		c.Close()
	}
}

// listObjects reads every object under prefix from the playground's store.
func listObjects(t *testing.T, bucket, prefix string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	cl := pg.BackupStore().Client()
	out := map[string][]byte{}
	for o := range cl.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		r, err := cl.GetObject(ctx, bucket, o.Key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[o.Key] = data
	}
	return out
}

// opener returns a dump file's plaintext: decrypted with the profile's
// passphrase when the group encrypts, decompressed when zstd.
func opener(t *testing.T, g *v1alpha1.MysqlFailoverGroup, objs map[string][]byte, dir string) func(name string) []byte {
	var pass []byte
	if e := g.Spec.Backup.Profiles[0].Encryption; e != nil {
		sec, err := pg.CP.Client().CoreV1().Secrets(pg.Namespace).Get(context.Background(), e.PassphraseSecretKeyRef.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		key := e.PassphraseSecretKeyRef.Key
		if key == "" {
			key = v1alpha1.DefaultPassphraseKey
		}
		if pass, err = envelope.Passphrase(sec.Data[key]); err != nil {
			t.Fatal(err)
		}
	}
	return func(name string) []byte {
		t.Helper()
		data, ok := objs[dir+name]
		if !ok {
			t.Fatalf("no %s in the bucket under %s", name, dir)
		}
		var r io.Reader = bytes.NewReader(data)
		if pass != nil {
			if !envelope.IsEnvelope(data) {
				t.Fatalf("%s is not a BRV1 envelope in an encrypted backup", name)
			}
			var err error
			if r, err = envelope.NewReader(r, pass); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if strings.HasSuffix(name, ".zst") {
			z, err := zstd.NewReader(r)
			if err != nil {
				t.Fatal(err)
			}
			defer z.Close()
			r = z
		}
		plain, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return plain
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
