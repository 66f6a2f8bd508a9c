package managerintegration

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/mysqlsim/simtest"
	mgr "github.com/shipstream/bloodraven/pkg/topology"
)

// The real-level invariant harness: seeded fault sequences against the real
// API server and simulated sites, under a write-load client that writes
// through whatever site status.activeSite names. After every sample of the
// simulators' truth: at most one running site is writable (invariant 1);
// topologyGeneration never goes back nor skips (invariant 5). At the end:
// every acknowledged write is on the final active site, or its loss was
// reported (TransactionsPossiblyLost or a RecoveryBlocked old primary):
// nothing is lost silently (invariant 4).
//
// Faults: crash and restart of the active site, of a follower, and operator
// restarts. (A frozen or partitioned primary is left to the e2e suite: the
// sidecar stand-ins here do not self-fence, which is what protects it.)
// HARNESS_REAL_SEQUENCES changes the count (default 20); a failing
// sequence's name carries its seed, and -run 'TestRealInvariantHarness/seed=<n>$'
// replays it.
func TestRealInvariantHarness(t *testing.T) {
	n := 20
	if v := os.Getenv("HARNESS_REAL_SEQUENCES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("HARNESS_REAL_SEQUENCES=%q: %v", v, err)
		}
	}
	start := time.Now()
	t.Cleanup(func() { t.Logf("%d real sequences in %s", n, time.Since(start).Round(time.Second)) })
	for seed := 1; seed <= n; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			realSequence(t, uint64(seed))
		})
	}
}

// ackedWrite is a write the client saw succeed.
type ackedWrite struct {
	db, site string
}

func realSequence(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0xb10d))
	e := newEnv(t, threeSites)
	op := e.startOperator(withFailover)
	e.create(e.failoverGroup(threeSites))
	e.waitActive("iad", 1)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var acked []ackedWrite
	var violations []string
	violate := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		violations = append(violations, fmt.Sprintf(format, args...))
	}
	var active string
	var activeMu sync.Mutex
	// Monitor: the simulators' truth and the stored generation.
	wg.Add(1)
	go func() {
		defer wg.Done()
		lastGen := int64(0)
		for ctx.Err() == nil {
			var writers []string
			for name, s := range e.sites {
				if snap := s.Snapshot(); snap.Running && !snap.ReadOnly {
					writers = append(writers, name)
				}
			}
			if len(writers) > 1 {
				violate("sites %v writable at once", writers)
			}
			if g, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Get(ctx, groupName, metav1.GetOptions{}); err == nil {
				if gen := g.Status.TopologyGeneration; gen < lastGen || gen > lastGen+1 && lastGen != 0 {
					violate("topologyGeneration %d -> %d", lastGen, gen)
				} else {
					lastGen = gen
				}
				activeMu.Lock()
				active = g.Status.ActiveSite
				activeMu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	// Write-load client: one connection per attempt to the published site.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			activeMu.Lock()
			site := active
			activeMu.Unlock()
			if s := e.sites[site]; s != nil {
				db, err := sql.Open("mysql", simtest.AppUser+":"+simtest.AppPass+"@tcp("+s.Addr()+")/?timeout=300ms&readTimeout=300ms&writeTimeout=300ms")
				if err == nil {
					name := fmt.Sprintf("w%d", i)
					if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err == nil {
						mu.Lock()
						acked = append(acked, ackedWrite{db: name, site: site})
						mu.Unlock()
					}
					_ = db.Close()
				}
			}
			time.Sleep(15 * time.Millisecond)
		}
	}()

	for step := 0; step < 3; step++ {
		time.Sleep(time.Duration(200+r.IntN(800)) * time.Millisecond)
		g := e.get()
		switch k := r.IntN(3); k {
		case 0: // the active site crashes; it comes back later, read-only
			a := g.Status.ActiveSite
			e.sites[a].Crash()
			t.Logf("step %d: crash active %s", step, a)
			time.Sleep(time.Duration(1+r.IntN(12)) * time.Second)
			if err := e.sites[a].Restart(); err != nil {
				t.Fatal(err)
			}
		case 1: // a follower crashes and comes back
			f := "reader"
			if g.Status.ActiveSite == "iad" {
				f = []string{"pdx", "reader"}[r.IntN(2)]
			} else if g.Status.ActiveSite == "pdx" {
				f = []string{"iad", "reader"}[r.IntN(2)]
			}
			e.sites[f].Crash()
			t.Logf("step %d: crash follower %s", step, f)
			time.Sleep(time.Duration(200+r.IntN(2000)) * time.Millisecond)
			if err := e.sites[f].Restart(); err != nil {
				t.Fatal(err)
			}
		case 2: // the operator process dies and a new one starts
			t.Logf("step %d: operator restart", step)
			op.kill()
			op.stop()
			time.Sleep(time.Duration(r.IntN(1000)) * time.Millisecond)
			op = e.startOperator(withFailover)
		}
		eventually(t, 2*waitFor, "group settles", func() error {
			g := e.get()
			if c := condition(g, v1alpha1.ConditionReady); g.Status.Transition != nil || c == nil || c.Status != metav1.ConditionTrue {
				if blockedOldPrimary(g) {
					return nil // settled as far as it can without a human
				}
				return fmt.Errorf("not Ready: transition %+v", g.Status.Transition)
			}
			return nil
		})
	}
	cancel()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	for _, v := range violations {
		t.Errorf("seed %d: %s", seed, v)
	}
	if len(acked) == 0 {
		t.Fatalf("seed %d: the write-load client never got a write through", seed)
	}
	g := e.get()
	final := adminDB(t, e.sites[g.Status.ActiveSite])
	present := map[string]bool{}
	rows, err := final.Query("SHOW DATABASES")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		present[name] = true
	}
	_ = rows.Close()
	missing := 0
	for _, w := range acked {
		if !present[w.db] {
			missing++
		}
	}
	reported := len(e.eventsOf(mgr.EventTransactionsPossiblyLost)) > 0 || blockedOldPrimary(g)
	if missing > 0 && !reported {
		t.Errorf("seed %d: %d of %d acknowledged writes are not on the active site %s and no loss was reported", seed, missing, len(acked), g.Status.ActiveSite)
	}
	t.Logf("seed %d: %d acknowledged writes, %d missing (reported %v), generation %d, active %s, failovers %d",
		seed, len(acked), missing, reported, g.Status.TopologyGeneration, g.Status.ActiveSite, len(e.eventsOf(mgr.EventFailoverSucceeded)))
}

func blockedOldPrimary(g *v1alpha1.MysqlFailoverGroup) bool {
	for _, s := range g.Status.Sites {
		if s.RecoveryState == v1alpha1.RecoveryBlocked {
			return true
		}
	}
	return false
}
