package apitest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	typed "github.com/shipstream/bloodraven/generated/clientset/versioned/typed/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/stability"
)

func clientset(t *testing.T) versioned.Interface {
	t.Helper()
	c, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSamplesAccepted applies deploy/samples the way the docs tell users to
// (server-side, strict validation) and reads every object back through the
// generated clientset.
func TestSamplesAccepted(t *testing.T) {
	ns := cp.NewNamespace(t)
	out, err := kubectl(t, "apply", "--server-side", "--validate=strict", "-n", ns, "-f", samplesDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl apply:\n%s", out)

	cs := clientset(t).ShipstreamV1alpha1()
	c := ctx(t)
	if _, err := cs.MysqlFailoverGroups(ns).Get(c, "orders", metav1.GetOptions{}); err != nil {
		t.Errorf("group: %v", err)
	}
	if _, err := cs.MysqlBackups(ns).Get(c, "orders-before-migration", metav1.GetOptions{}); err != nil {
		t.Errorf("backup: %v", err)
	}
	if _, err := cs.MysqlBackupVerifications(ns).Get(c, "orders-before-migration-drill", metav1.GetOptions{}); err != nil {
		t.Errorf("verification: %v", err)
	}
	if _, err := cs.MysqlStandbyClusters(ns).Get(c, "orders-dr", metav1.GetOptions{}); err != nil {
		t.Errorf("standby: %v", err)
	}
	db, err := cs.MysqlDatabases(ns).Get(c, "orders-app", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("database: %v", err)
	}
	if len(db.Spec.DeploymentClients) != 1 || db.Spec.DeploymentClients[0].ServiceAccount != "application-deploy" {
		t.Errorf("database deploymentClients = %+v, want the application-deploy ServiceAccount", db.Spec.DeploymentClients)
	}
}

// TestSamplesDecodeStrictly makes sure every field of the samples exists in
// the Go types, so the operator reads what users wrote.
func TestSamplesDecodeStrictly(t *testing.T) {
	targets := map[string]any{
		"MysqlFailoverGroup":      &v1alpha1.MysqlFailoverGroup{},
		"MysqlBackup":             &v1alpha1.MysqlBackup{},
		"MysqlBackupVerification": &v1alpha1.MysqlBackupVerification{},
		"MysqlStandbyCluster":     &v1alpha1.MysqlStandbyCluster{},
		"MysqlDatabase":           &v1alpha1.MysqlDatabase{},
	}
	seen := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(samplesDir(), "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(b), "\n---\n") {
			var head struct{ Kind string }
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			target, ok := targets[head.Kind]
			if !ok {
				continue
			}
			seen[head.Kind] = true
			if err := yaml.UnmarshalStrict([]byte(doc), target); err != nil {
				t.Errorf("%s: %s does not decode strictly into the Go type: %v", filepath.Base(f), head.Kind, err)
			}
		}
	}
	for kind := range targets {
		if !seen[kind] {
			t.Errorf("deploy/samples has no %s", kind)
		}
	}
}

// TestDefaults creates minimal objects and checks the defaults the API
// reference documents (docs/api.md) on what the API server stored.
func TestDefaults(t *testing.T) {
	ns := cp.NewNamespace(t)
	cs := clientset(t).ShipstreamV1alpha1()
	dc := dynamicClient(t)

	g := object(t, minimalGroup)
	apply(t, g,
		set("spec.replication", "{maxLagSeconds: 0}"), // an explicit 0 is kept
		set("spec.backup", `{profiles: [{name: p, storage: {type: S3, s3: {bucket: bkt, prefix: x}}, encryption: {passphraseSecretKeyRef: {name: pp}}}], maxLagSecondsForSource: 0, backoffLimit: 0}`),
		set("spec.encryptionAtRest", "{enabled: true}"),
		set("spec.tls", "{secretName: tls}"),
	)
	s := storedSpec(t, dc, cs, ns, g)
	checks := []struct {
		field string
		got   any
		want  any
	}{
		{"spec.image", s.Image, "mysql:9.7"},
		{"spec.sites[0].role", s.Sites[0].Role, v1alpha1.SiteRolePrimaryCandidate},
		{"spec.pollInterval", s.PollInterval.Duration, 2 * time.Second},
		{"spec.failureThreshold", *s.FailureThreshold, int32(3)},
		{"spec.recoveryThreshold", *s.RecoveryThreshold, int32(2)},
		{"spec.failoverCooldown", s.FailoverCooldown.Duration, 5 * time.Minute},
		{"spec.connectionDrainTimeout", s.ConnectionDrainTimeout.Duration, 30 * time.Second},
		{"spec.cloneTimeout", s.CloneTimeout.Duration, time.Hour},
		{"spec.terminationGracePeriodSeconds", *s.TerminationGracePeriodSeconds, int64(60)},
		{"spec.updateStrategy.type", s.UpdateStrategy.Type, v1alpha1.OrderedUpdate},
		{"spec.dns.ttlSeconds", *s.DNS.TTLSeconds, int32(60)},
		{"spec.replication.maxLagSeconds (explicit 0 kept)", *s.Replication.MaxLagSeconds, int32(0)},
		{"spec.plannedFailover.onCooldown", s.PlannedFailover.OnCooldown, v1alpha1.PlannedFailoverRejectOnCooldown},
		{"spec.plannedFailover.maxLagWait", s.PlannedFailover.MaxLagWait.Duration, time.Minute},
		{"spec.sidecar.leaseTimeout", s.Sidecar.LeaseTimeout.Duration, 15 * time.Second},
		{"spec.sidecar.peerCheckInterval", s.Sidecar.PeerCheckInterval.Duration, 2 * time.Second},
		{"spec.backup.image", s.Backup.Image, "container-registry.oracle.com/mysql/community-server:9.7"},
		{"spec.backup.maxLagSecondsForSource (explicit 0 kept)", *s.Backup.MaxLagSecondsForSource, int32(0)},
		{"spec.backup.backoffLimit (explicit 0 kept)", *s.Backup.BackoffLimit, int32(0)},
		{"spec.backup.activeDeadlineSeconds", *s.Backup.ActiveDeadlineSeconds, int64(7200)},
		{"spec.backup.profiles[0].retention.keepLast", *s.Backup.Profiles[0].Retention.KeepLast, int32(7)},
		{"spec.backup.profiles[0].retention.keepFailed", *s.Backup.Profiles[0].Retention.KeepFailed, int32(10)},
		{"spec.backup.profiles[0].encryption.algorithm", s.Backup.Profiles[0].Encryption.Algorithm, "AES-256-GCM"},
		{"spec.backup.profiles[0].encryption.passphraseSecretKeyRef.key", s.Backup.Profiles[0].Encryption.PassphraseSecretKeyRef.Key, "passphrase"},
		{"spec.encryptionAtRest.existingData", s.EncryptionAtRest.ExistingData, v1alpha1.EncryptionExistingData("Refuse")},
		{"spec.encryptionAtRest.coverage.systemTablespace", *s.EncryptionAtRest.Coverage.SystemTablespace, true},
		{"spec.encryptionAtRest.keyring.dataFileDir", s.EncryptionAtRest.Keyring.DataFileDir, "/run/mysql-keyring"},
		{"spec.encryptionAtRest.keyring.mysqldDir", s.EncryptionAtRest.Keyring.MysqldDir, "/usr/sbin"},
		{"spec.encryptionAtRest.keyring.pluginDir", s.EncryptionAtRest.Keyring.PluginDir, "/usr/lib64/mysql/plugin"},
		{"spec.encryptionAtRest.keyring.retainVersions", *s.EncryptionAtRest.Keyring.RetainVersions, int32(5)},
		{"spec.encryptionAtRest.keyring.escrowTimeout", s.EncryptionAtRest.Keyring.EscrowTimeout.Duration, 10 * time.Minute},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
		}
	}
	if s.Replication.ReadOnlyMaxLagSeconds != nil {
		t.Errorf("spec.replication.readOnlyMaxLagSeconds = %d, want unset (inherits maxLagSeconds)", *s.Replication.ReadOnlyMaxLagSeconds)
	}

	b := object(t, minimalBackup)
	if _, err := create(t, dc, ns, b); err != nil {
		t.Fatal(err)
	}
	mb, err := cs.MysqlBackups(ns).Get(ctx(t), "b1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mb.Spec.DeletionPolicy != v1alpha1.DeletionPolicyDelete {
		t.Errorf("MysqlBackup spec.deletionPolicy = %q, want Delete", mb.Spec.DeletionPolicy)
	}

	if _, err := create(t, dc, ns, object(t, minimalVerification)); err != nil {
		t.Fatal(err)
	}
	mbv, err := cs.MysqlBackupVerifications(ns).Get(ctx(t), "v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mbv.Spec.TTLSecondsAfterFinished != nil {
		t.Errorf("MysqlBackupVerification spec.ttlSecondsAfterFinished = %d, want unset (no default in v1alpha1.7.0)", *mbv.Spec.TTLSecondsAfterFinished)
	}

	if _, err := create(t, dc, ns, object(t, minimalStandby)); err != nil {
		t.Fatal(err)
	}
	msc, err := cs.MysqlStandbyClusters(ns).Get(ctx(t), "s1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if msc.Spec.Transport != "ObjectStore" || msc.Spec.Freshness.DiscoveryInterval.Duration != 5*time.Minute {
		t.Errorf("MysqlStandbyCluster transport=%q discoveryInterval=%v, want ObjectStore and 5m", msc.Spec.Transport, msc.Spec.Freshness.DiscoveryInterval)
	}

	if _, err := create(t, dc, ns, object(t, minimalDatabase)); err != nil {
		t.Fatal(err)
	}
	mdb, err := cs.MysqlDatabases(ns).Get(ctx(t), "d1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mdb.Spec.Collation != "" || mdb.Spec.CharacterSet != "utf8mb4" || mdb.Spec.DeletionPolicy != v1alpha1.DatabaseRetain || len(mdb.Spec.DeploymentClients) != 0 {
		t.Errorf("MysqlDatabase defaults: collation=%q characterSet=%q deletionPolicy=%q clients=%v; want no collation, utf8mb4, Retain, no clients",
			mdb.Spec.Collation, mdb.Spec.CharacterSet, mdb.Spec.DeletionPolicy, mdb.Spec.DeploymentClients)
	}
}

// TestStatusRoundTrip writes the status shapes the operator writes (a
// transition in flight, sites, conditions, a planned-failover claim) through
// the status subresource and reads them back; spec is not writable there.
func TestStatusRoundTrip(t *testing.T) {
	ns := cp.NewNamespace(t)
	cs := clientset(t).ShipstreamV1alpha1()
	if _, err := create(t, dynamicClient(t), ns, object(t, minimalGroup)); err != nil {
		t.Fatal(err)
	}
	g, err := cs.MysqlFailoverGroups(ns).Get(ctx(t), "orders", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	lag := int64(1)
	g.Status = v1alpha1.MysqlFailoverGroupStatus{
		ObservedGeneration: g.Generation,
		ActiveSite:         "iad",
		TopologyGeneration: 7,
		Transition: &v1alpha1.Transition{ID: "0b0d5a52-6f4f-4b8e-9a53-5f0d4e0f2a11", Kind: v1alpha1.TransitionPlanned, SourceSite: "iad", TargetSite: "pdx",
			TopologyGeneration: 8, Step: v1alpha1.StepFencingSource, StartTime: now, StepTime: &now},
		Sites: []v1alpha1.SiteStatus{
			{Name: "iad", Role: v1alpha1.SiteRolePrimaryCandidate, State: v1alpha1.SiteWritable, Replication: v1alpha1.ReplicationNotReplicating, LastSeenTime: &now},
			{Name: "pdx", Role: v1alpha1.SiteRolePrimaryCandidate, State: v1alpha1.SiteReadOnly, Replication: v1alpha1.ReplicationRunning, SecondsBehindSource: &lag,
				SourceConvergenceState: "Converged", SourceConvergenceReason: "DirectSource", LastSeenTime: &now},
		},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonHealthy, Message: "ok",
			LastTransitionTime: now, ObservedGeneration: g.Generation}},
		PlannedFailover: &v1alpha1.PlannedFailoverStatus{RunID: "0b0d5a52-6f4f-4b8e-9a53-5f0d4e0f2a11", TargetSite: "pdx", SourceSite: "iad",
			Phase: v1alpha1.PlannedFailoverFencing, RequestTime: &now},
		LastFailover: &v1alpha1.LastFailover{Time: now, Target: "iad", Kind: v1alpha1.TransitionBootstrap, PromotionGTIDExecuted: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"},
	}
	g.Spec.PollInterval = &metav1.Duration{Duration: 9 * time.Second} // must be ignored by /status
	if _, err := cs.MysqlFailoverGroups(ns).UpdateStatus(ctx(t), g, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	back, err := cs.MysqlFailoverGroups(ns).Get(ctx(t), "orders", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if back.Status.Transition == nil || back.Status.Transition.TargetSite != "pdx" || back.Status.Transition.TopologyGeneration != 8 || back.Status.Transition.Step != v1alpha1.StepFencingSource {
		t.Errorf("status.transition not stored as written: %+v", back.Status.Transition)
	}
	if back.Spec.PollInterval.Duration != 2*time.Second {
		t.Errorf("spec.pollInterval changed through the status subresource: %v", back.Spec.PollInterval)
	}
	if c := meta.FindStatusCondition(back.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Ready condition not stored: %+v", back.Status.Conditions)
	}
	// What the deploy API would answer for this stored object.
	if v := stability.Evaluate(back); v.Stable || v.Reason != stability.TopologyTransition {
		t.Errorf("stability of the stored group = %+v, want unstable TopologyTransition", v)
	}

	// A status value outside the v1alpha1.7.0 vocabulary is refused.
	back.Status.Sites[0].State = "writable"
	if _, err := cs.MysqlFailoverGroups(ns).UpdateStatus(ctx(t), back, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "status.sites[0].state") {
		t.Errorf("lower-case site state: err = %v, want a refusal naming status.sites[0].state", err)
	}
}

// TestExplain shows the field documentation through kubectl explain, which
// reads the OpenAPI the API server publishes for the CRD.
func TestExplain(t *testing.T) {
	var out string
	err := wait.PollUntilContextTimeout(ctx(t), 500*time.Millisecond, 25*time.Second, true, func(context.Context) (bool, error) {
		var err error
		out, err = kubectl(t, "explain", "mysqlfailovergroup.spec.sites")
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("kubectl explain never succeeded; last output:\n%s", out)
	}
	for _, want := range []string{
		"sites are the MySQL sites of the group",
		"serverID",
		"immutable once set",
		"loadBalancerIP",
		"PrimaryCandidate",
		"taintNodeSelector",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain mysqlfailovergroup.spec.sites does not mention %q:\n%s", want, out)
		}
	}
	out, err = kubectl(t, "explain", "mfg.status.transition")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "persisted intent of an active-site change") || !strings.Contains(out, "topologyGeneration") {
		t.Errorf("kubectl explain mfg.status.transition lacks its docs:\n%s", out)
	}
}

// TestPrinterColumnsAndShortNames checks what an on-call engineer sees first.
func TestPrinterColumnsAndShortNames(t *testing.T) {
	ns := cp.NewNamespace(t)
	if _, err := kubectl(t, "apply", "--server-side", "-n", ns, "-f", samplesDir()); err != nil {
		t.Fatal(err)
	}
	wantHeaders := map[string][]string{
		"mfg": {"READY", "ACTIVE", "DEGRADED", "TRANSITION", "TOPOLOGY", "LAST FAILOVER", "AGE"},
		"mb":  {"READY", "PHASE", "GROUP", "PROFILE", "SITE"},
		"mbv": {"READY", "PHASE", "GROUP", "BACKUP"},
		"msc": {"READY", "REASON", "LATEST DUMP"},
		"mdb": {"READY", "PHASE", "GROUP", "DATABASE"},
	}
	for short, headers := range wantHeaders {
		out, err := kubectl(t, "get", short, "-n", ns)
		if err != nil {
			t.Errorf("kubectl get %s: %v", short, err)
			continue
		}
		for _, h := range headers {
			if !strings.Contains(out, h) {
				t.Errorf("kubectl get %s header lacks %s:\n%s", short, h, out)
			}
		}
	}
	out, err := kubectl(t, "get", "bloodraven", "-n", ns)
	if err != nil || !strings.Contains(out, "orders") {
		t.Errorf("kubectl get bloodraven (category) = %q, %v; want the group listed", out, err)
	}
}

// TestDefaultsOfOptionalBlocks checks the defaults docs/api.md gives inside
// blocks a minimal group omits (Dragonfly, PITR, retries, verification) on
// what the API server stored, and that a sanity check's timeout defaults on
// a MysqlBackupVerification too.
func TestDefaultsOfOptionalBlocks(t *testing.T) {
	ns := cp.NewNamespace(t)
	cs := clientset(t).ShipstreamV1alpha1()
	dc := dynamicClient(t)

	g := object(t, minimalGroup)
	apply(t, g,
		set("spec.backup", `{profiles: [{name: p, storage: {type: S3, s3: {bucket: bkt, prefix: x}},
			verification: {enabled: true, schedule: '0 6 * * 0', sanityCheck: {query: 'SELECT 1'}}}],
			pitr: {enabled: true, profileName: p}, retry: {}}`),
		set("spec.dragonfly", "{enabled: true, image: 'dragonfly:v1alpha1.38.0', auth: {passwordSecretKeyRef: {name: df}}}"),
	)
	s := storedSpec(t, dc, cs, ns, g)
	checks := []struct {
		field string
		got   any
		want  any
	}{
		{"spec.backup.backoffLimit", *s.Backup.BackoffLimit, int32(2)},
		{"spec.backup.maxLagSecondsForSource", *s.Backup.MaxLagSecondsForSource, int32(300)},
		{"spec.backup.retry.initialBackoff", s.Backup.Retry.InitialBackoff.Duration, time.Minute},
		{"spec.backup.retry.maxBackoff", s.Backup.Retry.MaxBackoff.Duration, 30 * time.Minute},
		{"spec.backup.pitr.maxBinlogSize", s.Backup.PITR.MaxBinlogSize, "100M"},
		{"spec.backup.pitr.archivePollInterval", s.Backup.PITR.ArchivePollInterval.Duration, time.Minute},
		{"spec.backup.profiles[0].verification.sanityCheck.timeout", s.Backup.Profiles[0].Verification.SanityCheck.Timeout.Duration, time.Minute},
		{"spec.dragonfly.port", *s.Dragonfly.Port, int32(6379)},
		{"spec.dragonfly.adminPort", *s.Dragonfly.AdminPort, int32(9999)},
		{"spec.dragonfly.plannedFailover.maxSyncWait", s.Dragonfly.PlannedFailover.MaxSyncWait.Duration, 30 * time.Second},
		{"spec.dragonfly.plannedFailover.onSyncTimeout", s.Dragonfly.PlannedFailover.OnSyncTimeout, v1alpha1.DragonflyOnSyncTimeout("Proceed")},
		{"spec.dragonfly.auth.passwordSecretKeyRef.key", s.Dragonfly.Auth.PasswordSecretKeyRef.Key, "password"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
		}
	}
	if s.Dragonfly.ProactorThreads != nil || s.Dragonfly.MaxMemory != "" {
		t.Errorf("spec.dragonfly proactorThreads=%v maxMemory=%q, want both unset (Dragonfly's own defaults)", s.Dragonfly.ProactorThreads, s.Dragonfly.MaxMemory)
	}
	if s.Backup.Profiles[0].Verification.TTLSecondsAfterFinished != nil {
		t.Errorf("profile verification ttlSecondsAfterFinished = %d, want unset (no default in v1alpha1.7.0)", *s.Backup.Profiles[0].Verification.TTLSecondsAfterFinished)
	}

	v := object(t, minimalVerification)
	apply(t, v, set("spec.sanityCheck", "{query: 'SELECT COUNT(*) FROM orders.orders'}"))
	if _, err := create(t, dc, ns, v); err != nil {
		t.Fatal(err)
	}
	mbv, err := cs.MysqlBackupVerifications(ns).Get(ctx(t), "v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := mbv.Spec.SanityCheck.Timeout; d == nil || d.Duration != time.Minute {
		t.Errorf("MysqlBackupVerification spec.sanityCheck.timeout = %v, want 60s", d)
	}
}

// storedSpec creates a group and reads back its spec as the API server
// stored it, defaults applied.
func storedSpec(t *testing.T, dc dynamic.Interface, cs typed.ShipstreamV1alpha1Interface, ns string, g *unstructured.Unstructured) v1alpha1.MysqlFailoverGroupSpec {
	t.Helper()
	if _, err := create(t, dc, ns, g); err != nil {
		t.Fatal(err)
	}
	got, err := cs.MysqlFailoverGroups(ns).Get(ctx(t), g.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Spec
}
