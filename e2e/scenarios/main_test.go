//go:build e2e

// Package scenarios is the end-to-end suite: it starts one whole playground
// (pkg/testbed/playground: real control plane, kwok nodes, the operator binary, a
// simulated mysqld and a real sidecar per site) and drives it only as a user
// would: kubectl and client-go on the CRs, HTTPS on /deploy/v1, the
// simulators' fault API, signals to processes. Run with `make e2e`.
package scenarios

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/logschema"
	"github.com/shipstream/bloodraven/pkg/testbed/playground"
)

var pg *playground.Playground

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "e2e: skipped with -short")
		os.Exit(0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	start := time.Now()
	var err error
	pg, err = playground.Start(ctx, playground.Config{
		// Faster detection than the sample's defaults keeps the suite short.
		GroupPatch:   `{"spec":{"pollInterval":"1s","failureThreshold":3,"failoverCooldown":"30s"}}`,
		FaultProxies: true,
		// A rotation's overlap short enough for TestRotationUnderWriteLoad
		// (development only: docs/credentials.md, "Rotation").
		OperatorEnv: []string{"BLOODRAVEN_DEV_ROTATION_OVERLAP=15s"},
	})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: cannot start the playground: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "e2e: playground started in %s (logs in %s)\n", time.Since(start).Round(time.Millisecond), pg.Dir)
	// Stop before `go test -timeout` would panic the binary.
	var timer *time.Timer
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, _ := time.ParseDuration(f.Value.String()); d > 0 {
			timer = time.AfterFunc(d-time.Since(start)-30*time.Second, pg.Stop)
		}
	}
	code := m.Run()
	if timer != nil {
		timer.Stop()
	}
	if code == 0 && !checkProcessLogs(pg.Dir) {
		code = 1
	}
	if code != 0 {
		if dir, err := pg.KeepLogs(); err == nil {
			fmt.Fprintf(os.Stderr, "e2e: logs kept in %s\n", dir)
		}
	}
	pg.Stop()
	os.Exit(code)
}

// checkProcessLogs checks every record the operator and the sidecars wrote
// during the suite against docs/logs.md (before Stop, which removes the
// directory) and prints each one it does not list.
func checkProcessLogs(dir string) bool {
	schema, err := logschema.Load()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: log schema: %v\n", err)
		return false
	}
	files := map[string]string{filepath.Join(dir, "operator.log"): logschema.Operator}
	sidecars, _ := filepath.Glob(filepath.Join(dir, "sidecar-*.log"))
	for _, f := range sidecars {
		files[f] = logschema.Sidecar
	}
	ok := len(sidecars) > 0
	if !ok {
		fmt.Fprintf(os.Stderr, "e2e: log schema: no sidecar logs in %s\n", dir)
	}
	for f, process := range files {
		ps, err := schema.CheckFile(process, f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: log schema: %v\n", err)
			ok = false
		}
		for _, p := range ps {
			fmt.Fprintf(os.Stderr, "e2e: log record not in docs/logs.md: %s\n", p)
			ok = false
		}
	}
	return ok
}
