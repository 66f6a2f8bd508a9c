package gtid

import "testing"

// FuzzParse: whatever parses formats canonically, and the canonical text
// parses back to the same set and formats identically (a fixed point).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", uA + ":1-5", uA + ":1-3:11:47-49", uA + ":1-5:11-18, " + uA + ":6-10",
		uA + ":Domain_1:1-3:11:47-49:Domain_2:8-52", uB + ":1-19,\n" + uA + ":1-3",
		uA + ":0", uA + ":5-3", uA + ":9223372036854775806", "x", uA + ":tag",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			return
		}
		out := s.String()
		s2, err := Parse(out)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", out, in, err)
		}
		if !s2.Equal(s) || s2.String() != out {
			t.Fatalf("round trip of %q: %q became %q", in, out, s2.String())
		}
	})
}

// FuzzAlgebra checks identities on two fuzzed sets.
func FuzzAlgebra(f *testing.F) {
	f.Add(uA+":1-10", uA+":5-20")
	f.Add(uA+":1-3:7:t:1-2,"+uB+":4", uA+":2:t:2-9")
	f.Add("", uB+":1")
	f.Fuzz(func(t *testing.T, x, y string) {
		a, err1 := Parse(x)
		b, err2 := Parse(y)
		if err1 != nil || err2 != nil {
			return
		}
		if !a.Subtract(b).Union(a.Intersect(b)).Equal(a) {
			t.Fatalf("(a-b) ∪ (a∩b) != a for %q, %q", x, y)
		}
		if !a.Subtract(b).Intersect(b).IsEmpty() {
			t.Fatalf("(a-b) ∩ b not empty for %q, %q", x, y)
		}
		if !a.Union(b).Equal(b.Union(a)) {
			t.Fatalf("union does not commute for %q, %q", x, y)
		}
		if a.IsSubsetOf(b) != (a.Compare(b) == Equal || a.Compare(b) == Subset) {
			t.Fatalf("IsSubsetOf and Compare disagree for %q, %q", x, y)
		}
	})
}
