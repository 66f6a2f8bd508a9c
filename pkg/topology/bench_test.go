package topology

import (
	"fmt"
	"testing"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/observe"
)

// BenchmarkDecideSteady16Sites: one decision for a healthy group of 16
// sites whose GTID sets span 50 server UUIDs with 20 intervals each (a long
// failover history), the cost paid on every poll.
func BenchmarkDecideSteady16Sites(b *testing.B) {
	var text string
	for u := range 50 {
		for i := range 20 {
			if text != "" {
				text += ","
			}
			text += fmt.Sprintf("%08x-0000-4000-8000-%012x:%d-%d", u+1, u+1, i*100+1, i*100+50)
		}
	}
	history := gtid.MustParse(text)
	var sites []SiteSpec
	obs := map[string]SiteInput{}
	activeUUID := fmt.Sprintf("%08x-0000-4000-8000-%012x", 1, 1)
	for i := range 16 {
		name := fmt.Sprintf("s%02d", i)
		role := v1alpha1.SiteRolePrimaryCandidate
		if i >= 2 {
			role = v1alpha1.SiteRoleReadOnly
		}
		sites = append(sites, SiteSpec{Name: name, Role: role})
		o := &Observed{ServerUUID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i+1, i+1), Executed: history, At: t0}
		if i == 0 {
			o.ServerUUID, o.Writable = activeUUID, true
		} else {
			o.Replica = replicating(SourceHost("shop", "orders", "s00"))
		}
		obs[name] = SiteInput{Reach: observe.Reachable, Fresh: true, Last: o}
	}
	in := newInput(obs, active(1, "s00"))
	in.Sites = sites
	in.Status = Decide(in).Status
	b.ReportAllocs()
	for b.Loop() {
		d := Decide(in)
		if len(d.Actions) != 0 {
			b.Fatalf("actions %v", actions(d))
		}
	}
}
