package deployclient

import (
	"errors"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/leasestore"
)

// The client's constants must agree with the server's
// (docs/deploy-api.md#durability-and-fencing).
func TestConstantsMatchTheAPI(t *testing.T) {
	if MaxClockSkew != leasestore.DefaultMaxClockSkew {
		t.Fatalf("MaxClockSkew %s, leasestore.DefaultMaxClockSkew %s", MaxClockSkew, leasestore.DefaultMaxClockSkew)
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		got    int64
		effect Effect
		cause  Cause
	}{
		{"200 same generation", nil, 7, Extend, ""},
		{"200 other generation", nil, 8, Lost, CauseTopologyChanged},
		{"423 unstable", &APIError{Status: 423, Code: "unstable", UnstableReason: "TopologyTransition"}, 0, Keep, ""},
		{"500", &APIError{Status: 500, Code: "internal_error"}, 0, Keep, ""},
		{"503 not_leader", &APIError{Status: 503, Code: "not_leader"}, 0, Keep, ""},
		{"401", &APIError{Status: 401, Code: "unauthenticated"}, 0, Keep, ""},
		{"403 forbidden", &APIError{Status: 403, Code: "forbidden"}, 0, Keep, ""},
		{"transport", errors.New("connection refused"), 0, Keep, ""},
		{"404", &APIError{Status: 404, Code: "not_found"}, 0, Lost, CauseLeaseLost},
		{"403 token mismatch", &APIError{Status: 403, Code: "lease_token_mismatch"}, 0, Lost, CauseLeaseLost},
		{"409 revoked topology", &APIError{Status: 409, Code: "revoked", Reason: "TopologyChanged"}, 0, Lost, CauseTopologyChanged},
		{"409 revoked operator", &APIError{Status: 409, Code: "revoked", Reason: "OperatorRevoked"}, 0, Lost, CauseOperatorRevoked},
		{"409 other", &APIError{Status: 409, Code: "instance_mismatch"}, 0, Lost, CauseLeaseLost},
	}
	for _, c := range cases {
		e, cause := Classify(c.err, 7, c.got)
		if e != c.effect || cause != c.cause {
			t.Errorf("%s: %s %q, want %s %q", c.name, e, cause, c.effect, c.cause)
		}
	}
}

func TestExitCodesAreDistinct(t *testing.T) {
	seen := map[int]Cause{}
	for c, code := range exitCodes {
		if other, dup := seen[code]; dup {
			t.Fatalf("%s and %s share exit code %d", c, other, code)
		}
		seen[code] = c
	}
	if len(seen) != 10 {
		t.Fatalf("%d causes", len(seen))
	}
}

var testPolicy = Policy{TTL: 30 * time.Second, KillMargin: 8 * time.Second, TermGrace: 5 * time.Second, RequestTimeout: 3 * time.Second}

func TestPolicyValidate(t *testing.T) {
	if err := testPolicy.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]Policy{}
	p := testPolicy
	p.KillMargin = 4 * time.Second
	bad["margin below skew"] = p
	p = testPolicy
	p.TTL = 15 * time.Second
	bad["no renewal period before SIGTERM"] = p
	p = testPolicy
	p.TTL = 4 * time.Second
	bad["ttl below the clamp"] = p
	p = testPolicy
	p.RequestTimeout = 11 * time.Second
	bad["timeout above the period"] = p
	for name, p := range bad {
		if p.Validate() == nil {
			t.Errorf("%s: accepted %+v", name, p)
		}
	}
}

// TestDecide walks the stop rule: nothing before deadline - margin - grace,
// SIGTERM then, SIGKILL at deadline - margin; after a loss SIGTERM at once
// and SIGKILL a grace later, never after deadline - margin.
func TestDecide(t *testing.T) {
	t0 := time.Now()
	p := testPolicy // deadline t0+30s; SIGTERM at +17s, SIGKILL at +22s
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	cases := []struct {
		name               string
		lostAt             time.Time
		termSent, killSent bool
		now                time.Time
		act                Action
		wake               time.Time
	}{
		{"fresh", time.Time{}, false, false, at(time.Second), None, at(17 * time.Second)},
		{"sigterm due", time.Time{}, false, false, at(17 * time.Second), Terminate, at(22 * time.Second)},
		{"after sigterm", time.Time{}, true, false, at(18 * time.Second), None, at(22 * time.Second)},
		{"sigkill due", time.Time{}, true, false, at(22 * time.Second), Kill, time.Time{}},
		{"sigkill due without sigterm", time.Time{}, false, false, at(25 * time.Second), Kill, time.Time{}},
		{"killed", time.Time{}, true, true, at(40 * time.Second), None, time.Time{}},
		{"lost early", at(2 * time.Second), false, false, at(2 * time.Second), Terminate, at(7 * time.Second)},
		{"lost late: kill capped by the margin", at(20 * time.Second), false, false, at(20 * time.Second), Terminate, at(22 * time.Second)},
	}
	for _, c := range cases {
		act, wake := Decide(t0, p, c.lostAt, c.termSent, c.killSent, c.now)
		if act != c.act || !wake.Equal(c.wake) {
			t.Errorf("%s: %s wake %s, want %s wake %s", c.name, act, wake.Sub(t0), c.act, c.wake.Sub(t0))
		}
	}
}

// TestNoAnswerButA200MovesTheDeadline: whatever a 423 or an error says, the
// kill time stays at the last confirmed send time + ttl - margin.
func TestNoAnswerButA200MovesTheDeadline(t *testing.T) {
	t0 := time.Now()
	for _, err := range []error{&APIError{Status: 423, Code: "unstable"}, errors.New("timeout"), &APIError{Status: 500}} {
		if eff, _ := Classify(err, 1, 1); eff == Extend {
			t.Fatalf("%v extends the deadline", err)
		}
	}
	if got := testPolicy.StopPlan(Deadline(t0, testPolicy.TTL), time.Time{}).KillAt; !got.Equal(t0.Add(22 * time.Second)) {
		t.Fatalf("kill at %s", got.Sub(t0))
	}
}
