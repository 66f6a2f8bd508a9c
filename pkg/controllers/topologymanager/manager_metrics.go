package topologymanager

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/metrics"
	"github.com/shipstream/bloodraven/pkg/observe"
	"github.com/shipstream/bloodraven/pkg/stability"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// Metrics are the topology manager's Prometheus metrics. The queue depth is
// the shared workqueue metric workqueue_depth{name="topology"}.
type Metrics struct {
	siteState   *prometheus.GaugeVec
	pollLatency *prometheus.HistogramVec
	pollFails   *prometheus.CounterVec
	generation  *prometheus.GaugeVec
	stable      *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	stepTime    *prometheus.HistogramVec
	planned     *prometheus.CounterVec
	plannedTime *prometheus.HistogramVec
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
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metrics.Namespace, Name: "topology_transitions_total",
			Help: "Active-site changes by kind (Bootstrap, Automatic, ...) and result (succeeded, aborted, refused)."}, []string{"kind", "result"}),
		stepTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: metrics.Namespace, Name: "topology_transition_step_duration_seconds",
			Help: "Time an active-site change spent in each step, by kind and step.", Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)},
			[]string{"kind", "step"}),
		planned: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metrics.Namespace, Name: "planned_failovers_total",
			Help: "Planned-failover runs that ended, by outcome in kebab-case (succeeded, not-started, rolled-back, source-left-fenced, promoted-unconfirmed, manual-recovery-required)."},
			[]string{"result"}),
		plannedTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: metrics.Namespace, Name: "planned_failover_duration_seconds",
			Help: "Time from a planned-failover request to the end of its run, by outcome.", Buckets: prometheus.ExponentialBuckets(0.5, 2, 14)},
			[]string{"result"}),
	}
	reg.MustRegister(m.siteState, m.pollLatency, m.pollFails, m.generation, m.stable, m.transitions, m.stepTime, m.planned, m.plannedTime)
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

// transitionWritten records the time spent in a step that just ended and
// the result of a transition that just ended.
func (m *Metrics) transitionWritten(prev *v1alpha1.Transition, st v1alpha1.MysqlFailoverGroupStatus, now time.Time) {
	if m == nil || prev == nil {
		return
	}
	cur := st.Transition
	if cur != nil && cur.ID == prev.ID && cur.Step == prev.Step {
		return
	}
	since := prev.StartTime.Time
	if prev.StepTime != nil {
		since = prev.StepTime.Time
	}
	m.stepTime.WithLabelValues(string(prev.Kind), string(prev.Step)).Observe(now.Sub(since).Seconds())
	if cur == nil {
		result := "aborted"
		if st.ActiveSite == prev.TargetSite && st.TopologyGeneration == prev.TopologyGeneration {
			result = "succeeded"
		}
		m.transitions.WithLabelValues(string(prev.Kind), result).Inc()
	}
}

func (m *Metrics) failoverRefused() {
	if m != nil {
		m.transitions.WithLabelValues(string(v1alpha1.TransitionAutomatic), "refused").Inc()
	}
}

// plannedEnded counts a planned-failover run that ended and how long it took.
func (m *Metrics) plannedEnded(outcome v1alpha1.PlannedFailoverOutcome, took time.Duration) {
	if m == nil {
		return
	}
	label := topology.PlannedOutcomeLabel(outcome)
	m.planned.WithLabelValues(label).Inc()
	m.plannedTime.WithLabelValues(label).Observe(took.Seconds())
}
