package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/shipstream/bloodraven/pkg/pluginview"
	"github.com/shipstream/bloodraven/pkg/topology"
)

func recloneCommand() *command {
	return &command{
		name: "reclone", usage: "reclone <group> <site>", args: [2]int{2, 2}, complete: []argKind{argGroup, argSite},
		short: "Replace a site's data with a clone of the active site",
		long: `Reads the group's status, builds the exact interlock value of the
bloodraven.shipstream.io/reclone-site annotation (with gtidPrefix when the
site holds transactions the active site lacks), shows what the clone will
discard, asks for confirmation, and sets the annotation. The operator then
checks the request on its live observation of the sites, records the
discarded set in status.recloneHistory and clones (Event RecloneRequested),
or refuses it (Event RecloneRejected); it removes the annotation either way.

Without a terminal the command refuses unless --yes is given.`,
		examples: `  kubectl bloodraven reclone orders pdx -n databases
  kubectl bloodraven reclone orders pdx -n databases --dry-run
  kubectl bloodraven reclone orders pdx -n databases --yes`,
		setup: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
			k := bindKubeFlags(fs)
			yes := fs.Bool("yes", false, "do not ask for confirmation")
			dry := fs.Bool("dry-run", false, "show the value and what would be discarded; change nothing")
			return func(ctx context.Context, a *app, args []string) error {
				c, err := k.clients()
				if err != nil {
					return err
				}
				return a.reclone(ctx, c, args[0], args[1], *yes, *dry)
			}
		},
	}
}

func (a *app) reclone(ctx context.Context, c *clients, group, site string, yes, dry bool) error {
	g, err := c.getGroup(ctx, group)
	if err != nil {
		return err
	}
	plan, err := pluginview.PlanReclone(g, site)
	if err != nil {
		return fmt.Errorf("not requesting the reclone: %w", err)
	}
	if err := pluginview.CheckRecloneValue(plan.Value); err != nil {
		return fmt.Errorf("internal error: the built value %q does not parse: %v", plan.Value, err)
	}
	fmt.Fprintf(a.out, "Reclone site %s of group %s/%s from the active site %s.\n", site, c.ns, group, plan.Donor)
	fmt.Fprint(a.out, plan.DiscardSummary())
	fmt.Fprintf(a.out, "Annotation: %s=%s\n", topology.AnnotationRecloneSite, plan.Value)
	if prev, ok := g.Annotations[topology.AnnotationRecloneSite]; ok {
		fmt.Fprintf(a.out, "It replaces the request not yet handled: %s\n", prev)
	}
	if dry {
		fmt.Fprintln(a.out, "Dry run: nothing changed.")
		return nil
	}
	if err := a.confirm(yes, site, "the site name ("+site+") to reclone it"); err != nil {
		return err
	}
	if err := c.annotate(ctx, group, topology.AnnotationRecloneSite, plan.Value); err != nil {
		return err
	}
	fmt.Fprintf(a.out, "Requested. The operator handles it on its next poll: Event RecloneRequested (accepted) or RecloneRejected (the message says why).\nFollow it with: kubectl bloodraven status %s -n %s\n", group, c.ns)
	return nil
}

// confirm asks the user to type want, unless yes. Without a terminal there
// is nobody to ask, so only --yes proceeds.
func (a *app) confirm(yes bool, want, what string) error {
	if yes {
		return nil
	}
	if !a.interactive {
		return usageError{"not confirmed: stdin is not a terminal, so nobody can be asked; read the above and run again with --yes"}
	}
	fmt.Fprintf(a.out, "Type %s: ", what)
	line, _ := bufio.NewReader(a.in).ReadString('\n')
	if strings.TrimSpace(line) != want {
		return fmt.Errorf("not confirmed (%q is not %q): nothing changed", strings.TrimSpace(line), want)
	}
	return nil
}
