package v1alpha1

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// eventsDoc is the page listing every Event reason of the product.
var eventsDoc = filepath.Join("..", "..", "..", "..", "docs", "events.md")

// The types a row of docs/events.md may give.
const (
	typeNormal  = "Normal"
	typeWarning = "Warning"
	typeEither  = "Normal or Warning"
)

// docRow is one reason row of docs/events.md.
type docRow struct {
	line  int
	typ   string
	built bool
}

// docRows parses the reason rows of docs/events.md: table rows whose first
// cell is one backticked reason, `| `Reason` | type | recorded by | when |
// status |`. Malformed reason rows and reasons listed twice fail t.
func docRows(t *testing.T) map[string]docRow {
	t.Helper()
	b, err := os.ReadFile(eventsDoc)
	if err != nil {
		t.Fatal(err)
	}
	reasonCell := regexp.MustCompile("^`([A-Za-z0-9]+)`$")
	rows := map[string]docRow{}
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		m := reasonCell.FindStringSubmatch(cells[0])
		if m == nil {
			continue // a header, a separator, or another table
		}
		reason, n := m[1], i+1
		if len(cells) != 5 {
			t.Errorf("%s:%d: reason %s: want 5 cells (reason, type, recorded by, when, status), got %d", eventsDoc, n, reason, len(cells))
			continue
		}
		row := docRow{line: n, typ: cells[1]}
		switch row.typ {
		case typeNormal, typeWarning, typeEither:
		default:
			t.Errorf("%s:%d: reason %s: type %q is none of %q, %q, %q", eventsDoc, n, reason, row.typ, typeNormal, typeWarning, typeEither)
		}
		switch cells[4] {
		case "built":
			row.built = true
		case "not built yet":
		default:
			t.Errorf("%s:%d: reason %s: status %q is neither \"built\" nor \"not built yet\"", eventsDoc, n, reason, cells[4])
		}
		if cells[2] == "" || cells[3] == "" {
			t.Errorf("%s:%d: reason %s: the recorded-by and when cells must not be empty", eventsDoc, n, reason)
		}
		if prev, ok := rows[reason]; ok {
			t.Errorf("%s:%d: reason %s is listed twice (also on line %d)", eventsDoc, n, reason, prev.line)
			continue
		}
		rows[reason] = row
	}
	if len(rows) < 20 {
		t.Fatalf("%s: found only %d reason rows; is the table parser reading the right file?", eventsDoc, len(rows))
	}
	return rows
}

// typeMention finds a comment naming one or more constants and the type they
// are recorded with: "EventSiteFenced (Warning)", "EventNodeTainted and
// EventNodeUntainted (Normal)", "EventRecloneRequested (Warning when ...)".
var typeMention = regexp.MustCompile(`((?:Event[A-Z][A-Za-z0-9]*(?:\s*,\s*|\s+and\s+|\s+or\s+))*Event[A-Z][A-Za-z0-9]*)\s*\(((?:Normal|Warning)[^)]*)\)`)

var eventName = regexp.MustCompile(`Event[A-Z][A-Za-z0-9]*`)

// commentTypes returns, for each Event constant of events.go whose comment
// gives its type, that type. A comment is read from the constant's own
// declaration block, so one comment may give the types of several constants
// declared after it. A type followed by a condition ("Warning when ...") is
// typeEither. A constant given two types fails t.
func commentTypes(t *testing.T, f *ast.File) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		groups := []*ast.CommentGroup{g.Doc}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			groups = append(groups, vs.Doc, vs.Comment)
		}
		for _, cg := range groups {
			if cg == nil {
				continue
			}
			text := strings.Join(strings.Fields(cg.Text()), " ")
			for _, m := range typeMention.FindAllStringSubmatch(text, -1) {
				typ := m[2]
				switch {
				case typ == typeNormal || typ == typeWarning:
				case strings.HasPrefix(typ, typeEither):
					typ = typeEither
				default:
					typ = typeEither // "Warning when ...": the other type otherwise
				}
				for _, name := range eventName.FindAllString(m[1], -1) {
					if prev, ok := out[name]; ok && prev != typ {
						t.Errorf("events.go: the comments give %s two types, %s and %s", name, prev, typ)
					}
					out[name] = typ
				}
			}
		}
	}
	return out
}

func parseEventsGo(t *testing.T) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "events.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// docs/events.md lists every reason: each constant of events.go as built,
// with the type its comment gives, and no reason the code lacks as built.
func TestEventsDocMatchesCode(t *testing.T) {
	f := parseEventsGo(t)
	consts := eventConstants(f)
	types := commentTypes(t, f)
	rows := docRows(t)

	reasons := map[string]string{} // reason -> constant
	var untyped []string
	for name, reason := range consts {
		reasons[reason] = name
		row, ok := rows[reason]
		if !ok {
			t.Errorf("%s = %q is not in %s: add a row for it (marked built)", name, reason, eventsDoc)
			continue
		}
		if !row.built {
			t.Errorf("%s:%d: %s is marked \"not built yet\" but events.go defines %s: it is built now, mark it built", eventsDoc, row.line, reason, name)
		}
		typ, ok := types[name]
		if !ok {
			untyped = append(untyped, name)
			continue // the doc's type stands; the comment should say it
		}
		if typ != row.typ {
			t.Errorf("%s:%d: %s is %q here but %q in the comment of %s in events.go", eventsDoc, row.line, reason, row.typ, typ, name)
		}
	}
	for reason, row := range rows {
		if _, ok := reasons[reason]; row.built && !ok {
			t.Errorf("%s:%d: %s is marked built but events.go has no constant Event%s: add it or mark the row \"not built yet\"", eventsDoc, row.line, reason, reason)
		}
	}
	for name := range types {
		if _, ok := consts[name]; !ok {
			t.Errorf("events.go: a comment gives the type of %s, which is not a constant there", name)
		}
	}
	sort.Strings(untyped)
	if len(untyped) > 0 {
		t.Logf("constants whose comment in events.go gives no type (docs/events.md's type is used): %s", strings.Join(untyped, ", "))
	}
	if len(consts) < 20 {
		t.Fatalf("found only %d Event constants in events.go; is the parser reading the right file?", len(consts))
	}
}

// recordingCall is one place the code records a reason with a fixed type.
type recordingCall struct {
	pos    token.Position
	reason string
	typ    string
}

const v1alpha1Path = "github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"

// Every place the code records a reason constant with a constant type uses
// the type docs/events.md gives that reason. It checks
//   - recorder calls: x.Event(obj, type, reason, ...), x.Eventf(obj, type,
//     reason, ...), x.AnnotatedEventf(obj, annotations, type, reason, ...);
//   - wrappers: any other call passing a type constant directly followed by
//     a reason constant, as in p.recordf(corev1.EventTypeWarning,
//     v1alpha1.EventSiteFenced, ...);
//   - decisions: d.event(true|false, reason, ...), true meaning Warning, as
//     the topology decision records its Events.
//
// A type constant is a selector ending in EventTypeNormal or EventTypeWarning
// (or the literal "Normal" or "Warning"); a reason constant is a selector on
// this package naming one of its Event constants. Recorder calls whose type
// or reason is a variable are skipped and counted.
func TestEventsRecordedWithTheirType(t *testing.T) {
	consts := eventConstants(parseEventsGo(t))
	rows := docRows(t)

	root := filepath.Join("..", "..", "..", "..")
	var recorder, wrapper, decision []recordingCall
	skipped := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // moved while walking (files are being renamed)
			}
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if n := d.Name(); n == "generated" || n == "bin" || n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module (tools/...)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		pkgName := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == v1alpha1Path {
				pkgName = "v1alpha1"
				if imp.Name != nil {
					pkgName = imp.Name.Name
				}
			}
		}
		if pkgName == "" || pkgName == "_" || pkgName == "." {
			return nil // records none of this package's reasons by name
		}
		reasonOf := func(e ast.Expr) (string, bool) {
			s, ok := e.(*ast.SelectorExpr)
			if !ok {
				return "", false
			}
			x, ok := s.X.(*ast.Ident)
			if !ok || x.Name != pkgName {
				return "", false
			}
			r, ok := consts[s.Sel.Name]
			return r, ok
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			name := ""
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			case *ast.Ident:
				name = fn.Name
			}
			at := func(reason, typ string) recordingCall {
				return recordingCall{pos: fset.Position(call.Pos()), reason: reason, typ: typ}
			}
			ti, ri := -1, -1
			switch name {
			case "Event", "Eventf":
				ti, ri = 1, 2
			case "AnnotatedEventf":
				ti, ri = 2, 3
			}
			if ti >= 0 && len(call.Args) > ri {
				reason, rok := reasonOf(call.Args[ri])
				typ, tok := eventType(call.Args[ti])
				if rok && tok {
					recorder = append(recorder, at(reason, typ))
				} else {
					skipped++
				}
				return true
			}
			if name == "event" && len(call.Args) >= 2 {
				if reason, ok := reasonOf(call.Args[1]); ok {
					if b, ok := call.Args[0].(*ast.Ident); ok && (b.Name == "true" || b.Name == "false") {
						typ := typeNormal
						if b.Name == "true" {
							typ = typeWarning
						}
						decision = append(decision, at(reason, typ))
						return true
					}
				}
			}
			for i := 0; i+1 < len(call.Args); i++ {
				typ, tok := eventType(call.Args[i])
				reason, rok := reasonOf(call.Args[i+1])
				if tok && rok {
					wrapper = append(wrapper, at(reason, typ))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, calls := range [][]recordingCall{recorder, wrapper, decision} {
		for _, c := range calls {
			row, ok := rows[c.reason]
			switch {
			case !ok:
				t.Errorf("%s: records %s, which %s does not list", c.pos, c.reason, eventsDoc)
			case row.typ != typeEither && row.typ != c.typ:
				t.Errorf("%s: records %s as %s, but %s:%d gives it as %s", c.pos, c.reason, c.typ, eventsDoc, row.line, row.typ)
			}
		}
	}
	t.Logf("checked %d recorder calls, %d wrapper calls and %d decision events; skipped %d recorder calls whose type or reason is a variable",
		len(recorder), len(wrapper), len(decision), skipped)
	if len(recorder) < 15 {
		t.Fatalf("found only %d checkable recorder calls (Event, Eventf, AnnotatedEventf with constant type and reason); is the walk reading the module?", len(recorder))
	}
}

// eventType returns the Event type a constant expression names: a selector
// ending in EventTypeNormal or EventTypeWarning, or the literal "Normal" or
// "Warning".
func eventType(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.SelectorExpr:
		switch e.Sel.Name {
		case "EventTypeNormal":
			return typeNormal, true
		case "EventTypeWarning":
			return typeWarning, true
		}
	case *ast.Ident:
		switch e.Name {
		case "EventTypeNormal":
			return typeNormal, true
		case "EventTypeWarning":
			return typeWarning, true
		}
	case *ast.BasicLit:
		if s, err := strconv.Unquote(e.Value); err == nil && e.Kind == token.STRING && (s == typeNormal || s == typeWarning) {
			return s, true
		}
	}
	return "", false
}
