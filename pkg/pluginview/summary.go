// Package pluginview is the pure part of the kubectl-bloodraven plugin: the
// at-a-glance summary of a MysqlFailoverGroup (for the terminal and for
// -o json|yaml), and the exact annotation values the plugin writes, checked
// against the group's status before anything is written. It does no I/O
// beyond writing to an io.Writer.
package pluginview

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// Summary is one group at a glance. Its JSON form is the plugin's
// `status -o json` output, so field names are part of its interface.
type Summary struct {
	Name               string                          `json:"name"`
	Namespace          string                          `json:"namespace"`
	ActiveSite         string                          `json:"activeSite"`
	TopologyGeneration int64                           `json:"topologyGeneration"`
	Ready              *Condition                      `json:"ready,omitempty"`
	Sites              []SiteSummary                   `json:"sites"`
	Transition         *v1alpha1.Transition            `json:"transition,omitempty"`
	PlannedFailover    *PlannedFailoverSummary         `json:"plannedFailover,omitempty"`
	AutomaticHold      *v1alpha1.AutomaticFailoverHold `json:"automaticFailoverHold,omitempty"`
	UpdatePhase        v1alpha1.UpdatePhase            `json:"updatePhase,omitempty"`
	LastFailover       *v1alpha1.LastFailover          `json:"lastFailover,omitempty"`
	PendingRequests    map[string]string               `json:"pendingRequests,omitempty"`
	Leases             *LeaseSummary                   `json:"leases,omitempty"`
	// Conditions lists only the conditions that are not fine (see
	// conditionFine).
	Conditions []Condition `json:"conditionsNotFine,omitempty"`
	// StatusStale is true when the operator has not yet acted on the
	// latest spec (status.observedGeneration < metadata.generation).
	StatusStale bool `json:"statusStale,omitempty"`
}

// Condition is a condition as the summary shows it.
type Condition struct {
	Type    string                 `json:"type"`
	Status  metav1.ConditionStatus `json:"status"`
	Reason  string                 `json:"reason,omitempty"`
	Message string                 `json:"message,omitempty"`
	Since   metav1.Time            `json:"since"`
}

// SiteSummary is one site's row.
type SiteSummary struct {
	Name        string                    `json:"name"`
	Role        v1alpha1.SiteRole         `json:"role,omitempty"`
	Active      bool                      `json:"active,omitempty"`
	State       v1alpha1.SiteState        `json:"state,omitempty"`
	Replication v1alpha1.ReplicationState `json:"replication,omitempty"`
	LagSeconds  *int64                    `json:"lagSeconds,omitempty"`
	// Transactions is the number of transactions in gtidExecuted.
	Transactions uint64 `json:"transactions"`
	// MissingFromActive is how many of the active site's transactions this
	// site lacks (nil when either set is unknown or unparsable).
	MissingFromActive *uint64 `json:"missingFromActive,omitempty"`
	// ExtraOverActive is how many transactions this site holds that the
	// active site lacks, by the current gtidExecuted of both.
	ExtraOverActive *uint64                `json:"extraOverActive,omitempty"`
	GTIDExecuted    string                 `json:"gtidExecuted,omitempty"`
	Divergence      *Divergence            `json:"divergence,omitempty"`
	RecoveryState   v1alpha1.RecoveryState `json:"recoveryState,omitempty"`
	Message         string                 `json:"message,omitempty"`
}

// Divergence is the divergence record the operator keeps for a site.
type Divergence struct {
	GTID         string                      `json:"gtid"`
	Transactions int64                       `json:"transactions"`
	DetectedBy   v1alpha1.DivergenceDetector `json:"detectedBy,omitempty"`
	ComparedTo   string                      `json:"comparedTo,omitempty"`
}

// PlannedFailoverSummary is the latest planned-failover run.
type PlannedFailoverSummary struct {
	RunID      string                               `json:"runID"`
	Source     string                               `json:"sourceSite,omitempty"`
	Target     string                               `json:"targetSite"`
	Phase      v1alpha1.PlannedFailoverPhase        `json:"phase"`
	InFlight   bool                                 `json:"inFlight"`
	Waiting    string                               `json:"waiting,omitempty"`
	Outcome    v1alpha1.PlannedFailoverOutcome      `json:"outcome,omitempty"`
	Reason     v1alpha1.PlannedFailoverResultReason `json:"reason,omitempty"`
	Message    string                               `json:"message,omitempty"`
	PhaseSince *metav1.Time                         `json:"phaseSince,omitempty"`
}

// LeaseSummary is the group's deployment leases: the live ones, and how
// many records are over (released, expired or revoked tombstones).
type LeaseSummary struct {
	// Error is set when the leases could not be read (for example no RBAC
	// on coordination.k8s.io Leases); the rest of the summary still holds.
	Error string      `json:"error,omitempty"`
	Live  []LeaseLine `json:"live,omitempty"`
	Ended int         `json:"ended"`
}

// LeaseLine is one live lease.
type LeaseLine struct {
	Kind        leasestore.Kind `json:"kind"`
	OperationID string          `json:"operationId"`
	Instance    string          `json:"instance"`
	Holder      string          `json:"holder"`
	ExpiresAt   time.Time       `json:"expiresAt"`
	// Stale: granted at another topology generation, so it is revoked in
	// effect and answered as such by the deployment API.
	Stale bool `json:"stale,omitempty"`
}

// pendingAnnotations are the action annotations the operator removes once
// handled; one still present is a request not yet handled.
var pendingAnnotations = []string{
	topology.AnnotationRecloneSite,
	topology.AnnotationPlannedFailover,
	topology.AnnotationClearAutomaticFailoverHold,
	leasestore.RevokeAnnotation,
}

// Summarize builds the summary of g. leases may be nil when they were not
// read; leaseErr says why.
func Summarize(g *v1alpha1.MysqlFailoverGroup, leases []leasestore.Record, leaseErr error, now time.Time) Summary {
	st := &g.Status
	s := Summary{
		Name: g.Name, Namespace: g.Namespace, ActiveSite: st.ActiveSite,
		TopologyGeneration: st.TopologyGeneration, Transition: st.Transition,
		AutomaticHold: st.AutomaticFailoverHold, UpdatePhase: st.UpdatePhase,
		LastFailover: st.LastFailover, StatusStale: st.ObservedGeneration < g.Generation,
	}
	for _, c := range st.Conditions {
		cc := Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime}
		if c.Type == v1alpha1.ConditionReady {
			s.Ready = &cc
		}
		if !conditionFine(c) {
			s.Conditions = append(s.Conditions, cc)
		}
	}
	s.Sites = siteSummaries(g)
	s.PlannedFailover = plannedSummary(st.PlannedFailover)
	s.PendingRequests = pending(g.Annotations)
	s.Leases = leaseSummary(leases, leaseErr, st.TopologyGeneration, now)
	return s
}

// conditionFine says whether a condition needs no attention. Conditions
// whose healthy state is False (Degraded, RecoveryPending, Bootstrapping,
// Updating) are fine when False; every other type is fine when True.
func conditionFine(c metav1.Condition) bool {
	switch c.Type {
	case v1alpha1.ConditionDegraded, v1alpha1.ConditionRecoveryPending, v1alpha1.ConditionBootstrapping, v1alpha1.ConditionUpdating:
		return c.Status == metav1.ConditionFalse
	}
	return c.Status == metav1.ConditionTrue
}

func pending(ann map[string]string) map[string]string {
	var out map[string]string
	for _, k := range pendingAnnotations {
		if v, ok := ann[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// siteSummaries lists the sites in spec order, with the status of each
// (a site not yet observed has only its name and role).
func siteSummaries(g *v1alpha1.MysqlFailoverGroup) []SiteSummary {
	byName := map[string]*v1alpha1.SiteStatus{}
	for i := range g.Status.Sites {
		byName[g.Status.Sites[i].Name] = &g.Status.Sites[i]
	}
	activeSet, activeOK := parsedSet(byName[g.Status.ActiveSite])
	var out []SiteSummary
	for _, sp := range g.Spec.Sites {
		row := SiteSummary{Name: sp.Name, Role: sp.Role, Active: sp.Name == g.Status.ActiveSite}
		if ss := byName[sp.Name]; ss != nil {
			fillSite(&row, ss, activeSet, activeOK && !row.Active)
		}
		out = append(out, row)
	}
	return out
}

func fillSite(row *SiteSummary, ss *v1alpha1.SiteStatus, active gtid.Set, compare bool) {
	row.State, row.Replication, row.LagSeconds = ss.State, ss.Replication, ss.SecondsBehindSource
	row.GTIDExecuted, row.RecoveryState, row.Message = ss.GTIDExecuted, ss.RecoveryState, ss.Message
	set, ok := parsedSet(ss)
	if ok {
		row.Transactions = set.Count()
	}
	if ok && compare {
		missing, extra := active.Subtract(set).Count(), set.Subtract(active).Count()
		row.MissingFromActive, row.ExtraOverActive = &missing, &extra
	}
	if ss.DivergentGTID != "" {
		row.Divergence = &Divergence{GTID: ss.DivergentGTID, Transactions: ss.DivergentTransactionCount,
			DetectedBy: ss.DivergenceDetectedBy, ComparedTo: ss.DivergenceComparedTo}
	}
}

// parsedSet parses a site's gtidExecuted; ok is false for a site not
// observed or a set that does not parse.
func parsedSet(ss *v1alpha1.SiteStatus) (gtid.Set, bool) {
	if ss == nil {
		return gtid.Set{}, false
	}
	s, err := gtid.Parse(ss.GTIDExecuted)
	return s, err == nil
}

func plannedSummary(p *v1alpha1.PlannedFailoverStatus) *PlannedFailoverSummary {
	if p == nil {
		return nil
	}
	out := &PlannedFailoverSummary{RunID: p.RunID, Source: p.SourceSite, Target: p.TargetSite,
		Phase: p.Phase, InFlight: !p.Phase.IsTerminal(), PhaseSince: p.PhaseTime}
	if a := p.Admission; a != nil && out.InFlight {
		out.Waiting = firstNonEmpty(string(a.WaitReason), string(a.DeferReason))
		out.Message = a.Message
	}
	if r := p.Result; r != nil {
		out.Outcome, out.Reason, out.Message = r.Outcome, r.Reason, r.Message
	}
	return out
}

func leaseSummary(recs []leasestore.Record, err error, gen int64, now time.Time) *LeaseSummary {
	if err != nil {
		return &LeaseSummary{Error: err.Error()}
	}
	if recs == nil {
		return nil
	}
	ls := &LeaseSummary{}
	for _, r := range recs {
		if !r.Live(now) {
			ls.Ended++
			continue
		}
		ls.Live = append(ls.Live, LeaseLine{Kind: r.Kind, OperationID: r.OperationID, Instance: r.Instance,
			Holder: r.Holder, ExpiresAt: r.ExpiresAt, Stale: r.TopologyGeneration != gen})
	}
	sort.SliceStable(ls.Live, func(i, j int) bool { return ls.Live[i].ExpiresAt.Before(ls.Live[j].ExpiresAt) })
	return ls
}

func firstNonEmpty(a ...string) string {
	for _, s := range a {
		if s != "" {
			return s
		}
	}
	return ""
}
