// Package metrics builds the operator's private Prometheus registry and wires
// the library metrics (workqueues, client-go REST calls) into it. A private
// registry keeps /metrics to what Bloodraven registers on purpose instead of
// whatever any imported package put in the global default registry.
package metrics

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
)

// Namespace prefixes every Bloodraven metric name.
const Namespace = "bloodraven"

// Registry is the operator's registry plus the process-level metrics the
// operator package itself sets.
type Registry struct {
	*prometheus.Registry
	// Leading is 1 while this process holds the leader-election Lease.
	Leading prometheus.Gauge
	// Workqueue is the provider every controller queue is created with.
	Workqueue workqueue.MetricsProvider
}

// NewRegistry returns a registry holding the Go runtime and process
// collectors, the leader gauge and the workqueue metrics.
func NewRegistry() *Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	leading := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace,
		Name:      "leader",
		Help:      "1 while this operator process holds the leader-election Lease, else 0.",
	})
	reg.MustRegister(leading)
	return &Registry{Registry: reg, Leading: leading, Workqueue: newWorkqueueMetrics(reg)}
}

// Handler serves the registry in the Prometheus text format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.Registry, promhttp.HandlerOpts{Registry: r.Registry})
}

var clientGoOnce sync.Once

// RegisterClientGo routes client-go's REST client metrics into reg. client-go
// accepts one registration per process, so only the first call has effect.
func RegisterClientGo(reg prometheus.Registerer) {
	clientGoOnce.Do(func() {
		latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rest_client_request_duration_seconds",
			Help:    "Latency of Kubernetes API requests by verb and host.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}, []string{"verb", "host"})
		results := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rest_client_requests_total",
			Help: "Kubernetes API requests by status code, method and host.",
		}, []string{"code", "method", "host"})
		reg.MustRegister(latency, results)
		clientmetrics.Register(clientmetrics.RegisterOpts{
			RequestLatency: latencyAdapter{latency},
			RequestResult:  resultAdapter{results},
		})
	})
}

type latencyAdapter struct{ v *prometheus.HistogramVec }

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	a.v.WithLabelValues(verb, u.Host).Observe(d.Seconds())
}

type resultAdapter struct{ v *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.v.WithLabelValues(code, method, host).Inc()
}
