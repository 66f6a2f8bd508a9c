package mutation

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const sample = `# a comment
hole: the guard is gone
file: pkg/a/a.go
<<<<<<< find
	if x {
		return
	}
=======
	// gone
>>>>>>> replace
<<<<<<< find
y := 1
=======
>>>>>>> replace
timeout: 5m
test: ./pkg/a ^TestA$
test: HARNESS_SEQUENCES=30 HARNESS_REAL_FAULTS=a,b ./pkg/b ^TestB$|^TestC/seed=1 x$
`

func TestParseReadsEveryPart(t *testing.T) {
	m, err := Parse("x", sample)
	if err != nil {
		t.Fatal(err)
	}
	want := []Edit{
		{File: "pkg/a/a.go", Find: "\tif x {\n\t\treturn\n\t}\n", Replace: "\t// gone\n"},
		{File: "pkg/a/a.go", Find: "y := 1\n", Replace: ""},
	}
	if !reflect.DeepEqual(m.Edits, want) {
		t.Errorf("edits %q, want %q", m.Edits, want)
	}
	if m.Hole != "the guard is gone" || len(m.Tests) != 2 {
		t.Fatalf("hole %q, %d tests", m.Hole, len(m.Tests))
	}
	b := m.Tests[1]
	if b.Pkg != "./pkg/b" || b.Run != "^TestB$|^TestC/seed=1 x$" || !reflect.DeepEqual(b.Env, []string{"HARNESS_SEQUENCES=30", "HARNESS_REAL_FAULTS=a,b"}) || b.Timeout.Minutes() != 5 {
		t.Errorf("second test %+v", b)
	}
}

func TestParseRefusesIncompleteFiles(t *testing.T) {
	for name, text := range map[string]string{
		"no hole":        strings.Replace(sample, "hole: the guard is gone\n", "", 1),
		"no test":        strings.Split(sample, "timeout:")[0],
		"unclosed block": "hole: h\nfile: f\n<<<<<<< find\nx\n=======\n",
		"block no file":  "hole: h\n<<<<<<< find\nx\n=======\n>>>>>>> replace\ntest: ./p ^T$\n",
		"empty find":     "hole: h\nfile: f\n<<<<<<< find\n=======\nx\n>>>>>>> replace\ntest: ./p ^T$\n",
		"stray line":     sample + "tests: ./p ^T$\n",
		"bad pattern":    "hole: h\nfile: f\n<<<<<<< find\nx\n=======\n>>>>>>> replace\ntest: ./p ^T($\n",
	} {
		if _, err := Parse(name, text); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}

func TestApplyWantsExactlyOneOccurrence(t *testing.T) {
	got, err := Apply("a\nb\nc\n", "b\n", "B\n")
	if err != nil || got != "a\nB\nc\n" {
		t.Errorf("Apply = %q, %v", got, err)
	}
	for _, text := range []string{"a\nc\n", "b\nb\n"} {
		if _, err := Apply(text, "b\n", "B\n"); err == nil || !strings.Contains(err.Error(), "stale") {
			t.Errorf("Apply on %q: %v, want a stale-mutation error", text, err)
		}
	}
}

func TestFailedTestsReadsGoTestOutput(t *testing.T) {
	out := "=== RUN   TestA\n    --- FAIL: TestA/seed=3 (1.2s)\n--- FAIL: TestA (2.0s)\n--- PASS: TestB (0.1s)\nFAIL\n"
	out += "--- FAIL: TestC (0.1s)\n"
	if got := FailedTests(out); !reflect.DeepEqual(got, []string{"TestA/seed=3", "TestC"}) {
		t.Errorf("FailedTests = %q", got)
	}
	if !BuildFailed("FAIL\tgithub.com/x/y [build failed]\n") || BuildFailed(out) {
		t.Error("BuildFailed misreads go test's summary")
	}
}

// TestEveryMutationFileParses keeps scripts/mutations readable by the tool;
// whether each still applies is scripts/mutation-check -check's job, since
// the tree changes under the files.
func TestEveryMutationFileParses(t *testing.T) {
	files, err := filepath.Glob("../../../scripts/mutations/*.mut")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(filepath.Base(f), string(b)); err != nil {
			t.Error(err)
		}
	}
}
