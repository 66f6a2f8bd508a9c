package topologymanager

import (
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// siteRole is the CR value of a site's role (docs/logs.md: the role field
// of the fencing and planned-failover records), PrimaryCandidate when the
// spec leaves it to the default.
func siteRole(g *v1alpha1.MysqlFailoverGroup, site string) string {
	for _, s := range g.Spec.Sites {
		if s.Name == site {
			if s.Role == "" {
				return string(v1alpha1.DefaultSiteRole)
			}
			return string(s.Role)
		}
	}
	return ""
}

// logStateChanges writes the state-transition record for every site whose
// status.sites[].state differs between the status stored before and the
// one just stored; from and to carry the CR values (Writable, ReadOnly,
// ...), from empty for a site the status did not list.
func (p *mpass) logStateChanges(before, after *v1alpha1.MysqlFailoverGroup) {
	was := map[string]v1alpha1.SiteState{}
	for _, s := range before.Status.Sites {
		was[s.Name] = s.State
	}
	for _, s := range after.Status.Sites {
		if prev, ok := was[s.Name]; ok && prev == s.State {
			continue
		}
		p.log.Info("site state changed", "site", s.Name, "role", siteRole(after, s.Name),
			"from", string(was[s.Name]), "to", string(s.State))
	}
}
