// Package auxiliary serves the operator's sidecar-facing endpoints on its
// plain-HTTP auxiliary listener (:8082): /healthz, /status, /active-site,
// /ws/status and /pitr-cutoff (paths and documents in pkg/protocol).
//
// Every answer is built from the failover groups' persisted status as the
// operator's informer cache holds it, never from a decision in flight: the
// sidecars' self-fencing relies on /active-site confirming a site only while
// the status says it is active and no transition is recorded.
package auxiliary

import (
	"errors"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	listers "github.com/shipstream/bloodraven/generated/listers/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/protocol"
)

// Source gives the failover groups as the operator last saw them.
type Source interface {
	// Groups returns every failover group.
	Groups() ([]*v1alpha1.MysqlFailoverGroup, error)
	// Group returns one group, or an error for which NotFound reports true.
	Group(namespace, name string) (*v1alpha1.MysqlFailoverGroup, error)
	// Synced reports whether the source holds a complete view yet.
	Synced() bool
}

// ListerSource reads groups from the shared informer's lister.
type ListerSource struct {
	Lister listers.MysqlFailoverGroupLister
	// HasSynced is the informer's HasSynced.
	HasSynced func() bool
}

// Groups lists every group in the cache.
func (l ListerSource) Groups() ([]*v1alpha1.MysqlFailoverGroup, error) {
	return l.Lister.List(labels.Everything())
}

// Group gets one group from the cache.
func (l ListerSource) Group(namespace, name string) (*v1alpha1.MysqlFailoverGroup, error) {
	return l.Lister.MysqlFailoverGroups(namespace).Get(name)
}

// Synced reports the informer's HasSynced (true when none is given).
func (l ListerSource) Synced() bool { return l.HasSynced == nil || l.HasSynced() }

// NotFound reports a group the source does not have.
func NotFound(err error) bool { return apierrors.IsNotFound(err) || errors.Is(err, ErrGroupNotFound) }

// ErrGroupNotFound is what a Source other than ListerSource returns for a
// missing group.
var ErrGroupNotFound = errors.New("failover group not found")

// Options configure a Handler.
type Options struct {
	Source Source
	// IsLeader reports whether this process holds the leader Lease.
	IsLeader func() bool
	// Logger receives one record per WebSocket stream and per failure.
	Logger *slog.Logger
	// ResyncInterval is how often a /ws/status stream rebuilds its
	// document without a Notify, so a missed notification delays a change
	// by at most this much. Default 2s.
	ResyncInterval time.Duration
	// Clock is time.Now unless a test replaces it.
	Clock func() time.Time
	// OnSiteEvent receives a sidecar's PathSiteEvent for a known group on
	// the leader; nil answers 404 (no route).
	OnSiteEvent func(namespace, group, site string)
}

// Handler serves the auxiliary endpoints.
type Handler struct {
	opts     Options
	mux      *http.ServeMux
	upgrader websocket.Upgrader

	mu      sync.Mutex
	changed chan struct{} // closed and replaced by Notify
}

// New builds the handler.
func New(opts Options) *Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ResyncInterval <= 0 {
		opts.ResyncInterval = 2 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.IsLeader == nil {
		opts.IsLeader = func() bool { return false }
	}
	h := &Handler{opts: opts, changed: make(chan struct{}),
		// The default origin check stays: a browser page from another origin
		// may not open the stream; non-browser clients send no Origin.
		upgrader: websocket.Upgrader{HandshakeTimeout: 10 * time.Second}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+protocol.PathOperatorHealthz, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET "+protocol.PathOperatorStatus, h.serveStatus)
	mux.HandleFunc("GET "+protocol.PathActiveSite, h.serveActiveSite)
	mux.HandleFunc("GET "+protocol.PathWSStatus, h.serveWS)
	mux.HandleFunc("GET "+protocol.PathPITRCutoff, h.servePITRCutoff)
	if opts.OnSiteEvent != nil {
		mux.HandleFunc("POST "+protocol.PathSiteEvent, h.serveSiteEvent)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		protocol.WriteError(w, http.StatusNotFound, protocol.ErrorNotFound, "no route "+r.Method+" "+r.URL.Path)
	})
	h.mux = mux
	return h
}

// Paths are the routes Handler serves, for mounting it on a shared mux.
var Paths = []string{protocol.PathOperatorHealthz, protocol.PathOperatorStatus, protocol.PathActiveSite,
	protocol.PathWSStatus, protocol.PathPITRCutoff, protocol.PathSiteEvent}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Notify tells open /ws/status streams that a group may have changed. Call
// it from the failover-group informer's add, update and delete handlers.
func (h *Handler) Notify() {
	h.mu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

func (h *Handler) changes() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

// Document builds the /status document.
func (h *Handler) Document() (protocol.OperatorStatus, error) {
	groups, err := h.opts.Source.Groups()
	if err != nil {
		return protocol.OperatorStatus{}, err
	}
	doc := protocol.OperatorStatus{Leader: h.opts.IsLeader(), GeneratedAt: h.opts.Clock().UTC(), Groups: []protocol.GroupStatus{}}
	for _, g := range groups {
		doc.Groups = append(doc.Groups, GroupStatus(g))
	}
	sort.Slice(doc.Groups, func(i, j int) bool {
		a, b := doc.Groups[i], doc.Groups[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	return doc, nil
}

func (h *Handler) serveStatus(w http.ResponseWriter, _ *http.Request) {
	if !h.opts.Source.Synced() {
		protocol.WriteError(w, http.StatusServiceUnavailable, protocol.ErrorUnavailable, "the failover-group cache has not synced yet")
		return
	}
	doc, err := h.Document()
	if err != nil {
		h.opts.Logger.Error("auxiliary status failed", "err", err)
		protocol.WriteError(w, http.StatusInternalServerError, protocol.ErrorUnavailable, err.Error())
		return
	}
	protocol.WriteJSON(w, http.StatusOK, doc)
}

// groupFromQuery resolves ?namespace=&group= and answers the error itself.
func (h *Handler) groupFromQuery(w http.ResponseWriter, r *http.Request) (*v1alpha1.MysqlFailoverGroup, bool) {
	q := r.URL.Query()
	ns, name := q.Get(protocol.QueryNamespace), q.Get(protocol.QueryGroup)
	if ns == "" || name == "" {
		protocol.WriteError(w, http.StatusBadRequest, protocol.ErrorBadRequest, "query parameters namespace and group are required")
		return nil, false
	}
	if !h.opts.IsLeader() {
		protocol.WriteError(w, http.StatusServiceUnavailable, protocol.ErrorNotLeader, "this operator process is not the leader")
		return nil, false
	}
	if !h.opts.Source.Synced() {
		protocol.WriteError(w, http.StatusServiceUnavailable, protocol.ErrorUnavailable, "the failover-group cache has not synced yet")
		return nil, false
	}
	g, err := h.opts.Source.Group(ns, name)
	if NotFound(err) {
		protocol.WriteError(w, http.StatusNotFound, protocol.ErrorNotFound, "failover group "+ns+"/"+name+" not found")
		return nil, false
	}
	if err != nil {
		protocol.WriteError(w, http.StatusInternalServerError, protocol.ErrorUnavailable, err.Error())
		return nil, false
	}
	return g, true
}

// serveSiteEvent passes a sidecar's hint on to the topology manager when it
// names a site of a group this leader knows. A forged one makes the
// manager poll that site once more, which is all it can do.
func (h *Handler) serveSiteEvent(w http.ResponseWriter, r *http.Request) {
	g, ok := h.groupFromQuery(w, r)
	if !ok {
		return
	}
	var ev protocol.SiteEvent
	if err := protocol.Decode(http.MaxBytesReader(w, r.Body, protocol.MaxBodyBytes), &ev); err != nil {
		protocol.WriteError(w, http.StatusBadRequest, protocol.ErrorBadRequest, "body: "+err.Error())
		return
	}
	if !hasSite(g, ev.Site) {
		protocol.WriteError(w, http.StatusBadRequest, protocol.ErrorBadRequest, "site "+strconv.Quote(ev.Site)+" is not a site of failover group "+g.Namespace+"/"+g.Name)
		return
	}
	h.opts.OnSiteEvent(g.Namespace, g.Name, ev.Site)
	w.WriteHeader(http.StatusAccepted)
}

func hasSite(g *v1alpha1.MysqlFailoverGroup, site string) bool {
	for _, s := range g.Spec.Sites {
		if s.Name == site {
			return true
		}
	}
	return false
}

// serveActiveSite answers only on the leader: a non-leader's cache may lag
// behind a transition the leader has already recorded.
func (h *Handler) serveActiveSite(w http.ResponseWriter, r *http.Request) {
	g, ok := h.groupFromQuery(w, r)
	if !ok {
		return
	}
	protocol.WriteJSON(w, http.StatusOK, ActiveSite(g))
}

func (h *Handler) servePITRCutoff(w http.ResponseWriter, r *http.Request) {
	g, ok := h.groupFromQuery(w, r)
	if !ok {
		return
	}
	protocol.WriteJSON(w, http.StatusOK, protocol.PITRCutoff{Namespace: g.Namespace, Group: g.Name, Configured: false,
		Message: "not configured: this operator does not compute PITR retention cutoffs yet"})
}

// ActiveSite is the /active-site answer for a group: its recorded active
// site, and the recorded transition if one is in flight.
func ActiveSite(g *v1alpha1.MysqlFailoverGroup) protocol.ActiveSite {
	a := protocol.ActiveSite{Namespace: g.Namespace, Group: g.Name, ActiveSite: g.Status.ActiveSite,
		TopologyGeneration: g.Status.TopologyGeneration, Transition: transition(g.Status.Transition)}
	if lf := g.Status.LastFailover; lf != nil && lf.Target == g.Status.ActiveSite && !lf.Time.IsZero() {
		t := lf.Time.UTC()
		a.Since = &t
	}
	return a
}

func transition(t *v1alpha1.Transition) *protocol.TransitionNotice {
	if t == nil {
		return nil
	}
	return &protocol.TransitionNotice{ID: t.ID, Kind: string(t.Kind), SourceSite: t.SourceSite, TargetSite: t.TargetSite,
		TopologyGeneration: t.TopologyGeneration, Step: string(t.Step), StartTime: t.StartTime.UTC()}
}

// GroupStatus is one group's entry of the /status document, with the CR's
// values.
func GroupStatus(g *v1alpha1.MysqlFailoverGroup) protocol.GroupStatus {
	st := g.Status
	gs := protocol.GroupStatus{Namespace: g.Namespace, Name: g.Name, ActiveSite: st.ActiveSite,
		TopologyGeneration: st.TopologyGeneration, UpdatePhase: string(st.UpdatePhase),
		Transition: transition(st.Transition), Sites: []protocol.GroupSite{}}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c != nil {
		gs.Ready = string(c.Status)
	}
	if lf := st.LastFailover; lf != nil {
		gs.LastFailover = &protocol.LastFailover{Time: lf.Time.UTC(), Target: lf.Target, Source: lf.Source,
			Kind: string(lf.Kind), PromotionGTIDExecuted: lf.PromotionGTIDExecuted}
	}
	for _, s := range st.Sites {
		site := protocol.GroupSite{Name: s.Name, Role: string(s.Role), State: string(s.State), GTIDExecuted: s.GTIDExecuted}
		if s.Replication != "" || s.SourceHost != "" || s.SecondsBehindSource != nil {
			site.Replication = &protocol.GroupSiteReplication{State: string(s.Replication), SourceHost: s.SourceHost,
				SecondsBehindSource: s.SecondsBehindSource}
		}
		gs.Sites = append(gs.Sites, site)
	}
	return gs
}
