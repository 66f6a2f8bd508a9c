package events

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

// Every string constant in this package is a reason: it must read
// <Subject><PastTenseVerb>[Qualifier], and its value must equal its name.
func TestReasonsAreSubjectPastTenseVerb(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "events.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || vs.Names[0].Name == "Component" {
				continue
			}
			n++
			reason, _ := strconv.Unquote(lit.Value)
			if reason != vs.Names[0].Name {
				t.Errorf("constant %s = %q: name and value differ", vs.Names[0].Name, reason)
			}
			checkReason(t, reason)
		}
	}
	if n < 20 {
		t.Fatalf("found only %d reasons; is the parser reading the right file?", n)
	}
}

// checkReason fails t unless reason reads <Subject><PastTenseVerb>[Qualifier].
func checkReason(t *testing.T, reason string) {
	t.Helper()
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

// Controllers define the reasons they alone record beside their code, as
// constants named Event<Reason>. Every such constant in the module follows
// the same rule as this package's.
func TestEveryControllersEventReasonsFollowTheForm(t *testing.T) {
	root := filepath.Join("..", "..")
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "generated" || d.Name() == "vendor" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Event") || i >= len(vs.Values) || strings.HasPrefix(name.Name, "EventType") {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					reason, _ := strconv.Unquote(lit.Value)
					n++
					if "Event"+reason != name.Name {
						t.Errorf("%s: constant %s = %q: the name must be Event plus the reason", path, name.Name, reason)
					}
					checkReason(t, reason)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("found only %d Event<Reason> constants outside this package; is the walk reading the module?", n)
	}
}

func TestSchemeKnowsBloodravenKinds(t *testing.T) {
	s := Scheme()
	for _, kind := range []string{"MysqlDatabase", "MysqlFailoverGroup"} {
		if !s.Recognizes(schemaGVK(kind)) {
			t.Errorf("scheme does not know %s", kind)
		}
	}
}
