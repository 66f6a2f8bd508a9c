package deployapiintegration_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shipstream/bloodraven/pkg/leasestore"
)

// newStore is one operator process's store: its own client, no shared state.
func (e *env) newStore() *leasestore.Store { return e.newStoreWrapped(nil) }

// newStoreWrapped is newStore whose API server traffic passes through wrap
// (nil: none), so a test can act between two of the store's requests.
func (e *env) newStoreWrapped(wrap func(http.RoundTripper) http.RoundTripper) *leasestore.Store {
	rc := rest.CopyConfig(cp.Config)
	rc.QPS, rc.Burst = 2000, 4000
	rc.WrapTransport = wrap
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		e.t.Fatal(err)
	}
	return leasestore.New(kube, leasestore.Options{Now: e.clock.Now, MaxClockSkew: 2 * time.Second})
}

// TestStoresNeverGrantTwoLiveMigrationLeases runs operations that grant,
// renew, release and let leases expire through two stores sharing no memory,
// while the operator clock jumps ahead, and checks on consistent snapshots
// of the API server that at most one migration lease of the group is ever
// live.
func TestStoresNeverGrantTwoLiveMigrationLeases(t *testing.T) {
	f := newFixture(t)
	stores := []*leasestore.Store{f.newStore(), f.newStore()}
	ref := f.groupRef()
	// running only says when to stop starting operations. Requests use
	// f.ctx, so one in flight at the end completes instead of failing on
	// its deadline (the client's rate limiter refuses a wait that would
	// outlast it, which is no error of the store).
	running, stop := context.WithTimeout(f.ctx, 12*time.Second)
	defer stop()

	var grants atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		op := fmt.Sprintf("%08d-0000-4000-8000-000000000000", w+1)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var token string
			for running.Err() == nil {
				s := stores[rng.IntN(2)]
				switch rng.IntN(3) {
				case 0:
					g, err := s.Grant(f.ctx, leasestore.GrantRequest{Group: ref, Kind: leasestore.KindMigration, OperationID: op,
						Instance: "orders-app", TTL: 5 * time.Second, TopologyGeneration: 3})
					if err == nil {
						token = g.Token
						grants.Add(1)
					} else if !errors.Is(err, leasestore.ErrMutexHeld) {
						t.Errorf("grant: %v", err)
					}
				case 1:
					if token != "" {
						_, _ = s.Renew(f.ctx, leasestore.RenewRequest{Group: ref, Kind: leasestore.KindMigration, OperationID: op,
							Token: token, TTL: 5 * time.Second, TopologyGeneration: 3})
					}
				case 2:
					if token != "" && rng.IntN(3) == 0 {
						_ = s.Release(f.ctx, ref, leasestore.KindMigration, op, token)
					}
				}
				time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
			}
		})
	}
	// The clock jumps so that leases expire and the skew grace runs out.
	wg.Go(func() {
		for running.Err() == nil {
			time.Sleep(700 * time.Millisecond)
			f.clock.Advance(3 * time.Second)
		}
	})
	checks := 0
	for running.Err() == nil {
		// One List is one consistent snapshot; the clock is read after it
		// (it only moves forward), so every grant in it happened earlier.
		recs, err := f.op.store.List(f.ctx, f.ns, "orders")
		if err != nil {
			break
		}
		now := f.clock.Now()
		var live []string
		for _, r := range recs {
			if r.Kind == leasestore.KindMigration && r.Live(now) {
				live = append(live, r.OperationID)
			}
		}
		if len(live) > 1 {
			t.Fatalf("migration leases of %v are live at once", live)
		}
		checks++
	}
	wg.Wait()
	if grants.Load() < 4 || checks < 10 {
		t.Fatalf("too little happened to mean anything: %d grants, %d checks", grants.Load(), checks)
	}
	t.Logf("%d grants, %d snapshot checks", grants.Load(), checks)
}

// afterWrite calls hook once, right after the API server accepted a PUT of
// the Lease name whose body contains marker (the client may send protobuf,
// which carries the annotation's JSON unescaped, or JSON, which escapes its
// quotes; both spellings count).
type afterWrite struct {
	next   http.RoundTripper
	name   string
	marker []byte
	once   sync.Once
	hook   func()
}

func (a *afterWrite) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/leases/"+a.name) && req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := a.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusOK && (bytes.Contains(body, a.marker) || bytes.Contains(body, bytes.ReplaceAll(a.marker, []byte(`"`), []byte(`\"`)))) {
		a.once.Do(a.hook)
	}
	return resp, err
}

// TestReleaseRacingARegrantOfTheSameOperation: a release marks the record
// Released, and before it frees the mutex the same operation is granted
// again (a client that did not serialize its release and re-grant). The
// release must leave the mutex to the re-grant: otherwise another operation
// could take the mutex while the re-grant's lease is live.
func TestReleaseRacingARegrantOfTheSameOperation(t *testing.T) {
	f := newFixture(t)
	ref := f.groupRef()
	plain := f.newStore()
	grant := func(op string) (leasestore.Grant, error) {
		return plain.Grant(f.ctx, leasestore.GrantRequest{Group: ref, Kind: leasestore.KindMigration, OperationID: op,
			Instance: "orders-app", TTL: 60 * time.Second, TopologyGeneration: 3})
	}
	first, err := grant(opA)
	if err != nil {
		t.Fatal(err)
	}
	var regrant leasestore.Grant
	var regrantErr error
	hooked := &afterWrite{name: "bloodraven-deploy.orders.migration." + opA, marker: []byte(`"state":"Released"`)}
	hooked.hook = func() { regrant, regrantErr = grant(opA) }
	releasing := f.newStoreWrapped(func(rt http.RoundTripper) http.RoundTripper { hooked.next = rt; return hooked })

	if err := releasing.Release(f.ctx, ref, leasestore.KindMigration, opA, first.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	if regrantErr != nil || regrant.Token == "" {
		t.Fatalf("the re-grant did not run between the release's two writes: %v", regrantErr)
	}
	// The re-grant's lease is live and still owns the mutex.
	if _, err := grant(opB); !errors.Is(err, leasestore.ErrMutexHeld) {
		t.Fatalf("another operation's grant: %v, want ErrMutexHeld while the re-grant is live", err)
	}
	if _, err := plain.Renew(f.ctx, leasestore.RenewRequest{Group: ref, Kind: leasestore.KindMigration, OperationID: opA,
		Token: regrant.Token, TTL: 60 * time.Second, TopologyGeneration: 3}); err != nil {
		t.Fatalf("renewal of the re-grant: %v", err)
	}
	// Releasing the re-grant frees the mutex as usual.
	if err := plain.Release(f.ctx, ref, leasestore.KindMigration, opA, regrant.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := grant(opB); err != nil {
		t.Fatalf("grant after the release: %v", err)
	}
}
