// Package logging sets up the operator's one log stream: log/slog JSON lines
// on stdout, with client-go's klog output bridged into the same handler so
// every line a Bloodraven process prints is one JSON object.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	mysqldriver "github.com/go-sql-driver/mysql"
	"k8s.io/klog/v2"
)

// ParseLevel accepts debug, info, warn or error (any case).
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", s)
	}
	return l, nil
}

// New returns a JSON logger writing to w at level. Attributes whose key names
// a secret are redacted (see redact), as a second line of defence behind the
// rule that secrets are never passed to a logger.
func New(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: redact}))
}

// Install makes logger the process default and routes klog (and so
// client-go, leader election and informers) through it. klog's records
// carry logger="klog": their messages and fields belong to the Kubernetes
// libraries, so the log schema (docs/logs.md) covers only their common
// fields.
//
// The MySQL driver's own messages (a connection reset under a pooled
// connection, say) would otherwise be plain text on stderr; they come
// through as WARN records with logger="mysql".
func Install(logger *slog.Logger) {
	slog.SetDefault(logger)
	klog.SetSlogLogger(logger.With(KlogKey, KlogValue))
	_ = mysqldriver.SetLogger(driverLog{logger.With(KlogKey, MySQLDriverValue)})
}

// KlogKey names the library a bridged record comes from: KlogValue for
// klog, MySQLDriverValue for the MySQL driver.
const (
	KlogKey          = "logger"
	KlogValue        = "klog"
	MySQLDriverValue = "mysql"
)

// driverLog is the MySQL driver's Logger (it calls Print with one
// preformatted message).
type driverLog struct{ l *slog.Logger }

func (d driverLog) Print(v ...any) { d.l.Warn(strings.TrimSpace(fmt.Sprint(v...))) }

// secretKeys are lower-cased substrings of attribute keys whose values must
// never reach a log line.
var secretKeys = []string{"password", "token", "secret", "authorization", "passphrase"}

// Redacted replaces the value of a secret-looking attribute.
const Redacted = "[redacted]"

func redact(_ []string, a slog.Attr) slog.Attr {
	k := strings.ToLower(a.Key)
	for _, s := range secretKeys {
		if strings.Contains(k, s) {
			return slog.String(a.Key, Redacted)
		}
	}
	return a
}

type ctxKey struct{}

// WithLogger stores a logger in ctx; From reads it back.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, ctxKey{}, l)
}

// From returns the logger stored in ctx, or the default logger.
func From(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(ctxKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}
