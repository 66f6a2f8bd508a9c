package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// irregular past tenses that appear in reasons.
var irregular = map[string]bool{"Lost": true, "Held": true, "Caught": true, "Sent": true, "Began": true, "Stop": false}

var word = regexp.MustCompile(`[A-Z]+[a-z0-9]*`)

// Every Event<Reason> constant of events.go must read
// <Subject><PastTenseVerb>[Qualifier] and be named Event plus its value.
func TestEventReasonsAreSubjectPastTenseVerb(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "events.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, reason := range eventConstants(f) {
		n++
		if "Event"+reason != name {
			t.Errorf("constant %s = %q: the name must be Event plus the reason", name, reason)
		}
		checkReason(t, reason)
	}
	if n < 20 {
		t.Fatalf("found only %d reasons; is the parser reading the right file?", n)
	}
}

// eventConstants returns the string constants named Event<Reason> of f.
func eventConstants(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Event") || strings.HasPrefix(name.Name, "EventType") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					out[name.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
	}
	return out
}

// seedSpelled are reasons seed 003 names as they are, outside the rule.
var seedSpelled = map[string]bool{"SidecarVersionSkew": true}

// checkReason fails t unless reason reads <Subject><PastTenseVerb>[Qualifier].
func checkReason(t *testing.T, reason string) {
	t.Helper()
	if seedSpelled[reason] {
		return
	}
	words := word.FindAllString(reason, -1)
	if strings.Join(words, "") != reason {
		t.Errorf("%q is not CamelCase", reason)
		return
	}
	verb := -1
	for i, w := range words[1:] {
		if strings.HasSuffix(w, "ed") || irregular[w] {
			verb = i + 1
			break
		}
	}
	if verb < 1 {
		t.Errorf("%q has no past-tense verb after its subject", reason)
	}
}

// The contract is in one place: no package but this one defines an
// Event<Reason> constant, so a reason has one spelling and docs/events.md
// one source to be checked against.
func TestEventReasonsAreDefinedOnlyHere(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..")
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "generated" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if abs, _ := filepath.Abs(filepath.Dir(path)); abs == here {
			return nil
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for name, reason := range eventConstants(f) {
			t.Errorf("%s: constant %s = %q: Event reasons are defined in pkg/apis/shipstream/v1alpha1/events.go", path, name, reason)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("walked only %d Go files; is the walk reading the module?", files)
	}
}
