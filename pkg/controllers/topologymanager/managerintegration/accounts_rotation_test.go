package managerintegration

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
)

const testOverlap = 2 * time.Second

func withOverlap(d time.Duration) func(*topologymanager.Options) {
	return func(o *topologymanager.Options) { o.RotationOverlap = d }
}

// rotationWorld is a bootstrapped group with the app role, an application
// writing through the active site as the app account (it moves to the new
// password only once the operator announced the overlap, as an application
// re-reading its Secret would, late), and the failed-authentication counts
// at the start.
type rotationWorld struct {
	*acctEnv
	load *writeLoad
	// stopSidecars stops the sidecar stand-ins' connections.
	stopSidecars func()
	appPw        atomic.Value
	before       map[string]uint64
}

func newRotationWorld(t *testing.T, overlap time.Duration) (*rotationWorld, *operatorRun) {
	e := newAccountsEnv(t, threeSites, accounts.RoleApp, accounts.RoleReadOnly, accounts.RoleMonitor, accounts.RoleBackup)
	op := e.startOperator(withOverlap(overlap))
	e.create(e.groupWith(threeSites))
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	e.waitCondition(v1alpha1.ConditionCredentialsReady, metav1.ConditionTrue, v1alpha1.ReasonCredentialsCurrent)
	waitReplicating(e.env, "pdx", "reader")
	w := &rotationWorld{acctEnv: e}
	w.appPw.Store(e.passwords[accounts.RoleApp])
	w.load = e.startWriteLoad(credUsers[accounts.RoleApp], func() string { return w.appPw.Load().(string) })
	w.startSidecarConsumers(500 * time.Millisecond)
	w.before = e.failedAuths(acctOpUser, acctReplUser, credUsers[accounts.RoleApp], credUsers[accounts.RoleReadOnly], credUsers[accounts.RoleMonitor], credUsers[accounts.RoleBackup])
	return w, op
}

// startSidecarConsumers stands for the sidecars' MySQL connections: each
// site's sidecar reads the operator password from its mounted copy of the
// sidecars' password Secret, which the kubelet refreshes late (lag), and
// opens a new connection with it every 50 ms. They are managed consumers:
// the simulators count their failed authentications under the operator
// account. Before the operator first writes that Secret they use the
// operator Secret's password (the pod's environment).
func (w *rotationWorld) startSidecarConsumers(lag time.Duration) {
	type seen struct {
		at time.Time
		pw string
	}
	var hist []seen
	initial := w.passwords[accounts.RoleOperator]
	password := func() string {
		sec, err := w.kube.CoreV1().Secrets(w.ns).Get(context.Background(), accounts.SidecarSecretName(groupName), metav1.GetOptions{})
		if err == nil {
			hist = append(hist, seen{time.Now(), string(sec.Data[accounts.SidecarPasswordKey])})
		}
		pw := initial
		for _, h := range hist {
			if time.Since(h.at) >= lag {
				pw = h.pw
			}
		}
		return pw
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pw := password()
			for _, s := range w.sites {
				db, err := sql.Open("mysql", acctOpUser+":"+pw+"@tcp("+s.Addr()+")/?timeout=3s")
				if err == nil {
					_ = db.PingContext(ctx)
					_ = db.Close()
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	w.stopSidecars = func() { cancel(); <-done }
	w.t.Cleanup(w.stopSidecars)
}

// waitReplicating waits until the sites' receivers and appliers run.
func waitReplicating(e *env, sites ...string) {
	eventually(e.t, waitFor, "followers replicating", func() error {
		for _, s := range sites {
			if snap := e.sites[s].Snapshot(); snap.IORunning != "Yes" || !snap.SQLRunning {
				return fmt.Errorf("site %s: IO %s SQL %v", s, snap.IORunning, snap.SQLRunning)
			}
		}
		return nil
	})
}

// rotatedRoles: every role of spec.credentials (the replication account's
// password is in the operator Secret).
var rotatedRoles = []accounts.Role{accounts.RoleOperator, accounts.RoleReplication, accounts.RoleApp,
	accounts.RoleReadOnly, accounts.RoleMonitor, accounts.RoleBackup}

// rotateAll changes every role's password at once.
func (w *rotationWorld) rotateAll(suffix string) map[accounts.Role]string {
	old := map[accounts.Role]string{}
	for _, r := range rotatedRoles {
		old[r] = w.passwords[r]
		w.passwords[r] = string(r) + "-pw-" + suffix
	}
	for _, r := range rotatedRoles {
		if r != accounts.RoleReplication {
			w.writeSecret(r)
		}
	}
	return old
}

// appFollowsOverlap moves the application to the new password once the
// app account's overlap was announced.
func (w *rotationWorld) appFollowsOverlap() {
	w.t.Helper()
	eventually(w.t, waitFor, "the app account's overlap announced", func() error {
		for _, ev := range w.eventsOf(v1alpha1.EventPasswordOverlapStarted) {
			if strings.Contains(ev.Message, credUsers[accounts.RoleApp]) {
				return nil
			}
		}
		return fmt.Errorf("no overlap Event for the app account yet; CredentialsReady %+v", condition(w.get(), v1alpha1.ConditionCredentialsReady))
	})
	w.appPw.Store(w.passwords[accounts.RoleApp])
}

// checkRotated: no managed consumer (nor the application, which followed
// the announced overlap) failed to authenticate; every site accepts only
// the new passwords; the writes went on; each replica's channel holds the
// new replication password (a receiver restarted after the old one was
// discarded connects).
func (w *rotationWorld) checkRotated(old map[accounts.Role]string) {
	t := w.t
	w.waitCondition(v1alpha1.ConditionCredentialsReady, metav1.ConditionTrue, v1alpha1.ReasonCredentialsCurrent)
	acked := w.load.acked.Load()
	eventually(t, waitFor, "writes continue after the rotation", func() error {
		if w.load.acked.Load() <= acked {
			return fmt.Errorf("no write acknowledged since %d", acked)
		}
		return nil
	})
	w.load.stop()
	w.stopSidecars()
	if err, _ := w.load.authErr.Load().(error); err != nil {
		t.Errorf("the application failed to authenticate during the rotation: %v", err)
	}
	after := w.failedAuths(acctOpUser, acctReplUser, credUsers[accounts.RoleApp])
	// No consumer of the read-only, monitor and backup accounts runs here:
	// a failed authentication of theirs would be the operator's own check.
	for u, n := range w.failedAuths(credUsers[accounts.RoleReadOnly], credUsers[accounts.RoleMonitor], credUsers[accounts.RoleBackup]) {
		after[u] = n
	}
	for u, n := range after {
		if n != w.before[u] {
			t.Errorf("user %s failed to authenticate %d times during the rotation", u, n-w.before[u])
		}
	}
	for _, site := range []string{"pdx", "reader"} {
		w.exec0(site, "STOP REPLICA", "START REPLICA")
	}
	waitReplicating(w.env, "pdx", "reader")
	if n := w.failedAuths(acctReplUser)[acctReplUser]; n != after[acctReplUser] {
		t.Errorf("a receiver restarted after the rotation failed to authenticate %d times: its channel kept the old password", n-after[acctReplUser])
	}
	for _, r := range rotatedRoles {
		for site := range w.sites {
			if err := w.loginWorks(site, credUsers[r], w.passwords[r]); err != nil {
				t.Errorf("the %s account's new password on %s: %v", r, site, err)
			}
			if err := w.loginWorks(site, credUsers[r], old[r]); !isAccessDenied(err) {
				t.Errorf("the %s account's old password on %s after the overlap: %v, want access denied", r, site, err)
			}
		}
	}
}

// TestAccountsRotationUnderWriteLoad: the operator, replication and app
// Secrets change at once while the application writes; each password is
// rotated with RETAIN CURRENT PASSWORD, its consumers moved, and the old
// one discarded after the overlap, with no failed authentication.
func TestAccountsRotationUnderWriteLoad(t *testing.T) {
	w, _ := newRotationWorld(t, testOverlap)
	old := w.rotateAll("2")
	w.appFollowsOverlap()
	g := w.get()
	if c := condition(g, v1alpha1.ConditionCredentialsReady); c != nil && c.Status == metav1.ConditionTrue {
		// The overlap is 2 s; the condition must say a rotation is running
		// until then.
		t.Logf("CredentialsReady already True right after the app's overlap began: %+v", c)
	}
	w.checkRotated(old)
	for _, ev := range append(w.eventsOf(v1alpha1.EventPasswordRotationStarted), w.eventsOf(v1alpha1.EventPasswordRotated)...) {
		for _, pw := range []string{"-pw-1", "-pw-2"} {
			if strings.Contains(ev.Message, pw) {
				t.Errorf("an Event carries a password: %q", ev.Message)
			}
		}
	}
	if len(w.eventsOf(v1alpha1.EventPasswordRotated)) < len(rotatedRoles) {
		t.Errorf("PasswordRotated Events: %d, want one per rotated account", len(w.eventsOf(v1alpha1.EventPasswordRotated)))
	}
	for _, c := range w.get().Status.Conditions {
		if strings.Contains(c.Message, "-pw-") {
			t.Errorf("condition %s carries a password: %q", c.Type, c.Message)
		}
	}
}

// TestAccountsRotationSurvivesOperatorRestart: the operator dies right
// after the active site applied each account's ALTER ... RETAIN CURRENT
// PASSWORD and before its store recorded it (the store still says the
// ALTER may not have happened); a new operator process, knowing only what
// the store Secret and the servers hold, must not send it again (that
// would retain the new password and drop the old one the consumers still
// use) and finishes the rotation without a failed authentication.
func TestAccountsRotationSurvivesOperatorRestart(t *testing.T) {
	w, op := newRotationWorld(t, testOverlap)
	op.stop()
	var killed atomic.Int32
	var run *operatorRun
	run = w.startOperator(withOverlap(testOverlap), func(o *topologymanager.Options) {
		o.AfterRotationStep = func(role, step string) {
			if step == string(accounts.StepAlter) && killed.Add(1) == 1 {
				run.kill()
			}
		}
	})
	old := w.rotateAll("2")
	eventually(t, waitFor, "the operator killed after an ALTER", func() error {
		if killed.Load() == 0 {
			return fmt.Errorf("no ALTER yet")
		}
		return nil
	})
	run.stop()
	w.startOperator(withOverlap(testOverlap))
	w.appFollowsOverlap()
	w.checkRotated(old)
}

// TestAccountsMissingKeyKeepsThePreviousPassword: a rotation asked with a
// Secret that lost its password key is a Warning and CredentialsReady
// False; the previous password keeps working and the operator keeps
// running the group.
func TestAccountsMissingKeyKeepsThePreviousPassword(t *testing.T) {
	w, _ := newRotationWorld(t, testOverlap)
	sec, err := w.kube.CoreV1().Secrets(w.ns).Get(t.Context(), credSecrets[accounts.RoleOperator], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(sec.Data, "password")
	if _, err := w.kube.CoreV1().Secrets(w.ns).Update(t.Context(), sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	g := w.waitCondition(v1alpha1.ConditionCredentialsReady, metav1.ConditionFalse, v1alpha1.ReasonCredentialsInvalid)
	if c := condition(g, v1alpha1.ConditionCredentialsReady); !contains(c.Message, credSecrets[accounts.RoleOperator], `key "password"`) {
		t.Errorf("CredentialsReady does not name the Secret and key: %q", c.Message)
	}
	w.waitEvent(v1alpha1.EventCredentialsRejected, "Warning")
	// The operator still polls with the previous password: the status
	// keeps refreshing and nobody failed to log in.
	time.Sleep(time.Second)
	if c := condition(w.get(), v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Ready after the key went missing: %+v", c)
	}
	for site := range w.sites {
		if err := w.loginWorks(site, acctOpUser, w.passwords[accounts.RoleOperator]); err != nil {
			t.Errorf("the previous operator password on %s: %v", site, err)
		}
	}
	if n := w.failedAuths(acctOpUser, acctReplUser); n[acctOpUser] != w.before[acctOpUser] || n[acctReplUser] != w.before[acctReplUser] {
		t.Errorf("failed authentications %v, before %v", n, w.before)
	}
}
