package managerintegration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
	"github.com/shipstream/bloodraven/pkg/testbed/writeload"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// BenchmarkPlannedFailoverWritePause measures the write pause of a planned
// failover as a client sees it: the longest gap between two acknowledged
// writes of a write load (one write every 2ms) that goes through an
// endpoint following status.activeSite, i.e. from the last write the source
// acknowledged before its fence to the first write the new primary
// acknowledged. Every run must end Succeeded with no acknowledged write
// lost. The handoff's steps run back to back (manager PlannedStepDelay),
// so the pause hardly depends on pollInterval: measured at 200ms (the
// integration groups' setting) and at the 2s default.
//
//	BIN_DIR=$PWD/bin go test ./pkg/controllers/topologymanager/managerintegration -run XXX -bench PlannedFailoverWritePause -benchtime 10x
func BenchmarkPlannedFailoverWritePause(b *testing.B) {
	for _, poll := range []time.Duration{200 * time.Millisecond, 2 * time.Second} {
		b.Run("poll="+poll.String(), func(b *testing.B) {
			var pauses []time.Duration
			for range b.N {
				pauses = append(pauses, plannedPauseOnce(b, poll))
			}
			report(b, "write-pause", pauses)
		})
	}
}

func plannedPauseOnce(b *testing.B, poll time.Duration) time.Duration {
	b.Helper()
	e := newEnv(b, threeSites)
	e.startOperator(withFailover)
	g := e.failoverGroup(threeSites)
	g.Spec.PollInterval = &metav1.Duration{Duration: poll}
	e.create(g)
	e.waitActive("iad", 1)
	e.waitCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonHealthy)
	r := newActiveRouter(b, e)

	var mu sync.Mutex
	var last time.Time
	var longest time.Duration
	l, err := writeload.New(writeload.Config{Endpoint: mysql.Options{Addr: r.addr(), User: simtest.NativeUser, Password: simtest.NativePass,
		DialTimeout: time.Second, StatementTimeout: 2 * time.Second}, Interval: 2 * time.Millisecond,
		OnAcknowledged: func(_ gtid.GTID, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if !last.IsZero() && at.Sub(last) > longest {
				longest = at.Sub(last)
			}
			last = at
		}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = l.Run(ctx) }()
	defer func() { cancel(); <-done; _ = l.Close() }()
	eventually(b, waitFor, "writes flowing", func() error {
		if l.Acknowledged().Count() < 50 {
			return fmt.Errorf("%d acknowledged", l.Acknowledged().Count())
		}
		return nil
	})
	mu.Lock()
	longest = 0
	mu.Unlock()
	e.annotatePlanned("pdx")
	eventually(b, waitFor, "planned failover ended", func() error {
		g = e.get()
		if pf := g.Status.PlannedFailover; pf == nil || !pf.Phase.IsTerminal() {
			return fmt.Errorf("%s", describeClaim(pf))
		}
		return nil
	})
	if pf := g.Status.PlannedFailover; pf.Result.Outcome != topology.PlannedOutcomeSucceeded {
		b.Fatalf("run ended %s", describeClaim(pf))
	}
	base := l.Acknowledged().Count()
	eventually(b, waitFor, "writes on the new primary", func() error {
		if l.Acknowledged().Count() < base+50 {
			return fmt.Errorf("%d acknowledged since", l.Acknowledged().Count()-base)
		}
		return nil
	})
	cancel()
	<-done
	if missing := writeload.Missing(l.Acknowledged(), e.sites["pdx"].Snapshot().Executed); !missing.IsEmpty() {
		b.Fatalf("acknowledged writes lost: %s", missing.OneLine())
	}
	mu.Lock()
	defer mu.Unlock()
	return longest
}
