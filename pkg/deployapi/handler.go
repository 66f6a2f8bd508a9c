// Package deployapi serves /deploy/v1, the deployment API
// (docs/deploy-api.md, in the v1.7.0 vocabulary of docs/api.md): group
// observation, migration leases and failover holds for application
// deployment tooling.
//
// Every request is authenticated with a TokenReview for the configured
// audience and authorized from MysqlDatabase objects read uncached. Leases
// live in the API server (package leasestore), so the handler keeps no
// lease state in memory. The operator mounts the handler on its TLS
// listener only, behind its leader guard.
package deployapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/shipstream/bloodraven/generated/clientset/versioned"
	"github.com/shipstream/bloodraven/pkg/leasestore"
)

// DefaultAudience is the TokenReview audience deployment clients' projected
// tokens must carry.
const DefaultAudience = "bloodraven-deploy"

// Config configures the handler.
type Config struct {
	// Kube runs TokenReviews; Shipstream reads MysqlDatabases and groups.
	Kube       kubernetes.Interface
	Shipstream versioned.Interface
	// Store persists leases (share one with the deploy-lease controller).
	Store *leasestore.Store
	// Audience of accepted tokens; empty means DefaultAudience.
	Audience string
	// Namespaces the operator watches; empty means all.
	Namespaces []string
	// Logger receives the one "deploy api" record per request.
	Logger *slog.Logger
	// Now is the operator clock; nil means time.Now.
	Now func() time.Time
	// IsLeader, if set, makes the handler answer 503 not_leader itself while
	// it returns false (the operator's leader guard does the same in front).
	IsLeader func() bool
	// Registerer, if set, receives the request metrics
	// (bloodraven_deploy_api_requests_total{handler,group,code} and
	// bloodraven_deploy_api_request_duration_seconds{handler}).
	Registerer prometheus.Registerer
	// TokenCacheTTL and TokenCacheSize override the authentication cache
	// bounds (15 s, 1,024 entries); tests only.
	TokenCacheTTL  time.Duration
	TokenCacheSize int
}

// Handler serves /deploy/v1.
type Handler struct {
	cfg   Config
	now   func() time.Time
	log   *slog.Logger
	authn *authenticator
	authz *authorizer
	store *leasestore.Store
	m     *requestMetrics
}

// NewHandler validates cfg and builds the handler.
func NewHandler(cfg Config) (*Handler, error) {
	if cfg.Kube == nil || cfg.Shipstream == nil || cfg.Store == nil {
		return nil, errors.New("deployapi: Config.Kube, Config.Shipstream and Config.Store are required")
	}
	if cfg.Audience == "" {
		cfg.Audience = DefaultAudience
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TokenCacheTTL <= 0 {
		cfg.TokenCacheTTL = DefaultTokenCacheTTL
	}
	if cfg.TokenCacheSize <= 0 {
		cfg.TokenCacheSize = DefaultTokenCacheSize
	}
	m, err := newRequestMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Handler{
		m:     m,
		cfg:   cfg,
		now:   cfg.Now,
		log:   cfg.Logger,
		authn: newAuthenticator(cfg.Kube, cfg.Audience, cfg.Now, cfg.TokenCacheTTL, cfg.TokenCacheSize),
		authz: &authorizer{client: cfg.Shipstream, namespaces: cfg.Namespaces},
		store: cfg.Store,
	}, nil
}

// RefusesFollowers reports whether the handler answers 503 not_leader by
// itself while the process does not lead (Config.IsLeader is set); the
// operator's leader guard then lets a follower's request through, so it is
// logged and counted like any other (operator.FollowerRefuser).
func (h *Handler) RefusesFollowers() bool { return h.cfg.IsLeader != nil }

// ServeHTTP routes, authenticates, and logs exactly one record per request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &requestLog{handler: "unknown"}
	sw := &statusWriter{ResponseWriter: w}
	defer func() { h.logRequest(r, rec, sw.status(), time.Since(start)) }()
	h.serve(sw, r, rec)
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, rec *requestLog) {
	if h.cfg.IsLeader != nil && !h.cfg.IsLeader() {
		writeError(w, rec, http.StatusServiceUnavailable, "not_leader", nil)
		return
	}
	p, ok := parsePath(r.URL.Path)
	if !ok {
		writeError(w, rec, http.StatusNotFound, "not_found", map[string]any{"message": "no such endpoint"})
		return
	}
	var route func(http.ResponseWriter, *http.Request, *requestLog, leasePath)
	switch {
	case !p.Leases && r.Method == http.MethodGet:
		rec.handler, route = "getGroup", h.getGroup
	case p.Leases && p.Kind == "" && r.Method == http.MethodPost:
		rec.handler, route = "grantLease", h.grantLease
	case p.Kind != "" && r.Method == http.MethodPut:
		rec.handler, route = "renewLease", h.renewLease
	case p.Kind != "" && r.Method == http.MethodDelete:
		rec.handler, route = "releaseLease", h.releaseLease
	default:
		writeError(w, rec, http.StatusMethodNotAllowed, "method_not_allowed", map[string]any{"message": fmt.Sprintf("%s is not served on this path", r.Method)})
		return
	}
	caller, err := h.authenticate(r)
	if err != nil {
		if errors.Is(err, errUnauthenticated) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="bloodraven-deploy"`)
			writeError(w, rec, http.StatusUnauthorized, "unauthenticated", nil)
		} else {
			h.internal(w, rec, "token review failed", err)
		}
		return
	}
	rec.caller = caller.String()
	if !ValidGroupName(p.Group) {
		writeForbidden(w, rec)
		return
	}
	route(w, r.WithContext(withCaller(r.Context(), caller)), rec, p)
}

func (h *Handler) authenticate(r *http.Request) (Caller, error) {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return Caller{}, errUnauthenticated
	}
	return h.authn.authenticate(r.Context(), token)
}

// internal answers 500 and records the cause in the request log (API server
// errors carry no secrets).
func (h *Handler) internal(w http.ResponseWriter, rec *requestLog, what string, err error) {
	rec.cause = what + ": " + err.Error()
	writeError(w, rec, http.StatusInternalServerError, "internal_error", nil)
}
