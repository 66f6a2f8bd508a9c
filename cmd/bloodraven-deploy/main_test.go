package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/deployclient"
)

func TestUsageErrorsExit2(t *testing.T) {
	cases := map[string][]string{
		"no subcommand":       nil,
		"unknown subcommand":  {"go"},
		"no command":          {"run", "--group", "orders", "--instance", "orders-app"},
		"no group":            {"run", "--instance", "orders-app", "--", "true"},
		"unknown flag":        {"run", "--nope", "--", "true"},
		"missing CA file":     {"run", "--group", "orders", "--instance", "orders-app", "--ca-file", "/nonexistent", "--", "true"},
		"margin below skew":   {"run", "--group", "orders", "--instance", "orders-app", "--kill-margin", "4s", "--", "true"},
		"ttl too short":       {"run", "--group", "orders", "--instance", "orders-app", "--ttl", "23s", "--", "true"},
		"fractional ttl":      {"run", "--group", "orders", "--instance", "orders-app", "--ttl", "30500ms", "--", "true"},
		"bad operation id":    {"run", "--group", "orders", "--instance", "orders-app", "--operation-id", "x", "--", "true"},
		"outcome file exists": {"run", "--group", "orders", "--instance", "orders-app", "--outcome-file", os.Args[0], "--", "true"},
	}
	for name, args := range cases {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q, stdout %q)", name, code, errOut.String(), out.String())
		}
	}
}

func TestDefaults(t *testing.T) {
	cfg, err := parseRun([]string{"--group", "orders", "--instance", "orders-app", "--", "migrate", "up"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := deployclient.Policy{TTL: 30 * time.Second, KillMargin: 8 * time.Second, TermGrace: 5 * time.Second, RequestTimeout: 3 * time.Second}
	if cfg.Policy != want {
		t.Fatalf("policy %+v, want %+v", cfg.Policy, want)
	}
	if err := cfg.Policy.Validate(); err != nil {
		t.Fatalf("the default policy is invalid: %v", err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(cfg.OperationID) {
		t.Fatalf("operation id %q", cfg.OperationID)
	}
	if strings.Join(cfg.Command, " ") != "migrate up" || cfg.Client.TokenFile != "/var/run/secrets/deploy/token" {
		t.Fatalf("config %+v", cfg)
	}
}

// TestUnreachableOperatorRefusesTheGrant: with nothing listening, no lease
// is granted, the command never runs, and every line is JSON.
func TestUnreachableOperatorRefusesTheGrant(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("not-a-real-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "ran")
	var out bytes.Buffer
	code := run(context.Background(), []string{"run", "--url", "https://127.0.0.1:1", "--token-file", tok,
		"--group", "orders", "--instance", "orders-app", "--", "touch", marker}, &out, &bytes.Buffer{})
	if code != deployclient.CauseGrantRefused.ExitCode() {
		t.Fatalf("exit %d, want %d\n%s", code, deployclient.CauseGrantRefused.ExitCode(), out.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran without a lease")
	}
	for line := range strings.Lines(out.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if strings.Contains(line, "not-a-real-token") {
			t.Fatal("the token was logged")
		}
	}
}

// TestShortestDefaultTTL: with the default margin, grace and timeout, a
// renewal period plus a request must fit before SIGTERM: 24 s is the least.
func TestShortestDefaultTTL(t *testing.T) {
	for ttl, ok := range map[string]bool{"23s": false, "24s": true} {
		cfg, err := parseRun([]string{"--group", "orders", "--instance", "orders-app", "--ttl", ttl, "--", "true"}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Policy.Validate() == nil; got != ok {
			t.Errorf("ttl %s accepted=%v, want %v", ttl, got, ok)
		}
	}
}
