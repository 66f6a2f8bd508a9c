package render

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// TaintEffect is the effect of the db-readonly taint: NoSchedule keeps new
// pods that do not tolerate it off the nodes of non-active sites, and never
// evicts running pods, so a failover does not turn into a mass eviction.
const TaintEffect = corev1.TaintEffectNoSchedule

// Taint is the group's db-readonly taint.
func Taint(g *v1alpha1.MysqlFailoverGroup) corev1.Taint {
	return corev1.Taint{Key: TaintKey(g.Namespace, g.Name), Effect: TaintEffect}
}

// TaintChanges says which nodes must gain and which must lose the group's
// taint, by name, sorted.
type TaintChanges struct {
	Add, Remove []string
}

// Empty reports whether nothing changes.
func (c TaintChanges) Empty() bool { return len(c.Add) == 0 && len(c.Remove) == 0 }

// DesiredTaints decides the group's taint on every node: a node selected by
// the taintNodeSelector of a non-active PrimaryCandidate or DisasterRecovery
// site carries it, unless the active site's selector also selects it (the
// active site's nodes are never tainted). Readers never cause taint
// operations, and neither does an empty selector (it would select every
// node). Without an active site nothing changes: the operator does not know
// which site serves.
func DesiredTaints(g *v1alpha1.MysqlFailoverGroup, nodes []*corev1.Node) TaintChanges {
	var ch TaintChanges
	if siteIndex(g, g.Status.ActiveSite) < 0 {
		return ch
	}
	key := TaintKey(g.Namespace, g.Name)
	for _, n := range nodes {
		want := tainted(g, n.Labels)
		has := HasTaint(n, key)
		switch {
		case want && !has:
			ch.Add = append(ch.Add, n.Name)
		case !want && has:
			ch.Remove = append(ch.Remove, n.Name)
		}
	}
	sort.Strings(ch.Add)
	sort.Strings(ch.Remove)
	return ch
}

func tainted(g *v1alpha1.MysqlFailoverGroup, nodeLabels map[string]string) bool {
	want := false
	for _, s := range g.Spec.Sites {
		if s.Role == v1alpha1.SiteRoleReadOnly || len(s.TaintNodeSelector) == 0 {
			continue
		}
		if !labels.SelectorFromSet(s.TaintNodeSelector).Matches(labels.Set(nodeLabels)) {
			continue
		}
		if s.Name == g.Status.ActiveSite {
			return false
		}
		want = true
	}
	return want
}

// HasTaint reports whether n carries a taint with key.
func HasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
