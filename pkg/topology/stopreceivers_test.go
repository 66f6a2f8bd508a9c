package topology

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

// Issue 21, hole 5: an operator that crashed after the promotion's
// MakeWritable, before the StopReceivers of the same decision ran, finds
// Promoting recorded and the other followers still receiving from the old
// primary. Every later step stops them, until they are repointed.
func TestStopReceiversIsPartOfEveryPromotedStep(t *testing.T) {
	st := inFailover(v1alpha1.StepPromoting)
	st.LastFailover = &v1alpha1.LastFailover{Time: metav1.NewTime(t0), Target: "pdx", Source: "iad", PromotionGTIDExecuted: expand("I:1-11")}
	for _, tc := range []struct {
		name     string
		writable bool
		want     string
	}{
		{"crashed before MakeWritable ran", false, "StopReceiver dr,StopReceiver reader,MakeWritable pdx"},
		{"crashed after MakeWritable: the publishing decision", true, "StopReceiver dr,StopReceiver reader,Repoint dr,Repoint reader"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := iadDown() // dr and reader replicate from iad, receivers running
			obs["pdx"] = site("pdx", tc.writable, "I:1-11", nil)
			in := failoverInput(obs, *st.DeepCopy())
			in.Now = t0.Add(time.Minute)
			d := Decide(in)
			if got := strings.Join(actions(d), ","); got != tc.want {
				t.Fatalf("actions %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("receivers already stopped: nothing more to stop", func(t *testing.T) {
		obs := iadDown()
		obs["pdx"] = site("pdx", false, "I:1-11", nil)
		for _, n := range []string{"dr", "reader"} {
			r := *obs[n].Last.Replica
			r.IORunning = "No"
			obs[n].Last.Replica = &r
		}
		d := Decide(failoverInput(obs, *st.DeepCopy()))
		if got := strings.Join(actions(d), ","); got != "MakeWritable pdx" {
			t.Fatalf("actions %s", got)
		}
	})
}
