package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
)

// Client is the operator's client of a sidecar (and a test's client of
// either side). Addresses are host:port; every call takes its deadline from
// ctx.
type Client struct {
	// HTTP is the client to use; nil means http.DefaultClient.
	HTTP *http.Client
}

func (c Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c Client) do(ctx context.Context, method, u string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return err
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxBodyBytes))
		resp.Body.Close()
	}()
	return DecodeResponse(resp, out)
}

// SiteStatus GETs a sidecar's PathSidecarStatus.
func (c Client) SiteStatus(ctx context.Context, sidecarAddr string) (SiteStatus, error) {
	var s SiteStatus
	err := c.do(ctx, http.MethodGet, "http://"+sidecarAddr+PathSidecarStatus, nil, &s)
	return s, err
}

// PeerActiveSite GETs a sidecar's PathPeerActiveSite.
func (c Client) PeerActiveSite(ctx context.Context, sidecarAddr string) (PeerActiveSite, error) {
	var p PeerActiveSite
	err := c.do(ctx, http.MethodGet, "http://"+sidecarAddr+PathPeerActiveSite, nil, &p)
	return p, err
}

// Announce POSTs a transition announcement to a sidecar; the answer is the
// sidecar's view after taking it in (it no longer confirms the old site).
func (c Client) Announce(ctx context.Context, sidecarAddr string, a ActiveSite) (PeerActiveSite, error) {
	var p PeerActiveSite
	err := c.do(ctx, http.MethodPost, "http://"+sidecarAddr+PathPeerActiveSite, a, &p)
	return p, err
}

// FenceProof POSTs a fence-proof request to a sidecar (PathFenceProof).
func (c Client) FenceProof(ctx context.Context, sidecarAddr string, r FenceProofRequest) (FenceProof, error) {
	var p FenceProof
	err := c.do(ctx, http.MethodPost, "http://"+sidecarAddr+PathFenceProof, r, &p)
	return p, err
}

// ArchiverStatus GETs a sidecar's PathArchiverStatus.
func (c Client) ArchiverStatus(ctx context.Context, sidecarAddr string) (ArchiverStatus, error) {
	var s ArchiverStatus
	err := c.do(ctx, http.MethodGet, "http://"+sidecarAddr+PathArchiverStatus, nil, &s)
	return s, err
}

// KeyringStatus GETs a sidecar's PathKeyringStatus.
func (c Client) KeyringStatus(ctx context.Context, sidecarAddr string) (KeyringStatus, error) {
	var s KeyringStatus
	err := c.do(ctx, http.MethodGet, "http://"+sidecarAddr+PathKeyringStatus, nil, &s)
	return s, err
}

// ActiveSite GETs the operator's PathActiveSite for one group.
func (c Client) ActiveSite(ctx context.Context, operatorAddr, namespace, group string) (ActiveSite, error) {
	var a ActiveSite
	u := url.URL{Scheme: "http", Host: operatorAddr, Path: PathActiveSite,
		RawQuery: url.Values{QueryNamespace: {namespace}, QueryGroup: {group}}.Encode()}
	err := c.do(ctx, http.MethodGet, u.String(), nil, &a)
	return a, err
}
