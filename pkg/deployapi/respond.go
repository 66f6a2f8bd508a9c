package deployapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"
)

// requestLog collects the fields of a request's one log record. Handlers
// fill group and namespace only once the caller is authorized for them, so
// arbitrary paths never reach a log field or a metric label.
type requestLog struct {
	handler     string
	group       string
	namespace   string
	instance    string
	operationID string
	caller      string
	errCode     string
	cause       string
}

// logRequest writes the record: msg "deploy api" with the contract's fields
// (duration_ms keeps its spelling by contract). Never a token, an
// Authorization header or a hash.
func (h *Handler) logRequest(r *http.Request, rec *requestLog, status int, d time.Duration) {
	attrs := []slog.Attr{
		slog.String("handler", rec.handler),
		slog.String("method", r.Method),
		slog.String("group", rec.group),
		slog.String("instance", rec.instance),
		slog.String("namespace", rec.namespace),
		slog.String("operationId", rec.operationID),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
	}
	if rec.caller != "" {
		attrs = append(attrs, slog.String("caller", rec.caller))
	}
	if rec.errCode != "" {
		attrs = append(attrs, slog.String("error", rec.errCode))
	}
	h.m.observe(rec, status, d)
	level := slog.LevelInfo
	if rec.cause != "" {
		level = slog.LevelError
		attrs = append(attrs, slog.String("cause", rec.cause))
	}
	h.log.LogAttrs(r.Context(), level, "deploy api", attrs...)
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers {"error": code, ...extra}. code is one of the stable
// codes documented in docs/deploy-api.md.
func writeError(w http.ResponseWriter, rec *requestLog, status int, code string, extra map[string]any) {
	rec.errCode = code
	body := map[string]any{"error": code}
	for k, v := range extra {
		body[k] = v
	}
	writeJSON(w, status, body)
}

// writeForbidden is the one 403 body, identical whether or not the group
// exists.
func writeForbidden(w http.ResponseWriter, rec *requestLog) {
	rec.group, rec.namespace = "", ""
	writeError(w, rec, http.StatusForbidden, "forbidden", nil)
}

type callerKey struct{}

func withCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

func callerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}
