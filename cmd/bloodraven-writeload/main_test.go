package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// TestReportAgainstTwoServers writes 10 rows to one simulated server and
// checks the report against it (nothing missing) and against an empty one
// (everything missing).
func TestReportAgainstTwoServers(t *testing.T) {
	p := simtest.Start(t, mysqlsim.Config{})
	other := simtest.Start(t, mysqlsim.Config{})
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte(simtest.AdminPass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := run([]string{"-addr", p.Addr(), "-user", simtest.AdminUser, "-password-file", pw, "-writes", "10", "-interval", "0",
		"-writer-uuid", "12345678-1234-4234-8234-123456789abc", "-check", p.Addr(), "-check", other.Addr()}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := "12345678-1234-4234-8234-123456789abc:1-10"
	if rep.Acknowledged != want || rep.Stats.Acknowledged != 10 {
		t.Fatalf("report %+v", rep)
	}
	if rep.Missing[p.Addr()] != "" || rep.Missing[other.Addr()] != want {
		t.Fatalf("missing %+v", rep.Missing)
	}
	if !gtid.MustParse(want).IsSubsetOf(p.Snapshot().Executed) {
		t.Fatal("acknowledged writes are not on the server")
	}
}

func TestFlagErrors(t *testing.T) {
	err := run([]string{"-user", "u"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-addr") {
		t.Fatalf("got %v", err)
	}
	err = run([]string{"-addr", "127.0.0.1:1", "-user", "u", "-password-file", "/nonexistent"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-password-file") {
		t.Fatalf("got %v", err)
	}
}
