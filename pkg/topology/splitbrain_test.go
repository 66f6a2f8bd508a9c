package topology

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// splitObs: iad and pdx both writable with diverged sets, no active site.
func splitObs() map[string]SiteInput {
	obs := empty4()
	obs["iad"] = site("iad", true, "I:1-5", nil)
	obs["pdx"] = site("pdx", true, "I:1-3,P:1-2", nil)
	return obs
}

func TestSplitBrainWithoutPrioritiesFencesNothing(t *testing.T) {
	for name, obs := range map[string]map[string]SiteInput{
		"diverged":    splitObs(),
		"comparable":  with(splitObs(), "pdx", site("pdx", true, "I:1-3", nil)), // even then: no guess
		"three sites": with(splitObs(), "dr", site("dr", true, "", nil)),
	} {
		t.Run(name, func(t *testing.T) {
			d := Decide(newInput(obs, v1alpha1.MysqlFailoverGroupStatus{}))
			if len(d.Actions) != 0 || d.Status.Transition != nil || d.Status.ActiveSite != "" {
				t.Fatalf("acted on a split brain without sitePriorities: %v transition %+v", actions(d), d.Status.Transition)
			}
			deg := cond(d, v1alpha1.ConditionDegraded)
			if deg.Status != metav1.ConditionTrue || deg.Reason != v1alpha1.ReasonSplitBrain || !strings.Contains(deg.Message, "iad, pdx") || !strings.Contains(deg.Message, "sitePriorities") {
				t.Fatalf("Degraded %+v", deg)
			}
			if !hasEvent(d, v1alpha1.EventSplitBrainDetected, true) {
				t.Fatalf("events %+v", d.Events)
			}
			// The Warning is not repeated on the next poll.
			if again := Decide(newInput(obs, d.Status)); hasEvent(again, v1alpha1.EventSplitBrainDetected, true) || len(again.Actions) != 0 {
				t.Fatalf("second poll: events %+v actions %v", again.Events, actions(again))
			}
		})
	}
}

func TestSplitBrainWithPriorities(t *testing.T) {
	in := newInput(splitObs(), v1alpha1.MysqlFailoverGroupStatus{})
	in.Failover.Priorities = []string{"pdx", "iad"}
	d := Decide(in)
	tr := d.Status.Transition
	if !d.WriteFirst || tr == nil || tr.Kind != v1alpha1.TransitionSplitBrainResolution || tr.TargetSite != "pdx" || tr.TopologyGeneration != 1 {
		t.Fatalf("intent %+v (WriteFirst %v)", tr, d.WriteFirst)
	}
	if got := strings.Join(actions(d), ","); got != "Fence iad" {
		t.Fatalf("actions %q, want the lower-priority writer fenced", got)
	}
	if d.Status.ActiveSite != "" || !hasEvent(d, v1alpha1.EventSplitBrainResolutionStarted, true) {
		t.Fatalf("active %q events %+v", d.Status.ActiveSite, d.Events)
	}

	// The fence has not landed yet (or the operator restarted): fenced again.
	in2 := newInput(splitObs(), d.Status)
	in2.Failover.Priorities = in.Failover.Priorities
	again := Decide(in2)
	if got := strings.Join(actions(again), ","); got != "Fence iad" || again.Status.ActiveSite != "" {
		t.Fatalf("resume: actions %q active %q", got, again.Status.ActiveSite)
	}
	// iad fenced: pdx published, generation bumped, intent cleared in one write.
	obs := splitObs()
	obs["iad"] = site("iad", false, "I:1-5", nil)
	in3 := newInput(obs, again.Status)
	in3.Failover.Priorities = in.Failover.Priorities
	done := Decide(in3)
	if !done.WriteFirst || done.Status.ActiveSite != "pdx" || done.Status.TopologyGeneration != 1 || done.Status.Transition != nil {
		t.Fatalf("completion %+v", done.Status)
	}
	if !hasEvent(done, v1alpha1.EventSplitBrainResolved, false) {
		t.Fatalf("events %+v", done.Events)
	}
	// iad's extra transactions are now a divergence record, not rejoined.
	if s := siteStatus(done, "iad"); s.DivergentGTID != expand("I:4-5") {
		t.Fatalf("iad %+v", s)
	}
	for _, a := range done.Actions {
		if a.Site == "iad" && (a.Kind == Repoint || a.Kind == Clone) {
			t.Fatalf("iad's transactions would be dropped: %v", actions(done))
		}
	}
}

func TestSplitBrainPrioritiesNoneWritable(t *testing.T) {
	obs := with(splitObs(), "dr", site("dr", true, "", nil))
	obs["iad"] = site("iad", false, "I:1-5", nil)
	in := newInput(obs, v1alpha1.MysqlFailoverGroupStatus{})
	in.Failover.Priorities = []string{"iad"}
	d := Decide(in)
	if len(d.Actions) != 0 || d.Status.Transition != nil {
		t.Fatalf("acted: %v", actions(d))
	}
	if deg := cond(d, v1alpha1.ConditionDegraded); deg.Reason != v1alpha1.ReasonSplitBrain || !strings.Contains(deg.Message, "no site of spec.splitBrainPolicy.sitePriorities") {
		t.Fatalf("Degraded %+v", deg)
	}
}

func TestSplitBrainResolutionAbortsWhenKeptSiteIsLost(t *testing.T) {
	in := newInput(splitObs(), v1alpha1.MysqlFailoverGroupStatus{})
	in.Failover.Priorities = []string{"pdx"}
	d := Decide(in)
	obs := splitObs()
	obs["pdx"] = unreachable()
	in2 := newInput(obs, d.Status)
	in2.Failover.Priorities = in.Failover.Priorities
	ab := Decide(in2)
	if ab.Status.Transition != nil || ab.Status.ActiveSite != "" || !hasEvent(ab, v1alpha1.EventSplitBrainResolutionAborted, true) {
		t.Fatalf("abort: %+v events %+v", ab.Status, ab.Events)
	}
	for _, a := range ab.Actions {
		if a.Kind == MakeWritable {
			t.Fatalf("made a site writable while aborting: %v", actions(ab))
		}
	}
}

// Failover history names the winner: no priorities needed, no guess made.
func TestSplitBrainFailoverHistoryWins(t *testing.T) {
	st := v1alpha1.MysqlFailoverGroupStatus{LastFailover: &v1alpha1.LastFailover{Time: metav1.NewTime(t0.Add(-time.Hour)), Target: "iad"}}
	in := newInput(splitObs(), st)
	in.Failover.Priorities = []string{"pdx"}
	d := Decide(in)
	if tr := d.Status.Transition; tr == nil || tr.TargetSite != "iad" || strings.Join(actions(d), ",") != "Fence pdx" {
		t.Fatalf("transition %+v actions %v", d.Status.Transition, actions(d))
	}
	if !strings.Contains(d.Status.Transition.Message, "last failover") {
		t.Fatalf("message %q", d.Status.Transition.Message)
	}
}
