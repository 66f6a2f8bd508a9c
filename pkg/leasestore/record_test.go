package leasestore

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func TestMutexHeldAgainstWaitsOutClockSkew(t *testing.T) {
	m := mutexState{OperationID: "a", ExpiresAt: t0}
	skew := 5 * time.Second
	for _, tc := range []struct {
		op   string
		now  time.Time
		want bool
	}{
		{"b", t0.Add(-time.Second), true},
		{"b", t0, true},
		{"b", t0.Add(time.Second), true}, // expired, but inside the skew grace
		{"b", t0.Add(skew), true},
		{"b", t0.Add(skew + time.Nanosecond), false},
		{"a", t0.Add(-time.Second), false}, // the holder itself never blocks
	} {
		if got := m.heldAgainst(tc.op, tc.now, skew); got != tc.want {
			t.Errorf("op %s at %s: held=%v, want %v", tc.op, tc.now.Sub(t0), got, tc.want)
		}
	}
	if (mutexState{}).heldAgainst("b", t0, skew) {
		t.Error("a free mutex blocks")
	}
}

func TestDurationProjection(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int32
	}{
		{30 * time.Second, 30},
		{29*time.Second + time.Millisecond, 30},
		{1500 * time.Millisecond, 2},
		{time.Second, 1},
		{0, 1},
		{-time.Hour, 1},
	} {
		if got := durationProjection(t0, t0.Add(tc.d)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.d, got, tc.want)
		}
	}
}

func TestLiveIsOperatorClockInclusive(t *testing.T) {
	r := Record{State: StateActive, ExpiresAt: t0}
	if !r.Live(t0) || r.Live(t0.Add(time.Nanosecond)) {
		t.Fatal("now > expiresAt must end the lease, now == expiresAt must not")
	}
	for _, st := range []State{StateReleased, StateExpired, StateRevoked} {
		if (Record{State: st, ExpiresAt: t0.Add(time.Hour)}).Live(t0) {
			t.Errorf("%s record is live", st)
		}
	}
}

func TestCheckRenewable(t *testing.T) {
	tok := "secret-token"
	live := Record{State: StateActive, TokenHash: HashToken(tok), ExpiresAt: t0.Add(time.Minute), TopologyGeneration: 3}
	req := RenewRequest{Token: tok, TopologyGeneration: 3}
	if err := checkRenewable(live, true, req, t0); err != nil {
		t.Fatalf("live lease: %v", err)
	}
	revoked := live
	revoked.State, revoked.RevokedReason = StateRevoked, ReasonOperatorRevoked
	for name, tc := range map[string]struct {
		r      Record
		exists bool
		req    RenewRequest
		now    time.Time
		want   error
		reason Reason
	}{
		"absent":              {exists: false, req: req, now: t0, want: ErrNotFound},
		"wrong token":         {r: live, exists: true, req: RenewRequest{Token: "x", TopologyGeneration: 3}, now: t0, want: ErrTokenMismatch},
		"expired":             {r: live, exists: true, req: req, now: t0.Add(time.Minute + 1), want: ErrNotFound},
		"generation moved":    {r: live, exists: true, req: RenewRequest{Token: tok, TopologyGeneration: 4}, now: t0, reason: ReasonTopologyChanged},
		"tombstone any token": {r: revoked, exists: true, req: RenewRequest{Token: "x", TopologyGeneration: 3}, now: t0, reason: ReasonOperatorRevoked},
	} {
		err := checkRenewable(tc.r, tc.exists, tc.req, tc.now)
		if tc.reason != "" {
			if r, ok := AsRevoked(err); !ok || r != tc.reason {
				t.Errorf("%s: %v, want revoked %s", name, err, tc.reason)
			}
			continue
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

func TestSummarizeHolds(t *testing.T) {
	recs := []Record{
		{Kind: KindMigration, State: StateActive, OperationID: "m", ExpiresAt: t0.Add(time.Minute), TopologyGeneration: 2},
		{Kind: KindFailoverHold, State: StateActive, OperationID: "late", Instance: "a", ExpiresAt: t0.Add(90 * time.Second), TopologyGeneration: 2},
		{Kind: KindFailoverHold, State: StateActive, OperationID: "early", Instance: "b", ExpiresAt: t0.Add(30 * time.Second), TopologyGeneration: 2},
		{Kind: KindFailoverHold, State: StateActive, OperationID: "expired", ExpiresAt: t0.Add(-time.Second), TopologyGeneration: 2},
		{Kind: KindFailoverHold, State: StateReleased, OperationID: "released", ExpiresAt: t0.Add(time.Hour), TopologyGeneration: 2},
		{Kind: KindFailoverHold, State: StateRevoked, OperationID: "revoked", ExpiresAt: t0.Add(time.Hour), TopologyGeneration: 2},
		{Kind: KindFailoverHold, State: StateActive, OperationID: "old-gen", ExpiresAt: t0.Add(time.Second), TopologyGeneration: 1},
	}
	h := summarizeHolds(recs, 2, t0)
	if !h.Held || h.Count != 2 || h.OperationID != "early" || h.Instance != "b" || !h.EarliestExpiry.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("summary %+v", h)
	}
	if h := summarizeHolds(recs[:1], 2, t0); h.Held {
		t.Fatal("a migration lease alone holds planned operations")
	}
}

func TestObjectNamesDistinct(t *testing.T) {
	// Groups are DNS-1035 labels (no dots), including names that look like
	// another object's suffix; every mutex and record name must differ.
	seen := map[string]string{}
	add := func(name, what string) {
		if prev, dup := seen[name]; dup {
			t.Fatalf("%s and %s share the object name %s", prev, what, name)
		}
		seen[name] = what
	}
	for _, g := range []string{"a", "mutex", "a-migration", "deploy-mutex", "orders"} {
		add(mutexName(g), "mutex of "+g)
		for _, k := range []Kind{KindMigration, KindFailoverHold} {
			for _, op := range []string{"x", "11111111-1111-4111-8111-111111111111"} {
				add(recordName(g, k, op), "record "+g+"/"+string(k)+"/"+op)
			}
		}
	}
}

func TestHashTokenIsNotTheToken(t *testing.T) {
	h := HashToken("abc")
	if h == "abc" || len(h) != len("sha256:")+64 {
		t.Fatalf("hash %q", h)
	}
	r := Record{TokenHash: h}
	if !r.tokenMatches("abc") || r.tokenMatches("abd") || r.tokenMatches("") {
		t.Fatal("token comparison wrong")
	}
}

func TestMutexOwnedByTheReleasedGrantOnly(t *testing.T) {
	m := mutexState{OperationID: "a", GrantID: "g2", ExpiresAt: t0}
	for _, tc := range []struct {
		rec  Record
		want bool
	}{
		{Record{OperationID: "a", GrantID: "g2"}, true},
		{Record{OperationID: "a", GrantID: "g1"}, false}, // a re-grant of a owns it now
		{Record{OperationID: "b", GrantID: "g2"}, false},
		{Record{OperationID: "a"}, true}, // a record written before grant ids
	} {
		if got := m.ownedBy(tc.rec); got != tc.want {
			t.Errorf("record %+v: ownedBy=%v, want %v", tc.rec, got, tc.want)
		}
	}
	if !(mutexState{OperationID: "a"}).ownedBy(Record{OperationID: "a", GrantID: "g1"}) {
		t.Error("a mutex written before grant ids must still be released by its operation")
	}
}
