package fencing

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func op(active string, gen int64, transition bool, validUntil float64) *View {
	return &View{ActiveSite: active, TopologyGeneration: gen, Transition: transition, ValidUntil: at(validUntil)}
}

func peer(name string, confirmed bool, active string, gen int64, transition bool, validUntil float64) PeerView {
	return PeerView{Peer: name, Confirmed: confirmed, View: View{ActiveSite: active, TopologyGeneration: gen, Transition: transition, ValidUntil: at(validUntil)}}
}

func TestDecideTable(t *testing.T) {
	cases := []struct {
		name       string
		in         Input
		wantFence  bool
		wantUnconf bool
		wantReason string
		wantBy     string
		wantUntil  float64 // seconds after t0; only checked when confirmed
	}{
		{
			name:       "operator confirms this site",
			in:         Input{Now: at(10), Site: "iad", Local: LocalWritable, Operator: op("iad", 3, false, 20)},
			wantReason: ReasonOperatorConfirms, wantBy: "operator", wantUntil: 20,
		},
		{
			name: "operator confirms even when every peer denies",
			in: Input{Now: at(10), Site: "iad", Local: LocalWritable, Operator: op("iad", 3, false, 20),
				Peers: []PeerView{peer("dfw", true, "dfw", 4, false, 30), peer("sjc", true, "iad", 3, true, 30)}},
			wantReason: ReasonOperatorConfirms, wantBy: "operator", wantUntil: 20,
		},
		{
			name:      "operator names another site",
			in:        Input{Now: at(10), Site: "iad", Local: LocalWritable, Operator: op("dfw", 4, false, 20)},
			wantFence: true, wantUnconf: true, wantReason: ReasonOperatorNamesOtherSite,
		},
		{
			name: "operator names another site, a peer still confirms: the operator wins",
			in: Input{Now: at(10), Site: "iad", Local: LocalWritable, Operator: op("dfw", 4, false, 20),
				Peers: []PeerView{peer("sjc", true, "iad", 4, false, 24)}},
			wantFence: true, wantUnconf: true, wantReason: ReasonOperatorNamesOtherSite,
		},
		{
			name:      "operator announces a transition to this very site",
			in:        Input{Now: at(10), Site: "iad", Local: LocalWritable, Operator: op("iad", 3, true, 20)},
			wantFence: true, wantUnconf: true, wantReason: ReasonOperatorAnnouncedChange,
		},
		{
			name: "operator is promoting this site: it vouches for it until it publishes it",
			in: Input{Now: at(10), Site: "dfw", Local: LocalWritable, Operator: promoting("iad", "dfw", 3, 20),
				Peers: []PeerView{peer("sjc", true, "iad", 3, true, 30)}},
			wantReason: ReasonOperatorConfirms, wantBy: "operator", wantUntil: 20,
		},
		{
			name:      "operator is promoting another site: the source is not confirmed",
			in:        Input{Now: at(10), Site: "iad", Local: LocalWritable, Operator: promoting("iad", "dfw", 3, 20)},
			wantFence: true, wantUnconf: true, wantReason: ReasonOperatorAnnouncedChange,
		},
		{
			name:      "a promotion vouched for expires with the operator's answer",
			in:        Input{Now: at(21), Site: "dfw", Local: LocalWritable, Operator: promoting("iad", "dfw", 3, 20)},
			wantFence: true, wantUnconf: true, wantReason: ReasonLeaseExpired,
		},
		{
			name: "a peer's report of a promotion confirms nothing",
			in: Input{Now: at(10), Site: "dfw", Local: LocalWritable,
				Peers: []PeerView{{Peer: "sjc", Confirmed: true, View: View{ActiveSite: "iad", TopologyGeneration: 3, Transition: true, PromotedTarget: "dfw", ValidUntil: at(30)}}}},
			wantFence: true, wantUnconf: true, wantReason: ReasonPeerDenies,
		},
		{
			name:      "operator names no site",
			in:        Input{Now: at(10), Site: "iad", Local: LocalWritable, Operator: op("", 0, false, 20)},
			wantFence: true, wantUnconf: true, wantReason: ReasonOperatorNamesNoSite,
		},
		{
			name:       "operator names another site but mysqld is already read-only",
			in:         Input{Now: at(10), Site: "iad", Local: LocalReadOnly, Operator: op("dfw", 4, false, 20)},
			wantUnconf: true, wantReason: ReasonOperatorNamesOtherSite,
		},
		{
			name:      "unknown local state fences",
			in:        Input{Now: at(10), Site: "iad", Local: LocalUnknown, Operator: op("dfw", 4, false, 20)},
			wantFence: true, wantUnconf: true, wantReason: ReasonOperatorNamesOtherSite,
		},
		{
			name:      "operator never answered, no peers",
			in:        Input{Now: at(10), Site: "iad", Local: LocalWritable},
			wantFence: true, wantUnconf: true, wantReason: ReasonLeaseExpired,
		},
		{
			name:      "operator answer expired exactly now",
			in:        Input{Now: at(20), Site: "iad", Local: LocalWritable, Operator: op("iad", 3, false, 20)},
			wantFence: true, wantUnconf: true, wantReason: ReasonLeaseExpired,
		},
		{
			name: "operator stale, a peer confirms",
			in: Input{Now: at(25), Site: "iad", Local: LocalWritable, Operator: op("iad", 3, false, 20),
				Peers: []PeerView{peer("dfw", true, "iad", 3, false, 31)}},
			wantReason: ReasonPeerConfirms, wantBy: "dfw", wantUntil: 31,
		},
		{
			name: "operator stale, two peers confirm: the longer validity counts",
			in: Input{Now: at(25), Site: "iad", Local: LocalWritable, Operator: op("iad", 3, false, 20),
				Peers: []PeerView{peer("dfw", true, "iad", 3, false, 31), peer("sjc", true, "iad", 3, false, 33)}},
			wantReason: ReasonPeerConfirms, wantBy: "sjc", wantUntil: 33,
		},
		{
			name: "peer's confirmation expired",
			in: Input{Now: at(31), Site: "iad", Local: LocalWritable, Operator: op("iad", 3, false, 20),
				Peers: []PeerView{peer("dfw", true, "iad", 3, false, 31)}},
			wantFence: true, wantUnconf: true, wantReason: ReasonLeaseExpired,
		},
		{
			name: "peer lost the operator too: neutral",
			in: Input{Now: at(25), Site: "iad", Local: LocalWritable, Operator: op("iad", 3, false, 20),
				Peers: []PeerView{peer("dfw", false, "iad", 3, false, 40)}},
			wantFence: true, wantUnconf: true, wantReason: ReasonLeaseExpired,
		},
		{
			name: "peer heard a transition",
			in: Input{Now: at(25), Site: "iad", Local: LocalWritable, Operator: op("iad", 3, false, 20),
				Peers: []PeerView{peer("dfw", true, "iad", 3, true, 40)}},
			wantFence: true, wantUnconf: true, wantReason: ReasonPeerDenies,
		},
		{
			name: "peers disagree at the same generation: the denial wins",
			in: Input{Now: at(25), Site: "iad", Local: LocalWritable, Operator: op("iad", 3, false, 20),
				Peers: []PeerView{peer("dfw", true, "iad", 3, false, 33), peer("sjc", true, "dfw", 3, false, 33)}},
			wantFence: true, wantUnconf: true, wantReason: ReasonPeerDenies,
		},
		{
			name: "peers disagree, the denial is from an older generation: the confirmation wins",
			in: Input{Now: at(25), Site: "iad", Local: LocalWritable, Operator: op("iad", 4, false, 20),
				Peers: []PeerView{peer("dfw", true, "iad", 4, false, 33), peer("sjc", true, "dfw", 3, false, 33)}},
			wantReason: ReasonPeerConfirms, wantBy: "dfw", wantUntil: 33,
		},
		{
			name: "a peer repeating a generation older than this sidecar's last operator answer does not confirm",
			in: Input{Now: at(25), Site: "iad", Local: LocalWritable, Operator: op("dfw", 5, false, 20),
				Peers: []PeerView{peer("sjc", true, "iad", 4, false, 33)}},
			wantFence: true, wantUnconf: true, wantReason: ReasonLeaseExpired,
		},
		{
			name: "a peer confirming another site is a denial",
			in: Input{Now: at(25), Site: "iad", Local: LocalWritable,
				Peers: []PeerView{peer("dfw", true, "dfw", 4, false, 33)}},
			wantFence: true, wantUnconf: true, wantReason: ReasonPeerDenies,
		},
		{
			name: "a stale denial is ignored",
			in: Input{Now: at(25), Site: "iad", Local: LocalWritable,
				Peers: []PeerView{peer("dfw", true, "dfw", 4, false, 24), peer("sjc", true, "iad", 4, false, 26)}},
			wantReason: ReasonPeerConfirms, wantBy: "sjc", wantUntil: 26,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.in)
			if d.Fence != c.wantFence || d.Unconfirmed != c.wantUnconf || d.Reason != c.wantReason {
				t.Fatalf("Decide = %+v; want fence=%v unconfirmed=%v reason=%s", d, c.wantFence, c.wantUnconf, c.wantReason)
			}
			if c.wantUnconf {
				if !d.ConfirmedUntil.IsZero() || d.ConfirmedBy != "" {
					t.Errorf("unconfirmed decision carries a confirmation: %+v", d)
				}
				return
			}
			if d.ConfirmedBy != c.wantBy || !d.ConfirmedUntil.Equal(at(c.wantUntil)) {
				t.Errorf("confirmed by %q until %v; want %q until %v", d.ConfirmedBy, d.ConfirmedUntil, c.wantBy, at(c.wantUntil))
			}
		})
	}
}

// world is a randomized history of one group: the operator confirms "iad"
// (generation 3) until cut, then announces a transition or names "dfw".
// Requests are sent at some time and answered a little later with the state
// at answer time, exactly as the sidecar and its peers experience them.
type world struct {
	cut        time.Time
	lease      time.Duration
	transition bool
}

func (w world) answerAt(t time.Time) View {
	if t.Before(w.cut) {
		return View{ActiveSite: "iad", TopologyGeneration: 3}
	}
	if w.transition {
		return View{ActiveSite: "iad", TopologyGeneration: 3, Transition: true}
	}
	return View{ActiveSite: "dfw", TopologyGeneration: 4}
}

// operatorAnswer is what a sidecar holds after asking the operator at send,
// answered after delay: valid for one lease from the send time.
func (w world) operatorAnswer(send time.Time, delay time.Duration) (View, time.Time) {
	v := w.answerAt(send.Add(delay))
	v.ValidUntil = send.Add(w.lease)
	return v, send.Add(delay)
}

// peerReport is what iad's sidecar holds after asking a peer at ask: the
// peer reports its own operator answer and the validity left on its clock;
// iad counts that from its own send time.
func (w world) peerReport(name string, peerOp View, peerReceived time.Time, ask, delay time.Duration, base time.Time) (PeerView, bool) {
	sent := base.Add(ask)
	answered := sent.Add(delay)
	if answered.Before(peerReceived) {
		return PeerView{}, false // the peer did not hold this answer yet
	}
	left := peerOp.ValidUntil.Sub(answered)
	pv := PeerView{Peer: name, View: peerOp}
	if left > 0 {
		pv.Confirmed = true
		pv.ValidUntil = sent.Add(left.Truncate(time.Millisecond))
	} else {
		pv.ValidUntil = sent
	}
	return pv, true
}

// TestRandomHistoriesKeepTheBound checks the property the operator relies
// on: once the operator stops confirming a site at cut, that site's sidecar
// decides "unconfirmed" at every moment from cut + lease on, whatever stale
// answers it and its peers still hold and however the network delays them.
// And while its own fresh operator answer confirms it, it never fences.
func TestRandomHistoriesKeepTheBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 2026))
	for i := 0; i < 20000; i++ {
		w := world{
			cut:        t0.Add(time.Duration(rng.IntN(60000)) * time.Millisecond),
			lease:      time.Duration(2000+rng.IntN(28000)) * time.Millisecond,
			transition: rng.IntN(2) == 0,
		}
		span := 120 * time.Second
		delay := func() time.Duration { return time.Duration(rng.IntN(1500)) * time.Millisecond }
		now := t0.Add(time.Duration(rng.Int64N(int64(span))))

		in := Input{Now: now, Site: "iad", Local: Writability(rng.IntN(3))}
		var opView *View
		if rng.IntN(5) > 0 {
			send := now.Add(-time.Duration(rng.Int64N(int64(span / 2))))
			d := delay()
			v, recv := w.operatorAnswer(send, d)
			if !recv.After(now) {
				opView = &v
			}
		}
		in.Operator = opView
		for _, name := range []string{"dfw", "sjc"} {
			if rng.IntN(3) == 0 {
				continue // unreachable peer
			}
			pSend := now.Add(-time.Duration(rng.Int64N(int64(span / 2))))
			pv, pRecv := w.operatorAnswer(pSend, delay())
			ask := -time.Duration(rng.Int64N(int64(5 * time.Second)))
			rep, ok := w.peerReport(name, pv, pRecv, ask, delay(), now)
			if ok {
				in.Peers = append(in.Peers, rep)
			}
		}
		d := Decide(in)
		desc := func() string { return fmt.Sprintf("case %d: world=%+v input=%+v decision=%+v", i, w, in, d) }

		if !now.Before(w.cut.Add(w.lease)) && !d.Unconfirmed {
			t.Fatalf("site still confirmed %s after the operator stopped confirming it (lease %s)\n%s", now.Sub(w.cut), w.lease, desc())
		}
		if !d.Unconfirmed && d.ConfirmedUntil.After(w.cut.Add(w.lease)) {
			t.Fatalf("confirmation runs until %s past the cut, beyond one lease %s\n%s", d.ConfirmedUntil.Sub(w.cut), w.lease, desc())
		}
		if opView != nil && now.Before(opView.ValidUntil) && opView.ActiveSite == "iad" && !opView.Transition && d.Unconfirmed {
			t.Fatalf("fenced while the operator's fresh answer confirms the site\n%s", desc())
		}
		if d.Fence && in.Local == LocalReadOnly {
			t.Fatalf("fence on a read-only mysqld\n%s", desc())
		}
		if d.Fence != (d.Unconfirmed && in.Local != LocalReadOnly) {
			t.Fatalf("fence does not follow unconfirmed\n%s", desc())
		}
	}
}

// TestRandomSequencesFencingIsSticky replays random event sequences through a
// tiny model of the loop: once the rule fenced (and mysqld went read-only),
// nothing the rule can output makes it writable again; only an explicit
// operator unfence does.
func TestRandomSequencesFencingIsSticky(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for seq := 0; seq < 2000; seq++ {
		local := LocalWritable
		now := t0
		var opv *View
		var peers []PeerView
		fenced := false
		for step := 0; step < 50; step++ {
			now = now.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)
			switch rng.IntN(5) {
			case 0: // operator confirms
				opv = &View{ActiveSite: "iad", TopologyGeneration: 3, ValidUntil: now.Add(10 * time.Second)}
			case 1: // operator names another site
				opv = &View{ActiveSite: "dfw", TopologyGeneration: 4, ValidUntil: now.Add(10 * time.Second)}
			case 2: // a peer confirms
				peers = []PeerView{{Peer: "dfw", Confirmed: true, View: View{ActiveSite: "iad", TopologyGeneration: 3, ValidUntil: now.Add(time.Duration(rng.IntN(10)) * time.Second)}}}
			case 3: // peers unreachable
				peers = nil
			case 4: // the operator unfences (only it may)
				if opv != nil && opv.ActiveSite == "iad" && now.Before(opv.ValidUntil) {
					local, fenced = LocalWritable, false
				}
			}
			d := Decide(Input{Now: now, Site: "iad", Local: local, Operator: opv, Peers: peers})
			if d.Fence {
				local, fenced = LocalReadOnly, true
			}
			if fenced && local != LocalReadOnly {
				t.Fatalf("seq %d step %d: a fenced site became writable without the operator", seq, step)
			}
			if local == LocalWritable && d.Unconfirmed {
				t.Fatalf("seq %d step %d: writable and unconfirmed after the decision: %+v", seq, step, d)
			}
		}
	}
}

// promoting is an operator answer during a transition from source to target
// at a step at or after Promoting.
func promoting(source, target string, gen int64, validUntil float64) *View {
	v := op(source, gen, true, validUntil)
	v.PromotedTarget = target
	return v
}
