package managerintegration

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/render"
)

// isolationRun is what one run of the isolation scenario measured on the
// group whose primary crashed.
type isolationRun struct {
	// failover: from the crash of iad to pdx writable and published.
	failover time.Duration
	// objects: the slowest of three spec edits to reach the group's primary
	// Service (an object reconcile).
	objects time.Duration
}

// A poll round stuck on one group's hung sites must delay neither another
// group's failover nor its object reconciles: the topology manager polls on
// its own queue, where a round holds one worker for at most its group's poll
// deadline, and the group's Kubernetes objects reconcile on another queue
// that never waits for MySQL. The same operator instance runs the scenario
// twice: the crashed group alone, then beside a group whose every mysqld is
// frozen (it accepts connections and never answers, so each of its rounds
// runs into the 2 s deadline) from the moment of the crash. Both queues run
// with few workers (objects 1, topology 2), so a design that lets the frozen
// group's rounds hold the crashed group's poll or object work shows as a
// slower failover or object reconcile.
func TestHungGroupDelaysNoOtherGroup(t *testing.T) {
	alone := isolationScenario(t, false)
	beside := isolationScenario(t, true)
	failoverRatio := beside.failover.Seconds() / alone.failover.Seconds()
	objectDelay := beside.objects - alone.objects
	t.Logf("failover alone %s, beside a frozen group %s (ratio %.2f); object reconcile alone %s, beside %s",
		alone.failover.Round(time.Millisecond), beside.failover.Round(time.Millisecond), failoverRatio,
		alone.objects.Round(time.Millisecond), beside.objects.Round(time.Millisecond))
	// The frozen group's rounds last 2 s each: sharing a worker with them
	// stretches the crashed group's detection (3 polls at 200 ms) several
	// times over; running beside them costs scheduling noise only.
	if failoverRatio > 1.6 {
		t.Errorf("the failover took %.2f times as long beside a group with frozen sites (%s vs %s alone): the hung group's poll rounds delayed it",
			failoverRatio, beside.failover.Round(time.Millisecond), alone.failover.Round(time.Millisecond))
	}
	if objectDelay > time.Second {
		t.Errorf("object reconciles took %s beside a group with frozen sites, %s alone: the hung group's poll rounds delayed them",
			beside.objects.Round(time.Millisecond), alone.objects.Round(time.Millisecond))
	}
}

func isolationScenario(t *testing.T, withFrozenNeighbour bool) isolationRun {
	t.Helper()
	crashed := newEnv(t, threeSites)
	envs := []*env{crashed}
	var frozen *env
	twoSites := []siteDef{{"iad", v1alpha1.SiteRolePrimaryCandidate}, {"pdx", v1alpha1.SiteRolePrimaryCandidate}}
	if withFrozenNeighbour {
		frozen = newEnv(t, twoSites)
		envs = append(envs, frozen)
	}
	startOperatorOn(envs, 1, 2, withFailover)
	crashed.create(crashed.failoverGroup(threeSites))
	if frozen != nil {
		g := frozen.failoverGroup(twoSites)
		// Its poll deadline is the smaller of pollInterval and the 2 s
		// statement timeout: 2 s of a worker per round once frozen.
		g.Spec.PollInterval = &metav1.Duration{Duration: 2 * time.Second}
		frozen.create(g)
		frozen.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	}
	crashed.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)

	if frozen != nil {
		for _, s := range frozen.sites {
			s.Freeze()
			t.Cleanup(s.Thaw)
		}
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
