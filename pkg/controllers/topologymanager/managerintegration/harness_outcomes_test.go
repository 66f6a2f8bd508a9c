package managerintegration

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// What each fault led to, counted per fault kind over the run.

// Outcomes of a step.
const (
	outcomeFailover     = "failover"
	outcomeNoFailover   = "no failover"
	outcomeSidecarFence = "fenced by its sidecar while cut off"
	outcomeProcessStop  = "mysqld stopped by its sidecar"
	outcomeReclone      = "reclone"
	outcomeNotKept      = "acknowledged writes not kept (reported lost)"
	outcomeTwoWriters   = "two writers (violation)"
	outcomeOtherFailure = "another failure (a check or the settling)"
)

var outcomeOrder = []string{outcomeFailover, outcomeNoFailover, outcomeSidecarFence, outcomeProcessStop, outcomeReclone,
	outcomeNotKept, outcomeTwoWriters, outcomeOtherFailure}

// stepRecord is one fault of a sequence and what it led to.
type stepRecord struct {
	kind       string
	start, end time.Time // end is zero until the group settled
	outcomes   map[string]bool
	// counters at the step's start
	failovers, selfFenced, reclones, stops, violations int
}

// processStops counts the sites' mysqld processes stopped by their sidecar.
func (f *fabric) processStops() int {
	n := 0
	for _, hs := range f.sites {
		n += int(hs.stops.Load())
	}
	return n
}

func (h *harnessRun) startStep() {
	stops := h.f.processStops()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.steps = append(h.steps, stepRecord{start: time.Now(), outcomes: map[string]bool{}, failovers: h.failovers,
		selfFenced: h.selfFenced, reclones: h.reclones, stops: stops, violations: len(h.violations)})
}

// endStep records what the step led to, once the group settled.
func (h *harnessRun) endStep() {
	stops := h.f.processStops()
	h.mu.Lock()
	defer h.mu.Unlock()
	st := &h.steps[len(h.steps)-1]
	st.end = time.Now()
	h.closeStepLocked(st, stops)
}

func (h *harnessRun) closeStepLocked(st *stepRecord, stops int) {
	st.outcomes[outcomeFailover] = h.failovers > st.failovers
	st.outcomes[outcomeNoFailover] = h.failovers == st.failovers
	st.outcomes[outcomeSidecarFence] = h.selfFenced > st.selfFenced
	st.outcomes[outcomeProcessStop] = stops > st.stops
	st.outcomes[outcomeReclone] = h.reclones > st.reclones
	st.outcomes[outcomeOtherFailure] = len(h.violations) > st.violations
}

// stepAtLocked is the step in progress at t (the last one started by then).
func (h *harnessRun) stepAtLocked(t time.Time) *stepRecord {
	var at *stepRecord
	for i := range h.steps {
		if !h.steps[i].start.After(t) {
			at = &h.steps[i]
		}
	}
	return at
}

// judgeClients runs the world-truth invariant 1 over every client attempt
// of the sequence (also one that stopped early) and attributes each
// finding to its step.
func (h *harnessRun) judgeClients() {
	findings := twoWriters(h.clients.snapshot())
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, fd := range findings {
		h.violations = append(h.violations, fd.msg)
		if st := h.stepAtLocked(fd.at); st != nil {
			st.outcomes[outcomeTwoWriters] = true
		}
	}
}

// byFault adds up, per fault kind, how often it was drawn and what it led
// to, over the whole run.
var byFault = struct {
	sync.Mutex
	drawn    map[string]int
	outcomes map[string]map[string]int
}{drawn: map[string]int{}, outcomes: map[string]map[string]int{}}

// resetFigures empties totals and byFault.
func resetFigures() {
	totals.mu.Lock()
	totals.faults, totals.partitions, totals.failovers, totals.avoidable = 0, 0, 0, 0
	totals.reclones, totals.acked, totals.notKept, totals.selfFences, totals.completed = 0, 0, 0, 0, 0
	totals.mu.Unlock()
	byFault.Lock()
	byFault.drawn, byFault.outcomes = map[string]int{}, map[string]map[string]int{}
	byFault.Unlock()
}

// tally adds the sequence's steps to byFault. A step the sequence did not
// finish (it failed before the group settled) counts what it had seen.
func (h *harnessRun) tally() {
	stops := h.f.processStops()
	h.mu.Lock()
	defer h.mu.Unlock()
	byFault.Lock()
	defer byFault.Unlock()
	for i := range h.steps {
		st := &h.steps[i]
		if st.kind == "" {
			continue
		}
		if st.end.IsZero() {
			h.closeStepLocked(st, stops)
			st.outcomes[outcomeOtherFailure] = st.outcomes[outcomeOtherFailure] || h.t.Failed()
		}
		byFault.drawn[st.kind]++
		if byFault.outcomes[st.kind] == nil {
			byFault.outcomes[st.kind] = map[string]int{}
		}
		for o, yes := range st.outcomes {
			if yes {
				byFault.outcomes[st.kind][o]++
			}
		}
	}
}

// logByFault prints the table of faults and outcomes.
func logByFault(t *testing.T) {
	byFault.Lock()
	defer byFault.Unlock()
	kinds := make([]string, 0, len(byFault.drawn))
	for k := range byFault.drawn {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	total := map[string]int{}
	for _, k := range kinds {
		var parts []string
		for _, o := range outcomeOrder {
			if n := byFault.outcomes[k][o]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", o, n))
				total[o] += n
			}
		}
		t.Logf("fault %s: drawn %d; %s", k, byFault.drawn[k], strings.Join(parts, ", "))
	}
	var parts []string
	for _, o := range outcomeOrder {
		parts = append(parts, fmt.Sprintf("%s %d", o, total[o]))
	}
	t.Logf("outcomes over all faults: %s", strings.Join(parts, ", "))
}
