package events

import (
	"go/ast"
	"go/parser"
	"go/token"
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
			words := word.FindAllString(reason, -1)
			if strings.Join(words, "") != reason {
				t.Errorf("%q is not CamelCase", reason)
				continue
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
	}
	if n < 20 {
		t.Fatalf("found only %d reasons; is the parser reading the right file?", n)
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
