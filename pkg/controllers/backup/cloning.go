package backup

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// annotationRecloneSite is the topology manager's reclone request
// ("<site>:confirm=..."); its site is about to be cloned over.
const annotationRecloneSite = "bloodraven.shipstream.io/reclone-site"

// cloneInMessage finds "site <target> from site <donor>" in the
// Bootstrapping condition the topology manager sets True (reason Cloning)
// while clones run: the only place the group's status names them.
var cloneInMessage = regexp.MustCompile(`site ([a-z0-9]([-a-z0-9]*[a-z0-9])?) from site `)

// CloningSites are the sites of g a clone runs into or is requested for.
func CloningSites(g *v1alpha1.MysqlFailoverGroup) map[string]bool {
	out := map[string]bool{}
	if c := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionBootstrapping); c != nil && c.Status == "True" && c.Reason == v1alpha1.ReasonCloning {
		for _, m := range cloneInMessage.FindAllStringSubmatch(c.Message, -1) {
			out[m[1]] = true
		}
	}
	if v := g.Annotations[annotationRecloneSite]; v != "" {
		if site, _, _ := strings.Cut(v, ":"); site != "" {
			out[site] = true
		}
	}
	return out
}
