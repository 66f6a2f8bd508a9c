package playground

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/testbed/faultproxy"
)

// The automatic drills: a fault of the active site that the operator must
// detect and fail over from on its own.

// crashDrill kills the active site's mysqld (the node agent holds it down,
// simcontrol.go); its sidecar stays up and reports the exit. Undo starts it
// again on its data directory.
var crashDrill = drill{
	kind: DrillCrash,
	inject: func(_ context.Context, p *Playground, g *v1alpha1.MysqlFailoverGroup) error {
		return p.Fault(g.Status.ActiveSite, "crash")
	},
	undo: func(_ context.Context, p *Playground, from string) error { return p.Fault(from, "restart") },
}

// frozenDrill freezes the active site's mysqld: it accepts connections and
// answers nothing, and its sidecar stays up. Undo thaws it.
var frozenDrill = drill{
	kind: DrillFrozen,
	inject: func(_ context.Context, p *Playground, g *v1alpha1.MysqlFailoverGroup) error {
		return p.Fault(g.Status.ActiveSite, "freeze")
	},
	undo: thaw,
}

// thaw thaws from's mysqld. The sidecar's fence may have SIGKILLed the
// frozen process, which the node agent restarts as a kubelet restarts a
// container (nodeagent.go); the fault API answers 503 while it is down, so
// thaw retries until a process answers (a restarted one is not frozen, and
// thawing it changes nothing).
func thaw(ctx context.Context, p *Playground, from string) error {
	var last error
	if err := until(ctx, func() bool {
		last = p.Fault(from, "thaw")
		return last == nil
	}); err != nil {
		return fmt.Errorf("thaw %s: %w (last: %w)", from, err, last)
	}
	return nil
}

// isolatedDrill cuts the whole active site off (CutOffSite). The writer
// still reaches it (the partition cuts the peers' program names only), so
// it keeps writing there until the site fences itself. Undo heals both.
// Needs Config.FaultProxies.
var isolatedDrill = drill{
	kind: DrillIsolated,
	inject: func(_ context.Context, p *Playground, g *v1alpha1.MysqlFailoverGroup) error {
		return p.CutOffSite(g, g.Status.ActiveSite)
	},
	undo: func(_ context.Context, p *Playground, from string) error { return p.ReconnectSite(from) },
}

// CutOffSite isolates site while it keeps running: every proxied link to
// or from it blackholed (operator to mysqld and sidecar, sidecar to operator
// and to its peers) and its mysqld partitioned from its peers' replication.
// Needs Config.FaultProxies; ReconnectSite undoes it.
func (p *Playground) CutOffSite(g *v1alpha1.MysqlFailoverGroup, site string) error {
	if err := p.IsolateSite(site, faultproxy.Blackhole); err != nil {
		return err
	}
	return p.Fault(site, "partition?"+peerClients(g, site))
}

// ReconnectSite opens site's links and heals its partition.
func (p *Playground) ReconnectSite(site string) error {
	return errors.Join(p.IsolateSite(site, faultproxy.Open), p.Fault(site, "heal"))
}

// peerClients is the partition query that cuts site off from every other
// site's simulated mysqld ("mysqlsim:<name>", mysqlsim.PartitionPeers).
func peerClients(g *v1alpha1.MysqlFailoverGroup, site string) string {
	q := url.Values{}
	for _, s := range g.Spec.Sites {
		if s.Name != site {
			q.Add("client", "mysqlsim:"+s.Name)
		}
	}
	return q.Encode()
}
