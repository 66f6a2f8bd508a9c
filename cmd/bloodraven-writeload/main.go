// Command bloodraven-writeload writes continuously through one MySQL
// endpoint, records the GTID of every acknowledged write, and when it stops
// (duration, write count, SIGTERM or SIGINT) reports which acknowledged
// writes each -check server lacks. Test tooling for failover drills.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/testbed/writeload"
)

// PasswordEnv is read when -password-file is not given.
const PasswordEnv = "BLOODRAVEN_WRITELOAD_PASSWORD"

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// Report is printed as JSON on stdout at the end.
type Report struct {
	WriterUUID   string            `json:"writerUuid"`
	Acknowledged string            `json:"acknowledged"`
	Uncertain    string            `json:"uncertain"`
	Stats        writeload.Stats   `json:"stats"`
	Missing      map[string]string `json:"missing,omitempty"` // check address → acknowledged GTIDs it lacks
	CheckErrors  map[string]string `json:"checkErrors,omitempty"`
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bloodraven-writeload:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bloodraven-writeload", flag.ContinueOnError)
	addr := fs.String("addr", "", "host:port of the endpoint to write through (required)")
	user := fs.String("user", "", "account (needs SYSTEM_VARIABLES_ADMIN or REPLICATION_APPLIER for gtid_next)")
	passwordFile := fs.String("password-file", "", "file holding the password (default: $"+PasswordEnv+")")
	caFile := fs.String("tls-ca", "", "PEM CA file; enables TLS")
	interpolate := fs.Bool("interpolate", false, "interpolateParams=true instead of prepared statements")
	interval := fs.Duration("interval", 10*time.Millisecond, "pause between writes")
	duration := fs.Duration("duration", 0, "stop after this long (0: until -writes or a signal)")
	writes := fs.Int("writes", 0, "stop after this many write attempts (0: no limit)")
	writer := fs.String("writer-uuid", "", "UUID of the GTIDs to assign (default random)")
	var checks listFlag
	fs.Var(&checks, "check", "host:port of a server to report missing acknowledged writes for; repeatable")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" || *user == "" {
		return errors.New("-addr and -user are required")
	}
	password, err := readPassword(*passwordFile)
	if err != nil {
		return err
	}
	var tlsCfg *tls.Config
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			return fmt.Errorf("-tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("-tls-ca %s: no PEM certificate found", *caFile)
		}
		tlsCfg = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	endpoint := func(a string) mysql.Options {
		o := mysql.Options{Addr: a, User: *user, Password: password, Interpolate: *interpolate, Program: "bloodraven-writeload",
			ReadTimeout: 5 * time.Second, DialTimeout: 2 * time.Second}
		if tlsCfg != nil {
			c := tlsCfg.Clone()
			c.ServerName = strings.Split(a, ":")[0]
			o.TLS = c
		}
		return o
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	l, err := writeload.New(writeload.Config{Endpoint: endpoint(*addr), WriterUUID: *writer, Interval: *interval, MaxWrites: *writes, Logger: log})
	if err != nil {
		return err
	}
	defer l.Close()
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	if *duration > 0 {
		var c2 context.CancelFunc
		ctx, c2 = context.WithTimeout(ctx, *duration)
		defer c2()
	}
	log.Info("writing", "addr", *addr, "writerUuid", l.WriterUUID())
	if err := l.Run(ctx); err != nil {
		return err
	}
	rep := Report{WriterUUID: l.WriterUUID(), Acknowledged: l.Acknowledged().OneLine(), Uncertain: l.Uncertain().OneLine(), Stats: l.Stats()}
	for _, a := range checks {
		if rep.Missing == nil {
			rep.Missing, rep.CheckErrors = map[string]string{}, map[string]string{}
		}
		c, err := mysql.Open(endpoint(a))
		if err != nil {
			rep.CheckErrors[a] = err.Error()
			continue
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		missing, err := l.MissingOn(cctx, c)
		ccancel()
		c.Close()
		if err != nil {
			rep.CheckErrors[a] = err.Error()
			continue
		}
		rep.Missing[a] = missing.OneLine()
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func readPassword(path string) (string, error) {
	if path == "" {
		return os.Getenv(PasswordEnv), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("-password-file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}
