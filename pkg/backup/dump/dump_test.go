package dump

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fixtureGTID = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-20,8a94f357-aab4-11df-86ab-c80aa9429562:1-7"

// copyFixture copies testdata/dumpinstance (a dumpInstance layout with the
// @.json keys MySQL Shell writes) into a fresh directory to change.
func copyFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("testdata", "dumpinstance")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReadCompleteDump(t *testing.T) {
	m, err := Read(filepath.Join("testdata", "dumpinstance"))
	if err != nil {
		t.Fatal(err)
	}
	if m.GTIDExecuted != fixtureGTID {
		t.Errorf("GTIDExecuted = %q, want %q", m.GTIDExecuted, fixtureGTID)
	}
	if m.BinlogFile != "binlog.000003" || m.BinlogPosition != 4711 || !m.HasBinlogInfo {
		t.Errorf("binlog = %q %d %v", m.BinlogFile, m.BinlogPosition, m.HasBinlogInfo)
	}
	if !m.Complete || m.End != "2026-12-01 23:50:03" || m.DataBytes != 8 {
		t.Errorf("Complete %v End %q DataBytes %d", m.Complete, m.End, m.DataBytes)
	}
	if m.Origin != "dumpInstance" || !m.Consistent || m.GTIDExecutedInconsistent || m.Users ||
		m.ServerVersion != "9.7.0" || m.Server != "orders-iad-0" || m.Begin != "2026-12-01 23:50:01" {
		t.Errorf("metadata = %+v", m)
	}
	if strings.Join(m.Schemas, ",") != "shop,we@ird sch" {
		t.Errorf("Schemas = %q", m.Schemas)
	}
	want := "@.done.json @.json @.post.sql @.sql shop.json shop.sql shop@orders.json shop@orders.sql " +
		"shop@orders@@0.tsv.zst shop@orders@@0.tsv.zst.idx we%40ird%20sch.json we%40ird%20sch.sql"
	if got := strings.Join(m.Files, " "); got != want {
		t.Errorf("Files =\n%s\nwant\n%s", got, want)
	}
}

func TestReadIncompleteDump(t *testing.T) {
	dir := copyFixture(t)
	if err := os.Remove(filepath.Join(dir, DoneFile)); err != nil {
		t.Fatal(err)
	}
	m, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Complete || m.End != "" {
		t.Errorf("a dump without @.done.json reads Complete %v End %q", m.Complete, m.End)
	}
	if m.GTIDExecuted != fixtureGTID {
		t.Errorf("GTIDExecuted = %q", m.GTIDExecuted)
	}
}

func TestReadRefuses(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, dir string)
		want   error
		in     string
	}{
		{"no @.json", func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, StartedFile))) }, ErrNotDump, ""},
		{"@.json not JSON", func(t *testing.T, dir string) { write(t, dir, StartedFile, "{") }, ErrMalformed, StartedFile},
		{"@.json with two documents", func(t *testing.T, dir string) {
			write(t, dir, StartedFile, `{"origin":"dumpInstance","gtidExecuted":""} {}`)
		}, ErrMalformed, "after the JSON"},
		{"no gtidExecuted", func(t *testing.T, dir string) { edit(t, dir, StartedFile, `"gtidExecuted"`, `"gtidExecutedX"`) }, ErrMalformed, "no gtidExecuted"},
		{"bad gtidExecuted", func(t *testing.T, dir string) { edit(t, dir, StartedFile, ":1-20,", ":20-1,") }, ErrMalformed, "gtidExecuted"},
		{"binlogFile without binlogPosition", func(t *testing.T, dir string) {
			edit(t, dir, StartedFile, `"binlogPosition": 4711,`, ``)
		}, ErrMalformed, "binlogPosition"},
		{"@.done.json not JSON", func(t *testing.T, dir string) { write(t, dir, DoneFile, "") }, ErrMalformed, DoneFile},
		{"@.done.json without end", func(t *testing.T, dir string) { edit(t, dir, DoneFile, `"end"`, `"ended"`) }, ErrMalformed, "no end"},
		{"a counted chunk missing", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "shop@orders@@0.tsv.zst")))
		}, ErrMalformed, "shop@orders@@0.tsv.zst"},
		{"a subdirectory", func(t *testing.T, dir string) { must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755)) }, ErrMalformed, "sub"},
		{"a symbolic link", func(t *testing.T, dir string) {
			must(t, os.Symlink("/etc/hostname", filepath.Join(dir, "shop@x.sql")))
		}, ErrMalformed, "shop@x.sql"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyFixture(t)
			if _, err := Read(dir); err != nil {
				t.Fatalf("fixture copy does not read: %v", err)
			}
			c.change(t, dir)
			_, err := Read(dir)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.in) {
				t.Errorf("Read = %v, want %v naming %q", err, c.want, c.in)
			}
		})
	}
	if _, err := Read(filepath.Join(t.TempDir(), "absent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read of a missing directory = %v", err)
	}
}

// An inconsistent dump (consistent: false) and one without binlog
// coordinates read as such, not as a consistent one.
func TestReadInconsistentDumpWithoutBinlog(t *testing.T) {
	dir := copyFixture(t)
	edit(t, dir, StartedFile, `"gtidExecutedInconsistent": false,
    "consistent": true,`, `"gtidExecutedInconsistent": true,
    "consistent": false,`)
	edit(t, dir, StartedFile, `"binlogFile": "binlog.000003",
    "binlogPosition": 4711,`, ``)
	m, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Consistent || !m.GTIDExecutedInconsistent || m.HasBinlogInfo || m.BinlogFile != "" {
		t.Errorf("read %+v", m)
	}
}

// A dump of MySQL Shell 8.0's first format (version 1.0.0: no origin, no
// binary log position, an inconsistent dump with an empty GTID set, an
// @.done.json without tableRows or chunkFileBytes) still reads.
func TestReadFirstFormatDump(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, StartedFile, `{"dumper": "mysqlsh Ver 8.0.21 for Linux on x86_64", "version": "1.0.0",
		"schemas": ["shop"], "basenames": {"shop": "shop"}, "defaultCharacterSet": "utf8mb4", "tzUtc": true,
		"user": "root", "hostname": "h", "server": "h", "serverVersion": "8.0.21", "gtidExecuted": "",
		"consistent": false, "begin": "2020-07-08 21:38:18"}`)
	write(t, dir, DoneFile, `{"end": "2020-07-08 21:46:35", "dataBytes": 10, "tableDataBytes": {"shop": {"orders": 10}}}`)
	m, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Complete || m.Origin != "" || m.GTIDExecuted != "" || m.HasBinlogInfo || m.Consistent || m.DataBytes != 10 {
		t.Errorf("read %+v", m)
	}
}

func TestNames(t *testing.T) {
	cases := []struct{ got, want string }{
		{SchemaBasename("shop"), "shop"},
		{SchemaBasename("we@ird sch"), "we%40ird%20sch"},
		{SchemaBasename("a-b.c_d~e"), "a-b.c_d~e"},
		{SchemaBasename("x/y\\z`%"), "x%2Fy%5Cz%60%25"},
		{SchemaBasename("ünï"), "ünï"},
		{TableBasename("shop", "order@items"), "shop@order%40items"},
		{ChunkFile("shop@orders", 0, false, "tsv.zst"), "shop@orders@0.tsv.zst"},
		{ChunkFile("shop@orders", 12, true, "tsv"), "shop@orders@@12.tsv"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
}

func edit(t *testing.T, dir, name, old, new string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	must(t, err)
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not contain %q", name, old)
	}
	write(t, dir, name, strings.Replace(string(data), old, new, 1))
}
