// Package logschema holds the log schema contract of docs/logs.md as data
// and checks log records against it. The document is the single source: its
// tables are parsed here, so a record or field the code emits and the page
// does not list fails the suites that collect records (see Recorder and
// CheckLines).
package logschema

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/logging"
)

// Process names, as docs/logs.md heads their sections: the binary's name.
const (
	Operator     = "bloodraven"
	Sidecar      = "bloodraven-sidecar"
	DeployClient = "bloodraven-deploy"
)

// LoggerKey marks records a library writes through the process's handler:
// klog (the Kubernetes client libraries) and mysql (the MySQL driver), both
// bridged by pkg/logging, and net/http (a server's own errors). Their message and fields are the
// library's, not the contract's; only the common fields are checked.
const LoggerKey = logging.KlogKey

var libraryLoggers = []string{logging.KlogValue, logging.MySQLDriverValue, "net/http"}

// Type is a field's type as the JSON line carries it.
type Type string

// The types docs/logs.md may name.
const (
	String   Type = "string"
	Integer  Type = "integer"
	Number   Type = "number"
	Boolean  Type = "boolean"
	Time     Type = "time"     // an RFC 3339 string
	Duration Type = "duration" // a Go duration string such as 8.25s
	Strings  Type = "strings"  // a JSON array of strings
)

var knownTypes = []Type{String, Integer, Number, Boolean, Time, Duration, Strings}

// Field is one documented field.
type Field struct {
	Name     string
	Type     Type
	Optional bool
}

// Record is one documented record of a process.
type Record struct {
	Message string
	Levels  []string
	Fields  map[string]Field
}

// Process is one process's part of the document.
type Process struct {
	Name    string
	Context map[string]Field // may appear on any record of the process
	Records map[string]*Record
}

// Schema is the whole document.
type Schema struct {
	Common    map[string]Field // on every record of every process
	Processes map[string]*Process
}

var (
	processHeading = regexp.MustCompile("^## .*\\(`([a-z-]+)`\\)\\s*$")
	fieldItem      = regexp.MustCompile("^`([A-Za-z_][A-Za-z0-9_]*)`: ([a-z]+)( \\(optional\\))?$")
	codeSpan       = regexp.MustCompile("^`([^`]+)`$")
)

// Load parses docs/logs.md of this repository.
func Load() (*Schema, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return nil, fmt.Errorf("logschema: cannot locate the repository")
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "logs.md"))
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse reads the document's tables. A "## ... (`name`)" heading opens a
// process; a table headed "field | type" lists context fields (common
// fields before the first process), one headed "message | level | fields"
// the process's records.
func Parse(md []byte) (*Schema, error) {
	s := &Schema{Common: map[string]Field{}, Processes: map[string]*Process{}}
	var proc *Process
	var table string // "", "fields", "records"
	for n, line := range strings.Split(string(md), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "## ") {
			table = ""
			if m := processHeading.FindStringSubmatch(line); m != nil {
				proc = &Process{Name: m[1], Context: map[string]Field{}, Records: map[string]*Record{}}
				s.Processes[m[1]] = proc
			}
			continue
		}
		if !strings.HasPrefix(line, "|") {
			table = ""
			continue
		}
		cells := splitRow(line)
		switch {
		case table == "" && len(cells) >= 2 && cells[0] == "field" && cells[1] == "type":
			table = "fields"
			continue
		case table == "" && len(cells) >= 3 && cells[0] == "message" && cells[1] == "level" && cells[2] == "fields":
			if proc == nil {
				return nil, fmt.Errorf("logs.md:%d: a records table outside a process section", n+1)
			}
			table = "records"
			continue
		case strings.Trim(strings.Join(cells, ""), "-: ") == "":
			continue // the separator row
		}
		var err error
		switch table {
		case "fields":
			err = s.addField(proc, cells)
		case "records":
			err = addRecord(proc, cells)
		}
		if err != nil {
			return nil, fmt.Errorf("logs.md:%d: %w", n+1, err)
		}
	}
	if len(s.Common) == 0 || len(s.Processes) == 0 {
		return nil, fmt.Errorf("logs.md: no common fields or no process sections found")
	}
	return s, nil
}

func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	for c := range strings.SplitSeq(line, "|") {
		cells = append(cells, strings.TrimSpace(c))
	}
	return cells
}

func (s *Schema) addField(proc *Process, cells []string) error {
	m := codeSpan.FindStringSubmatch(cells[0])
	if m == nil {
		return fmt.Errorf("field cell %q is not one code span", cells[0])
	}
	t := Type(cells[1])
	if !slices.Contains(knownTypes, t) {
		return fmt.Errorf("field %s: unknown type %q", m[1], t)
	}
	f := Field{Name: m[1], Type: t}
	if proc == nil {
		s.Common[f.Name] = f
	} else {
		proc.Context[f.Name] = f
	}
	return nil
}

func addRecord(proc *Process, cells []string) error {
	m := codeSpan.FindStringSubmatch(cells[0])
	if m == nil {
		return fmt.Errorf("message cell %q is not one code span", cells[0])
	}
	r := &Record{Message: m[1], Fields: map[string]Field{}}
	if _, dup := proc.Records[r.Message]; dup {
		return fmt.Errorf("record %q listed twice", r.Message)
	}
	for l := range strings.SplitSeq(cells[1], ",") {
		l = strings.TrimSpace(l)
		if !slices.Contains([]string{"DEBUG", "INFO", "WARN", "ERROR"}, l) {
			return fmt.Errorf("record %q: unknown level %q", r.Message, l)
		}
		r.Levels = append(r.Levels, l)
	}
	if cells[2] != "—" {
		for item := range strings.SplitSeq(cells[2], ", ") {
			fm := fieldItem.FindStringSubmatch(strings.TrimSpace(item))
			if fm == nil {
				return fmt.Errorf("record %q: field %q is not \"`name`: type\" with an optional \" (optional)\"", r.Message, item)
			}
			if !slices.Contains(knownTypes, Type(fm[2])) {
				return fmt.Errorf("record %q: field %s: unknown type %q", r.Message, fm[1], fm[2])
			}
			r.Fields[fm[1]] = Field{Name: fm[1], Type: Type(fm[2]), Optional: fm[3] != ""}
		}
	}
	proc.Records[r.Message] = r
	return nil
}

// CheckLine returns what is wrong with one JSON log line of process: not
// JSON, a message the process's section does not list, a level or field
// not listed for it, a field of another type, a listed field missing.
func (s *Schema) CheckLine(process string, line []byte) []string {
	proc, ok := s.Processes[process]
	if !ok {
		return []string{fmt.Sprintf("docs/logs.md has no section for process %q", process)}
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return []string{fmt.Sprintf("not a JSON object: %v", err)}
	}
	var out []string
	for name, f := range s.Common {
		v, ok := obj[name]
		if !ok {
			out = append(out, fmt.Sprintf("common field %q missing", name))
		} else if p := typeProblem(f, v); p != "" {
			out = append(out, p)
		}
	}
	if l, _ := obj[LoggerKey].(string); slices.Contains(libraryLoggers, l) {
		return out // a library's own record: only the common fields are ours
	}
	msg, _ := obj["msg"].(string)
	rec, ok := proc.Records[msg]
	if !ok {
		return append(out, fmt.Sprintf("message %q is not listed for %s in docs/logs.md", msg, process))
	}
	if lvl, _ := obj["level"].(string); !slices.Contains(rec.Levels, lvl) {
		out = append(out, fmt.Sprintf("record %q at level %s; docs/logs.md lists %s", msg, lvl, strings.Join(rec.Levels, ", ")))
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, common := s.Common[k]; common {
			continue
		}
		f, ok := rec.Fields[k]
		if !ok {
			f, ok = proc.Context[k]
		}
		if !ok {
			out = append(out, fmt.Sprintf("record %q: field %q is not listed in docs/logs.md", msg, k))
			continue
		}
		if p := typeProblem(f, obj[k]); p != "" {
			out = append(out, fmt.Sprintf("record %q: %s", msg, p))
		}
	}
	for _, f := range rec.Fields {
		if _, ok := obj[f.Name]; !ok && !f.Optional {
			out = append(out, fmt.Sprintf("record %q: field %q missing (docs/logs.md does not mark it optional)", msg, f.Name))
		}
	}
	sort.Strings(out)
	return out
}

func typeProblem(f Field, v any) string {
	bad := fmt.Sprintf("field %q is %s, not of type %s", f.Name, describe(v), f.Type)
	switch f.Type {
	case String:
		if _, ok := v.(string); !ok {
			return bad
		}
	case Time:
		s, ok := v.(string)
		if _, err := time.Parse(time.RFC3339Nano, s); !ok || err != nil {
			return bad
		}
	case Duration:
		s, ok := v.(string)
		if _, err := time.ParseDuration(s); !ok || err != nil {
			return bad
		}
	case Boolean:
		if _, ok := v.(bool); !ok {
			return bad
		}
	case Number, Integer:
		n, ok := v.(json.Number)
		if !ok {
			return bad
		}
		x, err := n.Float64()
		if err != nil || (f.Type == Integer && x != math.Trunc(x)) {
			return bad
		}
	case Strings:
		a, ok := v.([]any)
		if !ok {
			return bad
		}
		for _, e := range a {
			if _, ok := e.(string); !ok {
				return bad
			}
		}
	}
	return ""
}

func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", x)
	case json.Number:
		return "the number " + x.String()
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T %v", v, v)
	}
}

// CheckLines checks every line of r (a process's log file) and returns
// each problem with the line it was found on.
func (s *Schema) CheckLines(process string, r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	var out []string
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		for _, p := range s.CheckLine(process, sc.Bytes()) {
			out = append(out, fmt.Sprintf("line %d: %s: %s", n, p, sc.Text()))
		}
	}
	return out, sc.Err()
}

// CheckFile checks a process's log file (the e2e suite's operator.log and
// sidecar-<site>.log), each problem with its line number and line.
func (s *Schema) CheckFile(process, path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ps, err := s.CheckLines(process, f)
	for i := range ps {
		ps[i] = filepath.Base(path) + " " + ps[i]
	}
	return ps, err
}
