package metrics

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// crdEnum returns the enum of the field at path in the generated
// MysqlFailoverGroup CRD ("[]" steps into a list's items), so the label
// tables are checked against what the API server accepts, not against a
// list kept beside them.
func crdEnum(t *testing.T, path ...string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "crds", "shipstream.io_mysqlfailovergroups.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	versions, _ := crd["spec"].(map[string]any)["versions"].([]any)
	var node any = versions[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"]
	for _, p := range path {
		m, _ := node.(map[string]any)
		if p == "[]" {
			node = m["items"]
			continue
		}
		props, _ := m["properties"].(map[string]any)
		node = props[p]
	}
	m, _ := node.(map[string]any)
	raw, _ := m["enum"].([]any)
	if len(raw) == 0 {
		t.Fatalf("no enum at %v in the CRD", path)
	}
	out := make([]string, len(raw))
	for i, v := range raw {
		out[i] = v.(string)
	}
	return out
}

var kebab = regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)

// Every value the CRD accepts for a site's state, role and replication, and
// for a planned failover's outcome, has a kebab-case label value of its
// own (seed 003: read-only, disaster-recovery, ...), none maps to
// "unknown" except Unknown itself, and no two share one.
func TestLabelTablesCoverEveryCRDEnumValue(t *testing.T) {
	cases := []struct {
		name  string
		path  []string
		label func(string) string
		list  int
	}{
		{"status.sites[].state", []string{"status", "sites", "[]", "state"}, func(s string) string { return SiteStateLabel(v1alpha1.SiteState(s)) }, len(SiteStates)},
		{"status.sites[].role", []string{"status", "sites", "[]", "role"}, func(s string) string { return SiteRoleLabel(v1alpha1.SiteRole(s)) }, len(SiteRoles)},
		{"spec.sites[].role", []string{"spec", "sites", "[]", "role"}, func(s string) string { return SiteRoleLabel(v1alpha1.SiteRole(s)) }, len(SiteRoles)},
		{"status.sites[].replication", []string{"status", "sites", "[]", "replication"}, func(s string) string { return ReplicationLabel(v1alpha1.ReplicationState(s)) }, len(ReplicationStates)},
		{"status.plannedFailover.result.outcome", []string{"status", "plannedFailover", "result", "outcome"}, func(s string) string { return topology.PlannedOutcomeLabel(v1alpha1.PlannedFailoverOutcome(s)) }, len(topology.PlannedOutcomes)},
	}
	for _, c := range cases {
		values := crdEnum(t, c.path...)
		seen := map[string]string{}
		for _, v := range values {
			l := c.label(v)
			if !kebab.MatchString(l) || (l == Unknown && v != "Unknown") {
				t.Errorf("%s %s: label %q", c.name, v, l)
			}
			if prev, dup := seen[l]; dup {
				t.Errorf("%s: %s and %s share the label %q", c.name, prev, v, l)
			}
			seen[l] = v
		}
		// The exported value lists (one series per value) hold exactly the
		// CRD's values, so no state or role is missing from the gauges.
		if c.list >= 0 && c.list != len(values) {
			t.Errorf("%s: the CRD has %d values %v, the exported list %d", c.name, len(values), values, c.list)
		}
	}
}

// The spellings seed 003 names, and the fallback for what is not observed.
func TestLabelSpellings(t *testing.T) {
	for _, c := range [][2]string{
		{SiteStateLabel(v1alpha1.SiteWritable), "writable"},
		{SiteStateLabel(v1alpha1.SiteReadOnly), "read-only"},
		{SiteStateLabel(v1alpha1.SiteUnreachable), "unreachable"},
		{SiteStateLabel(""), "unknown"},
		{SiteRoleLabel(v1alpha1.SiteRoleDisasterRecovery), "disaster-recovery"},
		{SiteRoleLabel(v1alpha1.SiteRolePrimaryCandidate), "primary-candidate"},
		{ReplicationLabel(v1alpha1.ReplicationNotReplicating), "not-replicating"},
		{ReplicationLabel("Bogus"), "unknown"},
	} {
		if c[0] != c[1] {
			t.Errorf("got %q, want %q", c[0], c[1])
		}
	}
}

// The deferral counter's reason label is the status value itself (reason
// labels keep the API's spelling, docs/metrics.md); its per-group series
// cover exactly the CRD's defer reasons.
func TestDeferReasonsAreTheCRDEnum(t *testing.T) {
	want := crdEnum(t, "status", "plannedFailover", "admission", "deferReason")
	var got []string
	for _, r := range topology.PlannedDeferReasons {
		got = append(got, string(r))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("PlannedDeferReasons %v, CRD enum %v", got, want)
	}
}
