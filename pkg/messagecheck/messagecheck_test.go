package messagecheck

import (
	"strings"
	"testing"
)

func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want []string // substrings, one per problem, in order
	}{
		// The three messages of the issue.
		{"site iad is the active site (was pdx); topologyGeneration is 3; promoted at", []string{`dangling "at"`}},
		{"planned failover r1: site iad is fenced at ; waiting until site pdx holds all of it", []string{`dangling "at"`}},
		{`site pdx replicates from "", not from the active site iad`, []string{`empty quoted value ""`}},
		{"promoted from , now", []string{`dangling "from"`}},
		{"handed to.", []string{`dangling "to"`}},
		{"every transaction of) x", []string{`dangling "of"`}},
		{"replicates with", []string{`dangling "with"`}},
		{"fenced by;", []string{`dangling "by"`}},
		{"value ''", []string{"empty quoted value ''"}},
		{"site  iad", []string{"double space"}},
		{" site iad", []string{"leading or trailing whitespace"}},
		{"site iad\n", []string{"leading or trailing whitespace"}},
		{"cloning site a from site b ()", []string{"empty parenthesis"}},
		{"fenced at ; promoted at", []string{`dangling "at" at offset 7`, `dangling "at" at offset 21`}},
		// Good messages.
		{"site iad is the active site (was pdx); topologyGeneration is 3; promoted at 3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", nil},
		{"planned failover r1: site iad is fenced at an empty GTID set; waiting until site pdx holds all of it", nil},
		{"site pdx has no replication source; it should replicate from the active site iad", nil},
		{`annotation bloodraven.shipstream.io/reclone-site="pdx" refused`, nil},
		{"a cat; the bat, the hat. what (that)", nil},
		{"site a is attached to b by a thread of data, with care", nil},
		{"", nil},
	} {
		got := Problems(tc.msg)
		if len(got) != len(tc.want) {
			t.Errorf("Problems(%q) = %q, want %d problems like %q", tc.msg, got, len(tc.want), tc.want)
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("Problems(%q)[%d] = %q, want it to mention %q", tc.msg, i, got[i], w)
			}
		}
	}
}
