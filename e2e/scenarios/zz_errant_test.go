//go:build e2e

package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// An errant transaction on a PrimaryCandidate follower (written there
// with its own server UUID, as a mistaken direct write would be) is
// reported: Degraded=True/DivergentTransactions and the follower's
// divergentGtid names it. The operator on call then follows
// docs/runbooks/reclone.md with the built kubectl plugin: `status` shows the
// divergence, `reclone --yes` writes the interlock annotation, which makes
// the operator record the discarded set and clone the follower from the
// active site, after which the group is healthy again.
func TestErrantTransactionBlocksThenRecloneHeals(t *testing.T) {
	requireReady(t)
	// An earlier scenario's failover may still be recovering its old
	// primary; an errant write there would read as that primary's lost
	// writes (and block it) rather than as a follower's divergence.
	eventually(t, 2*time.Minute, func() string {
		if c := meta.FindStatusCondition(group(t).Status.Conditions, v1alpha1.ConditionRecoveryPending); c != nil && c.Status == metav1.ConditionTrue {
			return fmt.Sprintf("RecoveryPending is %+v", c)
		}
		return ""
	})
	g := group(t)
	var follower v1alpha1.SiteSpec
	for _, s := range g.Spec.Sites {
		if s.Name != g.Status.ActiveSite && s.Role == v1alpha1.SiteRolePrimaryCandidate {
			follower = s
		}
	}
	plan, _ := pg.Site(follower.Name)
	fault(t, follower.Name, "errant?count=2")
	eventually(t, 30*time.Second, func() string {
		g := group(t)
		st := siteStatus(g, follower.Name)
		c := meta.FindStatusCondition(g.Status.Conditions, "Degraded")
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "DivergentTransactions" {
			return fmt.Sprintf("Degraded is %+v", c)
		}
		if !strings.Contains(st.DivergentGTID, plan.ServerUUID) {
			return fmt.Sprintf("site %s divergentGtid %q does not name its own UUID %s", follower.Name, st.DivergentGTID, plan.ServerUUID)
		}
		return ""
	})

	// The runbook's steps, with the plugin `make build` put in bin/.
	g = group(t)
	divergent := siteStatus(g, follower.Name).DivergentGTID
	if out := plugin(t, "status", pg.Group); !strings.Contains(out, "DIVERGENCE") || !strings.Contains(out, follower.Name) {
		t.Fatalf("kubectl bloodraven status does not show %s's divergence:\n%s", follower.Name, out)
	}
	// gtid-audit reads the servers themselves and must fail (exit 1, what
	// an upgrade script gates on) naming the follower's divergent set: as a
	// user in a cluster runs it, through a port-forward to each site's pod
	// (the API server's pods/portforward, served for kwok's nodes by kwok),
	// and through the development site-address map.
	for _, how := range [][]string{nil, {"--dev-site-addresses", playgroundEnv(t, "BLOODRAVEN_DEV_SITE_ADDRESSES")}} {
		out, code := pluginCode(t, append([]string{"gtid-audit", pg.Group}, how...)...)
		t.Logf("kubectl bloodraven gtid-audit %v (exit %d):\n%s", how, code, out)
		if code != 1 || !strings.Contains(out, follower.Name) || !strings.Contains(out, divergent) {
			t.Fatalf("kubectl bloodraven gtid-audit %v: exit %d, want 1 naming %s's set %s:\n%s", how, code, follower.Name, divergent, out)
		}
	}
	out := plugin(t, "reclone", pg.Group, follower.Name, "--yes")
	t.Logf("kubectl bloodraven reclone:\n%s", out)

	eventually(t, 2*time.Minute, func() string {
		g := group(t)
		if v, ok := g.Annotations["bloodraven.shipstream.io/reclone-site"]; ok {
			return fmt.Sprintf("reclone annotation %q not handled yet", v)
		}
		if st := siteStatus(g, follower.Name); st.DivergentGTID != "" {
			return fmt.Sprintf("site %s still reports divergentGtid %q", follower.Name, st.DivergentGTID)
		}
		if c := meta.FindStatusCondition(g.Status.Conditions, "Ready"); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Sprintf("Ready is %+v", c)
		}
		if c := meta.FindStatusCondition(g.Status.Conditions, "Degraded"); c != nil && c.Status == metav1.ConditionTrue {
			return fmt.Sprintf("Degraded is still %+v", c)
		}
		return ""
	})

	// What the clone destroyed was recorded before it ran.
	g = group(t)
	var record *v1alpha1.RecloneRecord
	for i := range g.Status.RecloneHistory {
		if g.Status.RecloneHistory[i].Site == follower.Name {
			record = &g.Status.RecloneHistory[i]
		}
	}
	if record == nil {
		t.Fatalf("status.recloneHistory has no entry for %s: %+v", follower.Name, g.Status.RecloneHistory)
	}
	if record.Donor != g.Status.ActiveSite {
		t.Errorf("reclone donor = %q, want the active site %q", record.Donor, g.Status.ActiveSite)
	}
	if record.DiscardedGTID != divergent {
		t.Errorf("recorded discarded set %q, want the reported divergent set %q", record.DiscardedGTID, divergent)
	}
}

// plugin runs bin/kubectl-bloodraven against the playground and returns its
// output, failing the test when it fails.
func plugin(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args = append(args, "--kubeconfig", pg.CP.KubeconfigPath, "-n", pg.Namespace)
	out, err := exec.CommandContext(ctx, filepath.Join(framework.BinDir(), "kubectl-bloodraven"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl bloodraven %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// pluginCode runs bin/kubectl-bloodraven like plugin but returns its exit
// status instead of failing on a non-zero one (gtid-audit exits 1 when it
// finds extra transactions).
func pluginCode(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args = append(args, "--kubeconfig", pg.CP.KubeconfigPath, "-n", pg.Namespace)
	cmd := exec.CommandContext(ctx, filepath.Join(framework.BinDir(), "kubectl-bloodraven"), args...)
	// The development map only when a flag passes it: without one,
	// gtid-audit must take the port-forward path a cluster user takes.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BLOODRAVEN_DEV_SITE_ADDRESSES=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("kubectl bloodraven %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), 0
}

// playgroundEnv reads one variable of the environment the playground
// publishes (pkg/testbed/playground/info.go, EnvFile), for paths it keeps
// unexported such as the development site-address map.
func playgroundEnv(t *testing.T, name string) string {
	t.Helper()
	for _, line := range strings.Split(pg.EnvFile(), "\n") {
		if v, ok := strings.CutPrefix(line, name+"="); ok {
			// EnvFile quotes every value for a POSIX shell ('...', with
			// ' written as '\'').
			return strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(v, "'"), "'"), `'\''`, "'")
		}
	}
	t.Fatalf("the playground's environment has no %s", name)
	return ""
}
