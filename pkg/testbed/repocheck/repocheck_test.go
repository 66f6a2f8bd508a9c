package repocheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// productionBinaries are the binaries users run; the rest of cmd/ is
// development tooling that may use the test bed.
var productionBinaries = []string{"./cmd/bloodraven", "./cmd/bloodraven-sidecar"}

// testOnlyTrees are the module-relative trees production binaries must not link.
var testOnlyTrees = []string{"pkg/testbed", "e2e"}

// listTags makes `go list` see the build-tagged e2e suite too, so it is
// documented and its package name checked like every other package.
const listTags = "e2e"

// repoRoot is the directory holding go.mod, found by walking up from the
// test's working directory (the package directory under `go test`).
var repoRoot = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod in any parent of the working directory")
		}
		dir = parent
	}
})

// goCmd runs the go command in the repository root and returns its stdout.
// `go test` puts its own GOROOT/bin first on PATH, so this is the same go.
func goCmd(t *testing.T, args ...string) []byte {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), root, err, stderr.String())
	}
	return out
}

func modulePath(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(string(goCmd(t, "list", "-m", "-f", "{{.Path}}")))
}

type listedPackage struct {
	ImportPath   string
	Dir          string
	Name         string
	GoFiles      []string
	TestGoFiles  []string
	XTestGoFiles []string
}

// rel is the package's path relative to the module root, "." for the root.
func (p listedPackage) rel(module string) string {
	if p.ImportPath == module {
		return "."
	}
	return strings.TrimPrefix(p.ImportPath, module+"/")
}

// modulePackages lists every package of the main module, including those
// with only _test.go files (go list reports them, with TestGoFiles or
// XTestGoFiles) and those that fail to load (-e), so a broken or test-only
// package is still counted.
func modulePackages(t *testing.T) []listedPackage {
	t.Helper()
	out := goCmd(t, "list", "-e", "-tags", listTags, "-json=ImportPath,Dir,Name,GoFiles,TestGoFiles,XTestGoFiles", "./...")
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list -json: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list ./... reported no packages")
	}
	return pkgs
}

func TestProductionBinariesLinkNoTestBed(t *testing.T) {
	module := modulePath(t)
	forbidden := func(path string) bool {
		for _, tree := range testOnlyTrees {
			p := module + "/" + tree
			if path == p || strings.HasPrefix(path, p+"/") {
				return true
			}
		}
		return false
	}
	for _, bin := range productionBinaries {
		t.Run(strings.TrimPrefix(bin, "./cmd/"), func(t *testing.T) {
			out := goCmd(t, "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, bin)
			root := module + "/" + strings.TrimPrefix(bin, "./")
			imports := map[string][]string{}
			var bad []string
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				if len(fields) == 0 {
					continue
				}
				imports[fields[0]] = fields[1:]
				if forbidden(fields[0]) {
					bad = append(bad, fields[0])
				}
			}
			if _, ok := imports[root]; !ok {
				t.Fatalf("go list -deps %s did not report %s itself", bin, root)
			}
			sort.Strings(bad)
			for _, pkg := range bad {
				t.Errorf("%s links test-bed package %s\n  import chain: %s\n  (test-bed code under %v must stay out of production binaries; see docs/layout.md)",
					bin, pkg, strings.Join(importChain(imports, root, pkg), " -> "), testOnlyTrees)
			}
		})
	}
}

// importChain is a shortest import path from root to target (breadth-first).
func importChain(imports map[string][]string, root, target string) []string {
	prev := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == target {
			var chain []string
			for p := cur; p != ""; p = prev[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, next := range imports[cur] {
			if _, seen := prev[next]; !seen {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return []string{root, "?", target}
}

// layoutRow matches a row of the package table: | `path` | job |.
var layoutRow = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|(.*)\\|\\s*$")

const layoutFile = "docs/layout.md"

// packageTable returns the package table's rows (path -> job) from the
// section of docs/layout.md headed "## Packages".
func packageTable(t *testing.T) (map[string]string, []string) {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, layoutFile))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	var problems []string
	inSection := false
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "#") {
			inSection = strings.TrimSpace(strings.TrimLeft(line, "#")) == "Packages"
			continue
		}
		if !inSection {
			continue
		}
		m := layoutRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		path, job := strings.TrimSuffix(m[1], "/"), strings.TrimSpace(m[2])
		if _, dup := rows[path]; dup {
			problems = append(problems, fmt.Sprintf("%s:%d: `%s` is listed twice", layoutFile, i+1, path))
		}
		if job == "" {
			problems = append(problems, fmt.Sprintf("%s:%d: `%s` has no job", layoutFile, i+1, path))
		}
		rows[path] = job
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no \"## Packages\" section with rows of the form | `pkg/gtid` | its one job |", layoutFile)
	}
	return rows, problems
}

func TestLayoutListsEveryPackage(t *testing.T) {
	module := modulePath(t)
	rows, problems := packageTable(t)
	for _, p := range problems {
		t.Error(p)
	}
	have := map[string]bool{}
	for _, p := range modulePackages(t) {
		rel := p.rel(module)
		have[rel] = true
		if _, ok := rows[rel]; !ok {
			t.Errorf("%s: package `%s` is missing from the Packages table; add a row | `%s` | its one job |", layoutFile, rel, rel)
		}
	}
	var listed []string
	for path := range rows {
		listed = append(listed, path)
	}
	sort.Strings(listed)
	for _, path := range listed {
		if !have[path] {
			t.Errorf("%s: the Packages table lists `%s`, which is not a package of this module (go list -tags %s ./...); remove or rename the row", layoutFile, path, listTags)
		}
	}
}

// generatedTree is exempt from the name check: code-generator names its
// packages after the API group and version (scripts/update-codegen.sh), so
// v1alpha1, fake and shipstream repeat there by construction.
const generatedTree = "generated"

func TestPackageNamesAreUnique(t *testing.T) {
	module := modulePath(t)
	byName := map[string][]string{}
	for _, p := range modulePackages(t) {
		rel := p.rel(module)
		if rel == generatedTree || strings.HasPrefix(rel, generatedTree+"/") {
			continue
		}
		name := packageName(t, p)
		if name == "main" {
			continue
		}
		byName[name] = append(byName[name], rel)
	}
	var names []string
	for name, paths := range byName {
		if len(paths) > 1 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		t.Errorf("package name %q is used by %d packages: %s; give each a name saying its own job",
			name, len(byName[name]), strings.Join(byName[name], ", "))
	}
}

// packageName is the package clause of p, without the _test suffix of an
// external test package; read from the files when go list could not say.
func packageName(t *testing.T, p listedPackage) string {
	t.Helper()
	if p.Name != "" {
		return strings.TrimSuffix(p.Name, "_test")
	}
	for _, f := range slices.Concat(p.GoFiles, p.TestGoFiles, p.XTestGoFiles) {
		file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.PackageClauseOnly)
		if err != nil {
			t.Fatalf("reading the package clause of %s: %v", filepath.Join(p.Dir, f), err)
		}
		return strings.TrimSuffix(file.Name.Name, "_test")
	}
	t.Fatalf("cannot tell the package name of %s: go list gave none and it has no Go files", p.ImportPath)
	return ""
}
