package pluginview

import (
	"fmt"
	"strings"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// ReclonePlan is what `reclone` will ask for and what the clone destroys,
// as far as the group's status shows it.
type ReclonePlan struct {
	Group, Site, Donor string
	// Value is the reclone-site annotation value, in the form
	// topology.ParseRecloneValue accepts.
	Value string
	// Discard is the set the site holds that the donor lacks: the union of
	// the operator's divergence record and the difference of the two
	// gtidExecuted sets in status. Empty for a cold reclone.
	Discard gtid.Set
	// DetectedBy is how the operator found the divergence, when it did.
	DetectedBy v1alpha1.DivergenceDetector
}

// PlanReclone builds the interlock value for recloning site of g. It refuses,
// with an error that says what to do, what the operator would refuse on the
// status alone (pkg/topology/reclone.go, validateReclone); the operator
// still decides on its live observation.
func PlanReclone(g *v1alpha1.MysqlFailoverGroup, site string) (ReclonePlan, error) {
	p := ReclonePlan{Group: g.Name, Site: site, Donor: g.Status.ActiveSite}
	if err := recloneRefusal(g, site); err != nil {
		return p, err
	}
	discard, beyond, err := discardSet(g, site)
	if err != nil {
		return p, err
	}
	p.Discard = discard
	if ss := siteStatus(g, site); ss != nil {
		p.DetectedBy = ss.DivergenceDetectedBy
	}
	p.Value = RecloneValue(g.Name, string(g.UID), site, prefixSource(g, site, beyond, discard))
	return p, nil
}

// prefixSource is the set whose first source UUID names the gtidPrefix. The
// operator matches it against what the site holds beyond the active site on
// its live observation. Both views in status can lag that: the divergence
// record by a poll, the difference of the gtidExecuted sets by a status
// refresh (and then it also holds the active site's newest own
// transactions, which the operator never counts). So, in order: what both
// agree on; the difference without the active site's own server UUID; the
// record; whatever the clone discards.
func prefixSource(g *v1alpha1.MysqlFailoverGroup, site string, beyond, discard gtid.Set) gtid.Set {
	var rec gtid.Set
	if ss := siteStatus(g, site); ss != nil && ss.DivergentGTID != "" {
		rec, _ = gtid.Parse(ss.DivergentGTID) // discardSet already refused one that does not parse
	}
	if both := beyond.Intersect(rec); !both.IsEmpty() {
		return both
	}
	if as := siteStatus(g, g.Status.ActiveSite); as != nil && as.ServerUUID != "" {
		if own, err := gtid.Parse(strings.ToLower(as.ServerUUID) + ":1-9223372036854775806"); err == nil {
			beyond = beyond.Subtract(own)
		}
	}
	switch {
	case !beyond.IsEmpty():
		return beyond
	case !rec.IsEmpty():
		return rec
	default:
		return discard
	}
}

// RecloneValue is "<site>:confirm=<group>:uid=<uid>", plus
// ":gtidPrefix=<uuid>" naming the full source UUID of the first source in
// discard when discard is not empty (the operator requires a prefix of at
// least topology.MinGTIDPrefix characters; the whole UUID is the
// unambiguous one).
func RecloneValue(group, uid, site string, discard gtid.Set) string {
	v := fmt.Sprintf("%s:confirm=%s:uid=%s", site, group, uid)
	if sids := discard.SIDs(); len(sids) > 0 {
		v += ":gtidPrefix=" + strings.ToLower(sids[0].UUID)
	}
	return v
}

func recloneRefusal(g *v1alpha1.MysqlFailoverGroup, site string) error {
	st := &g.Status
	switch {
	case !inSpec(g, site):
		return fmt.Errorf("site %q is not in spec.sites of group %s (sites: %s)", site, g.Name, joinSites(g))
	case st.ActiveSite == "":
		return fmt.Errorf("group %s has no active site to clone from yet; wait until status.activeSite is set (kubectl bloodraven status %s)", g.Name, g.Name)
	case site == st.ActiveSite:
		return fmt.Errorf("site %s is the active site (the donor) and cannot be recloned; move the primary first with kubectl bloodraven planned-failover %s <other site>", site, g.Name)
	case st.Transition != nil:
		return fmt.Errorf("a %s transition to %s is in flight; run this again once it finished (kubectl bloodraven status %s)", st.Transition.Kind, st.Transition.TargetSite, g.Name)
	case g.UID == "":
		return fmt.Errorf("group %s has no metadata.uid; read it from the API server, not from a file", g.Name)
	}
	return nil
}

// discardSet is what the clone would destroy by the status: the site's
// divergence record plus beyond, what its gtidExecuted holds beyond the
// active site's. Both are read because the record lags a poll behind the
// sets.
func discardSet(g *v1alpha1.MysqlFailoverGroup, site string) (discard, beyond gtid.Set, err error) {
	ss, as := siteStatus(g, site), siteStatus(g, g.Status.ActiveSite)
	if ss == nil {
		return discard, beyond, nil
	}
	if ss.DivergentGTID != "" {
		if discard, err = gtid.Parse(ss.DivergentGTID); err != nil {
			return discard, beyond, fmt.Errorf("status.sites[%s].divergentGtid does not parse (%v); build the value by hand (docs/runbooks/reclone.md)", site, err)
		}
	}
	if ss.GTIDExecuted == "" || as == nil || as.GTIDExecuted == "" {
		return discard, beyond, nil
	}
	mine, err1 := gtid.Parse(ss.GTIDExecuted)
	theirs, err2 := gtid.Parse(as.GTIDExecuted)
	if err1 != nil || err2 != nil {
		return discard, beyond, fmt.Errorf("the gtidExecuted of site %s or %s in status does not parse; build the value by hand (docs/runbooks/reclone.md)", site, g.Status.ActiveSite)
	}
	beyond = mine.Subtract(theirs)
	return discard.Union(beyond), beyond, nil
}

// DiscardSummary says, in a few lines, what the reclone destroys.
func (p ReclonePlan) DiscardSummary() string {
	if p.Discard.IsEmpty() {
		return fmt.Sprintf("Site %s holds nothing site %s lacks (by the group's status): its data is replaced by a clone of %s and nothing is discarded.\n",
			p.Site, p.Donor, p.Donor)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Site %s holds %d transactions site %s lacks. The clone DESTROYS them:\n", p.Site, p.Discard.Count(), p.Donor)
	for _, line := range strings.Split(p.Discard.String(), "\n") {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	if p.DetectedBy != "" {
		fmt.Fprintf(&b, "Found by: %s.\n", p.DetectedBy)
	}
	fmt.Fprintf(&b, "To keep them, apply them to site %s instead (mysqlbinlog --include-gtids=<set> on site %s's binary logs) and do not reclone.\n", p.Donor, p.Site)
	return b.String()
}

// CheckRecloneValue parses v as the operator does, so a value the plugin
// built and the operator's parser can never disagree unnoticed.
func CheckRecloneValue(v string) error {
	_, err := topology.ParseRecloneValue(v)
	return err
}

func siteStatus(g *v1alpha1.MysqlFailoverGroup, site string) *v1alpha1.SiteStatus {
	for i := range g.Status.Sites {
		if g.Status.Sites[i].Name == site {
			return &g.Status.Sites[i]
		}
	}
	return nil
}

func inSpec(g *v1alpha1.MysqlFailoverGroup, site string) bool {
	return specSite(g, site) != nil
}

func specSite(g *v1alpha1.MysqlFailoverGroup, site string) *v1alpha1.SiteSpec {
	for i := range g.Spec.Sites {
		if g.Spec.Sites[i].Name == site {
			return &g.Spec.Sites[i]
		}
	}
	return nil
}

func specSites(g *v1alpha1.MysqlFailoverGroup) []string {
	var out []string
	for _, s := range g.Spec.Sites {
		out = append(out, s.Name)
	}
	return out
}
