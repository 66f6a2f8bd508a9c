package topology

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1/stability"
	"github.com/shipstream/bloodraven/pkg/metrics"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// Metrics are the topology manager's Prometheus metrics. The queue depth is
// the shared workqueue metric workqueue_depth{name="topology"}.
type Metrics struct {
	siteState   *prometheus.GaugeVec
	pollLatency *prometheus.HistogramVec
	pollFails   *prometheus.CounterVec
	generation  *prometheus.GaugeVec
	stable      *prometheus.GaugeVec
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		siteState: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metrics.Namespace, Name: "site_state",
			Help: "1 for the state each site of a failover group was last observed in (Writable, ReadOnly, Unreachable, Unknown), 0 for the others."},
			[]string{"namespace", "group", "site", "state"}),
		pollLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: metrics.Namespace, Name: "site_poll_duration_seconds",
			Help: "Duration of one poll of a site's mysqld, by result (success, failure).", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)},
			[]string{"result"}),
		pollFails: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metrics.Namespace, Name: "site_poll_failures_total",
			Help: "Failed polls of a site's mysqld."}, []string{"namespace", "group", "site"}),
		generation: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metrics.Namespace, Name: "topology_generation",
			Help: "status.topologyGeneration of a failover group."}, []string{"namespace", "group"}),
		stable: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metrics.Namespace, Name: "failover_group_stable",
			Help: "1 when the deployment API would call the group stable (the shared stability function), else 0."}, []string{"namespace", "group"}),
	}
	reg.MustRegister(m.siteState, m.pollLatency, m.pollFails, m.generation, m.stable)
	return m
}

var siteStates = []v1alpha1.SiteState{v1alpha1.SiteWritable, v1alpha1.SiteReadOnly, v1alpha1.SiteUnreachable, v1alpha1.SiteUnknown}

func splitKey(key string) (string, string) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

// observePoll is the tracker's per-poll hook.
func (m *Metrics) observePoll(group, site string, latency time.Duration, err error) {
	if m == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "failure"
		ns, name := splitKey(group)
		m.pollFails.WithLabelValues(ns, name, site).Inc()
	}
	m.pollLatency.WithLabelValues(result).Observe(latency.Seconds())
}

// record publishes the group's site states, generation and stability.
func (m *Metrics) record(g *v1alpha1.MysqlFailoverGroup, _ map[string]observe.Result[Sample]) {
	if m == nil {
		return
	}
	for _, s := range g.Status.Sites {
		for _, st := range siteStates {
			v := 0.0
			if s.State == st {
				v = 1
			}
			m.siteState.WithLabelValues(g.Namespace, g.Name, s.Name, string(st)).Set(v)
		}
	}
	m.generation.WithLabelValues(g.Namespace, g.Name).Set(float64(g.Status.TopologyGeneration))
	v := 0.0
	if stability.Evaluate(g).Stable {
		v = 1
	}
	m.stable.WithLabelValues(g.Namespace, g.Name).Set(v)
}

func (m *Metrics) forget(key string) {
	if m == nil {
		return
	}
	ns, name := splitKey(key)
	labels := prometheus.Labels{"namespace": ns, "group": name}
	m.siteState.DeletePartialMatch(labels)
	m.pollFails.DeletePartialMatch(labels)
	m.generation.Delete(labels)
	m.stable.Delete(labels)
}
