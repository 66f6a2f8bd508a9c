package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A module of its own: a guard, a test that catches its removal, and a
// mutation the test cannot see.
var module = map[string]string{
	"go.mod":         "module example.com/m\n\ngo 1.22\n",
	"g/g.go":         "package g\n\n// Allow says whether n may pass.\nfunc Allow(n int) bool {\n\tif n > 3 {\n\t\treturn false\n\t}\n\treturn true\n}\n",
	"g/g_test.go":    "package g\n\nimport \"testing\"\n\nfunc TestAllow(t *testing.T) {\n\tif Allow(4) {\n\t\tt.Fatal(\"4 passed\")\n\t}\n}\n\nfunc TestOther(t *testing.T) {}\n",
	"mut/caught.mut": "hole: the guard is gone\nfile: g/g.go\n<<<<<<< find\n\tif n > 3 {\n=======\n\tif n > 30 {\n>>>>>>> replace\ntest: ./g ^TestOther$\ntest: ./g ^TestAllow$\n",
	"mut/missed.mut": "hole: a comment changes\nfile: g/g.go\n<<<<<<< find\n// Allow says whether n may pass.\n=======\n// Allow says.\n>>>>>>> replace\ntest: ./g ^TestAllow$\n",
	"mut/broken.mut": "hole: does not compile\nfile: g/g.go\n<<<<<<< find\n\treturn true\n=======\n\treturn 1\n>>>>>>> replace\ntest: ./g ^TestAllow$\n",
}

func writeModule(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// capture runs run() with stdout to a pipe and returns what it printed.
func capture(t *testing.T, o options) (string, int, error) {
	t.Setenv("TMPDIR", t.TempDir()) // the run's scratch copy and logs
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	code, rerr := run(context.Background(), o)
	os.Stdout = old
	w.Close()
	out, _ := io.ReadAll(r)
	return string(out), code, rerr
}

func TestTheTableSaysCaughtNotCaughtAndBroken(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a scratch module")
	}
	src := writeModule(t, module)
	out, code, err := capture(t, options{src: src, dir: "mut"})
	if err != nil {
		t.Fatal(err)
	}
	row := func(name string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "| "+name+" |") {
				return l
			}
		}
		t.Fatalf("no row %s in:\n%s", name, out)
		return ""
	}
	if r := row("caught"); !strings.Contains(r, "./g TestAllow") {
		t.Errorf("caught row: %s", r)
	}
	if r := row("missed"); !strings.Contains(r, "NOT CAUGHT") {
		t.Errorf("missed row: %s", r)
	}
	if r := row("broken"); !strings.Contains(r, "ERROR: the mutation does not compile") {
		t.Errorf("broken row: %s", r)
	}
	if code != 1 || !strings.Contains(out, "1 of 3 mutations caught") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	// The source tree was only read.
	if b, _ := os.ReadFile(filepath.Join(src, "g/g.go")); string(b) != module["g/g.go"] {
		t.Errorf("the source tree changed:\n%s", b)
	}
}

func TestAStaleMutationStopsTheRun(t *testing.T) {
	files := map[string]string{}
	for k, v := range module {
		files[k] = v
	}
	files["mut/stale.mut"] = strings.Replace(module["mut/caught.mut"], "\tif n > 3 {\n=", "\tif n > 4 {\n=", 1)
	src := writeModule(t, files)
	_, _, err := capture(t, options{src: src, dir: "mut", check: true})
	if err == nil || !strings.Contains(err.Error(), "stale mutation: the find text does not occur") {
		t.Fatalf("err = %v, want a stale-mutation error", err)
	}
}

func TestACommandFailingUnmutatedIsAnErrorNotACatch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a scratch module")
	}
	files := map[string]string{}
	for k, v := range module {
		files[k] = v
	}
	files["g/g_test.go"] += "\nfunc TestBroken(t *testing.T) { t.Fatal(\"fails anyway\") }\n"
	files["mut/caught.mut"] = strings.Replace(module["mut/caught.mut"], "^TestOther$", "^TestBroken$", 1)
	delete(files, "mut/missed.mut")
	delete(files, "mut/broken.mut")
	src := writeModule(t, files)
	out, code, err := capture(t, options{src: src, dir: "mut", baseline: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "| caught |") || !strings.Contains(out, "ERROR: fails unmutated: ./g TestBroken") || code != 1 {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}
