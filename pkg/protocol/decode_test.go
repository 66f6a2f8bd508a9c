package protocol

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// A newer sidecar adds fields (top level and nested); an older operator must
// still read everything it knows.
func TestDecodeIgnoresUnknownFields(t *testing.T) {
	body := `{
	  "namespace": "shop", "group": "orders", "site": "iad",
	  "sidecarVersion": "1.8.0",
	  "capabilities": ["livez", "coverage=gtid-v1", "future-thing=v3"],
	  "futureTopLevel": {"nested": [1, 2, 3]},
	  "mysql": {
	    "reachable": true, "role": "Source", "readOnly": false, "superReadOnly": false,
	    "gtidExecuted": "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5",
	    "binlogFormatOfTheFuture": "ROW",
	    "replication": {"state": "NotReplicating", "newCounter": 7}
	  }
	}`
	var s SiteStatus
	if err := Decode(strings.NewReader(body), &s); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if s.Site != "iad" || s.Group != "orders" || s.SidecarVersion != "1.8.0" {
		t.Errorf("identity = %q/%q/%q", s.Group, s.Site, s.SidecarVersion)
	}
	if !s.HasCapability(CapabilityCoverageGTIDv1) || s.HasCapability(CapabilitySelfFenceV1) {
		t.Errorf("capabilities = %v", s.Capabilities)
	}
	w, ok := s.MySQL.Writable()
	if !ok || !w {
		t.Errorf("Writable() = %v, %v; want true, true", w, ok)
	}
	if s.MySQL.GTIDExecuted != "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5" || s.MySQL.Replication.State != ReplicationNotReplicating {
		t.Errorf("mysql = %+v", s.MySQL)
	}
}

// An older sidecar omits fields: each must read as "not reported", never as
// false or zero.
func TestDecodeMissingFieldsAreNotReported(t *testing.T) {
	var s SiteStatus
	if err := Decode(strings.NewReader(`{"namespace":"shop","group":"orders","site":"iad","mysql":{"reachable":true}}`), &s); err != nil {
		t.Fatal(err)
	}
	if w, ok := s.MySQL.Writable(); ok {
		t.Errorf("Writable() without readOnly/superReadOnly = %v, ok=true; want not reported", w)
	}
	if s.Fencing != nil {
		t.Errorf("fencing = %+v, want nil (not reported)", s.Fencing)
	}
	if s.MySQL.Replication != nil {
		t.Errorf("replication = %+v, want nil (not reported)", s.MySQL.Replication)
	}

	// Version skew (docs/sidecar.md): a missing storeReady from an older
	// sidecar is "not reported", never an init failure.
	var a ArchiverStatus
	if err := Decode(strings.NewReader(`{"enabled":true,"lastScanAt":"2026-11-30T07:00:00Z"}`), &a); err != nil {
		t.Fatal(err)
	}
	if a.StoreReady != nil || a.ConsecutiveFailedScans != nil {
		t.Errorf("storeReady=%v consecutiveFailedScans=%v, want both nil", a.StoreReady, a.ConsecutiveFailedScans)
	}
	if a.LastScanAt == nil || !a.LastScanAt.Equal(time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("lastScanAt = %v", a.LastScanAt)
	}

	// A peer answer without validForMillis confirms nothing.
	var p PeerActiveSite
	if err := Decode(strings.NewReader(`{"site":"dfw","activeSite":"iad","confirmed":true}`), &p); err != nil {
		t.Fatal(err)
	}
	if d, ok := p.ConfirmsFor("iad"); ok {
		t.Errorf("ConfirmsFor without validForMillis = %v, true; want no confirmation", d)
	}
}

func TestDecodeRejectsTrailingDataAndOversizedBodies(t *testing.T) {
	var a ActiveSite
	if err := Decode(strings.NewReader(`{"activeSite":"iad"}{"activeSite":"dfw"}`), &a); err == nil || !strings.Contains(err.Error(), "trailing data") {
		t.Errorf("concatenated documents: err = %v", err)
	}
	big := `{"activeSite":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
	if err := Decode(strings.NewReader(big), &a); err == nil {
		t.Error("a body over MaxBodyBytes was accepted")
	}
}

func TestActiveSiteConfirms(t *testing.T) {
	cases := []struct {
		a    ActiveSite
		site string
		want bool
	}{
		{ActiveSite{ActiveSite: "iad"}, "iad", true},
		{ActiveSite{ActiveSite: "iad"}, "dfw", false},
		{ActiveSite{ActiveSite: ""}, "", false},
		{ActiveSite{ActiveSite: "iad", Transition: &TransitionNotice{TargetSite: "iad"}}, "iad", false},
	}
	for i, c := range cases {
		if got := c.a.Confirms(c.site); got != c.want {
			t.Errorf("case %d: Confirms(%q) = %v, want %v", i, c.site, got, c.want)
		}
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusServiceUnavailable, ErrorNotLeader, "ask the leader")
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a ActiveSite
	err = DecodeResponse(resp, &a)
	if !IsNotLeader(err) || !strings.Contains(err.Error(), "503") {
		t.Errorf("err = %v, want a 503 not_leader error", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
}

func TestReportsHealthyMySQL(t *testing.T) {
	age := func(ms int64) *int64 { return &ms }
	cases := []struct {
		name string
		s    SiteStatus
		want bool
	}{
		{"fresh source", SiteStatus{ObservationAgeMillis: age(900), MySQL: &MySQLStatus{Reachable: true, Role: RoleSource}}, true},
		{"fresh replica", SiteStatus{ObservationAgeMillis: age(0), MySQL: &MySQLStatus{Reachable: true, Role: RoleReplica}}, true},
		{"stale", SiteStatus{ObservationAgeMillis: age(5001), MySQL: &MySQLStatus{Reachable: true, Role: RoleSource}}, false},
		{"age not reported", SiteStatus{MySQL: &MySQLStatus{Reachable: true, Role: RoleSource}}, false},
		{"unreachable", SiteStatus{ObservationAgeMillis: age(10), MySQL: &MySQLStatus{Reachable: false, Role: RoleUnknown}}, false},
		{"inconsistent", SiteStatus{ObservationAgeMillis: age(10), MySQL: &MySQLStatus{Reachable: true, Role: RoleInconsistent}}, false},
		{"mysql not reported", SiteStatus{ObservationAgeMillis: age(10)}, false},
		{"an older observation, and the process looked at since has exited", SiteStatus{ObservationAgeMillis: age(900),
			MySQL: &MySQLStatus{Reachable: true, Role: RoleSource}, Process: &MySQLProcess{Exited: true}}, false},
		{"the process runs", SiteStatus{ObservationAgeMillis: age(900),
			MySQL: &MySQLStatus{Reachable: true, Role: RoleSource}, Process: &MySQLProcess{}}, true},
	}
	for _, c := range cases {
		if got := c.s.ReportsHealthyMySQL(5 * time.Second); got != c.want {
			t.Errorf("%s: ReportsHealthyMySQL = %v, want %v", c.name, got, c.want)
		}
	}
}

// FuzzDecodeSiteStatus: no input makes the decoder panic, and whatever it
// accepts re-encodes and decodes to the same document.
func FuzzDecodeSiteStatus(f *testing.F) {
	f.Add(`{"namespace":"shop","group":"orders","site":"iad","mysql":{"reachable":true,"readOnly":false}}`)
	f.Add(`{"fencing":{"view":{"site":"dfw","confirmed":true,"validForMillis":1200}},"x":[1,{"y":null}]}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, body string) {
		var s SiteStatus
		if err := Decode(strings.NewReader(body), &s); err != nil {
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var again SiteStatus
		if err := Decode(strings.NewReader(string(b)), &again); err != nil {
			t.Fatalf("decode of our own encoding: %v\n%s", err, b)
		}
		b2, _ := json.Marshal(again)
		if string(b) != string(b2) {
			t.Fatalf("round trip changed the document:\n%s\n%s", b, b2)
		}
	})
}

// PromotedTarget follows the API's transition steps: from Promoting on the
// operator vouches for the target, never before, never for the source.
func TestActiveSitePromotedTarget(t *testing.T) {
	promoted := map[v1alpha1.TransitionStep]bool{v1alpha1.StepPromoting: true, v1alpha1.StepRepointingFollowers: true,
		v1alpha1.StepDrainingSessions: true, v1alpha1.StepPublishing: true}
	all := []v1alpha1.TransitionStep{v1alpha1.StepRecorded, v1alpha1.StepNotifyingSidecars, v1alpha1.StepFencingSource, v1alpha1.StepAwaitingSelfFence,
		v1alpha1.StepCatchingUp, v1alpha1.StepPromoting, v1alpha1.StepRepointingFollowers, v1alpha1.StepDrainingSessions,
		v1alpha1.StepPublishing, v1alpha1.StepRollingBack}
	for _, step := range all {
		a := ActiveSite{ActiveSite: "iad", Transition: &TransitionNotice{SourceSite: "iad", TargetSite: "dfw", Step: string(step)}}
		want := ""
		if promoted[step] {
			want = "dfw"
		}
		if got := a.PromotedTarget(); got != want {
			t.Errorf("step %s: PromotedTarget() = %q, want %q", step, got, want)
		}
		if a.Confirms("dfw") || a.Confirms("iad") {
			t.Errorf("step %s: Confirms must stay false during a transition", step)
		}
	}
	if got := (ActiveSite{ActiveSite: "iad"}).PromotedTarget(); got != "" {
		t.Errorf("no transition: PromotedTarget() = %q", got)
	}
}
