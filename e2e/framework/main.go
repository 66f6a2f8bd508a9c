package framework

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"
)

// Main runs a test package against one control plane: it starts it, stores
// it in *out, runs the tests and stops it. Call it from TestMain:
//
//	var cp *framework.ControlPlane
//	func TestMain(m *testing.M) { framework.Main(m, framework.Options{CRDDir: "deploy/crds"}, &cp) }
//
// A test that panics ends the test binary before Main can stop anything; the
// children then die with it (Pdeathsig) and the next run removes the
// directory. A `go test -timeout` is handled before it fires: the control
// plane is stopped a few seconds before the deadline.
func Main(m *testing.M, opts Options, out **ControlPlane) {
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	start := time.Now()
	cp, err := Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "framework: cannot start control plane: %v\n", err)
		os.Exit(1)
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "framework: control plane ready in %s at %s\n", time.Since(start).Round(time.Millisecond), cp.APIServerURL)
	}
	*out = cp
	var timer *time.Timer
	if d := testTimeout(); d > 0 {
		// Leave the control plane enough time to stop before testing's own
		// timeout panics the binary.
		timer = time.AfterFunc(d-time.Since(start)-5*time.Second, cp.Stop)
	}
	code := m.Run()
	if timer != nil {
		timer.Stop()
	}
	cp.Stop()
	os.Exit(code)
}

func testTimeout() time.Duration {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return 0
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if d, ok := g.Get().(time.Duration); ok {
			return d
		}
	}
	return 0
}
