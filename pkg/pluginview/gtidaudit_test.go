package pluginview

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
)

const uuidAuditB = "bbbbbbbb-2222-2222-2222-222222222222"

func auditReads() AuditReads {
	return AuditReads{Namespace: "db", Group: "orders", ActiveSiteBefore: "iad", ActiveSiteAfter: "iad",
		PrimaryUUIDBefore: uuidA, PrimaryUUIDAfter: uuidA,
		Followers: []FollowerRead{
			{Site: "pdx", Executed: gtid.MustParse(uuidA + ":1-10")},
			{Site: "reader", Executed: gtid.MustParse(uuidA + ":1-7")},
		}}
}

func TestGTIDAuditClean(t *testing.T) {
	a := BuildGTIDAudit(auditReads())
	if a.Verdict != AuditClean || a.ExitCode() != 0 || len(a.Followers) != 2 || !a.Followers[0].Clean || a.Followers[0].Extra != "" {
		t.Fatalf("%+v", a)
	}
	var b bytes.Buffer
	if err := WriteGTIDAuditText(&b, a); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Every follower is clean") || !strings.Contains(b.String(), "says nothing about row contents or about lag") {
		t.Errorf("text:\n%s", b.String())
	}
}

func TestGTIDAuditExtra(t *testing.T) {
	r := auditReads()
	r.Followers[0].Executed = gtid.MustParse(uuidA + ":1-10," + uuidAuditB + ":1-2")
	r.Followers[0].Extra = gtid.MustParse(uuidAuditB + ":1-2")
	a := BuildGTIDAudit(r)
	if a.Verdict != AuditExtra || a.ExitCode() != AuditExitExtra {
		t.Fatalf("%+v", a)
	}
	f := a.Followers[0]
	if f.Clean || f.Extra != uuidAuditB+":1-2" || f.ExtraTransactions != 2 || !a.Followers[1].Clean {
		t.Fatalf("%+v", a.Followers)
	}
	var b bytes.Buffer
	if err := WriteGTIDAuditText(&b, a); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pdx       2           " + uuidAuditB + ":1-2", "reader    0           -", "docs/runbooks/reclone.md"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

func TestGTIDAuditPrimaryChanged(t *testing.T) {
	r := auditReads()
	r.ActiveSiteAfter = "pdx"
	a := BuildGTIDAudit(r)
	if a.Verdict != AuditPrimaryChanged || a.ExitCode() != AuditExitPrimaryChanged || !strings.Contains(a.PrimaryChanged, `from "iad" to "pdx"`) {
		t.Fatalf("%+v", a)
	}
	// A primary replaced in place (same site, another server) is a change
	// too, and it wins over extra transactions found against the old one.
	r = auditReads()
	r.PrimaryUUIDAfter = uuidAuditB
	r.Followers[1].Extra = gtid.MustParse(uuidAuditB + ":1")
	a = BuildGTIDAudit(r)
	if a.Verdict != AuditPrimaryChanged || a.ExitCode() != AuditExitPrimaryChanged || !strings.Contains(a.PrimaryChanged, uuidAuditB) {
		t.Fatalf("%+v", a)
	}
	var b bytes.Buffer
	_ = WriteGTIDAuditText(&b, a)
	if !strings.Contains(b.String(), "INCONCLUSIVE") || !strings.Contains(b.String(), "run gtid-audit again") {
		t.Errorf("text:\n%s", b.String())
	}
}

func TestAuditFollowersAndPortForwardTarget(t *testing.T) {
	g := &v1alpha1.MysqlFailoverGroup{}
	g.Name, g.Namespace = "orders", "db"
	g.Spec.Sites = []v1alpha1.SiteSpec{{Name: "iad"}, {Name: "pdx"}, {Name: "reader"}}
	if _, err := AuditFollowers(g); err == nil || !strings.Contains(err.Error(), "no status.activeSite") {
		t.Fatalf("no active site: %v", err)
	}
	g.Status.ActiveSite = "pdx"
	got, err := AuditFollowers(g)
	if err != nil || strings.Join(got, ",") != "iad,reader" {
		t.Fatalf("followers %v, %v", got, err)
	}
	g.Status.ActiveSite = "gone"
	if _, err := AuditFollowers(g); err == nil {
		t.Fatal("an active site outside the spec was accepted")
	}
	pod, port := PortForwardTarget("orders", "pdx")
	if pod != "orders-pdx-0" || port != 3306 {
		t.Fatalf("port-forward target %s:%d", pod, port)
	}
}
