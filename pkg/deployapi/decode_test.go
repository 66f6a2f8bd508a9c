package deployapi

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shipstream/bloodraven/pkg/leasestore"
)

const op = "11111111-1111-4111-8111-111111111111"

func TestDecodeGrant(t *testing.T) {
	for _, tc := range []struct {
		body    string
		want    GrantRequest
		errWant string // field named by the error
	}{
		{body: `{"kind":"migration","operationId":"` + op + `","instance":"orders-app","ttlSeconds":30}`,
			want: GrantRequest{Kind: leasestore.KindMigration, OperationID: op, Instance: "orders-app", TTL: 30 * time.Second}},
		{body: `{"kind":"failover-hold","operationId":"` + strings.ToUpper(op) + `","instance":"orders-app"}`,
			want: GrantRequest{Kind: leasestore.KindFailoverHold, OperationID: op, Instance: "orders-app", TTL: 30 * time.Second}},
		{body: `{"kind":"migration","operationId":"` + op + `","instance":"a","ttlSeconds":0}`,
			want: GrantRequest{Kind: leasestore.KindMigration, OperationID: op, Instance: "a", TTL: 5 * time.Second}},
		{body: `{"kind":"migration","operationId":"` + op + `","instance":"a","ttlSeconds":-7}`,
			want: GrantRequest{Kind: leasestore.KindMigration, OperationID: op, Instance: "a", TTL: 5 * time.Second}},
		{body: `{"kind":"migration","operationId":"` + op + `","instance":"a","ttlSeconds":121}`,
			want: GrantRequest{Kind: leasestore.KindMigration, OperationID: op, Instance: "a", TTL: 120 * time.Second}},
		{body: `{"kind":"migration","operationId":"` + op + `","instance":"a","ttlSeconds":99999999999999999999999}`,
			want: GrantRequest{Kind: leasestore.KindMigration, OperationID: op, Instance: "a", TTL: 120 * time.Second}},
		{body: `{"kind":"migration","operationId":"` + op + `","instance":"a","ttlSeconds":-99999999999999999999999}`,
			want: GrantRequest{Kind: leasestore.KindMigration, OperationID: op, Instance: "a", TTL: 5 * time.Second}},
		{body: `{"operationId":"` + op + `","instance":"a"}`, errWant: "kind"},
		{body: `{"kind":"Migration","operationId":"` + op + `","instance":"a"}`, errWant: "kind"},
		{body: `{"kind":"migration","instance":"a"}`, errWant: "operationId"},
		{body: `{"kind":"migration","operationId":"1111","instance":"a"}`, errWant: "operationId"},
		{body: `{"kind":"migration","operationId":"` + op + `"}`, errWant: "instance"},
		{body: `{"kind":"migration","operationId":"` + op + `","instance":"Orders"}`, errWant: "instance"},
		{body: `{"kind":"migration","operationId":"` + op + `","instance":"a","ttlSeconds":1e2}`, errWant: "ttlSeconds"},
		{body: `{"kind":"migration","operationId":"` + op + `","instance":"a","ttlSeconds":null}`,
			want: GrantRequest{Kind: leasestore.KindMigration, OperationID: op, Instance: "a", TTL: 30 * time.Second}},
		{body: `{"kind":1,"operationId":"` + op + `","instance":"a"}`, errWant: "kind"},
		{body: `{"kind":"migration","operationId":"` + op + `","instance":"a","token":"x"}`, errWant: "token"},
		{body: `{"kind":"migration","operationId":"` + op + `","instance":"a"} {}`, errWant: "body"},
		{body: ``, errWant: "body"},
		{body: `{"kind":"migration","operationId":"` + op + `","instance":"a","ttlSeconds":"30"}`, errWant: "ttlSeconds"},
		{body: `{"kind":"migration","operationId":"` + op + `","instance":"a","ttlSeconds":true}`, errWant: "ttlSeconds"},
		{body: `{"":0}`, errWant: "body"},
		{body: `[]`, errWant: "body"},
	} {
		got, err := DecodeGrant([]byte(tc.body))
		if tc.errWant != "" {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.errWant {
				t.Errorf("%s: error %v, want one naming %q", tc.body, err, tc.errWant)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.body, got, err, tc.want)
		}
	}
}

func TestDecodeRenew(t *testing.T) {
	got, err := DecodeRenew([]byte(`{"token":"abc","ttlSeconds":200}`))
	if err != nil || got.Token != "abc" || got.TTL != 120*time.Second {
		t.Fatalf("got %+v %v", got, err)
	}
	for body, field := range map[string]string{
		`{"ttlSeconds":30}`: "token",
		`{"token":""}`:      "token",
		`{"token":"a b"}`:   "token",
		`{"token":"` + strings.Repeat("a", 300) + `"}`: "token",
		`{"token":"x","ttl":3}`:                        "ttl",
	} {
		var fe *FieldError
		if _, err := DecodeRenew([]byte(body)); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: error %v, want field %s", body, err, field)
		}
	}
}

func TestParsePath(t *testing.T) {
	for p, want := range map[string]*leasePath{
		"/deploy/v1/groups/orders":                               {Group: "orders"},
		"/deploy/v1/groups/orders/leases":                        {Group: "orders", Leases: true},
		"/deploy/v1/groups/orders/leases/migration/" + op:        {Group: "orders", Leases: true, Kind: "migration", OperationID: op},
		"/deploy/v1/groups/":                                     nil,
		"/deploy/v1/groups/orders/":                              nil,
		"/deploy/v1/groups/orders/leases/migration":              nil,
		"/deploy/v1/groups/orders/leases/migration/":             nil,
		"/deploy/v1/groups/orders/leases/migration/" + op + "/x": nil,
		"/deploy/v1/other":                                       nil,
	} {
		got, ok := parsePath(p)
		if want == nil {
			if ok {
				t.Errorf("%s: parsed as %+v, want refused", p, got)
			}
			continue
		}
		if !ok || got != *want {
			t.Errorf("%s: got %+v %v, want %+v", p, got, ok, *want)
		}
	}
}

// FuzzDecoders: arbitrary bytes never panic, and whatever is accepted is
// valid: a known kind, a canonical lower-case UUID, a valid instance name,
// a TTL inside the clamp, a printable bounded token.
func FuzzDecoders(f *testing.F) {
	f.Add([]byte(`{"kind":"migration","operationId":"` + op + `","instance":"orders-app","ttlSeconds":30}`))
	f.Add([]byte(`{"kind":"failover-hold","operationId":"` + op + `","instance":"a.b","ttlSeconds":-1}`))
	f.Add([]byte(`{"token":"abc","ttlSeconds":1e999}`))
	f.Add([]byte(`{"token":"abc","ttlSeconds":18446744073709551616}`))
	f.Add([]byte(`{"kind":"migration","kind":"failover-hold"}`))
	f.Add([]byte("\x00{}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		if g, err := DecodeGrant(body); err == nil {
			if _, ok := leasestore.ParseKind(string(g.Kind)); !ok {
				t.Fatalf("accepted kind %q", g.Kind)
			}
			if id, err := ParseOperationID("x", g.OperationID); err != nil || id != g.OperationID {
				t.Fatalf("accepted operationId %q", g.OperationID)
			}
			if _, err := parseInstance("x", g.Instance); err != nil {
				t.Fatalf("accepted instance %q", g.Instance)
			}
			checkTTLBounds(t, g.TTL)
		} else {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("error without a field: %v", err)
			}
		}
		if r, err := DecodeRenew(body); err == nil {
			if r.Token == "" || len(r.Token) > maxLeaseTokenLen || !utf8.ValidString(r.Token) || checkLeaseToken("t", r.Token) != nil {
				t.Fatalf("accepted token of %d bytes", len(r.Token))
			}
			checkTTLBounds(t, r.TTL)
		}
		if p, ok := parsePath(string(body)); ok && (p.Group == "" || strings.Contains(p.Group, "/")) {
			t.Fatalf("path %q parsed to group %q", body, p.Group)
		}
	})
}

func checkTTLBounds(t *testing.T, d time.Duration) {
	if d < MinTTLSeconds*time.Second || d > MaxTTLSeconds*time.Second || d%time.Second != 0 {
		t.Fatalf("TTL %s outside [5s, 120s]", d)
	}
}
