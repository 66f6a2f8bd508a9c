package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/playground"
)

// benchFailover runs, for each pollInterval x failureThreshold setting on
// one fresh playground, k drills of each chosen kind and prints per kind
// min, p50, p99 and max of the time to the published failover, of the
// client's write gap and of the transactions possibly lost.
func benchFailover(args []string) error {
	fs := flag.NewFlagSet("bench-failover", flag.ContinueOnError)
	k := fs.Int("k", 10, "drills of each kind per setting")
	settingsFlag := fs.String("settings", "2s:3,1s:2", "comma-separated pollInterval:failureThreshold settings")
	drillsFlag := fs.String("drills", "crash,frozen,isolated,planned", "comma-separated drills: crash, frozen, isolated, planned")
	keepLogs := fs.Bool("keep-logs", false, "keep each playground's logs (operator, sidecars, simulators) after a successful run too")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *k < 1 {
		return fmt.Errorf("-k: %d must be at least 1", *k)
	}
	settings, err := parseSettings(*settingsFlag)
	if err != nil {
		return err
	}
	kinds, err := parseDrills(*drillsFlag)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	for _, s := range settings {
		if err := benchSetting(ctx, s, kinds, *k, *keepLogs); err != nil {
			return err
		}
	}
	return nil
}

// setting is one pollInterval x failureThreshold.
type setting struct {
	poll      string
	threshold int
}

func (s setting) String() string {
	return fmt.Sprintf("pollInterval=%s failureThreshold=%d", s.poll, s.threshold)
}

func parseSettings(v string) ([]setting, error) {
	var out []setting
	for _, s := range strings.Split(v, ",") {
		poll, threshold, ok := strings.Cut(strings.TrimSpace(s), ":")
		if _, err := time.ParseDuration(poll); !ok || err != nil {
			return nil, fmt.Errorf("-settings: %q is not pollInterval:failureThreshold", s)
		}
		n, err := strconv.Atoi(threshold)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-settings: %q: failureThreshold must be a positive integer", s)
		}
		out = append(out, setting{poll: poll, threshold: n})
	}
	return out, nil
}

// parseDrills returns the chosen drills in playground.DrillKinds order.
func parseDrills(v string) ([]playground.DrillKind, error) {
	chosen := map[playground.DrillKind]bool{}
	for _, s := range strings.Split(v, ",") {
		kind := playground.DrillKind(strings.TrimSpace(s))
		if !slices.Contains(playground.DrillKinds, kind) {
			return nil, fmt.Errorf("-drills: %q is not one of %v", s, playground.DrillKinds)
		}
		chosen[kind] = true
	}
	var out []playground.DrillKind
	for _, kind := range playground.DrillKinds {
		if chosen[kind] {
			out = append(out, kind)
		}
	}
	return out, nil
}

// schedule orders k drills of each kind so that planned failovers fill the
// wait for failoverCooldown: every automatic drill must wait out the
// cooldown of the last automatic one, a planned failover does not start it,
// so a planned drill right after each automatic one costs only its own
// time (it waits out the same cooldown the next automatic drill would).
func schedule(kinds []playground.DrillKind, k int) []playground.DrillKind {
	var automatic []playground.DrillKind
	planned := 0
	for _, kind := range kinds {
		if kind == playground.DrillPlanned {
			planned = k
		} else {
			automatic = append(automatic, kind)
		}
	}
	var out []playground.DrillKind
	for range k {
		for _, kind := range automatic {
			out = append(out, kind)
			if planned > 0 {
				out, planned = append(out, playground.DrillPlanned), planned-1
			}
		}
	}
	for ; planned > 0; planned-- {
		out = append(out, playground.DrillPlanned)
	}
	return out
}

func benchSetting(ctx context.Context, s setting, kinds []playground.DrillKind, k int, keepLogs bool) error {
	patch := fmt.Sprintf(`{"spec":{"pollInterval":%q,"failureThreshold":%d,"failoverCooldown":"30s"}}`, s.poll, s.threshold)
	// The isolated drill cuts links through the fault proxies; the other
	// drills run without them, as the earlier measurements did.
	proxies := slices.Contains(kinds, playground.DrillIsolated)
	p, err := playground.Start(ctx, playground.Config{GroupPatch: patch, FaultProxies: proxies, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer p.Stop()
	if err := p.WaitGroupReady(ctx, 3*time.Minute); err != nil {
		logs, _ := p.KeepLogs()
		return fmt.Errorf("%s: %w (logs kept in %s)", s, err, logs)
	}
	if keepLogs {
		// Deferred after p.Stop, so it runs first, while the logs exist.
		defer func() {
			logs, err := p.KeepLogs()
			fmt.Fprintf(os.Stderr, "%s: logs kept in %s (%v)\n", s, logs, err)
		}()
	}
	results := map[playground.DrillKind][]playground.DrillResult{}
	for _, kind := range schedule(kinds, k) {
		n := len(results[kind]) + 1
		r, err := p.Drill(ctx, kind, 3*time.Minute)
		if err != nil {
			logs, _ := p.KeepLogs()
			return fmt.Errorf("%s, %s drill %d: %w (logs kept in %s)", s, kind, n, err, logs)
		}
		// The fault's wall time lets kept logs be read against the drill.
		kept := ""
		if r.Kept {
			kept = " (failover abandoned: the old primary answered again holding more, and stays active)"
		}
		fmt.Fprintf(os.Stderr, "%s %s drill %d at %s: %s -> %s%s detected %s published %s gap %s acked %d missing %d possibly-lost %d divergent %d\n",
			s, kind, n, r.At.UTC().Format("15:04:05.000"), r.From, r.To, kept, r.Detected.Round(time.Millisecond), r.Published.Round(time.Millisecond),
			r.Gap.Round(time.Millisecond), r.Acked, r.Missing, r.PossiblyLost, r.Divergent)
		results[kind] = append(results[kind], r)
	}
	for _, kind := range kinds {
		fmt.Println(summaryLine(s, kind, results[kind]))
	}
	return nil
}

// summaryLine is the stdout line of one setting and drill kind.
func summaryLine(s setting, kind playground.DrillKind, rs []playground.DrillResult) string {
	var published, gaps []time.Duration
	var lost, missing []uint64
	kept := 0
	for _, r := range rs {
		published, gaps = append(published, r.Published), append(gaps, r.Gap)
		lost, missing = append(lost, r.PossiblyLost), append(missing, r.Missing)
		if r.Kept {
			kept++
		}
	}
	start, gap := "fault to published", "write gap"
	if kind == playground.DrillPlanned {
		start, gap = "request to published", "write pause"
	}
	line := fmt.Sprintf("%s %s k=%d %s: %s; %s: %s; possibly-lost GTIDs: %s; missing acked writes: %s",
		s, kind, len(rs), start, summary(published, roundDuration), gap, summary(gaps, roundDuration),
		summary(lost, decimal), summary(missing, decimal))
	if kept > 0 {
		// Counted in the distributions: the outage ended when the old
		// primary took writes again.
		line += fmt.Sprintf("; failovers abandoned for a returning old primary holding more: %d", kept)
	}
	if kind == playground.DrillPlanned {
		return line
	}
	return line + "; " + detectionSummary(rs)
}

// detectionSummary splits an automatic drill's time to publication at the
// first status read holding the transition: fault to detection, and
// detection to published (for an isolated site, the self-fence wait). Drills
// whose transition no read caught are left out and counted.
func detectionSummary(rs []playground.DrillResult) string {
	var detected, after []time.Duration
	for _, r := range rs {
		if r.Detected > 0 {
			detected, after = append(detected, r.Detected), append(after, r.Published-r.Detected)
		}
	}
	if len(detected) == 0 {
		return "detection: no read caught a transition"
	}
	return fmt.Sprintf("detected (%d of %d): %s; detection to published: %s", len(detected), len(rs),
		summary(detected, roundDuration), summary(after, roundDuration))
}

func roundDuration(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }

// summary prints min/p50/p99/max (nearest rank) of a non-empty sample.
func summary[T cmp.Ordered](xs []T, format func(T) string) string {
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := func(q float64) T {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return fmt.Sprintf("min %s p50 %s p99 %s max %s", format(s[0]), format(rank(0.5)), format(rank(0.99)), format(s[len(s)-1]))
}

func decimal(n uint64) string { return strconv.FormatUint(n, 10) }
