package sidecar_test

import (
	"context"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/protocol"
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

// BenchmarkSelfFence runs each case of the fencing sequence once per
// iteration (run with -benchtime=1x: an iteration takes about ten seconds)
// and reports how long the sequence took from its decision against its
// budget (protocol.SelfFenceStatementTimeout), and how long from the cut
// until mysqld was fenced or stopped against the bound minus its margin.
func BenchmarkSelfFence(b *testing.B) {
	for _, c := range fenceCases {
		b.Run(c.name, func(b *testing.B) {
			var worstSeq, worstCut time.Duration
			for b.Loop() {
				r := runFenceCase(b, c)
				worstSeq, worstCut = max(worstSeq, r.report.Took), max(worstCut, r.afterCut)
			}
			b.ReportMetric(float64(worstSeq.Milliseconds()), "sequence-ms")
			b.ReportMetric(float64(protocol.SelfFenceStatementTimeout.Milliseconds()), "budget-ms")
			b.ReportMetric(float64(worstCut.Milliseconds()), "after-cut-ms")
			b.ReportMetric(float64((bound - protocol.SelfFenceClockMargin).Milliseconds()), "deadline-ms")
		})
	}
}
