package databaseintegration

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/database"
	"github.com/shipstream/bloodraven/pkg/testbed/kubeenv"
)

// A Ready database whose group keeps changing (each change wakes it and
// re-checks the active site) writes no status and no Event: the reconcile
// finds the schema and owner in place and nothing new to say.
func TestReadyDatabaseWritesNothingWhenNothingChanged(t *testing.T) {
	var writes atomic.Int32
	count := func(inst *kubeenv.Instance) {
		cfg := rest.CopyConfig(cp.Config)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/mysqldatabases/") && strings.HasSuffix(r.URL.Path, "/status") {
					writes.Add(1)
				}
				return rt.RoundTrip(r)
			})
		})
		inst.Deps.Shipstream = versioned.NewForConfigOrDie(cfg)
	}
	e := newEnv(t, 1, count)
	e.secret("owner-pw", map[string]string{"password": ownerPass1})
	e.group("iad")
	e.database("orders-db", "orders", owned("owner-pw"))
	e.wait("orders-db", database.PhaseReady, v1alpha1.ReasonApplied)
	time.Sleep(300 * time.Millisecond) // the reconcile after the Ready write
	before := e.wait("orders-db", database.PhaseReady, v1alpha1.ReasonApplied)
	n0, events0 := writes.Load(), len(e.events("orders-db"))
	for range 3 {
		e.touch()
		time.Sleep(300 * time.Millisecond)
	}
	after := e.wait("orders-db", database.PhaseReady, v1alpha1.ReasonApplied)
	if n := writes.Load() - n0; n != 0 || after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("%d status writes (resourceVersion %s -> %s) while nothing changed", n, before.ResourceVersion, after.ResourceVersion)
	}
	if n := len(e.events("orders-db")); n != events0 {
		t.Fatalf("%d Events recorded while nothing changed", n-events0)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
