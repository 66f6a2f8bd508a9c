package logschema

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// The repository's document parses and lists the records the contract
// names (seed 000's deploy api record, the state-transition and fencing
// records).
func TestDocumentParses(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{Operator, Sidecar, DeployClient} {
		if s.Processes[p] == nil || len(s.Processes[p].Records) == 0 {
			t.Errorf("no records for process %s", p)
		}
	}
	op := s.Processes[Operator]
	want := map[string][]string{
		"deploy api":                     {"handler", "group", "instance", "namespace", "operationId", "status", "duration_ms"},
		"site state changed":             {"from", "to", "role"},
		"site fenced":                    {"role"},
		"fence failed":                   {"role"},
		"planned failover phase changed": {"role", "from", "to"},
	}
	for msg, fields := range want {
		r := op.Records[msg]
		if r == nil {
			t.Errorf("record %q not listed", msg)
			continue
		}
		for _, f := range fields {
			if fd, ok := r.Fields[f]; !ok || fd.Optional {
				t.Errorf("record %q: field %s not listed as always present", msg, f)
			}
		}
	}
	if op.Records["deploy api"].Fields["duration_ms"].Type != Number {
		t.Errorf("duration_ms is not a number")
	}
}

const doc = "## Fields of every record\n\n| field | type | meaning |\n| --- | --- | --- |\n" +
	"| `time` | time | x |\n| `level` | string | x |\n| `msg` | string | x |\n\n" +
	"## Operator (`bloodraven`)\n\n| field | type | meaning |\n| --- | --- | --- |\n| `group` | string | x |\n\n" +
	"| message | level | fields | when |\n| --- | --- | --- | --- |\n" +
	"| `deploy api` | INFO, ERROR | `status`: integer, `duration_ms`: number, `cause`: string (optional) | x |\n" +
	"| `started` | INFO | — | x |\n"

func check(t *testing.T, s *Schema, line string) []string {
	t.Helper()
	return s.CheckLine(Operator, []byte(line))
}

// Each kind of departure from the document is reported, and a record that
// follows it is not.
func TestCheckLine(t *testing.T) {
	s, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	ts := `"time":"2026-12-01T10:00:00.123Z"`
	for _, c := range []struct {
		line string
		want string // a substring of the one problem, "" for none
	}{
		{`{` + ts + `,"level":"INFO","msg":"deploy api","status":200,"duration_ms":1.25,"group":"orders"}`, ""},
		{`{` + ts + `,"level":"ERROR","msg":"deploy api","status":500,"duration_ms":3,"cause":"boom"}`, ""},
		{`{` + ts + `,"level":"INFO","msg":"started"}`, ""},
		{`{` + ts + `,"level":"INFO","msg":"deploy api","status":200,"duration_ms":1,"durationMs":1}`, `field "durationMs" is not listed`},
		{`{` + ts + `,"level":"INFO","msg":"deploy api","status":200}`, `field "duration_ms" missing`},
		{`{` + ts + `,"level":"INFO","msg":"deploy api","status":"200","duration_ms":1}`, `field "status" is the string "200", not of type integer`},
		{`{` + ts + `,"level":"INFO","msg":"deploy api","status":200.5,"duration_ms":1}`, `not of type integer`},
		{`{` + ts + `,"level":"WARN","msg":"started"}`, `at level WARN`},
		{`{` + ts + `,"level":"INFO","msg":"stopped"}`, `message "stopped" is not listed`},
		{`{"level":"INFO","msg":"started"}`, `common field "time" missing`},
		{`{"time":"yesterday","level":"INFO","msg":"started"}`, `field "time" is the string "yesterday", not of type time`},
		{`not json`, `not a JSON object`},
		// A library's own record: its message and fields are not ours.
		{`{` + ts + `,"level":"INFO","msg":"Caches are synced","logger":"klog","controller":"x"}`, ""},
		{`{` + ts + `,"level":"INFO","msg":"Caches are synced","logger":"mine"}`, `is not listed`},
		{`{` + ts + `,"level":"WARN","msg":"packets.go:58 unexpected EOF","logger":"mysql"}`, ""},
	} {
		got := check(t, s, c.line)
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%s: unexpected problems %q", c.line, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: problems %q, want one containing %q", c.line, got, c.want)
		}
	}
}

func TestParseRefusesMalformedRows(t *testing.T) {
	for _, bad := range []string{
		strings.Replace(doc, "`status`: integer", "`status`: int", 1),
		strings.Replace(doc, "`status`: integer", "status integer", 1),
		strings.Replace(doc, "INFO, ERROR", "INFO, FATAL", 1),
		doc + "| `started` | INFO | — | x |\n",
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse accepted:\n%s", bad)
		}
	}
}

// The recorder renders records as the processes do and reports an
// undocumented field with the whole line.
func TestRecorderReportsUndocumentedField(t *testing.T) {
	r := NewRecorder(Operator)
	var next bytes.Buffer
	log := r.Logger(slog.NewTextHandler(&next, nil)).With("controller", "topology")
	log.Info("topology published", "activeSite", "iad", "topologyGeneration", 3)
	log.Info("topology published", "activeSite", "iad", "topologyGeneration", 4, "undocumented", true)
	ps, err := r.Problems()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || !strings.Contains(ps[0], `field "undocumented" is not listed`) || !strings.Contains(ps[0], `"topologyGeneration":4`) {
		t.Fatalf("problems = %q, want one naming the undocumented field and the record", ps)
	}
	if strings.Count(next.String(), "topology published") != 2 {
		t.Errorf("records not passed on: %q", next.String())
	}
}
