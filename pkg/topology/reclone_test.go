package topology

import (
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

const groupUID = "9b2f0c1e-5d7a-4c39-8e11-0a1b2c3d4e5f"

func TestParseRecloneValue(t *testing.T) {
	good, err := ParseRecloneValue("pdx:confirm=orders:uid=" + groupUID + ":gtidPrefix=2222AAAA")
	if err != nil || good.Site != "pdx" || good.Confirm != "orders" || good.UID != groupUID || good.GTIDPrefix != "2222aaaa" {
		t.Fatalf("parse = %+v, %v", good, err)
	}
	for value, wantErr := range map[string]string{
		"":                                   "site name",
		":confirm=orders:uid=x":              "site name",
		"pdx":                                "confirm=<group name> is missing",
		"pdx:confirm=orders":                 "uid=<group uid> is missing",
		"pdx:orders":                         `part "orders" is not key=value`,
		"pdx:confirm=orders:uid=x:color=red": `unknown part "color"`,
		"pdx:confirm=orders:confirm=orders:uid=x": "confirm appears twice",
		"pdx:22222222":       "not key=value", // the v1.6.0 prefix form
		"pdx:confirm=:uid=x": "not key=value",
	} {
		_, err := ParseRecloneValue(value)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: error %v, want one containing %q", value, err, wantErr)
		}
	}
}

// divergedObs: pdx holds P:1-2 that iad lacks.
func divergedObs() map[string]SiteInput {
	obs := steadyObs()
	obs["pdx"] = site("pdx", false, "I:1-10,P:1-2", replicating(iadHost))
	return obs
}

func recloneInput(obs map[string]SiteInput, st v1alpha1.MysqlFailoverGroupStatus, value string) Input {
	in := newInput(obs, st)
	in.Reclone = &RecloneInput{Value: value, GroupUID: groupUID}
	return in
}

func TestRecloneRejected(t *testing.T) {
	full := "pdx:confirm=orders:uid=" + groupUID
	pfx := ":gtidPrefix=" + uPDX[:8]
	running := divergedObs()
	r := running["pdx"]
	r.Clone.Running, r.Clone.Donor = true, "iad"
	running["pdx"] = r
	cases := []struct {
		name, value, want string
		obs               map[string]SiteInput
		st                v1alpha1.MysqlFailoverGroupStatus
	}{
		{"wrong group", "pdx:confirm=payments:uid=" + groupUID + pfx, "does not name this group", divergedObs(), active(1, "iad")},
		{"wrong uid", "pdx:confirm=orders:uid=0000" + pfx, "not this group's uid", divergedObs(), active(1, "iad")},
		{"unknown site", "sea:confirm=orders:uid=" + groupUID, `"sea" is not in spec.sites`, divergedObs(), active(1, "iad")},
		{"active site", "iad:confirm=orders:uid=" + groupUID, "is the active site", divergedObs(), active(1, "iad")},
		{"diverged without prefix", full, "must add :gtidPrefix", divergedObs(), active(1, "iad")},
		{"prefix too short", full + ":gtidPrefix=" + uPDX[:7], "shorter than 8", divergedObs(), active(1, "iad")},
		{"prefix of another uuid", full + ":gtidPrefix=" + uIAD[:8], "matches no source UUID", divergedObs(), active(1, "iad")},
		{"prefix on a clean site", full + pfx, "holds no transactions site iad lacks", steadyObs(), active(1, "iad")},
		{"site unreachable", full + pfx, "not reachable", with(divergedObs(), "pdx", unreachable()), active(1, "iad")},
		{"active unreachable", full + pfx, "not observed writable", with(divergedObs(), "iad", unreachable()), active(1, "iad")},
		{"clone running", full + pfx, "already running", running, active(1, "iad")},
		{"no active site", full, "no settled active site", divergedObs(), v1alpha1.MysqlFailoverGroupStatus{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(recloneInput(c.obs, c.st, c.value))
			if !d.ClearRecloneAnnotation {
				t.Fatal("annotation not cleared")
			}
			for _, a := range d.Actions {
				if a.Kind == Clone {
					t.Fatalf("clone issued: %+v", a)
				}
			}
			var msg string
			for _, e := range d.Events {
				if e.Reason == v1alpha1.EventRecloneRejected && e.Warning {
					msg = e.Message
				}
			}
			if !strings.Contains(msg, c.want) {
				t.Fatalf("RecloneRejected message %q, want it to contain %q (events %+v)", msg, c.want, d.Events)
			}
			if len(d.Status.RecloneHistory) != 0 {
				t.Fatalf("history recorded for a refused request: %+v", d.Status.RecloneHistory)
			}
		})
	}
}

func TestRecloneAcceptedRecordsDivergenceFirst(t *testing.T) {
	// The audit already recorded pdx's divergence.
	first := Decide(newInput(divergedObs(), active(1, "iad")))
	if p := siteStatus(first, "pdx"); p.DivergentGTID != expand("P:1-2") {
		t.Fatalf("audit record %+v", p)
	}
	value := "pdx:confirm=orders:uid=" + groupUID + ":gtidPrefix=" + strings.ToUpper(uPDX[:8])
	d := Decide(recloneInput(divergedObs(), first.Status, value))
	if !d.WriteFirst || !d.ClearRecloneAnnotation {
		t.Fatalf("WriteFirst %v, clear %v: the record must be stored before the clone", d.WriteFirst, d.ClearRecloneAnnotation)
	}
	if got := strings.Join(actions(d), ","); got != "Clone pdx" {
		t.Fatalf("actions %q", got)
	}
	a := d.Actions[0]
	if a.Donor != "iad" || a.SourceHost != iadHost || !a.Discard.Equal(set(expand("P:1-2"))) {
		t.Fatalf("clone %+v", a)
	}
	h := d.Status.RecloneHistory
	if len(h) != 1 || h[0].Site != "pdx" || h[0].Donor != "iad" || h[0].DiscardedGTID != expand("P:1-2") ||
		h[0].DiscardedTransactionCount != 2 || h[0].DivergenceDetectedBy != v1alpha1.DivergenceByReplicaAudit || !h[0].RequestTime.Time.Equal(t0.Add(1e9)) {
		t.Fatalf("history %+v", h)
	}
	var ev *Event
	for i := range d.Events {
		if d.Events[i].Reason == v1alpha1.EventRecloneRequested {
			ev = &d.Events[i]
		}
	}
	if ev == nil || !ev.Warning || !strings.Contains(ev.Message, expand("P:1-2")) || !strings.Contains(ev.Message, "discards its 2 transactions") {
		t.Fatalf("RecloneRequested event %+v", ev)
	}

	// While the clone runs: Bootstrapping True, no other action on pdx, and
	// the history entry stays.
	obs := divergedObs()
	p := obs["pdx"]
	p.Clone.Running, p.Clone.Donor, p.Clone.Started = true, "iad", t0
	obs["pdx"] = p
	during := Decide(newInput(obs, d.Status))
	if len(during.Actions) != 0 {
		t.Fatalf("actions during the clone: %v", actions(during))
	}
	if c := cond(during, v1alpha1.ConditionBootstrapping); c.Status != "True" || c.Reason != v1alpha1.ReasonCloning {
		t.Fatalf("Bootstrapping %+v", c)
	}
	// Cloned: the divergence record clears, the history keeps the set.
	done := Decide(newInput(steadyObs(), during.Status))
	if s := siteStatus(done, "pdx"); s.DivergentGTID != "" {
		t.Fatalf("pdx after the clone %+v", s)
	}
	if h := done.Status.RecloneHistory; len(h) != 1 || h[0].DiscardedGTID != expand("P:1-2") {
		t.Fatalf("history after the clone %+v", h)
	}
}

func TestRecloneOfBlockedOldPrimary(t *testing.T) {
	// iad was the old primary; pdx is active; iad holds I:11-12 pdx lacks.
	obs := map[string]SiteInput{
		"iad":    site("iad", false, "I:1-12", nil),
		"pdx":    site("pdx", true, "I:1-10,P:1-3", nil),
		"dr":     site("dr", false, "I:1-10,P:1-3", replicating("orders-pdx-internal.shop.svc")),
		"reader": site("reader", false, "I:1-10,P:1-3", replicating("orders-pdx-internal.shop.svc")),
	}
	st := active(2, "pdx")
	st.LastFailover = &v1alpha1.LastFailover{Source: "iad", Target: "pdx", Kind: v1alpha1.TransitionAutomatic}
	blocked := Decide(newInput(obs, st))
	if s := siteStatus(blocked, "iad"); s.RecoveryState != v1alpha1.RecoveryBlocked {
		t.Fatalf("iad %+v", s)
	}
	d := Decide(recloneInput(obs, blocked.Status, "iad:confirm=orders:uid="+groupUID+":gtidPrefix="+uIAD[:12]))
	if got := strings.Join(actions(d), ","); got != "Clone iad" {
		t.Fatalf("actions %q (events %+v)", got, d.Events)
	}
	h := d.Status.RecloneHistory
	if len(h) != 1 || h[0].DiscardedGTID != expand("I:11-12") || h[0].DivergenceDetectedBy != v1alpha1.DivergenceByOldPrimaryRecovery {
		t.Fatalf("history %+v", h)
	}
}

func TestRecloneColdAndHistoryBound(t *testing.T) {
	st := active(1, "iad")
	for i := 0; i < 12; i++ {
		d := Decide(recloneInput(steadyObs(), st, "dr:confirm=orders:uid="+groupUID))
		if got := strings.Join(actions(d), ","); got != "Clone dr" || !d.Actions[0].Discard.IsEmpty() {
			t.Fatalf("round %d: actions %q", i, got)
		}
		if !hasEvent(d, v1alpha1.EventRecloneRequested, false) {
			t.Fatalf("cold reclone event %+v", d.Events)
		}
		st = d.Status
	}
	if n := len(st.RecloneHistory); n != 10 {
		t.Fatalf("history holds %d entries, want the latest 10", n)
	}
}
