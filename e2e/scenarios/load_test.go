//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/testbed/playground"
)

// load is the write load every failure scenario runs: the playground's
// DNS-following writer, every 20 ms.
type load struct {
	w    *playground.Writer
	stop context.CancelFunc
	done chan struct{}
}

// startLoad starts the writer and waits until it has written through the
// current primary.
func startLoad(t *testing.T) *load {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	w, err := pg.NewWriter(ctx, 20*time.Millisecond)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	l := &load{w: w, stop: stop, done: make(chan struct{})}
	go func() { defer close(l.done); w.Run(ctx) }()
	t.Cleanup(l.halt)
	eventually(t, 30*time.Second, func() string {
		if n := len(w.Acks()); n < 20 {
			return fmt.Sprintf("%d writes acknowledged", n)
		}
		return ""
	})
	return l
}

func (l *load) halt() {
	l.stop()
	<-l.done
}

// reachedNewPrimary waits until the new primary acknowledged a write and
// logs the gap since the failure began.
func (l *load) reachedNewPrimary(t *testing.T, failedAt time.Time, to string) {
	t.Helper()
	eventually(t, 30*time.Second, func() string {
		gap, ok := playground.Gap(l.w.Acks(), failedAt, to)
		if !ok {
			return "no write acknowledged by the new primary " + to + " yet"
		}
		t.Logf("write gap (last ack before the failure to the first ack by %s): %s", to, gap.Round(time.Millisecond))
		return ""
	})
}

// bringBack returns the old primary (comeBack), then checks no
// acknowledged write is lost: any the new primary lacks must be reported
// in the old primary's divergentGtid (never rejoined silently); those are
// applied to the new primary as the runbook says, and the old primary
// must then rejoin. Finally every acknowledged write is on the new primary.
func (l *load) bringBack(t *testing.T, from, to string, comeBack func()) {
	t.Helper()
	ctx := context.Background()
	missing, err := l.w.Missing(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	comeBack()
	st := rejoined(t, from)
	t.Logf("acknowledged writes: %d; missing on the new primary: %d", len(l.w.Acks()), missing.Count())
	switch {
	case st.DivergentGTID != "":
		reported, err := gtid.Parse(st.DivergentGTID)
		if err != nil {
			t.Fatal(err)
		}
		if !missing.IsSubsetOf(reported) {
			t.Fatalf("lost acknowledged writes %s are not all in %s's divergentGtid %s", missing, from, reported)
		}
		n, err := l.w.ApplyDivergent(ctx, to, st.DivergentGTID)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("old primary %s held %d transactions the new primary lacked; applied them to %s", from, n, to)
		eventually(t, 90*time.Second, func() string {
			g := group(t)
			st := siteStatus(g, from)
			ready := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
			if st.DivergentGTID != "" || st.Replication != "Running" || ready == nil || ready.Status != metav1.ConditionTrue {
				return fmt.Sprintf("after applying its transactions, %s: divergent %q replication %s", from, st.DivergentGTID, st.Replication)
			}
			return ""
		})
	case !missing.IsEmpty():
		t.Fatalf("acknowledged writes %s are missing on %s, yet %s rejoined without reporting divergence", missing, to, from)
	}
	l.halt()
	if missing, err = l.w.Missing(ctx, to); err != nil || !missing.IsEmpty() {
		t.Fatalf("after recovery, acknowledged writes missing on %s: %s (%v)", to, missing, err)
	}
}
