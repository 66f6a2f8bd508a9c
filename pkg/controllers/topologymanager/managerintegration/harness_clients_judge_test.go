package managerintegration

import (
	"strings"
	"testing"
	"time"
)

// TestTwoWritersJudgement checks the harness's world-truth judgement of
// invariant 1 on hand-made client histories: it must flag an
// acknowledgement certainly inside another site's writer window and
// nothing else (a handover, a failback, writes whose order is uncertain).
func TestTwoWritersJudgement(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// w is an attempt sent at ms and answered 5 ms later.
	w := func(site, client string, ms int, ok bool) attempt {
		return attempt{site: site, db: "d", client: client, sent: at(ms), acked: at(ms + 5), ok: ok}
	}
	// run is site's pinned client acknowledging every 20 ms in [from, to).
	run := func(site string, from, to int) []attempt {
		var out []attempt
		for ms := from; ms < to; ms += 20 {
			out = append(out, w(site, "pinned", ms, true))
		}
		return out
	}
	refused := func(site string, from, to int) []attempt {
		var out []attempt
		for ms := from; ms < to; ms += 20 {
			out = append(out, w(site, "pinned", ms, false))
		}
		return out
	}
	cat := func(parts ...[]attempt) []attempt {
		var out []attempt
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, c := range []struct {
		name string
		all  []attempt
		want []string // substrings, one per finding
	}{
		{"handover: iad fenced, then pdx writable", cat(run("iad", 0, 1000), refused("iad", 1000, 3000), refused("pdx", 0, 1500), run("pdx", 1500, 3000)), nil},
		{"failback: iad, then pdx, then iad again", cat(run("iad", 0, 1000), refused("iad", 1000, 2000), run("iad", 2000, 3000),
			refused("pdx", 0, 1100), run("pdx", 1100, 1900), refused("pdx", 1900, 3000)), nil},
		{"overlap: pdx takes writes while iad still does", cat(run("iad", 0, 3000), refused("pdx", 0, 1500), run("pdx", 1500, 3000)),
			[]string{"pdx acknowledged", "iad acknowledged"}},
		{"a thawed iad acknowledges once after pdx took over", cat(run("iad", 0, 1000), refused("iad", 1000, 2000), []attempt{w("iad", "pinned", 2005, true)},
			refused("iad", 2025, 3000), refused("pdx", 0, 1500), run("pdx", 1500, 3000)), []string{"iad acknowledged CREATE DATABASE d (pinned client, sent 00:00:02.005"}},
		{"a commit acknowledged by iad inside pdx's window", cat(refused("iad", 0, 3000), run("pdx", 0, 3000),
			[]attempt{{site: "iad", row: 7, client: "transaction", sent: at(1500), acked: at(1510), ok: true}}), []string{"the COMMIT of row 7"}},
		{"uncertain order at the boundary is not flagged", cat(run("iad", 0, 1000), refused("iad", 1000, 2000),
			[]attempt{{site: "pdx", db: "d", client: "active", sent: at(970), acked: at(1100), ok: true}}, refused("pdx", 1100, 1200), run("pdx", 1200, 2000)), nil},
		{"one acknowledgement alone is no window", cat(refused("iad", 0, 1000), []attempt{w("iad", "pinned", 1000, true)}, refused("iad", 1020, 2000),
			[]attempt{{site: "pdx", db: "d", client: "active", sent: at(1001), acked: at(1004), ok: true}}), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := twoWriters(c.all)
			if len(got) != len(c.want) {
				t.Fatalf("%d findings, want %d: %+v", len(got), len(c.want), got)
			}
			for i, fd := range got {
				if !strings.Contains(fd.msg, c.want[i]) {
					t.Errorf("finding %d: %q lacks %q", i, fd.msg, c.want[i])
				}
			}
		})
	}
}
