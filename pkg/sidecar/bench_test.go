package sidecar_test

import (
	"context"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/sidecar/fencing"
)

// BenchmarkRound measures one fencing-loop round of a primary with two peers
// on loopback: observe mysqld (two statements), ask the operator and both
// peers, decide.
func BenchmarkRound(b *testing.B) {
	nw := newNetwork()
	op := startOperator(b, nw, "iad", 1)
	sites := startSites(b, nw, op, threeSites, clusterOpts{})
	iad := sites["iad"]
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if d := iad.sc.Round(ctx); d.Reason != fencing.ReasonOperatorConfirms {
			b.Fatalf("decision %s", d.Reason)
		}
	}
}

func BenchmarkDecide(b *testing.B) {
	now := time.Now()
	in := fencing.Input{Now: now, Site: "iad", Local: fencing.LocalWritable,
		Operator: &fencing.View{ActiveSite: "iad", TopologyGeneration: 3, ValidUntil: now.Add(-time.Second)},
		Peers: []fencing.PeerView{
			{Peer: "dfw", Confirmed: true, View: fencing.View{ActiveSite: "iad", TopologyGeneration: 3, ValidUntil: now.Add(time.Second)}},
			{Peer: "sjc", Confirmed: true, View: fencing.View{ActiveSite: "dfw", TopologyGeneration: 2, ValidUntil: now.Add(time.Second)}},
		}}
	for b.Loop() {
		if d := fencing.Decide(in); d.Reason != fencing.ReasonPeerConfirms {
			b.Fatal(d.Reason)
		}
	}
}
