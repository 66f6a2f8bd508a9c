//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// A pod-template change under OrderedUpdate, with the write load running:
// the followers are recreated first, one at a time, each Ready for 30s
// before the next; then the primary role is handed to an updated standby
// with the planned-failover handoff (no acknowledged write lost); then the
// former primary is recreated; the update ends with updatePhase empty and
// Updating=False.
func TestOrderedUpdateRollsFollowersFirstAndHandsOff(t *testing.T) {
	requireReady(t)
	waitCooldown(t)
	ctx := context.Background()
	g := group(t)
	from := g.Status.ActiveSite
	l := startLoad(t)

	pods := pg.CP.Client().CoreV1().Pods(pg.Namespace)
	uid := map[string]types.UID{}
	for _, s := range g.Spec.Sites {
		p, err := pods.Get(ctx, pg.Group+"-"+s.Name+"-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uid[s.Name] = p.UID
	}
	stamp := time.Now().UTC().Format("150405")
	patch := fmt.Sprintf(`{"spec":{"podAnnotations":{"e2e.shipstream.io/rollout":%q}}}`, stamp)
	if out, errOut, err := pg.CP.Kubectl(ctx, "patch", "mfg", pg.Group, "-n", pg.Namespace, "--type=merge", "-p", patch); err != nil {
		t.Fatalf("kubectl patch: %v %s%s", err, out, errOut)
	}

	// Watch the roll: when each pod was replaced, and what the group
	// looked like at that moment.
	replaced := map[string]time.Time{}
	activeWhenReplaced := map[string]string{}
	var phases []v1alpha1.UpdatePhase
	eventually(t, 6*time.Minute, func() string {
		g := group(t)
		if n := len(phases); g.Status.UpdatePhase != "" && (n == 0 || phases[n-1] != g.Status.UpdatePhase) {
			phases = append(phases, g.Status.UpdatePhase)
		}
		for _, s := range g.Spec.Sites {
			if _, done := replaced[s.Name]; done {
				continue
			}
			p, err := pods.Get(ctx, pg.Group+"-"+s.Name+"-0", metav1.GetOptions{})
			if err == nil && p.UID != uid[s.Name] {
				replaced[s.Name] = time.Now()
				activeWhenReplaced[s.Name] = g.Status.ActiveSite
			}
		}
		u := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionUpdating)
		if len(replaced) < len(g.Spec.Sites) || g.Status.UpdatePhase != "" || u == nil || u.Status != metav1.ConditionFalse {
			return fmt.Sprintf("replaced %v, updatePhase %q, Updating %+v", replaced, g.Status.UpdatePhase, u)
		}
		return ""
	})
	g = group(t)
	to := g.Status.ActiveSite
	if to == from {
		t.Fatalf("the primary role was not handed over (active still %s)", from)
	}
	if lf := g.Status.LastFailover; lf == nil || lf.Kind != v1alpha1.TransitionOrderedUpdate || lf.Source != from || lf.Target != to {
		t.Fatalf("lastFailover %+v", g.Status.LastFailover)
	}
	if pf := g.Status.PlannedFailover; pf == nil || pf.Result == nil || pf.Result.Outcome != "Succeeded" {
		t.Fatalf("handoff claim %+v", g.Status.PlannedFailover)
	}
	// Followers before the handoff, the former primary after it.
	handoff := g.Status.LastFailover.Time.Time
	for site, at := range replaced {
		switch {
		case site == from && (activeWhenReplaced[site] == from || at.Before(handoff)):
			t.Errorf("the former primary %s was replaced at %s while still active (handoff at %s)", site, at.Format(time.RFC3339), handoff.Format(time.RFC3339))
		case site != from && at.After(handoff):
			t.Errorf("follower %s was replaced at %s, after the handoff at %s", site, at.Format(time.RFC3339), handoff.Format(time.RFC3339))
		}
	}
	t.Logf("update phases %v; pods replaced %v; handoff %s -> %s at %s", phases, replaced, from, to, handoff.Format(time.RFC3339))
	l.halt()
	missing, err := l.w.Missing(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	if !missing.IsEmpty() {
		t.Fatalf("acknowledged writes missing on %s after the ordered update: %s", to, missing)
	}
	t.Logf("acknowledged writes: %d, none missing on %s", len(l.w.Acks()), to)
	requireReady(t)
}
