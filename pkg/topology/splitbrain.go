package topology

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// writableSites are the trusted writable sites in spec order.
func (d *decider) writableSites() []string {
	var out []string
	for _, s := range d.in.Sites {
		if o := d.view(s.Name); o != nil && o.Writable {
			out = append(out, s.Name)
		}
	}
	return out
}

// splitBrain handles several writable sites while no active site is on
// record. The target of the last failover, if writable, is kept (history
// decides); otherwise, with spec.splitBrainPolicy.sitePriorities, the first
// listed site that is writable is kept: the intent is recorded, then the others are fenced.
// Without it, nothing is fenced: the operator has no basis to choose, so it
// reports and waits for a human. It reports whether it handled the group.
func (d *decider) splitBrain() bool {
	writable := d.writableSites()
	if len(writable) < 2 {
		return false
	}
	keep, basis := "", "the first writable entry of spec.splitBrainPolicy.sitePriorities"
	// Failover history (status.lastFailover, or its annotation copy when the
	// status was lost) names the site that was serving: it wins.
	if lf := d.in.Status.LastFailover; lf != nil {
		for _, w := range writable {
			if w == lf.Target && d.role(w) == v1alpha1.SiteRolePrimaryCandidate {
				keep, basis = w, "the target of the last failover ("+lf.Time.UTC().Format("2006-01-02T15:04:05Z")+")"
			}
		}
	}
	for _, p := range d.in.Failover.Priorities {
		for _, w := range writable {
			if p == w && d.role(p) == v1alpha1.SiteRolePrimaryCandidate && keep == "" {
				keep = p
			}
		}
	}
	if keep == "" {
		why := "spec.splitBrainPolicy.sitePriorities is not set"
		if len(d.in.Failover.Priorities) > 0 {
			why = "no site of spec.splitBrainPolicy.sitePriorities (" + strings.Join(d.in.Failover.Priorities, ", ") + ") is writable"
		}
		msg := fmt.Sprintf("sites %s are all writable and no active site is on record; %s, so none is fenced automatically: fence every site but the one that should serve (SET GLOBAL super_read_only = ON), or set sitePriorities",
			strings.Join(writable, ", "), why)
		d.degrade(v1alpha1.ReasonSplitBrain, "%s", msg)
		d.waiting = "split brain: waiting for a human"
		if prev := findCondition(d.in.Status.Conditions, v1alpha1.ConditionDegraded); prev == nil || prev.Reason != v1alpha1.ReasonSplitBrain {
			d.event(true, v1alpha1.EventSplitBrainDetected, "%s", msg)
		}
		return true
	}
	if u := d.undecided(); len(u) > 0 {
		d.waiting = "split brain: waiting for the first observation of sites " + strings.Join(u, ", ")
		d.degrade(v1alpha1.ReasonSplitBrain, "sites %s are all writable", strings.Join(writable, ", "))
		return true
	}
	now := metav1.NewTime(d.in.Now)
	msg := fmt.Sprintf("sites %s are all writable with no active site on record: keeping site %s, %s, and fencing the others",
		strings.Join(writable, ", "), keep, basis)
	d.out.Status.Transition = &v1alpha1.Transition{
		ID: d.in.NewTransitionID, Kind: v1alpha1.TransitionSplitBrainResolution, TargetSite: keep,
		TopologyGeneration: d.in.Status.TopologyGeneration + 1, Step: v1alpha1.StepFencingSource,
		StartTime: now, StepTime: &now, Message: truncate(msg, 1024),
	}
	d.out.WriteFirst = true
	d.fenceWritable(keep, fmt.Sprintf("split brain: site %s is kept (sitePriorities)", keep))
	d.degrade(v1alpha1.ReasonSplitBrain, "%s", msg)
	d.waiting = "split brain: fencing every site but " + keep
	d.event(true, v1alpha1.EventSplitBrainResolutionStarted, "%s", msg)
	return true
}

// continueSplitBrain fences every writable site but the kept one and, once
// it is the only writable site, publishes it as the active site with the
// new topologyGeneration in the write that clears the intent.
func (d *decider) continueSplitBrain(t *v1alpha1.Transition) {
	keep := t.TargetSite
	kv := d.view(keep)
	if d.in.Observed[keep].Reach == observe.Unreachable || (kv != nil && !kv.Writable) || !d.inSpec(keep) {
		d.out.Status.Transition = nil
		d.out.WriteFirst = true
		d.waiting = "split brain resolution abandoned"
		d.event(true, v1alpha1.EventSplitBrainResolutionAborted, "split brain resolution keeping site %s abandoned: it is no longer a reachable writable site; the situation is judged again", keep)
		return
	}
	if kv == nil {
		d.waiting = fmt.Sprintf("split brain resolution: waiting for a current observation of site %s", keep)
		return
	}
	d.fenceWritable(keep, fmt.Sprintf("split brain: site %s is kept (sitePriorities)", keep))
	if others := d.writersBesides(keep); len(others) > 0 {
		d.degrade(v1alpha1.ReasonSplitBrain, "sites %s and %s are all writable; fencing all but %s", strings.Join(others, ", "), keep, keep)
		d.waiting = "split brain: fencing every site but " + keep
		return
	}
	if u := d.undecided(); len(u) > 0 {
		d.waiting = fmt.Sprintf("split brain resolution: waiting for a current observation of sites %s", strings.Join(u, ", "))
		return
	}
	d.out.Status.ActiveSite = keep
	d.out.Status.TopologyGeneration = t.TopologyGeneration
	d.out.Status.Transition = nil
	d.out.WriteFirst = true
	d.event(false, v1alpha1.EventSplitBrainResolved, "site %s is the only writable site and the active site; topologyGeneration is %d", keep, t.TopologyGeneration)
	d.steady(keep)
}
