package sidecar

import (
	"net/http"
	"time"

	"github.com/shipstream/bloodraven/pkg/protocol"
)

// Capabilities this sidecar advertises.
var Capabilities = []string{protocol.CapabilityLivez, protocol.CapabilitySelfFenceV1, protocol.CapabilityTransitionPush, protocol.CapabilityFenceProof}

// Handler serves the sidecar's endpoints. None of them waits for mysqld:
// they answer from the fencing loop's latest round.
func (s *Sidecar) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+protocol.PathPeerPing, func(w http.ResponseWriter, _ *http.Request) {
		protocol.WriteJSON(w, http.StatusOK, protocol.Ping{Site: s.cfg.Site, SidecarVersion: s.cfg.Version})
	})
	mux.HandleFunc("GET "+protocol.PathHealth, func(w http.ResponseWriter, _ *http.Request) {
		h := s.Health()
		code := http.StatusOK
		if !h.Ready {
			code = http.StatusServiceUnavailable
		}
		protocol.WriteJSON(w, code, h)
	})
	mux.HandleFunc("GET "+protocol.PathLivez, func(w http.ResponseWriter, _ *http.Request) {
		l := s.Livez()
		code := http.StatusOK
		if !l.Live {
			code = http.StatusServiceUnavailable
		}
		protocol.WriteJSON(w, code, l)
	})
	mux.HandleFunc("GET "+protocol.PathSidecarStatus, func(w http.ResponseWriter, _ *http.Request) {
		protocol.WriteJSON(w, http.StatusOK, s.Status())
	})
	mux.HandleFunc("GET "+protocol.PathPeerActiveSite, func(w http.ResponseWriter, _ *http.Request) {
		protocol.WriteJSON(w, http.StatusOK, s.PeerView())
	})
	mux.HandleFunc("POST "+protocol.PathPeerActiveSite, s.servePush)
	mux.HandleFunc("POST "+protocol.PathFenceProof, s.serveFenceProof)
	mux.HandleFunc("GET "+protocol.PathArchiverStatus, func(w http.ResponseWriter, _ *http.Request) {
		protocol.WriteJSON(w, http.StatusOK, protocol.ArchiverStatus{Enabled: false, State: protocol.StateDisabled,
			Message: "binlog archival is not built into this sidecar yet"})
	})
	mux.HandleFunc("GET "+protocol.PathKeyringStatus, func(w http.ResponseWriter, _ *http.Request) {
		protocol.WriteJSON(w, http.StatusOK, protocol.KeyringStatus{Enabled: false, State: protocol.StateDisabled,
			Message: "keyring escrow is not built into this sidecar yet"})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		protocol.WriteError(w, http.StatusNotFound, protocol.ErrorNotFound, "no route "+r.Method+" "+r.URL.Path)
	})
	return mux
}

func (s *Sidecar) servePush(w http.ResponseWriter, r *http.Request) {
	var a protocol.ActiveSite
	if err := protocol.Decode(http.MaxBytesReader(w, r.Body, protocol.MaxBodyBytes), &a); err != nil {
		protocol.WriteError(w, http.StatusBadRequest, protocol.ErrorBadRequest, "body: "+err.Error())
		return
	}
	if err := s.Announce(a); err != nil {
		protocol.WriteError(w, http.StatusConflict, protocol.ErrorConflict, err.Error())
		return
	}
	protocol.WriteJSON(w, http.StatusOK, s.PeerView())
}

// Health is the readiness answer.
func (s *Sidecar) Health() protocol.Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.st.obs
	if o == nil {
		return Readiness(false, "not observed yet", "", false)
	}
	// An observation older than two rounds is no evidence of health.
	if age := time.Since(o.at); age > 2*(s.cfg.PeerCheckInterval+s.cfg.RequestTimeout) {
		return Readiness(false, "last observation is "+age.Truncate(time.Millisecond).String()+" old", "", false)
	}
	if o.err != nil {
		return Readiness(false, o.err.Error(), "", false)
	}
	return Readiness(true, "", Role(o.obs, o.repl), s.st.decision.Unconfirmed)
}

// Livez fails when the fencing loop has not completed a round for longer
// than WedgedAfter: a wedged loop cannot fence, so the kubelet should
// restart the sidecar.
func (s *Sidecar) Livez() protocol.Livez {
	s.mu.Lock()
	defer s.mu.Unlock()
	age := s.clock().Sub(s.st.lastProgress)
	l := protocol.Livez{Live: age <= s.cfg.WedgedAfter, FencingLoopLastProgressAgeMillis: age.Milliseconds()}
	if !l.Live {
		l.Reason = "fencing loop has not completed a round for " + age.Truncate(time.Millisecond).String() +
			" (limit " + s.cfg.WedgedAfter.String() + ")"
	}
	return l
}

// Status is the /status document. The process is looked at afresh (a few
// reads of /proc): the operator asks when a poll of mysqld failed, and the
// answer tells it whether mysqld exited (docs/topology.md, cadence).
func (s *Sidecar) Status() protocol.SiteStatus {
	s.lookAtProcess("")
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	st := protocol.SiteStatus{
		Namespace: s.cfg.Namespace, Group: s.cfg.Group, Site: s.cfg.Site,
		SidecarVersion: s.cfg.Version, Capabilities: Capabilities,
	}
	if o := s.st.obs; o != nil {
		at := o.at.UTC()
		age := time.Since(o.at).Milliseconds()
		st.ObservedAt, st.ObservationAgeMillis = &at, &age
		m := &protocol.MySQLStatus{Reachable: o.err == nil, Role: protocol.RoleUnknown}
		if o.err != nil {
			m.Error = o.err.Error()
		} else {
			ro, sro := o.obs.ReadOnly, o.obs.SuperReadOnly
			m.Role, m.Version = Role(o.obs, o.repl), o.obs.Version
			m.ServerUUID, m.ServerID = o.obs.ServerUUID, o.obs.ServerID
			m.ReadOnly, m.SuperReadOnly = &ro, &sro
			m.GTIDExecuted, m.GTIDPurged = o.obs.GTIDExecuted.OneLine(), o.obs.GTIDPurged.OneLine()
			m.Replication = replicationStatus(o.repl)
		}
		st.MySQL = m
	}
	f := &protocol.FencingStatus{
		View: s.peerViewLocked(now), LastDecision: s.st.decision.Reason, SelfFenceCount: s.st.fenceCount,
		LeaseTimeout: s.cfg.LeaseTimeout.String(), PeerCheckInterval: s.cfg.PeerCheckInterval.String(),
	}
	f.OperatorError = s.st.operatorErr
	for _, p := range s.cfg.Peers {
		ps := s.st.peers[p.Site]
		f.Peers = append(f.Peers, protocol.PeerState{Site: p.Site, Reachable: ps.reachable, Error: ps.err,
			ConfirmsThisSite: ps.view != nil && ps.view.Confirmed && now.Before(ps.view.ValidUntil) &&
				ps.view.ActiveSite == s.cfg.Site && !ps.view.Transition})
	}
	if d := s.st.decision; !d.Unconfirmed && d.ConfirmedUntil.After(now) {
		f.LocalConfirmedForMillis = d.ConfirmedUntil.Sub(now).Milliseconds()
	}
	if !s.st.decisionAt.IsZero() {
		t := s.st.decisionAt.UTC()
		f.LastDecisionAt = &t
	}
	if !s.st.selfFencedAt.IsZero() {
		t := s.st.selfFencedAt.UTC()
		f.SelfFencedAt = &t
	}
	st.Fencing = f
	st.Process = s.processStatusLocked()
	if p := st.Process; p != nil && p.Exited && st.MySQL != nil {
		// The round's observation predates the exit that was just seen.
		st.MySQL = &protocol.MySQLStatus{Reachable: false, Role: protocol.RoleUnknown, Error: "mysqld's process has exited"}
	}
	return st
}

// processStatusLocked reports the recorded mysqld instance; nil without a
// pid file (no process is looked at).
func (s *Sidecar) processStatusLocked() *protocol.MySQLProcess {
	if s.proc == nil {
		return nil
	}
	inst, _ := s.instanceLocked()
	p := &protocol.MySQLProcess{Instance: inst}
	if i := s.st.instance; i != nil {
		p.Exited, p.Error = i.exited, i.err
	} else {
		p.Error = "no mysqld process has been seen running"
	}
	return p
}
