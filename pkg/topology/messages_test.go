package topology

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/messagecheck"
)

// checkMessages fails on every Event, condition, site message and action
// reason of d that reads badly, and returns the Events' messages.
func checkMessages(t *testing.T, d Decision) string {
	t.Helper()
	var all []string
	for _, e := range d.Events {
		all = append(all, e.Reason+": "+e.Message)
	}
	for _, c := range d.Status.Conditions {
		all = append(all, c.Type+": "+c.Message)
	}
	for _, s := range d.Status.Sites {
		if s.Message != "" {
			all = append(all, "site "+s.Name+": "+s.Message)
		}
	}
	for _, a := range d.Actions {
		all = append(all, string(a.Kind)+": "+a.Why)
	}
	for _, m := range all {
		if p := messagecheck.Problems(m); len(p) > 0 {
			t.Errorf("%q reads badly: %v", m, p)
		}
	}
	return strings.Join(all, "\n")
}

// The messages of the issue, with empty GTID sets and a source-less follower.
func TestMessagesWithEmptyValues(t *testing.T) {
	t.Run("failover published with an empty promotion set", func(t *testing.T) {
		obs := iadDown()
		obs["iad"] = unreachable()
		obs["pdx"] = site("pdx", true, "", nil)
		st := inFailover(v1alpha1.StepPromoting)
		st.LastFailover = &v1alpha1.LastFailover{Time: metav1.NewTime(t0), Target: "pdx", Source: "iad"}
		in := failoverInput(obs, st)
		in.Now = t0.Add(time.Minute)
		d := Decide(in)
		if got := checkMessages(t, d); !strings.Contains(got, "promoted at an empty GTID set") {
			t.Errorf("messages:\n%s", got)
		}
	})
	t.Run("planned drain of a source with an empty set", func(t *testing.T) {
		obs := empty4()
		obs["pdx"] = site("pdx", false, "", replicating(iadHost))
		st := active(3, "iad")
		st.Transition = &v1alpha1.Transition{ID: "p1", Kind: v1alpha1.TransitionPlanned, SourceSite: "iad", TargetSite: "pdx",
			TopologyGeneration: 4, Step: v1alpha1.StepFencingSource, StartTime: metav1.NewTime(t0), Message: "planned handoff from iad to pdx"}
		d := Decide(newInput(obs, st))
		if got := checkMessages(t, d); !strings.Contains(got, "site iad is fenced at an empty GTID set;") {
			t.Errorf("messages:\n%s", got)
		}
	})
	t.Run("follower without a source is repointed", func(t *testing.T) {
		obs := steadyObs()
		obs["pdx"] = site("pdx", false, "I:1-10", nil)
		d := Decide(newInput(obs, active(3, "iad")))
		if got := checkMessages(t, d); !strings.Contains(got, "site pdx has no replication source; the active site is iad") {
			t.Errorf("messages:\n%s", got)
		}
	})
	t.Run("divergent follower without a source", func(t *testing.T) {
		obs := steadyObs()
		obs["pdx"] = site("pdx", false, "I:1-10,P:1", nil)
		d := Decide(newInput(obs, active(3, "iad")))
		if got := checkMessages(t, d); !strings.Contains(got, "and has no replication source: it is not repointed") {
			t.Errorf("messages:\n%s", got)
		}
	})
}

func TestGTIDPhrase(t *testing.T) {
	if got := GTIDPhrase(""); got != "an empty GTID set" {
		t.Errorf("GTIDPhrase(\"\") = %q", got)
	}
	if s := expand("I:1-3"); GTIDPhrase(s) != s {
		t.Errorf("GTIDPhrase(%q) = %q", s, GTIDPhrase(s))
	}
}
