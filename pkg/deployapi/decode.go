package deployapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/leasestore"
)

// TTL bounds of every grant and renewal (seconds). Values outside are
// clamped, not refused; an omitted ttlSeconds means DefaultTTLSeconds.
const (
	MinTTLSeconds     = 5
	MaxTTLSeconds     = 120
	DefaultTTLSeconds = 30
	// maxBodyBytes bounds a request body; the largest valid one is far smaller.
	maxBodyBytes = 4096
	// maxLeaseTokenLen bounds a lease token (ours are 43 characters).
	maxLeaseTokenLen = 256
)

// FieldError is a 400 answer naming the offending field.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

var (
	uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	// dnsSubdomain is a Kubernetes object name (a MysqlDatabase name).
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// dns1035 is a MysqlFailoverGroup name.
	dns1035 = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
)

// ParseOperationID accepts a UUID in its 8-4-4-4-12 form and returns it in
// lower case, so one operation has one spelling.
func ParseOperationID(field, s string) (string, error) {
	if !uuidPattern.MatchString(s) {
		return "", fieldErr(field, "must be a UUID (8-4-4-4-12 hexadecimal digits)")
	}
	return strings.ToLower(s), nil
}

// ValidGroupName reports whether s can name a MysqlFailoverGroup.
func ValidGroupName(s string) bool { return len(s) <= 63 && dns1035.MatchString(s) }

func parseInstance(field, s string) (string, error) {
	if s == "" {
		return "", fieldErr(field, "is required (the MysqlDatabase name)")
	}
	if len(s) > 253 || !dnsSubdomain.MatchString(s) {
		return "", fieldErr(field, "must be a MysqlDatabase name (a lowercase DNS subdomain of at most 253 characters)")
	}
	return s, nil
}

// ClampTTL applies the [MinTTLSeconds, MaxTTLSeconds] clamp.
func ClampTTL(seconds int64) time.Duration {
	seconds = max(MinTTLSeconds, min(MaxTTLSeconds, seconds))
	return time.Duration(seconds) * time.Second
}

// GrantRequest is a decoded POST .../leases body.
type GrantRequest struct {
	Kind        leasestore.Kind
	OperationID string
	Instance    string
	TTL         time.Duration
}

// RenewRequest is a decoded PUT .../leases/{kind}/{operationId} body.
type RenewRequest struct {
	Token string
	TTL   time.Duration
}

type grantBody struct {
	Kind        *string         `json:"kind"`
	OperationID *string         `json:"operationId"`
	Instance    *string         `json:"instance"`
	TTLSeconds  json.RawMessage `json:"ttlSeconds"`
}

type renewBody struct {
	Token      *string         `json:"token"`
	TTLSeconds json.RawMessage `json:"ttlSeconds"`
}

// DecodeGrant decodes and validates a grant body.
func DecodeGrant(body []byte) (GrantRequest, error) {
	var b grantBody
	if err := decodeStrict(body, &b); err != nil {
		return GrantRequest{}, err
	}
	var req GrantRequest
	if b.Kind == nil {
		return req, fieldErr("kind", "is required (migration or failover-hold)")
	}
	k, ok := leasestore.ParseKind(*b.Kind)
	if !ok {
		return req, fieldErr("kind", "must be migration or failover-hold")
	}
	req.Kind = k
	if b.OperationID == nil {
		return req, fieldErr("operationId", "is required (a UUID)")
	}
	var err error
	if req.OperationID, err = ParseOperationID("operationId", *b.OperationID); err != nil {
		return req, err
	}
	if b.Instance == nil {
		return req, fieldErr("instance", "is required (the MysqlDatabase name)")
	}
	if req.Instance, err = parseInstance("instance", *b.Instance); err != nil {
		return req, err
	}
	req.TTL, err = parseTTL(b.TTLSeconds)
	return req, err
}

// DecodeRenew decodes and validates a renewal body.
func DecodeRenew(body []byte) (RenewRequest, error) {
	var b renewBody
	if err := decodeStrict(body, &b); err != nil {
		return RenewRequest{}, err
	}
	var req RenewRequest
	if b.Token == nil || *b.Token == "" {
		return req, fieldErr("token", "is required (the lease token returned by the grant)")
	}
	if err := checkLeaseToken("token", *b.Token); err != nil {
		return req, err
	}
	req.Token = *b.Token
	var err error
	req.TTL, err = parseTTL(b.TTLSeconds)
	return req, err
}

// checkLeaseToken bounds a token's shape; its value is checked against the
// stored hash later.
func checkLeaseToken(field, t string) error {
	if len(t) > maxLeaseTokenLen {
		return fieldErr(field, "is longer than %d characters", maxLeaseTokenLen)
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] > '~' {
			return fieldErr(field, "must be printable ASCII")
		}
	}
	return nil
}

// parseTTL reads ttlSeconds from its raw JSON: absent or null means the
// default; it must be a JSON number (not a string) holding a whole number.
func parseTTL(raw json.RawMessage) (time.Duration, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || s == "null" {
		return DefaultTTLSeconds * time.Second, nil
	}
	if !wholeNumber.MatchString(s) {
		return 0, fieldErr("ttlSeconds", "must be a whole number of seconds")
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// A whole number too large for int64 is clamped like any large value.
		if strings.HasPrefix(s, "-") {
			return ClampTTL(MinTTLSeconds), nil
		}
		return ClampTTL(MaxTTLSeconds), nil
	}
	return ClampTTL(v), nil
}

var wholeNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// decodeStrict decodes one JSON object, refusing unknown fields, wrong
// types and trailing data with an error that names the field.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeJSONError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fieldErr("body", "must hold exactly one JSON object")
	}
	return nil
}

func describeJSONError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return fieldErr(field, "has the wrong JSON type (%s)", typeErr.Value)
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		name := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
		if name == "" {
			return fieldErr("body", "has a field with an empty name")
		}
		return fieldErr(name, "is not a known field")
	}
	if errors.Is(err, io.EOF) {
		return fieldErr("body", "is empty; a JSON object is required")
	}
	return fieldErr("body", "is not valid JSON")
}

// leasePath is a parsed /deploy/v1/groups/... path.
type leasePath struct {
	Group       string
	Leases      bool   // .../leases
	Kind        string // .../leases/{kind}/{operationId}
	OperationID string
}

const pathPrefix = "/deploy/v1/groups/"

// parsePath splits a request path. ok is false for any path the API does
// not serve.
func parsePath(p string) (leasePath, bool) {
	rest, found := strings.CutPrefix(p, pathPrefix)
	if !found {
		return leasePath{}, false
	}
	parts := strings.Split(rest, "/")
	if parts[0] == "" {
		return leasePath{}, false
	}
	lp := leasePath{Group: parts[0]}
	switch {
	case len(parts) == 1:
		return lp, true
	case len(parts) == 2 && parts[1] == "leases":
		lp.Leases = true
		return lp, true
	case len(parts) == 4 && parts[1] == "leases" && parts[2] != "" && parts[3] != "":
		lp.Leases, lp.Kind, lp.OperationID = true, parts[2], parts[3]
		return lp, true
	}
	return leasePath{}, false
}
