package gtid

import (
	"math"
	"strings"
	"testing"
)

const (
	uA = "3e11fa47-71ca-11e1-9e33-c80aa9429562" // the UUID the MySQL manual's examples use
	uB = "2174b383-5441-11e8-b90a-c80aa9429562"
)

// Examples from the MySQL reference manual ("GTID Sets", "GTID Format and
// Storage", "Functions Used with Global Transaction Identifiers").
func TestParseFormatManualExamples(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"  \n ", ""},
		{"3E11FA47-71CA-11E1-9E33-C80AA9429562:23", uA + ":23"},
		{"3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5", uA + ":1-5"},
		{"3E11FA47-71CA-11E1-9E33-C80AA9429562:1-3:11:47-49", uA + ":1-3:11:47-49"},
		// gtid_executed normalisation: overlapping and adjacent ranges merge.
		{"3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:11-18, 3E11FA47-71CA-11E1-9E33-C80AA9429562:6-10", uA + ":1-18"},
		// UUIDs sort, joined with ",\n" as gtid_executed shows them.
		{uA + ":1-3, " + "2174B383-5441-11E8-B90A-C80AA9429562:1-19", uB + ":1-19,\n" + uA + ":1-3"},
		// Multi-line input as copied from SHOW output.
		{uB + ":1-19,\n" + uA + ":1-3", uB + ":1-19,\n" + uA + ":1-3"},
		// Tagged GTIDs (MySQL 8.3+): tags lowercase, grouped under their UUID.
		{"3E11FA47-71CA-11E1-9E33-C80AA9429562:Domain_1:1-3:11:47-49, 3E11FA47-71CA-11E1-9E33-C80AA9429562:Domain_2:8-52",
			uA + ":domain_1:1-3:11:47-49:domain_2:8-52"},
		{"3E11FA47-71CA-11E1-9E33-C80AA9429562:Domain_1:1-3:11:47-49:Domain_2:8-52",
			uA + ":domain_1:1-3:11:47-49:domain_2:8-52"},
		// Untagged intervals come before the tags of the same UUID.
		{uA + ":t:5," + uA + ":1-2", uA + ":1-2:t:5"},
		// Out-of-order and duplicate intervals.
		{uA + ":10:1-3:2:4", uA + ":1-4:10"},
		// Empty elements, which MySQL accepts: a trailing comma as in text
		// copied from gtid_executed, leading and doubled commas.
		{uA + ":1-5,\n", uA + ":1-5"},
		{",, " + uA + ":1-5,,\n" + uB + ":1,", uB + ":1,\n" + uA + ":1-5"},
		{" , ", ""},
	}
	for _, c := range cases {
		s, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got := s.String(); got != c.want {
			t.Errorf("Parse(%q).String() = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	bad := []string{
		"3E11FA47-71CA-11E1-9E33-C80AA9429562",   // no interval
		"3E11FA47-71CA-11E1-9E33-C80AA942956:1",  // short uuid
		"3E11FA47-71CA-11E1-9E33-C80AA942956Z:1", // bad hex
		"3E11FA47x71CA-11E1-9E33-C80AA9429562:1", // bad dash
		uA + ":0",                                // GNO 0 is invalid
		uA + ":5-3",                              // end before start
		uA + ":1-",                               // missing end
		uA + ":-1",                               // missing start
		uA + ":9223372036854775807",              // above MaxGNO
		uA + ":1,x",                              // garbage element
		uA + ":010x",                             // not a decimal number
		uA + ":010",                              // octal for MySQL
		uA + ":0x10",                             // hexadecimal for MySQL
		uA + ":tag",                              // tag without interval
		uA + ":1:9tag:1",                         // tag starting with a digit
		uA + ":a-b:1",                            // invalid tag char
		uA + ":" + strings.Repeat("t", 33) + ":1", // tag too long
		uA + ":t1:t2:1", // tag followed by tag
		uA + ":1 2",     // garbage
	}
	for _, in := range bad {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted invalid input", in)
		}
	}
}

func TestManualFunctionExamples(t *testing.T) {
	subset := []struct {
		a, b string
		want bool
	}{
		{uA + ":23", uA + ":21-57", true},
		{uA + ":23-25", uA + ":21-57", true},
		{uA + ":20-25", uA + ":21-57", false},
	}
	for _, c := range subset {
		if got := MustParse(c.a).IsSubsetOf(MustParse(c.b)); got != c.want {
			t.Errorf("GTID_SUBSET(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	subtract := []struct{ a, b, want string }{
		{uA + ":21-57", uA + ":22-55", uA + ":21:56-57"},
		{uA + ":21-57", uA + ":20-25", uA + ":26-57"},
		{uA + ":21-57", uA + ":23", uA + ":21-22:24-57"},
		{uA + ":21-57", "", uA + ":21-57"},
		{uA + ":21-57", uA + ":1-100", ""},
		{uA + ":1-10:t:1-10", uA + ":t:5", uA + ":1-10:t:1-4:6-10"},
	}
	for _, c := range subtract {
		if got := MustParse(c.a).Subtract(MustParse(c.b)).String(); got != c.want {
			t.Errorf("GTID_SUBTRACT(%s, %s) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

func TestIntersectUnionCount(t *testing.T) {
	a := MustParse(uA + ":1-10:20-30," + uB + ":1-5")
	b := MustParse(uA + ":5-25:t:1-3")
	if got, want := a.Intersect(b).String(), uA+":5-10:20-25"; got != want {
		t.Errorf("intersect = %q, want %q", got, want)
	}
	if got, want := a.Union(b).String(), uB+":1-5,\n"+uA+":1-30:t:1-3"; got != want {
		t.Errorf("union = %q, want %q", got, want)
	}
	if got := a.Count(); got != 10+11+5 {
		t.Errorf("count = %d, want 26", got)
	}
	if got := MustParse(uA + ":1-9223372036854775806," + uB + ":1-9223372036854775806," + uA + ":t:1-9223372036854775806").Count(); got != math.MaxUint64 {
		t.Errorf("count of huge set = %d, want saturation at MaxUint64", got)
	}
}

func TestCompare(t *testing.T) {
	cases := []struct {
		a, b string
		want Relation
	}{
		{"", "", Equal},
		{uA + ":1-5", uA + ":1-3:4-5", Equal},
		{uA + ":1-3", uA + ":1-5", Subset},
		{uA + ":1-5," + uB + ":1", uA + ":1-5", Superset},
		{uA + ":1-5", uA + ":1-4," + uB + ":1", Incomparable},
		{"", uA + ":1", Subset},
		{uA + ":t:1", uA + ":1", Incomparable}, // tagged and untagged numbers are distinct
	}
	for _, c := range cases {
		if got := MustParse(c.a).Compare(MustParse(c.b)); got != c.want {
			t.Errorf("Compare(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestGTIDContainsAddNext(t *testing.T) {
	g, err := ParseGTID("3E11FA47-71CA-11E1-9E33-C80AA9429562:Tag:7")
	if err != nil {
		t.Fatal(err)
	}
	if g.String() != uA+":tag:7" {
		t.Fatalf("GTID string = %q", g.String())
	}
	s := MustParse(uA + ":tag:1-6")
	if s.Contains(g) {
		t.Fatal("set 1-6 must not contain 7")
	}
	s = s.Add(g)
	if !s.Contains(g) || s.String() != uA+":tag:1-7" {
		t.Fatalf("after Add: %q", s)
	}
	if n := MustParse(uA + ":1-4:6").NextGNO(SID{UUID: uA}); n != 5 {
		t.Errorf("NextGNO fills the first gap: got %d, want 5", n)
	}
	if n := MustParse(uA + ":2-4").NextGNO(SID{UUID: uA}); n != 1 {
		t.Errorf("NextGNO with 1 free: got %d, want 1", n)
	}
	if n := MustParse(uB + ":1-4").NextGNO(SID{UUID: uA}); n != 1 {
		t.Errorf("NextGNO of absent uuid: got %d, want 1", n)
	}
	for _, bad := range []string{uA, uA + ":0", uA + ":x:y:1", "zz:1"} {
		if _, err := ParseGTID(bad); err == nil {
			t.Errorf("ParseGTID(%q) accepted invalid input", bad)
		}
	}
}

func TestOneLineAndValueSemantics(t *testing.T) {
	a := MustParse(uA + ":1-5," + uB + ":3")
	if got, want := a.OneLine(), uB+":3,"+uA+":1-5"; got != want {
		t.Errorf("OneLine = %q, want %q", got, want)
	}
	before := a.String()
	_ = a.Union(MustParse(uA + ":6-9"))
	_ = a.Subtract(MustParse(uA + ":1-2"))
	_ = a.Intersect(MustParse(uA + ":2"))
	ivs := a.Intervals(SID{UUID: uA})
	ivs[0].End = 100
	if a.String() != before {
		t.Fatalf("operations mutated their operand: %q became %q", before, a.String())
	}
}
