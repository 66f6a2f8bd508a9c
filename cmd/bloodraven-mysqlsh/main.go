// Command bloodraven-mysqlsh is the test bed's stand-in for MySQL Shell's
// mysqlsh: it takes the command line a backup Job's dump step passes
// (`mysqlsh <connection options> -- util dump-instance <dir> [options]`)
// and writes MySQL Shell's dump layout from a simulated server
// (pkg/testbed/mysqlsh, docs/mysqlsh-stand-in.md). Development tooling: it
// is never part of a product image.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsh"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := mysqlsh.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, mysqlsh.Hooks{})
	stop()
	os.Exit(code)
}
