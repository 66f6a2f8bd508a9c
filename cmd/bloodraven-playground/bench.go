package main

import (
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

// benchFailover repeats the crash drill k times on a fresh playground for
// each pollInterval x failureThreshold setting and prints min, median, p99
// and max of the write gap (and of the time to the published failover).
func benchFailover(args []string) error {
	fs := flag.NewFlagSet("bench-failover", flag.ContinueOnError)
	k := fs.Int("k", 5, "drills per setting")
	settings := fs.String("settings", "2s:3,1s:2", "comma-separated pollInterval:failureThreshold settings")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *k < 1 {
		return fmt.Errorf("-k: %d must be at least 1", *k)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	for _, s := range strings.Split(*settings, ",") {
		poll, threshold, ok := strings.Cut(strings.TrimSpace(s), ":")
		if _, err := time.ParseDuration(poll); !ok || err != nil {
			return fmt.Errorf("-settings: %q is not pollInterval:failureThreshold", s)
		}
		n, err := strconv.Atoi(threshold)
		if err != nil || n < 1 {
			return fmt.Errorf("-settings: %q: failureThreshold must be a positive integer", s)
		}
		if err := benchSetting(ctx, poll, n, *k); err != nil {
			return err
		}
	}
	return nil
}

func benchSetting(ctx context.Context, poll string, threshold, k int) error {
	patch := fmt.Sprintf(`{"spec":{"pollInterval":%q,"failureThreshold":%d,"failoverCooldown":"30s"}}`, poll, threshold)
	p, err := playground.Start(ctx, playground.Config{GroupPatch: patch, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer p.Stop()
	if err := p.WaitGroupReady(ctx, 3*time.Minute); err != nil {
		logs, _ := p.KeepLogs()
		return fmt.Errorf("%w (logs kept in %s)", err, logs)
	}
	var gaps, published []time.Duration
	for i := range k {
		r, err := p.CrashDrill(ctx, 3*time.Minute)
		if err != nil {
			logs, _ := p.KeepLogs()
			return fmt.Errorf("pollInterval %s failureThreshold %d, drill %d: %w (logs kept in %s)", poll, threshold, i+1, err, logs)
		}
		fmt.Fprintf(os.Stderr, "pollInterval=%s failureThreshold=%d drill %d: %s -> %s gap %s published %s acked %d missing %d divergent %d\n",
			poll, threshold, i+1, r.From, r.To, r.Gap.Round(time.Millisecond), r.Published.Round(time.Millisecond), r.Acked, r.Missing, r.Divergent)
		gaps, published = append(gaps, r.Gap), append(published, r.Published)
	}
	fmt.Printf("pollInterval=%s failureThreshold=%d k=%d write gap: %s; crash to published failover: %s\n",
		poll, threshold, k, summary(gaps), summary(published))
	return nil
}

// summary prints min/median/p99/max (nearest rank).
func summary(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	r := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
	return fmt.Sprintf("min %s median %s p99 %s max %s", r(s[0]), r(rank(0.5)), r(rank(0.99)), r(s[len(s)-1]))
}
