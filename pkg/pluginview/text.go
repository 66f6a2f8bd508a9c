package pluginview

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText writes s for a terminal: a header, one row per site, then only
// the sections that have something to say.
func WriteText(w io.Writer, s Summary, now time.Time) error {
	p := &printer{w: w, now: now}
	p.header(s)
	p.sites(s.Sites)
	p.divergence(s.Name, s.Sites)
	p.transition(s)
	p.planned(s.PlannedFailover)
	p.hold(s)
	p.leases(s.Leases)
	p.conditions(s.Conditions)
	p.pendingRequests(s.PendingRequests)
	return p.err
}

type printer struct {
	w   io.Writer
	now time.Time
	err error
}

func (p *printer) f(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}

func (p *printer) header(s Summary) {
	p.f("Group:       %s/%s\n", s.Namespace, s.Name)
	p.f("Active site: %s\n", orDash(s.ActiveSite))
	p.f("Generation:  %d\n", s.TopologyGeneration)
	if r := s.Ready; r != nil {
		p.f("Ready:       %s/%s", r.Status, r.Reason)
		if r.Message != "" {
			p.f(" (%s)", r.Message)
		}
		p.f("\n")
	} else {
		p.f("Ready:       unknown (no Ready condition yet)\n")
	}
	if s.StatusStale {
		p.f("Note:        the operator has not yet acted on the latest spec change\n")
	}
	if s.UpdatePhase != "" {
		p.f("Update:      ordered update, phase %s\n", s.UpdatePhase)
	}
	if lf := s.LastFailover; lf != nil {
		p.f("Last failover: %s %s -> %s, %s ago\n", orDash(string(lf.Kind)), orDash(lf.Source), lf.Target, p.ago(lf.Time.Time))
		if lf.PossiblyLostGTID != "" {
			p.f("  possibly lost: %s\n", lf.PossiblyLostGTID)
		}
	}
}

func (p *printer) sites(rows []SiteSummary) {
	if p.err != nil {
		return
	}
	p.f("\nSITES\n")
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tSTATE\tREPLICATION\tLAG\tGTID")
	for _, r := range rows {
		name := r.Name
		if r.Active {
			name += " *"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, orDash(string(r.Role)), orDash(string(r.State)),
			orDash(string(r.Replication)), lag(r.LagSeconds), gtidSummary(r))
	}
	p.err = tw.Flush()
	for _, r := range rows {
		if r.Message != "" {
			p.f("  %s: %s\n", r.Name, r.Message)
		}
	}
}

// gtidSummary says how a site's executed set compares to the active site's:
// the number of transactions, and what it lacks or holds beyond it.
func gtidSummary(r SiteSummary) string {
	if r.GTIDExecuted == "" {
		return "-"
	}
	out := fmt.Sprintf("%d txns", r.Transactions)
	switch {
	case r.Active:
		return out + " (active)"
	case r.MissingFromActive == nil:
		return out
	}
	var rel []string
	if *r.MissingFromActive > 0 {
		rel = append(rel, fmt.Sprintf("%d behind", *r.MissingFromActive))
	}
	if *r.ExtraOverActive > 0 {
		rel = append(rel, fmt.Sprintf("%d not on active", *r.ExtraOverActive))
	}
	if len(rel) == 0 {
		return out + " (= active)"
	}
	return out + " (" + strings.Join(rel, ", ") + ")"
}

func (p *printer) divergence(group string, rows []SiteSummary) {
	first := true
	for _, r := range rows {
		if r.Divergence == nil && r.RecoveryState == "" {
			continue
		}
		if first {
			p.f("\nDIVERGENCE\n")
			first = false
		}
		if d := r.Divergence; d != nil {
			p.f("  %s: %d transactions site %s lacks (found by %s): %s\n", r.Name, d.Transactions, orDash(d.ComparedTo), orDash(string(d.DetectedBy)), d.GTID)
		}
		if r.RecoveryState != "" {
			p.f("  %s: %s\n", r.Name, r.RecoveryState)
		}
	}
	if !first {
		p.f("  To discard a site's divergent transactions: kubectl bloodraven reclone %s <site>\n", group)
	}
}

func (p *printer) transition(s Summary) {
	t := s.Transition
	if t == nil {
		return
	}
	p.f("\nTRANSITION IN FLIGHT\n")
	p.f("  %s %s -> %s (generation %d), step %s, started %s ago\n", t.Kind, orDash(t.SourceSite), t.TargetSite, t.TopologyGeneration, t.Step, p.ago(t.StartTime.Time))
	if t.Message != "" {
		p.f("  %s\n", t.Message)
	}
}

func (p *printer) planned(pf *PlannedFailoverSummary) {
	if pf == nil {
		return
	}
	if pf.InFlight {
		p.f("\nPLANNED FAILOVER IN FLIGHT\n")
	} else {
		p.f("\nLAST PLANNED FAILOVER\n")
	}
	p.f("  %s -> %s, phase %s", orDash(pf.Source), pf.Target, pf.Phase)
	if pf.PhaseSince != nil {
		p.f(" since %s ago", p.ago(pf.PhaseSince.Time))
	}
	p.f(" (run %s)\n", pf.RunID)
	if pf.Waiting != "" {
		p.f("  waiting: %s\n", pf.Waiting)
	}
	if pf.Outcome != "" {
		p.f("  outcome: %s/%s\n", pf.Outcome, orDash(string(pf.Reason)))
	}
	if pf.Message != "" {
		p.f("  %s\n", pf.Message)
	}
}

func (p *printer) hold(s Summary) {
	h := s.AutomaticHold
	if h == nil {
		return
	}
	p.f("\nAUTOMATIC FAILOVER HELD\n")
	p.f("  %s, since %s ago\n", h.Reason, p.ago(h.Since.Time))
	if h.Message != "" {
		p.f("  %s\n", h.Message)
	}
	p.f("  After checking the sites (docs/runbooks/planned-failover.md): kubectl bloodraven clear-automatic-failover-hold %s\n", s.Name)
}

func (p *printer) leases(ls *LeaseSummary) {
	if ls == nil {
		return
	}
	p.f("\nDEPLOYMENT LEASES\n")
	if ls.Error != "" {
		p.f("  not readable: %s\n", ls.Error)
		return
	}
	if len(ls.Live) == 0 {
		p.f("  none live (%d ended)\n", ls.Ended)
		return
	}
	for _, l := range ls.Live {
		stale := ""
		if l.Stale {
			stale = ", granted at another generation (revoked in effect)"
		}
		p.f("  %s %s for %s by %s, expires in %s%s\n", l.Kind, l.OperationID, l.Instance, l.Holder, p.in(l.ExpiresAt), stale)
	}
	p.f("  (%d ended)\n", ls.Ended)
}

func (p *printer) conditions(cs []Condition) {
	if len(cs) == 0 {
		return
	}
	p.f("\nCONDITIONS NOT FINE\n")
	for _, c := range cs {
		p.f("  %s=%s/%s since %s ago", c.Type, c.Status, c.Reason, p.ago(c.Since.Time))
		if c.Message != "" {
			p.f(": %s", c.Message)
		}
		p.f("\n")
	}
}

func (p *printer) pendingRequests(m map[string]string) {
	if len(m) == 0 {
		return
	}
	p.f("\nREQUESTS NOT YET HANDLED BY THE OPERATOR\n")
	for _, k := range pendingAnnotations {
		if v, ok := m[k]; ok {
			p.f("  %s=%s\n", k, v)
		}
	}
}

func (p *printer) ago(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return shortDuration(p.now.Sub(t))
}

func (p *printer) in(t time.Time) string { return shortDuration(t.Sub(p.now)) }

func shortDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

func lag(s *int64) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%ds", *s)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
