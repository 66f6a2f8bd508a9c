package alertrules

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Recorder keeps the samples of successive scrapes of the families it was
// asked for, one step per scrape.
type Recorder struct {
	families map[string]bool
	mu       sync.Mutex
	steps    []map[string]float64
}

// NewRecorder records the families named (histograms by family name).
func NewRecorder(families []string) *Recorder {
	r := &Recorder{families: map[string]bool{}}
	for _, f := range families {
		r.families[f] = true
	}
	return r
}

// Scrape gathers g once and records the samples as the next step.
func (r *Recorder) Scrape(g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return err
	}
	step := map[string]float64{}
	for _, mf := range mfs {
		if r.families[mf.GetName()] {
			addFamily(step, mf)
		}
	}
	r.mu.Lock()
	r.steps = append(r.steps, step)
	r.mu.Unlock()
	return nil
}

// Gap records a step in which the scrape failed (no operator serving): as
// Prometheus does on a failed scrape, every series goes stale.
func (r *Recorder) Gap() {
	r.mu.Lock()
	r.steps = append(r.steps, map[string]float64{})
	r.mu.Unlock()
}

// Steps is the number of steps recorded so far; the last one is Steps()-1.
func (r *Recorder) Steps() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.steps)
}

// Series is one promtool input series.
type Series struct {
	Series string `json:"series"`
	Values string `json:"values"`
}

// InputSeries renders every recorded series in promtool's notation: one
// value per step, "stale" at the first step a series is missing after it
// was present, "_" while it stays missing; runs of one value are written
// "v" then "vxN" (N more of it).
func (r *Recorder) InputSeries() []Series {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := map[string]bool{}
	for _, s := range r.steps {
		for k := range s {
			names[k] = true
		}
	}
	var out []Series
	for name := range names {
		var vals []string
		present := false
		for _, s := range r.steps {
			v, ok := s[name]
			switch {
			case ok:
				vals = append(vals, strconv.FormatFloat(v, 'g', -1, 64))
			case present:
				vals = append(vals, "stale")
			default:
				vals = append(vals, "_")
			}
			present = ok
		}
		out = append(out, Series{Series: name, Values: compress(vals)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Series < out[j].Series })
	return out
}

// compress writes a run of n equal numeric values as "vx(n-1)", the
// notation promtool expands back ("1x3" is four 1s); "_" runs as "_xn".
func compress(vals []string) string {
	var parts []string
	for i := 0; i < len(vals); {
		j := i
		for j < len(vals) && vals[j] == vals[i] {
			j++
		}
		n := j - i
		switch {
		case n == 1 || vals[i] == "stale":
			for k := i; k < j; k++ {
				parts = append(parts, vals[k])
			}
		case vals[i] == "_":
			parts = append(parts, fmt.Sprintf("_x%d", n))
		default:
			parts = append(parts, fmt.Sprintf("%sx%d", vals[i], n-1))
		}
		i = j
	}
	return strings.Join(parts, " ")
}

func addFamily(step map[string]float64, mf *dto.MetricFamily) {
	name := mf.GetName()
	for _, m := range mf.GetMetric() {
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			step[seriesName(name, m.GetLabel())] = m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			step[seriesName(name, m.GetLabel())] = m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			h := m.GetHistogram()
			for _, b := range h.GetBucket() {
				le := strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)
				step[seriesName(name+"_bucket", m.GetLabel(), "le", le)] = float64(b.GetCumulativeCount())
			}
			step[seriesName(name+"_bucket", m.GetLabel(), "le", "+Inf")] = float64(h.GetSampleCount())
			step[seriesName(name+"_sum", m.GetLabel())] = h.GetSampleSum()
			step[seriesName(name+"_count", m.GetLabel())] = float64(h.GetSampleCount())
		}
	}
}

// seriesName is name{labels} with the labels sorted, as promtool parses it.
func seriesName(name string, labels []*dto.LabelPair, extra ...string) string {
	kv := map[string]string{}
	for _, l := range labels {
		kv[l.GetName()] = l.GetValue()
	}
	for i := 0; i+1 < len(extra); i += 2 {
		kv[extra[i]] = extra[i+1]
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(kv[k])
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}
