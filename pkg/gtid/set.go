package gtid

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Interval is a closed range [Start, End] of transaction numbers.
type Interval struct{ Start, End int64 }

// SID names one transaction source: a server UUID plus an optional tag.
// Since MySQL 8.3 each (uuid, tag) pair has its own sequence of numbers.
type SID struct {
	UUID string
	Tag  string
}

func (a SID) less(b SID) bool {
	if a.UUID != b.UUID {
		return a.UUID < b.UUID
	}
	return a.Tag < b.Tag
}

type sidIntervals struct {
	sid       SID
	intervals []Interval // sorted, disjoint, non-adjacent
}

// Set is an immutable GTID set. The zero value is the empty set. Operations
// return new sets and never modify their operands, so a Set may be shared
// between goroutines.
type Set struct {
	sids []sidIntervals // sorted by SID, no empty interval lists
}

// Relation is how one GTID set compares to another.
type Relation int

const (
	Equal        Relation = iota // both hold the same GTIDs
	Subset                       // the first is a strict subset of the second
	Superset                     // the first is a strict superset of the second
	Incomparable                 // each holds GTIDs the other lacks
)

func (r Relation) String() string {
	switch r {
	case Equal:
		return "Equal"
	case Subset:
		return "Subset"
	case Superset:
		return "Superset"
	default:
		return "Incomparable"
	}
}

// Parse reads a GTID set in the forms MySQL accepts as input: elements
// separated by commas with optional whitespace and newlines, empty elements
// (a trailing comma, as in text copied from gtid_executed), UUIDs in any
// case, intervals in any order and overlapping, and tagged parts
// ("uuid:tag:1-5", "uuid:1-3:tag:1-5"). The empty string is the empty set.
//
// A few inputs MySQL's parser lets through are refused here as the mistakes
// they almost certainly are: a UUID or tag without an interval, an interval
// whose end is before its start or missing ("5-3", "1-"; MySQL drops them
// silently) and numbers in hexadecimal or octal notation.
func Parse(s string) (Set, error) {
	b := builder{}
	if strings.TrimSpace(s) == "" {
		return Set{}, nil
	}
	for _, elem := range strings.Split(s, ",") {
		if strings.TrimSpace(elem) == "" {
			continue // MySQL allows empty elements ("we allow empty SID:GNO specifications")
		}
		if err := b.addElement(elem); err != nil {
			return Set{}, fmt.Errorf("gtid set %q: %w", s, err)
		}
	}
	return b.build(), nil
}

// MustParse is Parse for constants in code and tests; it panics on error.
func MustParse(s string) Set {
	set, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return set
}

// builder accumulates intervals per SID before normalising them.
type builder map[SID][]Interval

func (b builder) addElement(elem string) error {
	parts := strings.Split(strings.TrimSpace(elem), ":")
	if len(parts) < 2 {
		return fmt.Errorf("element %q: want uuid:interval[:interval...]", strings.TrimSpace(elem))
	}
	uuid, err := parseUUID(parts[0])
	if err != nil {
		return err
	}
	sid := SID{UUID: uuid}
	pending := false // a tag was named and still has no interval
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		if p != "" && (p[0] < '0' || p[0] > '9') {
			if pending {
				return fmt.Errorf("element %q: tag %q has no interval", strings.TrimSpace(elem), sid.Tag)
			}
			tag, err := parseTag(p)
			if err != nil {
				return err
			}
			sid.Tag, pending = tag, true
			continue
		}
		iv, err := parseInterval(p)
		if err != nil {
			return err
		}
		b[sid] = append(b[sid], iv)
		pending = false
	}
	if pending {
		return fmt.Errorf("element %q: tag %q has no interval", strings.TrimSpace(elem), sid.Tag)
	}
	return nil
}

func parseInterval(s string) (Interval, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	start, err := parseGNO(lo)
	if err != nil {
		return Interval{}, err
	}
	end := start
	if isRange {
		if end, err = parseGNO(hi); err != nil {
			return Interval{}, err
		}
		if end < start {
			return Interval{}, fmt.Errorf("interval %q: end is before start", s)
		}
	}
	return Interval{start, end}, nil
}

func (b builder) build() Set {
	var out []sidIntervals
	for sid, ivs := range b {
		out = append(out, sidIntervals{sid: sid, intervals: normalize(ivs)})
	}
	sortSIDs(out)
	return Set{sids: out}
}

func sortSIDs(s []sidIntervals) {
	slices.SortFunc(s, func(a, b sidIntervals) int {
		if c := cmp.Compare(a.sid.UUID, b.sid.UUID); c != 0 {
			return c
		}
		return cmp.Compare(a.sid.Tag, b.sid.Tag)
	})
}

// normalize sorts intervals and merges overlapping and adjacent ones.
func normalize(ivs []Interval) []Interval {
	s := append([]Interval(nil), ivs...)
	sortIntervals(s)
	out := s[:0]
	for _, iv := range s {
		if n := len(out); n > 0 && iv.Start <= out[n-1].End+1 {
			if iv.End > out[n-1].End {
				out[n-1].End = iv.End
			}
			continue
		}
		out = append(out, iv)
	}
	return out
}

func sortIntervals(s []Interval) {
	slices.SortFunc(s, func(a, b Interval) int { return cmp.Compare(a.Start, b.Start) })
}

// String formats the set in MySQL's canonical form, as @@GLOBAL.gtid_executed
// shows it: UUIDs lowercase and sorted, untagged intervals first then tags in
// order, intervals merged, UUIDs joined by ",\n".
func (s Set) String() string { return s.format(",\n") }

// OneLine formats the set canonically with UUIDs joined by "," only, for
// logs, status fields and labels.
func (s Set) OneLine() string { return s.format(",") }

func (s Set) format(sep string) string {
	var b []byte
	prevUUID := ""
	for i, si := range s.sids {
		if si.sid.UUID != prevUUID {
			if i > 0 {
				b = append(b, sep...)
			}
			b = append(b, si.sid.UUID...)
			prevUUID = si.sid.UUID
		}
		if si.sid.Tag != "" {
			b = append(b, ':')
			b = append(b, si.sid.Tag...)
		}
		for _, iv := range si.intervals {
			b = append(b, ':')
			b = strconv.AppendInt(b, iv.Start, 10)
			if iv.End != iv.Start {
				b = append(b, '-')
				b = strconv.AppendInt(b, iv.End, 10)
			}
		}
	}
	return string(b)
}

// IsEmpty reports whether the set holds no GTID.
func (s Set) IsEmpty() bool { return len(s.sids) == 0 }

// Count returns the number of GTIDs in the set, saturating at math.MaxUint64.
func (s Set) Count() uint64 {
	var n uint64
	for _, si := range s.sids {
		for _, iv := range si.intervals {
			d := uint64(iv.End-iv.Start) + 1
			if n > math.MaxUint64-d {
				return math.MaxUint64
			}
			n += d
		}
	}
	return n
}

// SIDs lists the sources (uuid and tag) present in the set, in order.
func (s Set) SIDs() []SID {
	out := make([]SID, len(s.sids))
	for i, si := range s.sids {
		out[i] = si.sid
	}
	return out
}

// Intervals returns a copy of the intervals held for one source.
func (s Set) Intervals(sid SID) []Interval {
	if i, ok := s.find(sid); ok {
		return append([]Interval(nil), s.sids[i].intervals...)
	}
	return nil
}

func (s Set) find(sid SID) (int, bool) {
	lo, hi := 0, len(s.sids)
	for lo < hi {
		m := (lo + hi) / 2
		if s.sids[m].sid.less(sid) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(s.sids) && s.sids[lo].sid == sid
}

// Contains reports whether g is in the set.
func (s Set) Contains(g GTID) bool {
	i, ok := s.find(SID{g.UUID, g.Tag})
	if !ok {
		return false
	}
	for _, iv := range s.sids[i].intervals {
		if g.GNO < iv.Start {
			return false
		}
		if g.GNO <= iv.End {
			return true
		}
	}
	return false
}

// Add returns the set with g added.
func (s Set) Add(g GTID) Set {
	return s.Union(Set{sids: []sidIntervals{{sid: SID{g.UUID, g.Tag}, intervals: []Interval{{g.GNO, g.GNO}}}}})
}

// NextGNO returns the smallest transaction number of sid not in the set, which
// is the number MySQL assigns to the next transaction it commits for that
// source. It returns 0 when every number is used.
func (s Set) NextGNO(sid SID) int64 {
	i, ok := s.find(sid)
	if !ok {
		return 1
	}
	ivs := s.sids[i].intervals
	if ivs[0].Start > 1 {
		return 1
	}
	if ivs[0].End >= MaxGNO {
		return 0
	}
	return ivs[0].End + 1
}

// Equal reports whether both sets hold exactly the same GTIDs.
func (s Set) Equal(o Set) bool {
	if len(s.sids) != len(o.sids) {
		return false
	}
	for i := range s.sids {
		a, b := s.sids[i], o.sids[i]
		if a.sid != b.sid || len(a.intervals) != len(b.intervals) {
			return false
		}
		for j := range a.intervals {
			if a.intervals[j] != b.intervals[j] {
				return false
			}
		}
	}
	return true
}

// IsSubsetOf reports whether every GTID of s is in o (GTID_SUBSET(s, o)).
func (s Set) IsSubsetOf(o Set) bool { return s.Subtract(o).IsEmpty() }

// Compare says how s relates to o.
func (s Set) Compare(o Set) Relation {
	sub, sup := s.IsSubsetOf(o), o.IsSubsetOf(s)
	switch {
	case sub && sup:
		return Equal
	case sub:
		return Subset
	case sup:
		return Superset
	default:
		return Incomparable
	}
}

// Union returns the GTIDs in s or o.
func (s Set) Union(o Set) Set {
	return merge(s, o, func(a, b []Interval) []Interval { return unionIntervals(a, b) }, true, true)
}

// Subtract returns the GTIDs in s that are not in o (GTID_SUBTRACT(s, o)).
func (s Set) Subtract(o Set) Set {
	return merge(s, o, subtractIntervals, true, false)
}

// Intersect returns the GTIDs in both s and o.
func (s Set) Intersect(o Set) Set {
	return merge(s, o, intersectIntervals, false, false)
}

// merge walks both SID lists in order. keepA/keepB say whether a SID present
// only in s (resp. only in o) is kept as is; SIDs present in both are combined
// by op.
func merge(s, o Set, op func(a, b []Interval) []Interval, keepA, keepB bool) Set {
	var out []sidIntervals
	i, j := 0, 0
	for i < len(s.sids) || j < len(o.sids) {
		switch {
		case j >= len(o.sids) || i < len(s.sids) && s.sids[i].sid.less(o.sids[j].sid):
			if keepA {
				out = append(out, s.sids[i])
			}
			i++
		case i >= len(s.sids) || o.sids[j].sid.less(s.sids[i].sid):
			if keepB {
				out = append(out, o.sids[j])
			}
			j++
		default:
			if ivs := op(s.sids[i].intervals, o.sids[j].intervals); len(ivs) > 0 {
				out = append(out, sidIntervals{sid: s.sids[i].sid, intervals: ivs})
			}
			i++
			j++
		}
	}
	return Set{sids: out}
}

func unionIntervals(a, b []Interval) []Interval {
	out := make([]Interval, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var iv Interval
		if j >= len(b) || i < len(a) && a[i].Start <= b[j].Start {
			iv = a[i]
			i++
		} else {
			iv = b[j]
			j++
		}
		if n := len(out); n > 0 && iv.Start <= out[n-1].End+1 {
			if iv.End > out[n-1].End {
				out[n-1].End = iv.End
			}
			continue
		}
		out = append(out, iv)
	}
	return out
}

func subtractIntervals(a, b []Interval) []Interval {
	var out []Interval
	j := 0
	for _, iv := range a {
		start := iv.Start
		for j < len(b) && b[j].End < start {
			j++
		}
		k := j
		for k < len(b) && b[k].Start <= iv.End {
			if b[k].Start > start {
				out = append(out, Interval{start, b[k].Start - 1})
			}
			if b[k].End >= iv.End {
				start = iv.End + 1
				break
			}
			start = b[k].End + 1
			k++
		}
		if start <= iv.End {
			out = append(out, Interval{start, iv.End})
		}
	}
	return out
}

func intersectIntervals(a, b []Interval) []Interval {
	var out []Interval
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		lo, hi := max(a[i].Start, b[j].Start), min(a[i].End, b[j].End)
		if lo <= hi {
			out = append(out, Interval{lo, hi})
		}
		if a[i].End < b[j].End {
			i++
		} else {
			j++
		}
	}
	return out
}
