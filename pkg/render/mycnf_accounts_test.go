package render

import (
	"strings"
	"testing"
)

// TestMyCnfOwnsPartialRevokes: partial_revokes is ON whatever mysqlConf
// says (the application account's partial revokes on mysql and sys need it,
// docs/credentials.md), and an override is reported as ignored.
func TestMyCnfOwnsPartialRevokes(t *testing.T) {
	g := minimal(t)
	g.Spec.MySQLConf = map[string]string{"partial_revokes": "OFF"}
	g.Spec.Sites[0].MySQLConf = map[string]string{"partial-revokes": "0"}
	cnf, ignored, err := MyCnf(g, 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(cnf, "partial-revokes = ON\n") != 1 || strings.Count(cnf, "partial-revokes") != 1 {
		t.Errorf("my.cnf does not set partial-revokes = ON exactly once:\n%s", cnf)
	}
	if want := "spec.mysqlConf.partial-revokes,spec.sites[0].mysqlConf.partial-revokes"; strings.Join(ignored, ",") != want {
		t.Errorf("ignored = %v, want %s", ignored, want)
	}
}
