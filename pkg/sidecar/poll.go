package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/shipstream/bloodraven/pkg/protocol"
	"github.com/shipstream/bloodraven/pkg/sidecar/fencing"
)

// notLeaderRetries is how many more times a round asks the operator after a
// not-leader answer: the auxiliary Service spreads requests over every
// operator replica, and only the leader answers.
const notLeaderRetries = 2

// pollOperator asks the operator which site is active. The answer counts
// from the moment the request was sent, which is never later than the
// moment the operator computed it.
func (s *Sidecar) pollOperator(ctx context.Context) {
	u := url.URL{Scheme: "http", Host: s.cfg.OperatorEndpoint, Path: protocol.PathActiveSite,
		RawQuery: url.Values{protocol.QueryNamespace: {s.cfg.Namespace}, protocol.QueryGroup: {s.cfg.Group}}.Encode()}
	var err error
	for attempt := 0; attempt <= notLeaderRetries; attempt++ {
		sent := s.clock()
		var a protocol.ActiveSite
		err = s.getJSON(ctx, u.String(), &a)
		if err == nil {
			err = s.checkIdentity(a)
		}
		if err == nil {
			s.recordOperator(a, sent, true)
			return
		}
		if !protocol.IsNotLeader(err) {
			break
		}
	}
	s.mu.Lock()
	changed := s.st.operatorErr == ""
	s.st.operatorErr = err.Error()
	s.mu.Unlock()
	if changed {
		s.log.Warn("operator unreachable", "operatorEndpoint", s.cfg.OperatorEndpoint, "err", err)
	}
}

func (s *Sidecar) checkIdentity(a protocol.ActiveSite) error {
	if a.Namespace != s.cfg.Namespace || a.Group != s.cfg.Group {
		return fmt.Errorf("operator answered for group %s/%s, not %s/%s", a.Namespace, a.Group, s.cfg.Namespace, s.cfg.Group)
	}
	return nil
}

// pollPeer asks one peer what it last heard from the operator.
func (s *Sidecar) pollPeer(ctx context.Context, p Peer) {
	sent := s.clock()
	var r protocol.PeerActiveSite
	err := s.getJSON(ctx, "http://"+p.Addr+protocol.PathPeerActiveSite, &r)
	if err == nil && r.Site != p.Site {
		err = fmt.Errorf("peer at %s says it is site %q, not %q", p.Addr, r.Site, p.Site)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.st.peers[p.Site]
	if err != nil {
		if ps.reachable || ps.err == "" {
			s.log.Info("peer sidecar unreachable", "peer", p.Site, "err", err)
		}
		// An unreachable peer's last report keeps its own expiry; a
		// confirmation in it cannot outlive that.
		ps.reachable, ps.err = false, err.Error()
		return
	}
	validFor := time.Duration(r.ValidForMillis) * time.Millisecond
	// No peer's word counts longer than this sidecar's own lease: a peer
	// that is buggy, or still runs with a longer lease from before a spec
	// change, cannot stretch it further.
	validFor = min(validFor, s.cfg.LeaseTimeout)
	pv := &fencing.PeerView{Peer: p.Site, Confirmed: r.Confirmed && validFor > 0, View: fencing.View{
		ActiveSite: r.ActiveSite, TopologyGeneration: r.TopologyGeneration, Transition: r.Transition != nil,
		ValidUntil: sent.Add(validFor),
	}}
	ps.view, ps.reachable, ps.err = pv, true, ""
}

func (s *Sidecar) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, protocol.MaxBodyBytes))
		resp.Body.Close()
	}()
	return protocol.DecodeResponse(resp, v)
}

// errPushConfirms refuses a pushed announcement that would confirm this site.
var errPushConfirms = errors.New("a pushed announcement can only withdraw a confirmation; this one names this site as active without a transition")

// Announce records an announcement the operator pushed (POST
// /peer/active-site): a transition in progress, or another active site.
// It counts from now, and the loop runs a round at once.
func (s *Sidecar) Announce(a protocol.ActiveSite) error {
	if err := s.checkIdentity(a); err != nil {
		return err
	}
	if a.Confirms(s.cfg.Site) {
		return errPushConfirms
	}
	if s.recordOperator(a, s.clock(), false) {
		s.log.Info("operator announcement received", "activeSite", a.ActiveSite, "transition", a.Transition != nil,
			"topologyGeneration", a.TopologyGeneration)
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}
