// Package mutation reads the mutation files of scripts/mutations (their
// format is scripts/mutations/README) and applies one to a file's text. It
// is pure: copying the tree and running the tests is mutationcheck's job.
package mutation

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Mutation is one file of scripts/mutations: edits that reopen one hole and
// the tests expected to catch it.
type Mutation struct {
	Name  string
	Hole  string
	Edits []Edit
	Tests []Test
}

// Edit replaces Find, which must occur exactly once in File, by Replace.
type Edit struct {
	File, Find, Replace string
}

// Test is one `go test` run: Pkg with -run Run, Env added to the
// environment.
type Test struct {
	Env     []string
	Pkg     string
	Run     string
	Timeout time.Duration
}

// DefaultTimeout bounds one test command unless the file says otherwise.
const DefaultTimeout = 30 * time.Minute

const (
	markFind    = "<<<<<<< find"
	markSep     = "======="
	markReplace = ">>>>>>> replace"
)

var envWord = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

// Parse reads one mutation file; name is its name in the table.
func Parse(name, text string) (Mutation, error) {
	m := Mutation{Name: name}
	lines := strings.SplitAfter(text, "\n")
	file := ""
	timeout := DefaultTimeout
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], "\n")
		switch {
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
		case line == markFind:
			if file == "" {
				return m, fmt.Errorf("%s:%d: a find block before any file: line", name, i+1)
			}
			e, next, err := block(lines, i+1)
			if err != nil {
				return m, fmt.Errorf("%s:%d: %v", name, i+1, err)
			}
			e.File = file
			m.Edits = append(m.Edits, e)
			i = next
		case strings.HasPrefix(line, "hole:"):
			if m.Hole != "" {
				return m, fmt.Errorf("%s:%d: a second hole: line", name, i+1)
			}
			m.Hole = strings.TrimSpace(strings.TrimPrefix(line, "hole:"))
		case strings.HasPrefix(line, "file:"):
			file = strings.TrimSpace(strings.TrimPrefix(line, "file:"))
		case strings.HasPrefix(line, "timeout:"):
			d, err := time.ParseDuration(strings.TrimSpace(strings.TrimPrefix(line, "timeout:")))
			if err != nil {
				return m, fmt.Errorf("%s:%d: %v", name, i+1, err)
			}
			timeout = d
		case strings.HasPrefix(line, "test:"):
			t, err := parseTest(strings.TrimPrefix(line, "test:"))
			if err != nil {
				return m, fmt.Errorf("%s:%d: %v", name, i+1, err)
			}
			m.Tests = append(m.Tests, t)
		default:
			return m, fmt.Errorf("%s:%d: not a hole:, file:, test:, timeout: line or a find block: %q", name, i+1, line)
		}
	}
	for i := range m.Tests {
		m.Tests[i].Timeout = timeout
	}
	switch {
	case m.Hole == "":
		return m, fmt.Errorf("%s: no hole: line", name)
	case len(m.Edits) == 0:
		return m, fmt.Errorf("%s: no find/replace block", name)
	case len(m.Tests) == 0:
		return m, fmt.Errorf("%s: no test: line", name)
	}
	return m, nil
}

// block reads a find/replace block whose first text line is lines[i]; next
// is the index of its closing marker.
func block(lines []string, i int) (e Edit, next int, err error) {
	var find, repl strings.Builder
	cur := &find
	sawSep := false
	for ; i < len(lines); i++ {
		switch strings.TrimRight(lines[i], "\n") {
		case markSep:
			if sawSep {
				return e, 0, fmt.Errorf("two %q lines in one block", markSep)
			}
			sawSep, cur = true, &repl
			continue
		case markReplace:
			if !sawSep {
				return e, 0, fmt.Errorf("%q before %q", markReplace, markSep)
			}
			if find.Len() == 0 {
				return e, 0, fmt.Errorf("empty find text")
			}
			return Edit{Find: find.String(), Replace: repl.String()}, i, nil
		}
		l := lines[i]
		if !strings.HasSuffix(l, "\n") {
			l += "\n"
		}
		cur.WriteString(l)
	}
	return e, 0, fmt.Errorf("block not closed by %q", markReplace)
}

// parseTest reads `[NAME=value ...] <package> <run pattern>`; the pattern is
// the rest of the line, verbatim.
func parseTest(s string) (Test, error) {
	var t Test
	rest := strings.TrimSpace(s)
	for {
		word, after, _ := strings.Cut(rest, " ")
		if !envWord.MatchString(word) {
			break
		}
		t.Env = append(t.Env, word)
		rest = strings.TrimSpace(after)
	}
	pkg, run, ok := strings.Cut(rest, " ")
	run = strings.TrimSpace(run)
	if !ok || run == "" || !strings.HasPrefix(pkg, "./") {
		return t, fmt.Errorf("test: wants [NAME=value ...] ./<package> <-run pattern>, got %q", s)
	}
	if _, err := regexp.Compile(run); err != nil {
		return t, fmt.Errorf("test: -run pattern %q: %v", run, err)
	}
	t.Pkg, t.Run = pkg, run
	return t, nil
}

// Apply replaces find in text by replace; find must occur exactly once, or
// the mutation is stale.
func Apply(text, find, replace string) (string, error) {
	switch n := strings.Count(text, find); n {
	case 1:
		return strings.Replace(text, find, replace, 1), nil
	case 0:
		return "", fmt.Errorf("stale mutation: the find text does not occur")
	default:
		return "", fmt.Errorf("stale mutation: the find text occurs %d times, not once", n)
	}
}

var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// FailedTests lists the tests a `go test -v` output reports failed, in
// order, leaving out a test whose failed subtests are listed (they say
// more).
func FailedTests(output string) []string {
	var all []string
	seen := map[string]bool{}
	for _, m := range failLine.FindAllStringSubmatch(output, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			all = append(all, m[1])
		}
	}
	var names []string
	for _, n := range all {
		parent := false
		for _, o := range all {
			parent = parent || strings.HasPrefix(o, n+"/")
		}
		if !parent {
			names = append(names, n)
		}
	}
	return names
}

// BuildFailed says whether go test's output reports that the package or
// its tests did not compile (then the mutation is broken, not caught).
func BuildFailed(output string) bool {
	return strings.Contains(output, "[build failed]") || strings.Contains(output, "[setup failed]")
}
