// Command kubectl-bloodraven is the kubectl plugin for Bloodraven failover
// groups: `kubectl bloodraven status|reclone|planned-failover|
// revoke-leases|clear-automatic-failover-hold|gtid-audit`. It reads groups with the
// generated clientset and asks for actions with the annotations the
// operator handles (docs/kubectl-plugin.md). What it shows and the values it
// writes are built in pkg/pluginview.
package main

import (
	"os"
)

func main() {
	a := &app{in: os.Stdin, out: os.Stdout, errOut: os.Stderr, interactive: isTerminal(os.Stdin) && isTerminal(os.Stdout)}
	os.Exit(a.run(os.Args[1:]))
}

// isTerminal reports whether f is a character device, which is what a
// terminal is; a pipe, a file or /dev/null in CI is not (/dev/null is, but
// reading it ends at once, which refuses the confirmation).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
