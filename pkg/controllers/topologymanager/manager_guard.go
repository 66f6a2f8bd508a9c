package topologymanager

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/topology"
)

// The guard before every MySQL mutation (docs/safety.md, The leadership
// margin). A decision may be carried out late: the pass stalled, or its
// process lost the Lease while it ran. A deposed leader's late statement
// must not undo what a new leader did (unfence a site it fenced), so
// immediately before each mutation the pass checks that this process still
// leads with a statement's worth of margin (Options.Leadership), and before
// each MakeWritable, the one mutation that can make a second writer, that
// the topology it decided on is still the stored one (a fresh read from the
// API server, not the cache). A refused mutation ends the decision's
// actions: the next pass decides again from what it then observes.

// errTopologyMoved: the stored topology is no longer the one decided on.
var errTopologyMoved = errors.New("the stored topology changed since this decision")

// leading is Options.Leadership's answer (nil without one). It is also
// asked before each status write: a deposed leader stores nothing more.
func (p *mpass) leading() error {
	if f := p.m.opts.Leadership; f != nil {
		return f()
	}
	return nil
}

// guard is nil when a may run now.
func (p *mpass) guard(ctx context.Context, a topology.Action) error {
	if hook := p.m.opts.BeforeMutation; hook != nil {
		hook(a)
	}
	if err := p.leading(); err != nil {
		return err
	}
	if a.Kind != topology.MakeWritable {
		return nil
	}
	cur, err := p.m.ctrl.ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.g.Namespace).Get(ctx, p.g.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("re-read the group before making %s writable: %w", a.Site, err)
	}
	return sameTopology(p.g.Status, cur.Status)
}

// sameTopology compares what an unfence depends on: the active site, the
// generation and the transition in flight (its identity and step).
func sameTopology(decided, stored v1alpha1.MysqlFailoverGroupStatus) error {
	if decided.ActiveSite != stored.ActiveSite || decided.TopologyGeneration != stored.TopologyGeneration {
		return fmt.Errorf("%w: active site %q generation %d, stored %q generation %d", errTopologyMoved,
			decided.ActiveSite, decided.TopologyGeneration, stored.ActiveSite, stored.TopologyGeneration)
	}
	dt, st := decided.Transition, stored.Transition
	switch {
	case dt == nil && st == nil:
		return nil
	case dt == nil || st == nil || dt.ID != st.ID || dt.Step != st.Step:
		return fmt.Errorf("%w: transition %s, stored %s", errTopologyMoved, describeTransition(dt), describeTransition(st))
	}
	return nil
}

func describeTransition(t *v1alpha1.Transition) string {
	if t == nil {
		return "none"
	}
	return fmt.Sprintf("%s at %s", t.ID, t.Step)
}

// seenTransition is when this process first saw a transition.
type seenTransition struct {
	id string
	at time.Time
}

// transitionSeen is when this process first saw the group's transition t,
// on its own clock (topology.Input.TransitionSeen); zero without one. The
// manager runs only while its process leads, so this is never earlier than
// this process's leadership.
func (p *mpass) transitionSeen(t *v1alpha1.Transition) time.Time {
	if t == nil {
		p.m.seen.Delete(p.key)
		return time.Time{}
	}
	v, _ := p.m.seen.LoadOrStore(p.key, seenTransition{id: t.ID, at: p.now})
	s := v.(seenTransition)
	if s.id != t.ID {
		s = seenTransition{id: t.ID, at: p.now}
		p.m.seen.Store(p.key, s)
	}
	return s.at
}
