package deployapi

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shipstream/bloodraven/pkg/metrics"
)

// requestMetrics count requests by handler, authorized group and status.
// The group label is empty unless the caller was authorized for the group,
// so arbitrary request paths cannot create series.
type requestMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newRequestMetrics(reg prometheus.Registerer) (*requestMetrics, error) {
	m := &requestMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace,
			Name:      "deploy_api_requests_total",
			Help:      "Deployment API requests by handler, authorized group (empty when unresolved) and HTTP status.",
		}, []string{"handler", "group", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metrics.Namespace,
			Name:      "deploy_api_request_duration_seconds",
			Help:      "Deployment API request latency by handler.",
			Buckets:   prometheus.ExponentialBuckets(0.002, 2, 12),
		}, []string{"handler"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.duration} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("deployapi: register metrics: %w", err)
			}
		}
	}
	return m, nil
}

func (m *requestMetrics) observe(rec *requestLog, status int, d time.Duration) {
	m.requests.WithLabelValues(rec.handler, rec.group, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(rec.handler).Observe(d.Seconds())
}
