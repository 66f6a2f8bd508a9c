// Command mutationcheck is scripts/mutation-check: it applies each mutation
// of scripts/mutations, alone, to a scratch copy of the working tree, runs
// the tests the mutation names, and prints which caught it (docs/testing.md,
// "The mutation table"). The working tree itself is only read.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mutation"
)

type options struct {
	src, dir, only, from string
	tests                string
	check, everyTest     bool
	everything, keep     bool
	baseline             bool
}

func main() {
	var o options
	flag.StringVar(&o.src, "src", ".", "the working tree to copy (only read)")
	flag.StringVar(&o.dir, "dir", "scripts/mutations", "the mutation files, relative to -src")
	flag.StringVar(&o.from, "from", "", "copy this git revision of -src (git archive) instead of its working tree, e.g. HEAD")
	flag.StringVar(&o.only, "only", "", "run only the mutations whose name matches this regular expression")
	flag.StringVar(&o.tests, "tests", "", "run only the test lines whose package or -run pattern matches this regular expression (e.g. InvariantHarness: which rows the harnesses catch)")
	flag.BoolVar(&o.check, "check", false, "parse the files and check each find text occurs once; run no test")
	flag.BoolVar(&o.everyTest, "every-test", false, "run every test a mutation names, not only up to the first that catches it")
	flag.BoolVar(&o.everything, "everything", false, "run every test of the safety packages for each mutation instead of the ones it names")
	flag.BoolVar(&o.baseline, "baseline", false, "first run each distinct test command on the unmutated copy; a mutation whose command fails there is an ERROR row, not run")
	flag.BoolVar(&o.keep, "keep", false, "keep the scratch copy")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code, err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutation-check:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// everythingTests are the safety packages' whole suites (-everything).
var everythingTests = []mutation.Test{
	{Pkg: "./pkg/topology/...", Run: ".", Timeout: time.Hour},
	{Pkg: "./pkg/sidecar/...", Run: ".", Timeout: time.Hour},
	{Pkg: "./pkg/controllers/topologymanager/...", Run: ".", Timeout: 2 * time.Hour},
}

func run(ctx context.Context, o options) (int, error) {
	src, err := filepath.Abs(o.src)
	if err != nil {
		return 0, err
	}
	muts, err := load(filepath.Join(src, o.dir), o.only)
	if err != nil {
		return 0, err
	}
	if _, err := regexp.Compile(o.tests); err != nil {
		return 0, fmt.Errorf("-tests: %v", err)
	}
	if len(muts) == 0 {
		return 0, fmt.Errorf("no mutation in %s matches %q", o.dir, o.only)
	}
	tmp, err := os.MkdirTemp("", "mutation-check-")
	if err != nil {
		return 0, err
	}
	tree, logs := filepath.Join(tmp, "tree"), filepath.Join(tmp, "logs")
	if !o.keep {
		// The logs stay for reading; a run that wrote none (-check, an
		// early error) leaves nothing behind.
		defer func() {
			_ = os.RemoveAll(tree)
			_ = os.Remove(logs) // only if empty
			_ = os.Remove(tmp)
		}()
	}
	if err := copyTree(ctx, src, tree, o.from); err != nil {
		return 0, err
	}
	if err := os.Mkdir(logs, 0o755); err != nil {
		return 0, err
	}
	// A stale mutation is an error of the whole run, found before any test.
	for _, m := range muts {
		if _, err := mutate(tree, m); err != nil {
			return 0, fmt.Errorf("%s: %v", m.Name, err)
		}
	}
	what := "the working tree of " + src
	if o.from != "" {
		what = o.from + " of " + src
	}
	if o.check {
		fmt.Printf("%d mutations parse and apply to %s\n", len(muts), what)
		return 0, nil
	}
	fmt.Printf("scratch copy of %s: %s, logs in %s\n", what, tree, logs)
	env := append(os.Environ(), "BIN_DIR="+filepath.Join(src, "bin"))
	failing := map[string]string{}
	if o.baseline {
		if failing, err = baseline(ctx, tree, logs, env, muts, o); err != nil {
			return 0, err
		}
	}
	var rows []row
	fmt.Println("| mutation | hole | caught by | time |\n| --- | --- | --- | --- |")
	for _, m := range muts {
		r := row{name: m.Name, hole: m.Hole}
		if why := baselineFails(m, o, failing); why != "" {
			r.caught = why
		} else {
			r = runOne(ctx, tree, logs, env, m, o)
		}
		rows = append(rows, r)
		fmt.Println(r.line())
		if ctx.Err() != nil {
			break
		}
	}
	return summary(rows, len(muts)), nil
}

func load(dir, only string) ([]mutation.Mutation, error) {
	re, err := regexp.Compile(only)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.mut"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var muts []mutation.Mutation
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".mut")
		if !re.MatchString(name) {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		m, err := mutation.Parse(name, string(b))
		if err != nil {
			return nil, err
		}
		muts = append(muts, m)
	}
	return muts, nil
}

// mutate returns the mutated text of each file m edits, read from root.
func mutate(root string, m mutation.Mutation) (map[string]string, error) {
	out := map[string]string{}
	for i, e := range m.Edits {
		text, ok := out[e.File]
		if !ok {
			b, err := os.ReadFile(filepath.Join(root, e.File))
			if err != nil {
				return nil, err
			}
			text = string(b)
		}
		t, err := mutation.Apply(text, e.Find, e.Replace)
		if err != nil {
			return nil, fmt.Errorf("edit %d of %s: %v", i+1, e.File, err)
		}
		out[e.File] = t
	}
	return out, nil
}

// copyTree copies src's working tree (without .git), or its revision rev,
// to dst without bin/ (the tests take the control plane from the source's
// bin through BIN_DIR). Both only read src.
func copyTree(ctx context.Context, src, dst, rev string) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	// Others may be writing the tree meanwhile: a file changed while tar
	// read it (exit 1) is taken as it was read; .git is not needed.
	script := `tar -C "$1" --exclude=./bin --exclude=./.git --warning=no-file-changed -cf - . | tar -C "$2" -xf -; rc=("${PIPESTATUS[@]}"); [ "${rc[0]}" -le 1 ] && [ "${rc[1]}" -eq 0 ]`
	if rev != "" {
		script = `set -o pipefail; git -C "$1" archive --format=tar "$3" | tar -C "$2" -xf -`
	}
	c := exec.CommandContext(ctx, "bash", "-c", script, "copy", src, dst, rev)
	c.Stderr = os.Stderr
	return c.Run()
}

type row struct {
	name, hole, caught string
	ok                 bool
	took               time.Duration
}

func (r row) line() string {
	return fmt.Sprintf("| %s | %s | %s | %s |", r.name, r.hole, r.caught, r.took.Round(time.Second))
}

// runOne applies m to the scratch tree, runs its tests, and restores the
// files it changed.
func runOne(ctx context.Context, tree, logs string, env []string, m mutation.Mutation, o options) (r row) {
	r = row{name: m.Name, hole: m.Hole}
	start := time.Now()
	defer func() { r.took = time.Since(start) }()
	texts, err := mutate(tree, m)
	if err != nil {
		r.caught = "ERROR: " + err.Error()
		return r
	}
	restore, err := write(tree, texts)
	defer func() {
		if err := restore(); err != nil && r.ok {
			r.ok, r.caught = false, "ERROR restoring: "+err.Error()
		}
	}()
	if err != nil {
		r.caught = "ERROR: " + err.Error()
		return r
	}
	tests := selectTests(m, o)
	if len(tests) == 0 {
		r.caught = "ERROR: no test line matches -tests"
		return r
	}
	var caught []string
	for i, t := range tests {
		log := filepath.Join(logs, fmt.Sprintf("%s.%d.log", m.Name, i+1))
		res := goTest(ctx, tree, log, env, t)
		switch {
		case res.err != nil:
			r.caught = fmt.Sprintf("ERROR: %s (%s)", res.err, log)
			return r
		case res.broken:
			r.caught = fmt.Sprintf("ERROR: the mutation does not compile with %s (%s)", t.Pkg, log)
			return r
		case res.failed:
			caught = append(caught, res.describe(t))
		}
		if len(caught) > 0 && !o.everyTest {
			break
		}
	}
	if len(caught) == 0 {
		r.caught = "NOT CAUGHT"
		return r
	}
	r.ok, r.caught = true, strings.Join(caught, "; ")
	return r
}

// selectTests is what runs for m: its own test lines (those -tests
// matches), or the whole suites with -everything.
func selectTests(m mutation.Mutation, o options) []mutation.Test {
	if o.everything {
		return everythingTests
	}
	if o.tests == "" {
		return m.Tests
	}
	re := regexp.MustCompile(o.tests) // checked in run
	var out []mutation.Test
	for _, t := range m.Tests {
		if re.MatchString(t.Pkg) || re.MatchString(t.Run) {
			out = append(out, t)
		}
	}
	return out
}

// write puts texts into tree; restore puts back what was there.
func write(tree string, texts map[string]string) (restore func() error, err error) {
	orig := map[string][]byte{}
	restore = func() error {
		var errs []error
		for f, b := range orig {
			errs = append(errs, os.WriteFile(filepath.Join(tree, f), b, 0o644))
		}
		return errors.Join(errs...)
	}
	for f, t := range texts {
		p := filepath.Join(tree, f)
		b, err := os.ReadFile(p)
		if err != nil {
			return restore, err
		}
		orig[f] = b
		if err := os.WriteFile(p, []byte(t), 0o644); err != nil {
			return restore, err
		}
	}
	return restore, nil
}

type result struct {
	failed, broken bool
	names          []string
	exit           int
	err            error
}

func (r result) describe(t mutation.Test) string {
	names := r.names
	if len(names) > 2 {
		names = append(names[:2:2], fmt.Sprintf("+%d more", len(r.names)-2))
	}
	if len(names) == 0 {
		// A panic or the test timeout: go test says FAIL with no test line.
		return fmt.Sprintf("%s (exit %d, no --- FAIL line: panic or timeout, see the log)", t.Pkg, r.exit)
	}
	return fmt.Sprintf("%s %s", t.Pkg, strings.Join(names, ", "))
}

// goTest runs one test command in tree, its output to log.
func goTest(ctx context.Context, tree, log string, env []string, t mutation.Test) result {
	f, err := os.Create(log)
	if err != nil {
		return result{err: err}
	}
	defer f.Close()
	args := []string{"test", "-count=1", "-v", "-timeout", t.Timeout.String(), "-run", t.Run, t.Pkg}
	fmt.Fprintf(f, "# %s go %s\n", strings.Join(t.Env, " "), strings.Join(args, " "))
	c := exec.Command("go", args...)
	c.Dir, c.Env = tree, append(append([]string{}, env...), t.Env...)
	var out strings.Builder
	c.Stdout = io.MultiWriter(f, &out)
	c.Stderr = c.Stdout
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return result{err: err}
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		// Stop the go test this run started, and the test binary it runs,
		// by their process group.
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		<-done
		return result{err: ctx.Err()}
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return result{err: werr}
	}
	res := result{names: mutation.FailedTests(out.String())}
	if werr != nil {
		res.exit = ee.ExitCode()
		res.failed = true
		res.broken = mutation.BuildFailed(out.String())
	}
	return res
}

func testKey(t mutation.Test) string {
	return strings.Join(t.Env, " ") + " " + t.Pkg + " " + t.Run
}

// baselineFails says why m cannot be judged: one of its commands fails on
// the unmutated tree.
func baselineFails(m mutation.Mutation, o options, failing map[string]string) string {
	for _, t := range selectTests(m, o) {
		if why, ok := failing[testKey(t)]; ok {
			return "ERROR: fails unmutated: " + why
		}
	}
	return ""
}

// baseline runs each distinct test command on the unmutated tree and
// returns those that fail, with what failed.
func baseline(ctx context.Context, tree, logs string, env []string, muts []mutation.Mutation, o options) (map[string]string, error) {
	seen := map[string]bool{}
	failing := map[string]string{}
	for _, m := range muts {
		for _, t := range selectTests(m, o) {
			key := testKey(t)
			if seen[key] {
				continue
			}
			seen[key] = true
			start := time.Now()
			log := filepath.Join(logs, fmt.Sprintf("baseline.%d.log", len(seen)))
			res := goTest(ctx, tree, log, env, t)
			fmt.Printf("baseline %s -run '%s' %s: ", strings.TrimSpace(strings.Join(t.Env, " ")+" "+t.Pkg), t.Run, time.Since(start).Round(time.Second))
			switch {
			case res.err != nil:
				return nil, res.err
			case res.failed:
				// A catch would mean nothing: its rows are errors.
				failing[key] = fmt.Sprintf("%s (%s)", res.describe(t), log)
				fmt.Println("FAIL:", failing[key])
				continue
			}
			fmt.Println("ok")
		}
	}
	return failing, nil
}

// summary prints the outcome and gives the exit code: 0 only when every
// mutation ran and was caught.
func summary(rows []row, want int) int {
	bad := 0
	for _, r := range rows {
		if !r.ok {
			bad++
		}
	}
	fmt.Printf("\n%d of %d mutations caught", len(rows)-bad, want)
	if len(rows) < want {
		fmt.Printf(" (%d not run: interrupted)", want-len(rows))
	}
	fmt.Println()
	if bad > 0 || len(rows) < want {
		return 1
	}
	return 0
}
