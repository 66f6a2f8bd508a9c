package gtid

import (
	"fmt"
	"strings"
	"testing"
)

// largeSetText builds a gtid_executed-like text with many UUIDs, each with
// many holes, like a long-lived group that went through many failovers.
func largeSetText(uuids, intervals int, offset int64) string {
	var parts []string
	for u := 0; u < uuids; u++ {
		var sb strings.Builder
		fmt.Fprintf(&sb, "%08x-0000-4000-8000-%012x", u, u)
		for i := int64(0); i < int64(intervals); i++ {
			lo := offset + i*10 + 1
			fmt.Fprintf(&sb, ":%d-%d", lo, lo+6)
		}
		parts = append(parts, sb.String())
	}
	return strings.Join(parts, ",\n")
}

func BenchmarkParse(b *testing.B) {
	text := largeSetText(50, 200, 0)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnion(b *testing.B) {
	x, y := MustParse(largeSetText(50, 200, 0)), MustParse(largeSetText(50, 200, 5))
	for b.Loop() {
		_ = x.Union(y)
	}
}

func BenchmarkSubtract(b *testing.B) {
	x, y := MustParse(largeSetText(50, 200, 0)), MustParse(largeSetText(50, 200, 5))
	for b.Loop() {
		_ = x.Subtract(y)
	}
}

func BenchmarkFormat(b *testing.B) {
	x := MustParse(largeSetText(50, 200, 0))
	for b.Loop() {
		_ = x.String()
	}
}
