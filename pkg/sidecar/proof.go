package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/shipstream/bloodraven/pkg/protocol"
)

// keptAcks bounds the transitions whose first sighting the sidecar keeps.
const keptAcks = 16

// errNotThisSource refuses a proof request about a transition that does
// not move the active site away from this sidecar's site.
var errNotThisSource = errors.New("the announcement's transition does not have this site as its source")

// FenceProof answers PathFenceProof (docs/safety.md, "Proof from the old
// primary's sidecar"). It first takes in the announcement, so its fencing
// rule fences the site, and fences it again, from now on; only then does it
// look: at the recorded instance's process and, while that runs, at
// super_read_only as mysqld answers it.
func (s *Sidecar) FenceProof(ctx context.Context, req protocol.FenceProofRequest) (protocol.FenceProof, error) {
	a := req.Announcement
	t := a.Transition
	if t == nil || t.ID == "" || t.SourceSite != s.cfg.Site {
		return protocol.FenceProof{}, errNotThisSource
	}
	if err := s.Announce(a); err != nil {
		return protocol.FenceProof{}, err
	}
	acked := s.ack(t.ID)
	looked := s.clock()
	p := s.look(ctx)
	now := s.clock()
	p.Site, p.TransitionID = s.cfg.Site, t.ID
	p.AckAgeMillis, p.ObservedAgeMillis = now.Sub(acked).Milliseconds(), now.Sub(looked).Milliseconds()
	return p, nil
}

// ack records when the sidecar first held transition id and returns it.
func (s *Sidecar) ack(id string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.st.acks[id]; ok {
		return at
	}
	if s.st.acks == nil || len(s.st.acks) >= keptAcks {
		s.st.acks = map[string]time.Time{}
	}
	at := s.clock()
	s.st.acks[id] = at
	return at
}

// look establishes a verdict now. The process first: an exited instance
// needs no answer from mysqld. Otherwise mysqld's own super_read_only, read
// within one request timeout; anything else is no proof.
func (s *Sidecar) look(ctx context.Context) protocol.FenceProof {
	s.lookAtProcess("")
	s.mu.Lock()
	inst, known := s.instanceLocked()
	exited, why := s.st.instance != nil && s.st.instance.exited, ""
	if s.st.instance != nil {
		why = s.st.instance.err
	}
	s.mu.Unlock()
	p := protocol.FenceProof{Verdict: protocol.ProofNone, Instance: inst}
	switch {
	case s.proc != nil && !known:
		p.Reason = "no mysqld process has been seen running in this pod"
		if why != "" {
			p.Reason += ": " + why
		}
		return p
	case exited:
		p.Verdict = protocol.ProofExited
		return p
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	o, err := s.db.Observe(ctx)
	switch {
	case err != nil:
		p.Reason = "mysqld did not answer: " + err.Error()
	case !o.SuperReadOnly:
		p.Reason = "mysqld answers super_read_only=OFF"
	case inst.ServerUUID != "" && o.ServerUUID != inst.ServerUUID:
		p.Reason = fmt.Sprintf("mysqld answers as server %s, not %s", o.ServerUUID, inst.ServerUUID)
	default:
		p.Verdict = protocol.ProofFenced
		p.Instance.ServerUUID = o.ServerUUID
	}
	return p
}

func (s *Sidecar) serveFenceProof(w http.ResponseWriter, r *http.Request) {
	var req protocol.FenceProofRequest
	if err := protocol.Decode(http.MaxBytesReader(w, r.Body, protocol.MaxBodyBytes), &req); err != nil {
		protocol.WriteError(w, http.StatusBadRequest, protocol.ErrorBadRequest, "body: "+err.Error())
		return
	}
	p, err := s.FenceProof(r.Context(), req)
	if err != nil {
		protocol.WriteError(w, http.StatusConflict, protocol.ErrorConflict, err.Error())
		return
	}
	protocol.WriteJSON(w, http.StatusOK, p)
}
