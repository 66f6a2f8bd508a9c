// Package deployclient is the client side of the deployment API
// (/deploy/v1, docs/deploy-api.md): a small HTTP client for grant, renew,
// release and observe, and a Runner that holds the migration lease and the
// failover hold around one migration command and follows the API's client
// rules (docs/deploy-api.md#client-rules).
//
// It depends on the standard library only, so the bloodraven-deploy binary
// links no Kubernetes client code.
package deployclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Lease kinds (docs/deploy-api.md#grant-a-lease-post-groupsgroupleases).
const (
	KindMigration    = "migration"
	KindFailoverHold = "failover-hold"
)

// leaseTokenHeader carries the lease token of a release.
const leaseTokenHeader = "X-Lease-Token"

// maxResponseBytes bounds a response body; real answers are far smaller.
const maxResponseBytes = 64 << 10

// Client speaks /deploy/v1. It keeps no token: the ServiceAccount token is
// read from TokenFile before every request, because the kubelet rotates
// the projected file (docs/deploy-api.md#who-may-call-it).
type Client struct {
	// BaseURL is the operator's TLS listener, e.g.
	// https://bloodraven.bloodraven.svc.cluster.local:8443 (a trailing
	// /deploy/v1 is accepted).
	BaseURL string
	// TokenFile is the projected ServiceAccount token.
	TokenFile string
	// HTTP sends the requests; it must verify the server (CA and hostname).
	HTTP *http.Client
}

// APIError is a non-success answer: the HTTP status and the stable `error`
// code of the body (docs/deploy-api.md#status-codes-and-error-bodies).
type APIError struct {
	Status         int
	Code           string
	Reason         string // 409 revoked: TopologyChanged or OperatorRevoked
	UnstableReason string // 423 unstable
	Field          string // 400 invalid_request
	Message        string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("deploy api: %d %s", e.Status, e.Code)
	for _, extra := range []string{e.Reason, e.UnstableReason, e.Field, e.Message} {
		if extra != "" {
			s += ": " + extra
		}
	}
	return s
}

// AsAPIError returns the APIError in err's chain, if any.
func AsAPIError(err error) (*APIError, bool) {
	var ae *APIError
	ok := errors.As(err, &ae)
	return ae, ok
}

// Lease is a grant's or a renewal's answer. Token is set by grants only.
type Lease struct {
	Group              string `json:"group"`
	Namespace          string `json:"namespace"`
	Kind               string `json:"kind"`
	OperationID        string `json:"operationId"`
	Instance           string `json:"instance"`
	Token              string `json:"token"`
	ExpiresAt          string `json:"expiresAt"`
	TTLSeconds         int64  `json:"ttlSeconds"`
	TopologyGeneration int64  `json:"topologyGeneration"`
}

// TTL is the TTL the operator applied (after its clamp).
func (l Lease) TTL() time.Duration { return time.Duration(l.TTLSeconds) * time.Second }

// GroupDocument is the part of GET /groups/{group} a client acts on.
type GroupDocument struct {
	Group              string `json:"group"`
	Namespace          string `json:"namespace"`
	ActiveSite         string `json:"activeSite"`
	TopologyGeneration int64  `json:"topologyGeneration"`
	Stable             bool   `json:"stable"`
	UnstableReason     string `json:"unstableReason"`
}

// Grant asks for a lease of kind for operation op on instance.
func (c *Client) Grant(ctx context.Context, group, kind, op, instance string, ttl time.Duration) (Lease, error) {
	body := map[string]any{"kind": kind, "operationId": op, "instance": instance, "ttlSeconds": int64(ttl / time.Second)}
	var l Lease
	err := c.do(ctx, http.MethodPost, c.groupPath(group)+"/leases", nil, body, nil, http.StatusCreated, &l)
	return l, err
}

// Renew extends the lease kind/op. instance disambiguates the group's
// namespace (docs/deploy-api.md#who-may-call-it).
func (c *Client) Renew(ctx context.Context, group, kind, op, instance, leaseToken string, ttl time.Duration) (Lease, error) {
	body := map[string]any{"token": leaseToken, "ttlSeconds": int64(ttl / time.Second)}
	var l Lease
	err := c.do(ctx, http.MethodPut, c.leasePath(group, kind, op), instanceQuery(instance), body, nil, http.StatusOK, &l)
	return l, err
}

// Release ends the lease kind/op; releasing an absent lease succeeds.
func (c *Client) Release(ctx context.Context, group, kind, op, instance, leaseToken string) error {
	h := map[string]string{leaseTokenHeader: leaseToken}
	return c.do(ctx, http.MethodDelete, c.leasePath(group, kind, op), instanceQuery(instance), nil, h, http.StatusNoContent, nil)
}

// Observe reads the group document (an observation, never permission).
func (c *Client) Observe(ctx context.Context, group, instance string) (GroupDocument, error) {
	var d GroupDocument
	err := c.do(ctx, http.MethodGet, c.groupPath(group), instanceQuery(instance), nil, nil, http.StatusOK, &d)
	return d, err
}

func instanceQuery(instance string) url.Values {
	if instance == "" {
		return nil
	}
	return url.Values{"instance": {instance}}
}

func (c *Client) groupPath(group string) string {
	base := strings.TrimSuffix(strings.TrimSuffix(c.BaseURL, "/"), "/deploy/v1")
	return base + "/deploy/v1/groups/" + url.PathEscape(group)
}

func (c *Client) leasePath(group, kind, op string) string {
	return c.groupPath(group) + "/leases/" + url.PathEscape(kind) + "/" + url.PathEscape(op)
}

// bearer rereads the token file (never cached, never logged).
func (c *Client) bearer() (string, error) {
	b, err := os.ReadFile(c.TokenFile)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", errors.New("token file is empty")
	}
	return tok, nil
}

func (c *Client) do(ctx context.Context, method, u string, q url.Values, body any, header map[string]string, want int, out any) error {
	req, err := c.newRequest(ctx, method, u, q, body)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("read %s answer: %w", method, err)
	}
	if resp.StatusCode != want {
		return decodeAPIError(resp.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode %s answer: %w", method, err)
	}
	return nil
}

func (c *Client) newRequest(ctx context.Context, method, u string, q url.Values, body any) (*http.Request, error) {
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	tok, err := c.bearer()
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

func decodeAPIError(status int, raw []byte) error {
	var b struct {
		Error          string `json:"error"`
		Reason         string `json:"reason"`
		UnstableReason string `json:"unstableReason"`
		Field          string `json:"field"`
		Message        string `json:"message"`
	}
	_ = json.Unmarshal(raw, &b)
	return &APIError{Status: status, Code: b.Error, Reason: b.Reason, UnstableReason: b.UnstableReason, Field: b.Field, Message: b.Message}
}
