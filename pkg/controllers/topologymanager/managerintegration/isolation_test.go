package managerintegration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/render"
)

// isolationRun is what one run of the isolation scenario measured on the
// group whose primary crashed.
// frozenGroups is how many groups with a frozen active site run beside the
// crashed one.
const frozenGroups = 3

type isolationRun struct {
	// detect: from the crash of iad to the failover intent recorded;
	// failover: to pdx writable and published.
	detect, failover time.Duration
	// objects: the slowest of three spec edits to reach the group's primary
	// Service (an object reconcile).
	objects time.Duration
}

// A poll round stuck on one group's hung sites must delay neither another
// group's failover nor its object reconciles: the topology manager polls on
// its own queue, where a round holds one worker for at most its group's poll
// deadline, and the group's Kubernetes objects reconcile on another queue
// that never waits for MySQL. The scenario runs twice, each time on an
// operator instance of its own: the crashed group alone, then beside
// frozenGroups groups whose active mysqld froze just before (it accepts
// connections and never answers). Those groups are failing over, and while a
// change is in flight a group polls every site every round, so each of their
// rounds waits out the 2 s poll deadline. The topology queue has one worker
// more than there are frozen groups, the objects queue one worker: a design
// in which the frozen groups' rounds hold the crashed group's polls or object
// work shows as a slower detection, failover or object reconcile. (With a
// single topology worker, shared by all four groups, this test fails.)
func TestHungGroupDelaysNoOtherGroup(t *testing.T) {
	alone := isolationScenario(t, false)
	beside := isolationScenario(t, true)
	failoverRatio := beside.failover.Seconds() / alone.failover.Seconds()
	objectDelay := beside.objects - alone.objects
	t.Logf("detection alone %s, beside %d frozen groups %s; failover alone %s, beside %s (ratio %.2f); object reconcile alone %s, beside %s",
		alone.detect.Round(time.Millisecond), frozenGroups, beside.detect.Round(time.Millisecond),
		alone.failover.Round(time.Millisecond), beside.failover.Round(time.Millisecond), failoverRatio,
		alone.objects.Round(time.Millisecond), beside.objects.Round(time.Millisecond))
	// The frozen group's rounds last 2 s each: sharing a worker with them
	// stretches the crashed group's detection (3 polls at 200 ms) by
	// seconds; running beside them costs scheduling noise only.
	if beside.detect > alone.detect+time.Second {
		t.Errorf("detection took %s beside groups with a frozen site, %s alone: the hung group's poll rounds delayed it",
			beside.detect.Round(time.Millisecond), alone.detect.Round(time.Millisecond))
	}
	if failoverRatio > 1.5 {
		t.Errorf("the failover took %.2f times as long beside groups with a frozen site (%s vs %s alone): the hung group's poll rounds delayed it",
			failoverRatio, beside.failover.Round(time.Millisecond), alone.failover.Round(time.Millisecond))
	}
	if objectDelay > time.Second {
		t.Errorf("object reconciles took %s beside groups with a frozen site, %s alone: the hung group's poll rounds delayed them",
			beside.objects.Round(time.Millisecond), alone.objects.Round(time.Millisecond))
	}
}

func isolationScenario(t *testing.T, withFrozenNeighbours bool) isolationRun {
	t.Helper()
	crashed := newEnv(t, threeSites)
	envs := []*env{crashed}
	var frozen []*env
	twoSites := []siteDef{{"iad", v1alpha1.SiteRolePrimaryCandidate}, {"pdx", v1alpha1.SiteRolePrimaryCandidate}}
	if withFrozenNeighbours {
		for range frozenGroups {
			frozen = append(frozen, newEnv(t, twoSites))
		}
		envs = append(envs, frozen...)
	}
	var mu sync.Mutex
	var declared time.Time
	startOperatorOn(envs, 1, frozenGroups+1, withFailover, func(o *topologymanager.Options) {
		o.AfterIntentWrite = func(g *v1alpha1.MysqlFailoverGroup) {
			mu.Lock()
			defer mu.Unlock()
			if tr := g.Status.Transition; tr != nil && tr.Kind == v1alpha1.TransitionAutomatic && g.Namespace == crashed.ns && declared.IsZero() {
				declared = time.Now()
			}
		}
	})
	crashed.create(crashed.failoverGroup(threeSites))
	for _, f := range frozen {
		g := f.failoverGroup(twoSites)
		// Its poll deadline is the smaller of pollInterval and the 2 s
		// statement timeout: 2 s of a worker per round with iad frozen.
		g.Spec.PollInterval = &metav1.Duration{Duration: 2 * time.Second}
		f.create(g)
	}
	for _, f := range frozen {
		f.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
		f.waitContact("iad") // before it, a candidate's lag is unknown
	}
	crashed.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	crashed.waitContact("iad")

	for _, f := range frozen {
		f.sites["iad"].Freeze()
		t.Cleanup(f.sites["iad"].Thaw)
	}
	for _, f := range frozen {
		eventually(t, waitFor, "the frozen group's failover in flight", func() error {
			if tr := f.get().Status.Transition; tr == nil || tr.Kind != v1alpha1.TransitionAutomatic {
				return fmt.Errorf("transition %+v", tr)
			}
			return nil
		})
	}
	start := time.Now()
	crashed.sites["iad"].Crash()
	eventually(t, waitFor, "pdx writable and published", func() error {
		if s := crashed.sites["pdx"].Snapshot(); s.ReadOnly {
			return fmt.Errorf("pdx read-only")
		}
		if g := crashed.get(); g.Status.ActiveSite != "pdx" || g.Status.Transition != nil {
			return fmt.Errorf("active %q, transition %+v", g.Status.ActiveSite, g.Status.Transition)
		}
		return nil
	})
	run := isolationRun{failover: time.Since(start)}
	mu.Lock()
	run.detect = declared.Sub(start)
	mu.Unlock()
	for i := range 3 {
		if d := crashed.timeSpecToService(t, fmt.Sprintf("edit-%d", i)); d > run.objects {
			run.objects = d
		}
	}
	return run
}

// timeSpecToService sets an annotation of spec.serviceTemplate and returns
// how long the group objects controller took to put it on the primary
// Service.
func (e *env) timeSpecToService(t *testing.T, value string) time.Duration {
	t.Helper()
	ctx := context.Background()
	api := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns)
	start := time.Now()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g, err := api.Get(ctx, groupName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		g.Spec.ServiceTemplate = &v1alpha1.ServiceTemplate{Annotations: map[string]string{"example.com/probe": value}}
		_, err = api.Update(ctx, g, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "primary Service annotated "+value, func() error {
		svc, err := e.kube.CoreV1().Services(e.ns).Get(ctx, render.PrimaryServiceName(groupName), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := svc.Annotations["example.com/probe"]; got != value {
			return fmt.Errorf("annotation %q", got)
		}
		return nil
	})
	return time.Since(start)
}
