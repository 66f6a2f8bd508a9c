// Command bloodraven-deploy runs a migration command under the deployment
// API's migration lease and failover hold (docs/deploy-api.md#the-deploy-lease-client-bloodraven-deploy):
//
//	bloodraven-deploy run --group orders --instance orders-app -- ./migrate up
//
// It exits with the code of the run's cause (deployclient.Cause.ExitCode).
package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shipstream/bloodraven/pkg/deployclient"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usageExit = 2

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "run" {
		fmt.Fprintln(stderr, "usage: bloodraven-deploy run [flags] -- command [args...]")
		return usageExit
	}
	cfg, err := parseRun(args[1:], stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "bloodraven-deploy:", err)
		}
		return usageExit
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(stdout, nil))
	return deployclient.Run(ctx, cfg).ExitCode()
}

// runFlags are the flags of `run`.
type runFlags struct {
	url, caFile, tokenFile       string
	group, instance, operationID string
	outcomeFile                  string
	ttl, killMargin, termGrace   time.Duration
	requestTimeout               time.Duration
}

func parseRun(args []string, stderr io.Writer) (deployclient.Config, error) {
	var f runFlags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.url, "url", "https://bloodraven.bloodraven.svc.cluster.local:8443", "the operator's TLS listener (the /deploy/v1 base)")
	fs.StringVar(&f.caFile, "ca-file", "", "PEM bundle trusted for the listener's certificate (empty: the system roots); hostnames are always verified")
	fs.StringVar(&f.tokenFile, "token-file", "/var/run/secrets/deploy/token", "projected ServiceAccount token (audience bloodraven-deploy), reread before every request")
	fs.StringVar(&f.group, "group", "", "MysqlFailoverGroup name (required)")
	fs.StringVar(&f.instance, "instance", "", "MysqlDatabase name authorizing this client (required)")
	fs.StringVar(&f.operationID, "operation-id", "", "operation UUID (empty: a new random one, logged)")
	fs.StringVar(&f.outcomeFile, "outcome-file", "", "where the outcome is recorded before the mutex is released (passed to the command as "+deployclient.EnvOutcomeFile+")")
	fs.DurationVar(&f.ttl, "ttl", 30*time.Second, "lease TTL, whole seconds in [5s, 120s]; renewals every ttl/3")
	fs.DurationVar(&f.requestTimeout, "request-timeout", 3*time.Second, "timeout of each API request")
	fs.DurationVar(&f.killMargin, "kill-margin", 0, "SIGKILL no later than deadline minus this, at least 5s (0: 5s plus --request-timeout)")
	fs.DurationVar(&f.termGrace, "term-grace", 5*time.Second, "how long SIGTERM precedes SIGKILL")
	if err := fs.Parse(args); err != nil {
		return deployclient.Config{}, err
	}
	if fs.NArg() == 0 {
		return deployclient.Config{}, errors.New("no command: give it after --")
	}
	if f.group == "" || f.instance == "" {
		return deployclient.Config{}, errors.New("--group and --instance are required")
	}
	if f.operationID == "" {
		f.operationID = newOperationID()
	}
	if f.killMargin == 0 {
		f.killMargin = deployclient.MaxClockSkew + f.requestTimeout
	}
	hc, err := httpClient(f.caFile)
	if err != nil {
		return deployclient.Config{}, err
	}
	return deployclient.Config{
		Client: &deployclient.Client{BaseURL: f.url, TokenFile: f.tokenFile, HTTP: hc},
		Group:  f.group, Instance: f.instance, OperationID: f.operationID,
		Policy:      deployclient.Policy{TTL: f.ttl, KillMargin: f.killMargin, TermGrace: f.termGrace, RequestTimeout: f.requestTimeout},
		Command:     fs.Args(),
		OutcomeFile: f.outcomeFile,
	}, nil
}

// httpClient trusts caFile (or the system roots) and keeps hostname
// verification (docs/deploy-api.md#operating-it).
func httpClient(caFile string) (*http.Client, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read --ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", caFile)
		}
		tc.RootCAs = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	return &http.Client{Transport: tr}, nil
}

// newOperationID is a random (version 4) UUID.
func newOperationID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
