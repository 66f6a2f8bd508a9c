package logging

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"log"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
	"k8s.io/klog/v2"
)

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError} {
		got, err := ParseLevel(in)
		if err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseLevel("verbose"); err == nil || !strings.Contains(err.Error(), `"verbose"`) {
		t.Errorf("ParseLevel(verbose) err = %v", err)
	}
}

func TestRedactsSecretKeys(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, slog.LevelInfo)
	l.Info("deploy api", "group", "orders", "leaseToken", "s3cr3t", "tokenHash", "abc", "Authorization", "Bearer x", "mysqlPassword", "pw")
	line := buf.String()
	for _, leaked := range []string{"s3cr3t", "abc", "Bearer x", `"pw"`} {
		if strings.Contains(line, leaked) {
			t.Errorf("log line leaks %q: %s", leaked, line)
		}
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(line), &obj); err != nil {
		t.Fatal(err)
	}
	if obj["group"] != "orders" || obj["leaseToken"] != Redacted {
		t.Errorf("unexpected line %v", obj)
	}
}

// klog output (what client-go prints) must arrive as JSON lines from the
// same handler, not as klog's text format on stderr.
func TestKlogIsBridged(t *testing.T) {
	var buf bytes.Buffer
	Install(New(&buf, slog.LevelInfo))
	defer klog.ClearLogger()
	klog.InfoS("reflector started", "resourceType", "Lease")
	klog.Infof("plain %s", "printf")
	klog.ErrorS(errors.New("boom"), "watch failed")
	klog.Flush()

	sc := bufio.NewScanner(&buf)
	var msgs []string
	for sc.Scan() {
		var obj map[string]any
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			t.Fatalf("line is not JSON: %q: %v", sc.Text(), err)
		}
		msgs = append(msgs, obj["msg"].(string))
		if obj[KlogKey] != KlogValue {
			t.Errorf("klog record lacks %s=%s: %v", KlogKey, KlogValue, obj)
		}
		if obj["msg"] == "watch failed" && (obj["level"] != "ERROR" || obj["err"] != "boom") {
			t.Errorf("error line = %v", obj)
		}
	}
	want := []string{"reflector started", "plain printf", "watch failed"}
	if strings.Join(msgs, "|") != strings.Join(want, "|") {
		t.Fatalf("messages = %q, want %q", msgs, want)
	}
}

// The MySQL driver's messages, plain text on stderr by default, come
// through the handler as WARN records marked logger=mysql: here the one it
// writes when a server closes the connection before its handshake.
func TestMySQLDriverIsBridged(t *testing.T) {
	var buf syncBuffer
	Install(New(&buf, slog.LevelInfo))
	defer func() { _ = mysqldriver.SetLogger(log.New(os.Stderr, "[mysql] ", log.Ldate|log.Ltime|log.Lshortfile)) }()
	defer klog.ClearLogger()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	db, err := sql.Open("mysql", "u:p@tcp("+ln.Addr().String()+")/?timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err == nil {
		t.Fatal("ping of a server that hangs up succeeded")
	}
	n := 0
	for line := range strings.Lines(buf.String()) {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("line is not JSON: %q", line)
		}
		if obj[KlogKey] == MySQLDriverValue && obj["level"] == "WARN" && strings.Contains(obj["msg"].(string), "EOF") {
			n++
		}
	}
	if n == 0 {
		t.Fatalf("no driver record in %q", buf.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
