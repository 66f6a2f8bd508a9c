package gtid

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// model is a brute-force GTID set: every GTID as a map key.
type model map[GTID]bool

var propSIDs = []SID{{uA, ""}, {uA, "t"}, {uB, ""}}

// randomSet builds a set from random intervals over a small universe so that
// overlaps, adjacency and gaps are frequent, and returns the matching model.
func randomSet(r *rand.Rand) (Set, model, string) {
	m := model{}
	var parts []string
	for n := r.IntN(5); n > 0; n-- {
		sid := propSIDs[r.IntN(len(propSIDs))]
		lo := int64(r.IntN(30) + 1)
		hi := lo + int64(r.IntN(6))
		for g := lo; g <= hi; g++ {
			m[GTID{sid.UUID, sid.Tag, g}] = true
		}
		u := sid.UUID
		if r.IntN(2) == 0 {
			u = strings.ToUpper(u)
		}
		if sid.Tag != "" {
			parts = append(parts, fmt.Sprintf("%s:%s:%d-%d", u, sid.Tag, lo, hi))
		} else {
			parts = append(parts, fmt.Sprintf("%s:%d-%d", u, lo, hi))
		}
	}
	text := strings.Join(parts, ", ")
	return MustParse(text), m, text
}

func (m model) matches(t *testing.T, what string, s Set) {
	t.Helper()
	if uint64(len(m)) != s.Count() {
		t.Fatalf("%s: count %d, model has %d (%q)", what, s.Count(), len(m), s)
	}
	for g := range m {
		if !s.Contains(g) {
			t.Fatalf("%s: missing %v (%q)", what, g, s)
		}
	}
}

// TestAgainstModel checks every operation against the brute-force model.
func TestAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		a, ma, ta := randomSet(r)
		b, mb, tb := randomSet(r)
		ma.matches(t, "parse "+ta, a)
		union, inter, diff := model{}, model{}, model{}
		for g := range ma {
			union[g] = true
			if mb[g] {
				inter[g] = true
			} else {
				diff[g] = true
			}
		}
		for g := range mb {
			union[g] = true
		}
		ma.matches(t, "a", a)
		union.matches(t, "union "+ta+" | "+tb, a.Union(b))
		inter.matches(t, "intersect "+ta+" & "+tb, a.Intersect(b))
		diff.matches(t, "subtract "+ta+" - "+tb, a.Subtract(b))
		if got, want := a.IsSubsetOf(b), len(diff) == 0; got != want {
			t.Fatalf("IsSubsetOf(%q, %q) = %v, want %v", ta, tb, got, want)
		}
	}
}

// TestAlgebraicLaws checks set-algebra identities on random sets.
func TestAlgebraicLaws(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		a, _, _ := randomSet(r)
		b, _, _ := randomSet(r)
		c, _, _ := randomSet(r)
		laws := []struct {
			name string
			ok   bool
		}{
			{"union commutes", a.Union(b).Equal(b.Union(a))},
			{"intersect commutes", a.Intersect(b).Equal(b.Intersect(a))},
			{"union associates", a.Union(b).Union(c).Equal(a.Union(b.Union(c)))},
			{"intersect associates", a.Intersect(b).Intersect(c).Equal(a.Intersect(b.Intersect(c)))},
			{"union idempotent", a.Union(a).Equal(a)},
			{"a - a is empty", a.Subtract(a).IsEmpty()},
			{"(a-b) ∩ b is empty", a.Subtract(b).Intersect(b).IsEmpty()},
			{"(a-b) ∪ (a∩b) = a", a.Subtract(b).Union(a.Intersect(b)).Equal(a)},
			{"distributive", a.Intersect(b.Union(c)).Equal(a.Intersect(b).Union(a.Intersect(c)))},
			{"de morgan", a.Subtract(b.Union(c)).Equal(a.Subtract(b).Intersect(a.Subtract(c)))},
			{"inclusion-exclusion", a.Union(b).Count() == a.Count()+b.Count()-a.Intersect(b).Count()},
			{"a ⊆ a ∪ b", a.IsSubsetOf(a.Union(b))},
			{"compare antisymmetric", a.Compare(b) == flip(b.Compare(a))},
			{"compare equal iff Equal", (a.Compare(b) == Equal) == a.Equal(b)},
			{"format round-trips", MustParse(a.String()).Equal(a) && MustParse(a.OneLine()).Equal(a)},
		}
		for _, l := range laws {
			if !l.ok {
				t.Fatalf("%s fails for a=%q b=%q c=%q", l.name, a, b, c)
			}
		}
	}
}

func flip(r Relation) Relation {
	switch r {
	case Subset:
		return Superset
	case Superset:
		return Subset
	default:
		return r
	}
}
