package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/playground"
)

func TestSummaryIsNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Second)
	}
	if got, want := summary(ds, roundDuration), "min 1s p50 50s p99 1m39s max 1m40s"; got != want {
		t.Errorf("summary of 1..100 s = %q, want %q", got, want)
	}
	if got, want := summary([]uint64{7}, decimal), "min 7 p50 7 p99 7 max 7"; got != want {
		t.Errorf("summary of one drill = %q, want %q", got, want)
	}
	// Ten drills, the benchmark's default: p99 is the largest.
	if got, want := summary([]uint64{0, 0, 0, 0, 0, 0, 0, 0, 1, 3}, decimal), "min 0 p50 0 p99 3 max 3"; got != want {
		t.Errorf("summary of ten counts = %q, want %q", got, want)
	}
	if got, want := summary([]time.Duration{1234567 * time.Microsecond}, roundDuration), "min 1.23s p50 1.23s p99 1.23s max 1.23s"; got != want {
		t.Errorf("durations are rounded to 10 ms: %q, want %q", got, want)
	}
}

func TestSummaryLineNamesTheDrillAndItsMeasures(t *testing.T) {
	s := setting{poll: "1s", threshold: 2}
	rs := []playground.DrillResult{
		{Published: 20 * time.Second, Gap: 21 * time.Second, PossiblyLost: 2, Missing: 1, Detected: 5 * time.Second},
		{Published: 22 * time.Second, Gap: 23 * time.Second, Detected: 6 * time.Second},
		{Published: 900 * time.Millisecond, Gap: 2 * time.Second}, // published before any read caught the transition
	}
	got := summaryLine(s, playground.DrillCrash, rs)
	want := "pollInterval=1s failureThreshold=2 crash k=3 fault to published: min 900ms p50 20s p99 22s max 22s; " +
		"write gap: min 2s p50 21s p99 23s max 23s; possibly-lost GTIDs: min 0 p50 0 p99 2 max 2; missing acked writes: min 0 p50 0 p99 1 max 1; " +
		"detected (2 of 3): min 5s p50 5s p99 6s max 6s; detection to published: min 15s p50 15s p99 16s max 16s"
	if got != want {
		t.Errorf("crash line:\n got %s\nwant %s", got, want)
	}
	planned := summaryLine(s, playground.DrillPlanned, rs)
	if !strings.Contains(planned, "request to published:") || !strings.Contains(planned, "write pause:") {
		t.Errorf("planned line does not measure from the request and call the gap a pause: %s", planned)
	}
	if strings.Contains(planned, "detect") {
		t.Errorf("a planned failover is asked for, not detected: %s", planned)
	}
	rs[0].Kept = true
	if got := summaryLine(s, playground.DrillFrozen, rs); !strings.Contains(got, "; failovers abandoned for a returning old primary holding more: 1; detected") {
		t.Errorf("an abandoned failover is not counted: %s", got)
	}
	if got := detectionSummary(rs[2:]); got != "detection: no read caught a transition" {
		t.Errorf("no detection read: %s", got)
	}
}

func TestParseSettings(t *testing.T) {
	got, err := parseSettings("2s:3, 1s:2")
	if err != nil {
		t.Fatal(err)
	}
	if want := []setting{{"2s", 3}, {"1s", 2}}; !slices.Equal(got, want) {
		t.Errorf("parseSettings = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "2s", "2:3", "2s:0", "2s:x", "2s:3,"} {
		if _, err := parseSettings(bad); err == nil || !strings.Contains(err.Error(), "-settings") {
			t.Errorf("parseSettings(%q) = %v, want an error naming -settings", bad, err)
		}
	}
}

func TestParseDrillsKeepsTheBenchmarksOrder(t *testing.T) {
	got, err := parseDrills("planned, crash")
	if err != nil {
		t.Fatal(err)
	}
	if want := []playground.DrillKind{playground.DrillCrash, playground.DrillPlanned}; !slices.Equal(got, want) {
		t.Errorf("parseDrills = %v, want %v", got, want)
	}
	if got, _ := parseDrills("crash,crash"); len(got) != 1 {
		t.Errorf("a repeated drill runs once per round: %v", got)
	}
	for _, bad := range []string{"", "crash,", "Crash", "partition"} {
		if _, err := parseDrills(bad); err == nil || !strings.Contains(err.Error(), "-drills") {
			t.Errorf("parseDrills(%q) = %v, want an error naming -drills", bad, err)
		}
	}
}

func TestSchedulePutsAPlannedDrillAfterEachAutomaticOne(t *testing.T) {
	const (
		c = playground.DrillCrash
		f = playground.DrillFrozen
		i = playground.DrillIsolated
		p = playground.DrillPlanned
	)
	for _, tc := range []struct {
		kinds []playground.DrillKind
		k     int
		want  []playground.DrillKind
	}{
		{[]playground.DrillKind{c, f, i, p}, 2, []playground.DrillKind{c, p, f, p, i, c, f, i}},
		{[]playground.DrillKind{c, p}, 2, []playground.DrillKind{c, p, c, p}},
		{[]playground.DrillKind{p}, 2, []playground.DrillKind{p, p}},
		{[]playground.DrillKind{f, i}, 1, []playground.DrillKind{f, i}},
	} {
		got := schedule(tc.kinds, tc.k)
		if !slices.Equal(got, tc.want) {
			t.Errorf("schedule(%v, %d) = %v, want %v", tc.kinds, tc.k, got, tc.want)
		}
		for _, kind := range tc.kinds {
			if n := count(got, kind); n != tc.k {
				t.Errorf("schedule(%v, %d) runs %s %d times, want %d", tc.kinds, tc.k, kind, n, tc.k)
			}
		}
	}
}

func count(s []playground.DrillKind, kind playground.DrillKind) int {
	n := 0
	for _, x := range s {
		if x == kind {
			n++
		}
	}
	return n
}
