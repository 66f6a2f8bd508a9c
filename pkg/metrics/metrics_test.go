package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

func scrape(t *testing.T, r *Registry) string {
	t.Helper()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestWorkqueueMetricsAreLabelledByQueueName(t *testing.T) {
	r := NewRegistry()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		// A retry delayed for an hour: counted as a retry, never as an add here.
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Hour, time.Hour),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "database", MetricsProvider: r.Workqueue})
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	q.AddRateLimited("c")
	text := scrape(t, r)
	for _, want := range []string{
		`workqueue_adds_total{name="database"} 2`,
		`workqueue_depth{name="database"} 2`,
		`workqueue_retries_total{name="database"} 1`,
		`bloodraven_leader 0`,
		`go_goroutines`,
		`process_resident_memory_bytes`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	r.Leading.Set(1)
	if text := scrape(t, r); !strings.Contains(text, "bloodraven_leader 1") {
		t.Error("leader gauge not exported after Set(1)")
	}
}
