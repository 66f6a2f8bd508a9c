// Package messagecheck finds what makes an Event or condition message read
// badly: the marks an empty value leaves when it is formatted in.
package messagecheck

import (
	"fmt"
	"strings"
)

// prepositions end a clause only when the value after them was empty.
var prepositions = []string{"at", "from", "to", "of", "with", "by"}

// clauseEnds are what may follow a dangling preposition (or the end).
const clauseEnds = ";,)."

// Problems lists what reads badly in msg, each as a short phrase naming
// the offending text; nil when it reads well. It does no I/O.
func Problems(msg string) []string {
	var out []string
	if msg != strings.TrimSpace(msg) {
		out = append(out, "leading or trailing whitespace")
	}
	for _, p := range prepositions {
		w := " " + p
		for i := 0; ; {
			j := strings.Index(msg[i:], w)
			if j < 0 {
				break
			}
			end := i + j + len(w)
			// "fenced at ;" is as dangling as "fenced at;".
			k := end
			for k < len(msg) && msg[k] == ' ' {
				k++
			}
			if k == len(msg) || strings.IndexByte(clauseEnds, msg[k]) >= 0 {
				out = append(out, fmt.Sprintf("dangling %q at offset %d (nothing after it)", p, i+j+1))
			}
			i = end
		}
	}
	for _, q := range []string{`""`, `''`} {
		if strings.Contains(msg, q) {
			out = append(out, "empty quoted value "+q)
		}
	}
	if strings.Contains(msg, "  ") {
		out = append(out, "double space")
	}
	if strings.Contains(msg, "()") {
		out = append(out, "empty parenthesis ()")
	}
	return out
}
