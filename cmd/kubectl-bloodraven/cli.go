package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"
)

// app is one invocation: its streams, whether a human can answer a
// question, and how it reaches the cluster (tests replace none of it: they
// pass a kubeconfig, as a user does).
type app struct {
	in          io.Reader
	out, errOut io.Writer
	interactive bool
	now         func() time.Time
}

// command is one subcommand. setup binds its flags and returns the function
// that runs it on the positional arguments.
type command struct {
	name, usage, short, long, examples string
	// args is the number of positional arguments: [min, max].
	args  [2]int
	setup func(fs *flag.FlagSet) func(ctx context.Context, a *app, args []string) error
	// complete names what each positional argument is, for shell completion.
	complete []argKind
}

type argKind int

const (
	argGroup argKind = iota
	argSite
	argCandidate
	argShell
)

// usageError is a mistake on the command line: printed with the usage.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func (a *app) run(args []string) int {
	if a.now == nil {
		a.now = time.Now
	}
	if len(args) == 0 || isHelp(args[0]) || args[0] == "help" && len(args) == 1 {
		a.topUsage(a.out)
		return 0
	}
	if args[0] == "help" {
		args = []string{args[1], "--help"}
	}
	if args[0] == completeCommand {
		return a.completeArgs(args[1:])
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(a.errOut, "error: unknown command %q\n\n", args[0])
		a.topUsage(a.errOut)
		return 2
	}
	return a.runCommand(c, args[1:])
}

func (a *app) runCommand(c *command, args []string) int {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	runFn := c.setup(fs)
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		a.commandUsage(a.out, c, fs)
		return 0
	}
	if err == nil {
		err = checkArgs(c, pos)
	}
	if err != nil {
		fmt.Fprintf(a.errOut, "error: %v\n\n", err)
		a.commandUsage(a.errOut, c, fs)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := runFn(ctx, a, pos); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			if ee.msg != "" {
				fmt.Fprintln(a.errOut, ee.msg)
			}
			return ee.code
		}
		fmt.Fprintf(a.errOut, "error: %v\n", err)
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

// parseInterspersed lets flags come after positional arguments, as kubectl
// allows (`status orders -n db`); the standard flag package stops at the
// first positional one. Everything after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

func checkArgs(c *command, pos []string) error {
	lo, hi := c.args[0], c.args[1]
	switch {
	case len(pos) < lo:
		return fmt.Errorf("%s needs %s", c.name, strings.TrimPrefix(c.usage, c.name+" "))
	case len(pos) > hi:
		return fmt.Errorf("%s takes at most %d argument(s), got %d: %s", c.name, hi, len(pos), strings.Join(pos, " "))
	}
	return nil
}

func isHelp(s string) bool { return s == "-h" || s == "--help" || s == "-help" }

func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

func commands() []*command {
	return []*command{statusCommand(), recloneCommand(), plannedFailoverCommand(), revokeLeasesCommand(), clearHoldCommand(), gtidAuditCommand(), completionCommand()}
}

func (a *app) topUsage(w io.Writer) {
	fmt.Fprint(w, `kubectl bloodraven: look at and act on Bloodraven MySQL failover groups.

Usage:
  kubectl bloodraven <command> [arguments] [flags]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-31s %s\n", c.name, c.short)
	}
	fmt.Fprint(w, `
Every command takes kubectl's connection flags: --kubeconfig, --context,
--cluster, --user, -n/--namespace (default: the namespace of the current
kubeconfig context).

Examples:
  kubectl bloodraven status -n databases
  kubectl bloodraven status orders -n databases -o yaml
  kubectl bloodraven reclone orders pdx -n databases
  kubectl bloodraven gtid-audit orders -n databases

Run "kubectl bloodraven <command> --help" for a command's flags and examples.
See docs/kubectl-plugin.md.
`)
}

func (a *app) commandUsage(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "%s\n\nUsage:\n  kubectl bloodraven %s [flags]\n\n%s\n", c.short, c.usage, strings.TrimSpace(c.long))
	fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(c.examples, "\n"))
	fmt.Fprintf(w, "\nFlags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := shortFlags[f.Name]; ok {
			return // shown with its long form
		}
		name := "--" + f.Name
		for short, long := range shortFlags {
			if long == f.Name {
				name = "-" + short + ", " + name
			}
		}
		fmt.Fprintf(w, "  %-22s %s\n", name, f.Usage)
	})
}

// shortFlags are the one-letter spellings kubectl users type, bound to the
// same variable as their long form.
var shortFlags = map[string]string{"n": "namespace", "o": "output"}
