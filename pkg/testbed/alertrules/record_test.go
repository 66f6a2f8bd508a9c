package alertrules

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// A series that appears, holds, disappears and returns is written as
// promtool reads it: "_" before it exists, runs compressed, "stale" at the
// first scrape without it (a failed scrape too).
func TestInputSeriesNotation(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bloodraven_x"}, []string{"site"})
	other := prometheus.NewGauge(prometheus.GaugeOpts{Name: "bloodraven_not_recorded"})
	reg.MustRegister(g, other)
	r := NewRecorder([]string{"bloodraven_x"})
	scrape := func() {
		if err := r.Scrape(reg); err != nil {
			t.Fatal(err)
		}
	}
	scrape() // no series yet
	g.WithLabelValues("iad").Set(1)
	scrape()
	scrape()
	scrape()
	g.WithLabelValues("iad").Set(0)
	scrape()
	g.DeleteLabelValues("iad")
	scrape()
	r.Gap()
	g.WithLabelValues("iad").Set(2.5)
	scrape()
	got := r.InputSeries()
	if len(got) != 1 || got[0].Series != `bloodraven_x{site="iad"}` || got[0].Values != "_ 1x2 0 stale _ 2.5" {
		t.Fatalf("input series %+v", got)
	}
}
