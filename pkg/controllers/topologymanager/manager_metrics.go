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
	siteRole    *prometheus.GaugeVec
	replication *prometheus.GaugeVec
	lag         *prometheus.GaugeVec
	maxLag      *prometheus.GaugeVec
	divergent   *prometheus.GaugeVec
	held        *prometheus.GaugeVec
	ready       *prometheus.GaugeVec
	pollLatency *prometheus.HistogramVec
	pollFails   *prometheus.CounterVec
	generation  *prometheus.GaugeVec
	stable      *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	stepTime    *prometheus.HistogramVec
	planned     *prometheus.CounterVec
	plannedTime *prometheus.HistogramVec
	deferrals   *prometheus.CounterVec
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		siteState: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metrics.Namespace, Name: "site_state",
			Help: "1 for the state each site of a failover group was last observed in (writable, read-only, unreachable, unknown), 0 for the others."},
			[]string{"namespace", "group", "site", "state"}),
		siteRole: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metrics.Namespace, Name: "site_role",
			Help: "1 for the role of each site in spec (primary-candidate, disaster-recovery, read-only), 0 for the others."},
			[]string{"namespace", "group", "site", "role"}),
		replication: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metrics.Namespace, Name: "site_replication_state",
			Help: "1 for each site's last observed replication state (not-replicating, running, connecting, stopped, error, unknown), 0 for the others."},
			[]string{"namespace", "group", "site", "state"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metrics.Namespace, Name: "site_replication_lag_seconds",
			Help: "status.sites[].secondsBehindSource; absent while the lag is unknown or the site does not replicate."},
			[]string{"namespace", "group", "site"}),
		maxLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metrics.Namespace, Name: "failover_group_max_lag_seconds",
			Help: "spec.replication.maxLagSeconds of a failover group (300 when unset)."}, []string{"namespace", "group"}),
		divergent: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metrics.Namespace, Name: "site_divergent_transactions",
			Help: "status.sites[].divergentTransactionCount: transactions a site holds that the active site lacks."},
			[]string{"namespace", "group", "site"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metrics.Namespace, Name: "automatic_failover_held",
			Help: "1 while status.automaticFailoverHold stops automatic failover of the group, else 0."}, []string{"namespace", "group"}),
		ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metrics.Namespace, Name: "failover_group_ready",
			Help: "1 while the group's Ready condition is True, else 0."}, []string{"namespace", "group"}),
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
		deferrals: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metrics.Namespace, Name: "planned_failover_deferrals_total",
			Help: "Planned-failover runs that entered the Deferred phase, by status.plannedFailover.admission.deferReason (DeploymentHold, Cooldown)."},
			[]string{"namespace", "group", "reason"}),
	}
	// The counters alerts take increase() of exist at 0 from the start, so
	// the first refusal or failed run is an increase, not a new series.
	for _, r := range []string{"succeeded", "aborted", "refused"} {
		m.transitions.WithLabelValues(string(v1alpha1.TransitionAutomatic), r)
	}
	for _, o := range topology.PlannedOutcomes {
		m.planned.WithLabelValues(topology.PlannedOutcomeLabel(o))
	}
	reg.MustRegister(m.siteState, m.siteRole, m.replication, m.lag, m.maxLag, m.divergent, m.held, m.ready,
		m.pollLatency, m.pollFails, m.generation, m.stable, m.transitions, m.stepTime, m.planned, m.plannedTime, m.deferrals)
	return m
}

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

// record publishes the group's per-site observations, generation,
// stability, readiness and hold.
func (m *Metrics) record(g *v1alpha1.MysqlFailoverGroup, _ map[string]observe.Result[Sample]) {
	if m == nil {
		return
	}
	roles := map[string]v1alpha1.SiteRole{}
	for _, s := range g.Spec.Sites {
		roles[s.Name] = s.Role
	}
	for _, s := range g.Status.Sites {
		m.recordSite(g, s, roles[s.Name])
	}
	maxLag := float64(v1alpha1.DefaultMaxLagSeconds)
	if r := g.Spec.Replication; r != nil && r.MaxLagSeconds != nil {
		maxLag = float64(*r.MaxLagSeconds)
	}
	m.maxLag.WithLabelValues(g.Namespace, g.Name).Set(maxLag)
	for _, r := range topology.PlannedDeferReasons {
		m.deferrals.WithLabelValues(g.Namespace, g.Name, string(r)) // at 0 until the first deferral
	}
	m.generation.WithLabelValues(g.Namespace, g.Name).Set(float64(g.Status.TopologyGeneration))
	m.stable.WithLabelValues(g.Namespace, g.Name).Set(boolValue(stability.Evaluate(g).Stable))
	m.held.WithLabelValues(g.Namespace, g.Name).Set(boolValue(g.Status.AutomaticFailoverHold != nil))
	m.ready.WithLabelValues(g.Namespace, g.Name).Set(boolValue(conditionTrue(g, v1alpha1.ConditionReady)))
}

func (m *Metrics) recordSite(g *v1alpha1.MysqlFailoverGroup, s v1alpha1.SiteStatus, role v1alpha1.SiteRole) {
	state := metrics.SiteStateLabel(s.State)
	for _, st := range metrics.SiteStates {
		l := metrics.SiteStateLabel(st)
		m.siteState.WithLabelValues(g.Namespace, g.Name, s.Name, l).Set(boolValue(l == state))
	}
	for _, r := range metrics.SiteRoles {
		m.siteRole.WithLabelValues(g.Namespace, g.Name, s.Name, metrics.SiteRoleLabel(r)).Set(boolValue(r == role))
	}
	repl := metrics.ReplicationLabel(s.Replication)
	for _, r := range metrics.ReplicationStates {
		l := metrics.ReplicationLabel(r)
		m.replication.WithLabelValues(g.Namespace, g.Name, s.Name, l).Set(boolValue(l == repl))
	}
	m.replication.WithLabelValues(g.Namespace, g.Name, s.Name, metrics.Unknown).Set(boolValue(repl == metrics.Unknown))
	if s.SecondsBehindSource != nil {
		m.lag.WithLabelValues(g.Namespace, g.Name, s.Name).Set(float64(*s.SecondsBehindSource))
	} else {
		m.lag.DeleteLabelValues(g.Namespace, g.Name, s.Name)
	}
	m.divergent.WithLabelValues(g.Namespace, g.Name, s.Name).Set(float64(s.DivergentTransactionCount))
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func conditionTrue(g *v1alpha1.MysqlFailoverGroup, typ string) bool {
	for _, c := range g.Status.Conditions {
		if c.Type == typ {
			return c.Status == "True"
		}
	}
	return false
}

func (m *Metrics) forget(key string) {
	if m == nil {
		return
	}
	ns, name := splitKey(key)
	labels := prometheus.Labels{"namespace": ns, "group": name}
	for _, v := range []*prometheus.GaugeVec{m.siteState, m.siteRole, m.replication, m.lag, m.divergent, m.maxLag, m.generation, m.stable, m.held, m.ready} {
		v.DeletePartialMatch(labels)
	}
	m.pollFails.DeletePartialMatch(labels)
	m.deferrals.DeletePartialMatch(labels)
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

// plannedPhaseChanged counts a run that entered the Deferred phase (seed
// 000: "the deferral counter"), by its defer reason as the status spells it.
func (m *Metrics) plannedPhaseChanged(g *v1alpha1.MysqlFailoverGroup, after *v1alpha1.PlannedFailoverStatus) {
	if m == nil || after == nil || after.Phase != v1alpha1.PlannedFailoverDeferred {
		return
	}
	reason := ""
	if after.Admission != nil {
		reason = string(after.Admission.DeferReason)
	}
	m.deferrals.WithLabelValues(g.Namespace, g.Name, reason).Inc()
}
